//! The endpoint's router and the layers around `/mcp`, outermost first:
//!
//! 1. [`admit`]: on a loopback bind a `Host` not naming this machine (421; missing or
//!    repeated: 400), a foreign or repeated `Origin` (403). Every request, CORS preflights
//!    included: MCP 2025-11-25 "Transports: Streamable HTTP, Security Warning" has servers
//!    validate `Origin` on all incoming connections and answer an invalid one with 403.
//! 2. [`cors`]: CORS for the origins [`admit`] lets through (the same allow-list,
//!    [`origin_allowed`]): a preflight (`OPTIONS`) is answered here, with 204, before the token
//!    check (a browser sends no `Authorization` on a preflight, Fetch standard §4.8); every
//!    other answer (JSON, SSE, the refusals below) gets `Access-Control-Allow-Origin` naming
//!    the request's origin (never `*`) and `Access-Control-Expose-Headers`.
//! 3. [`authorize`]: when a token is required a request without it (401 with
//!    `WWW-Authenticate: Bearer`), and after the stop signal every request (503).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use tower_http::cors::{AllowOrigin, AllowPrivateNetwork, CorsLayer};

use super::guard::{bearer_matches, host_refusal, origin_allowed, HostRefusal};
use super::headers as mcp;
use super::{handlers, App};

/// How long a browser may cache a preflight's answer (`Access-Control-Max-Age`), in seconds:
/// ten minutes, so a page's calls do not each cost a preflight, and a changed
/// `--allow-origin` list reaches browsers soon after a restart.
pub const CORS_MAX_AGE_SECS: u64 = 600;

/// The request headers a browser page may send (`Access-Control-Allow-Headers`): those MCP
/// clients send over streamable HTTP (MCP 2025-11-25 "Transports: Streamable HTTP":
/// `Accept`, `Content-Type`, `Mcp-Session-Id`, `MCP-Protocol-Version`, `Last-Event-ID`; MCP
/// 2026-07-28 "Streamable HTTP: Request Metadata": `Mcp-Method`, `Mcp-Name`) and the bearer
/// token's `Authorization` (MCP 2025-11-25 "Authorization").
pub const CORS_REQUEST_HEADERS: [&str; 8] = [
    "content-type",
    "accept",
    "authorization",
    mcp::PROTOCOL_VERSION,
    mcp::SESSION_ID,
    "last-event-id",
    mcp::METHOD,
    mcp::NAME,
];

/// The response headers a browser page may read besides the CORS-safelisted ones
/// (`Access-Control-Expose-Headers`): the session id it must send back, the protocol version,
/// the token challenge of a 401 and the `Retry-After` of a 503.
pub const CORS_EXPOSED_HEADERS: [&str; 4] = [
    mcp::SESSION_ID,
    mcp::PROTOCOL_VERSION,
    "www-authenticate",
    "retry-after",
];

/// The endpoint with its layers (see the module documentation).
pub(super) fn router(app: Arc<App>) -> Router {
    let cors = cors(app.options.allowed_origins.clone());
    Router::new()
        .route(
            "/mcp",
            post(handlers::post)
                .get(handlers::get)
                .delete(handlers::delete)
                // Explicitly, or axum would answer HEAD with the GET handler.
                .head(|| async { handlers::method_not_allowed() })
                .fallback(|| async { handlers::method_not_allowed() }),
        )
        .layer(middleware::from_fn_with_state(app.clone(), authorize))
        .layer(cors)
        .layer(middleware::from_fn_with_state(app.clone(), admit))
        .fallback(|| async { handlers::no_such_path() })
        .with_state(app)
}

/// CORS for the origins given with `--allow-origin` (`allowed`) only, by
/// tower-http's `CorsLayer`: its preflight and `Vary` handling follow the Fetch standard's
/// CORS protocol (§3.2), which a hand-written set of headers would have to restate. Methods:
/// `GET`, `POST`, `DELETE`; request headers: [`CORS_REQUEST_HEADERS`]; exposed:
/// [`CORS_EXPOSED_HEADERS`]; max age [`CORS_MAX_AGE_SECS`]. No credentials mode (the token
/// is an explicit header, not a cookie). A preflight asking to reach a private network from
/// an allowed origin (Chrome's Private Network Access) is allowed as well: the operator named
/// that origin. A page on this machine that was not named (any `localhost` port: a dev server,
/// a page another program serves) may still send what needs no preflight, as before, but gets
/// no CORS headers, so it cannot read an answer: naming an origin is what lets a page read tool
/// results.
pub fn cors(allowed: Vec<String>) -> CorsLayer {
    let listed = Arc::new(allowed);
    let allows = move |origin: &HeaderValue| {
        origin.to_str().is_ok_and(|o| {
            let o = o.trim().trim_end_matches('/');
            listed.iter().any(|a| a.eq_ignore_ascii_case(o))
        })
    };
    let private = allows.clone();
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin, _| allows(origin)))
        .allow_private_network(AllowPrivateNetwork::predicate(move |origin, _| {
            private(origin)
        }))
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers(CORS_REQUEST_HEADERS.map(HeaderName::from_static))
        .expose_headers(CORS_EXPOSED_HEADERS.map(HeaderName::from_static))
        .max_age(Duration::from_secs(CORS_MAX_AGE_SECS))
}

/// Refuses, on a loopback bind, a `Host` not naming this machine (421; missing or repeated:
/// 400), and a foreign or repeated `Origin` (403). A preflight let through is answered by
/// [`cors`] with 200, turned into 204 No Content here (it has no body), with the `Allow` of
/// a 405.
async fn admit(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    if app.loopback {
        if let Some(refusal) = misdirected(&request) {
            let status = StatusCode::from_u16(refusal.status()).expect("400 and 421 are valid");
            let error = json!({"code": -32600, "message": refusal.message()});
            return handlers::refuse(status, Value::Null, error);
        }
    }
    let mut origins = request.headers().get_all(header::ORIGIN).iter();
    let origin = origins.next().map(|v| v.to_str().unwrap_or(""));
    // A browser sends one Origin; a second one (which the check would not look at) is refused.
    let message = if origins.next().is_some() {
        Some("a request may carry at most one Origin header")
    } else if !origin_allowed(origin, &app.options.allowed_origins) {
        Some("this Origin is not allowed")
    } else {
        None
    };
    if let Some(message) = message {
        let error = json!({"code": -32600, "message": message});
        return handlers::refuse(StatusCode::FORBIDDEN, Value::Null, error);
    }
    let preflight = request.method() == Method::OPTIONS;
    let mut response = next.run(request).await;
    if preflight && response.status() == StatusCode::OK {
        *response.status_mut() = StatusCode::NO_CONTENT;
        // Else axum's method router adds its own list, which names HEAD (answered 405).
        let allow = HeaderValue::from_static(handlers::ALLOWED_METHODS);
        response.headers_mut().insert(header::ALLOW, allow);
    }
    response
}

/// Refuses, when a token is required, a request without it (401 with
/// `WWW-Authenticate: Bearer`), and after the stop signal every request (503).
async fn authorize(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    if let Some(token) = &app.options.auth_token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if !bearer_matches(given, token) {
            let error = json!({"code": -32600, "message": "a valid bearer token is required"});
            let mut response = handlers::refuse(StatusCode::UNAUTHORIZED, Value::Null, error);
            let challenge = match given {
                Some(_) => "Bearer realm=\"mcp-envelope\", error=\"invalid_token\"",
                None => "Bearer realm=\"mcp-envelope\"",
            };
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
            return response;
        }
    }
    if app.is_closing() {
        let message = "the server is shutting down; retry later";
        let (limit, timeout) = (app.options.max_body_bytes, app.options.body_timeout);
        let id = handlers::request_id(request, limit, timeout).await;
        return handlers::unavailable(id, message);
    }
    next.run(request).await
}

/// The [`host_refusal`] of `request` on a loopback bind.
fn misdirected(request: &Request) -> Option<HostRefusal> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let host = hosts.next().map(|v| v.to_str().unwrap_or(""));
    let repeated = hosts.next().is_some();
    let target = request.uri().authority().map(|a| a.as_str());
    let host_required = request.version() >= axum::http::Version::HTTP_11;
    host_refusal(target, host, repeated, host_required)
}
