//! The three methods of the MCP endpoint (MCP 2025-11-25 "Transports: Streamable HTTP";
//! 2026-07-28 "Streamable HTTP"):
//! - POST: one JSON-RPC message. A request is answered with one JSON object when the session
//!   has nothing else for it, else with an SSE stream of its related messages ending with the
//!   answer; a notification or response is accepted with 202. A batch (a JSON array) only in
//!   a session whose protocol version has batches ([`super::batch`]). Stateless (2026-07-28) requests
//!   go to the shared stateless session after their headers are checked; legacy ones need the
//!   `Mcp-Session-Id` that `initialize` returned (missing: 400, unknown or ended: 404); an
//!   `initialize` whose params are not `InitializeRequestParams` gets the session's -32602
//!   answer without a session being opened.
//! - GET (legacy): the session's stream for messages related to no request.
//! - DELETE (legacy): ends the session.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde_json::{json, Value};

use super::channel::{Out, SubmitError, Ticket};
use super::headers::{self as mcp, Refusal};
use super::App;
use crate::era::MODERN_VERSIONS;
use crate::wire::jsonrpc;

/// How often an idle SSE stream gets a comment line (keeps intermediaries from closing it).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// An HTTP answer carrying a JSON-RPC error response under `id` (`null` when the request's id
/// is unknown or the message had none).
pub fn refuse(status: StatusCode, id: Value, error: Value) -> Response {
    let body = serde_json::to_vec(&jsonrpc::error_response(id, error)).expect("JSON serializes");
    json_response(status, body, None)
}

/// 503 with `Retry-After` ([`super::RETRY_AFTER_SECS`]) and a JSON-RPC error -32000 (a server
/// error, JSON-RPC 2.0 §5.1) carrying `message`: the server cannot take the request now (it is
/// stopping, or has as many sessions as it may) and a later retry may succeed.
pub fn unavailable(id: Value, message: &str) -> Response {
    let mut response = refuse(StatusCode::SERVICE_UNAVAILABLE, id, error(-32000, message));
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(super::RETRY_AFTER_SECS),
    );
    response
}

/// The id of the JSON-RPC request a POST carries, its body read up to `limit` bytes as the
/// endpoint reads it, for an answer given before the body is handled (503 while stopping);
/// `null` when it cannot be known: not a POST, a body over the limit or not JSON, a
/// notification or a response. JSON-RPC 2.0 section 5: the id is the request's, or `null`
/// when it could not be detected.
pub async fn request_id(request: axum::extract::Request, limit: usize, timeout: Duration) -> Value {
    if request.method() != axum::http::Method::POST {
        return Value::Null;
    }
    match read_body(request.into_body(), limit, timeout).await {
        Ok(body) => id_of_request(&body),
        Err(_) => Value::Null,
    }
}

/// A request's body, read whole: at most `limit` bytes (else 413, at once when its
/// `Content-Length` says so) within `timeout` (else 408 with `Connection: close`, so that a
/// client trickling its body, or announcing more than it sends, cannot hold the connection;
/// RFC 9110 §15.5.9), each answer with a JSON-RPC error (id `null`) saying why.
pub(super) async fn read_body(
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, Response> {
    let error = match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => return Ok(bytes),
        Ok(Err(error)) => error,
        Err(_) => {
            let message = format!(
                "the request body did not arrive within {} s (--body-timeout-secs)",
                timeout.as_secs_f64()
            );
            let mut response = refuse(
                StatusCode::REQUEST_TIMEOUT,
                Value::Null,
                self::error(-32600, &message),
            );
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Err(response);
        }
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            let message =
                format!("the request body is larger than this server's limit of {limit} bytes");
            let e = self::error(-32600, &message);
            return Err(refuse(StatusCode::PAYLOAD_TOO_LARGE, Value::Null, e));
        }
        source = e.source();
    }
    let message = format!("the request body could not be read: {error}");
    Err(refuse(
        StatusCode::BAD_REQUEST,
        Value::Null,
        self::error(-32600, &message),
    ))
}

/// The `id` of the JSON-RPC request in `body` (a message with a `method`); `null` otherwise.
fn id_of_request(body: &[u8]) -> Value {
    /// The two members that tell a request's id; the rest of the message is skipped.
    #[derive(serde::Deserialize)]
    struct Head {
        method: Option<serde::de::IgnoredAny>,
        id: Option<Value>,
    }
    match serde_json::from_slice::<Head>(body) {
        Ok(Head {
            method: Some(_),
            id: Some(id),
        }) => id,
        _ => Value::Null,
    }
}

/// 404 for a path other than `/mcp`, with a JSON-RPC error (-32600) naming the endpoint's path,
/// so a client configured with a wrong URL is told what is wrong.
pub fn no_such_path() -> Response {
    let e = error(-32600, "no MCP endpoint at this path: the endpoint is /mcp");
    refuse(StatusCode::NOT_FOUND, Value::Null, e)
}

/// The methods `/mcp` takes, as its `Allow` header lists them (MCP 2025-11-25, Transports:
/// POST, GET, DELETE).
pub const ALLOWED_METHODS: &str = "GET, POST, DELETE";

/// 405 for an HTTP method `/mcp` does not take, with `Allow` (RFC 9110 §15.5.6) and a JSON-RPC
/// error (-32600) naming the methods it takes (MCP 2025-11-25, Transports: POST, GET, DELETE).
pub fn method_not_allowed() -> Response {
    let e = error(-32600, "the MCP endpoint takes POST, GET and DELETE");
    let mut response = refuse(StatusCode::METHOD_NOT_ALLOWED, Value::Null, e);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(ALLOWED_METHODS));
    response
}

fn refusal(refusal: Refusal, id: Value) -> Response {
    refuse(refusal.status, id, refusal.error)
}

pub(super) fn error(code: i64, message: &str) -> Value {
    json!({"code": code, "message": message})
}

pub(super) fn json_response(status: StatusCode, body: Vec<u8>, session: Option<&str>) -> Response {
    let mut response = (status, Body::from(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    add_session(headers, session);
    response
}

fn add_session(headers: &mut HeaderMap, session: Option<&str>) {
    if let Some(value) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        headers.insert(mcp::SESSION_ID, value);
    }
}

/// Whether `Accept` lists every media type in `wanted` (or a wildcard).
fn accepts(headers: &HeaderMap, wanted: &[&str]) -> bool {
    let accept = mcp::header(headers, header::ACCEPT.as_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    accept.contains("*/*") || wanted.iter().all(|w| accept.contains(w))
}

/// POST /mcp. A body over the limit is answered with 413 and a JSON-RPC error (id `null`)
/// naming the limit in bytes, one that does not arrive in time with 408 ([`read_body`]).
pub async fn post(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let (limit, timeout) = (app.options.max_body_bytes, app.options.body_timeout);
    let body = match read_body(body, limit, timeout).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    if !accepts(&headers, &["application/json", "text/event-stream"]) {
        let e = error(
            -32600,
            "Accept must list application/json and text/event-stream",
        );
        return refuse(StatusCode::NOT_ACCEPTABLE, Value::Null, e);
    }
    let json_body = mcp::header(&headers, header::CONTENT_TYPE.as_str())
        .is_some_and(|c| c.to_ascii_lowercase().starts_with("application/json"));
    if !json_body {
        let e = error(-32600, "Content-Type must be application/json");
        return refuse(StatusCode::UNSUPPORTED_MEDIA_TYPE, Value::Null, e);
    }
    let message: Value = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(e) => {
            // The id, when it can still be read (a body nested too deep, a broken tail), as
            // over stdio: JSON-RPC 2.0 asks for it whenever it can be determined.
            let id = crate::wire::recover::top_level(&body).id;
            let e = error(-32700, &format!("the body is not JSON: {e}"));
            return refuse(StatusCode::BAD_REQUEST, id.unwrap_or(Value::Null), e);
        }
    };
    if let Value::Array(items) = message {
        return super::batch::post(&app, &headers, items).await;
    }
    if let Some((id, reason)) = not_a_message(&message) {
        return refuse(StatusCode::BAD_REQUEST, id, error(-32600, &reason));
    }
    if mcp::is_stateless(&headers, &message) {
        stateless_post(&app, &headers, message, body.to_vec()).await
    } else {
        legacy_post(&app, &headers, message, body.to_vec()).await
    }
}

/// Why a POST body that is JSON is not one valid JSON-RPC message, with the id to answer
/// with (the body's own when it is valid, else `null`); `None` for a valid message. Such a
/// body is answered at once with 400 (MCP 2025-11-25 "Transports: Streamable HTTP": a server
/// that cannot accept the input MUST return an HTTP error status), never passed on: an answer
/// to a request whose `id` is not a string or an integer could never be matched to its POST.
/// The reasons are the stdio transport's ([`jsonrpc::invalid_message`]).
fn not_a_message(message: &Value) -> Option<(Value, String)> {
    jsonrpc::invalid_message(message).map(|(id, reason)| (id, reason.to_owned()))
}

/// A 2026-07-28 message: checked headers, then the shared stateless session.
async fn stateless_post(app: &App, headers: &HeaderMap, message: Value, raw: Vec<u8>) -> Response {
    let id = message.get("id").cloned();
    if message.get("method").is_none() {
        let e = error(-32600, "a 2026-07-28 client sends no JSON-RPC responses");
        return refuse(StatusCode::BAD_REQUEST, id.unwrap_or(Value::Null), e);
    }
    let Some(id) = id else {
        // No client notification is defined over HTTP in 2026-07-28; accepted and ignored.
        return StatusCode::ACCEPTED.into_response();
    };
    if let Err(r) = mcp::check_modern(headers, &message) {
        return refusal(r, id);
    }
    let channel = app.stateless();
    match channel.submit(message, raw, true).await {
        Ok(ticket) => answer(ticket, None, true, id).await,
        Err(_) => closed(id),
    }
}

pub(super) fn closed(id: Value) -> Response {
    let e = error(-32603, "the session has ended");
    refuse(StatusCode::SERVICE_UNAVAILABLE, id, e)
}

/// A 2025-era message: `initialize` opens a session, everything else names one.
async fn legacy_post(app: &App, headers: &HeaderMap, message: Value, raw: Vec<u8>) -> Response {
    let id = message.get("id").cloned();
    if let Err(r) = mcp::check_legacy_version(headers) {
        return refusal(r, id.unwrap_or(Value::Null));
    }
    let method = message.get("method").and_then(Value::as_str);
    let session = match mcp::session_id(headers) {
        Ok(session) => session,
        Err(r) => return refusal(r, id.unwrap_or(Value::Null)),
    };
    if let (Some("initialize"), Some(id), None) = (method, &id, session) {
        // Params the session would refuse open no session: the same -32602 answer as over
        // stdio, with no `Mcp-Session-Id` and nothing stored.
        if let Err(e) = crate::proxy::init_params::check(message.get("params")) {
            return refuse(StatusCode::OK, id.clone(), e);
        }
        let (session_id, channel) = match app.open_session() {
            Ok(opened) => opened,
            Err(full) => {
                let message = format!(
                    "too many sessions: all {} are in use; retry later",
                    full.max
                );
                return unavailable(id.clone(), &message);
            }
        };
        return match channel.submit(message, raw, false).await {
            Ok(ticket) => answer(ticket, Some(&session_id), false, id.clone()).await,
            Err(_) => closed(id.clone()),
        };
    }
    let Some(session) = session else {
        let e = error(
            -32600,
            "the Mcp-Session-Id header is missing (send initialize first)",
        );
        return refuse(StatusCode::BAD_REQUEST, id.unwrap_or(Value::Null), e);
    };
    let Some(channel) = app.session(session) else {
        return ended_session(id.unwrap_or(Value::Null));
    };
    match (method, id) {
        (Some(_), Some(id)) => match channel.submit(message, raw, false).await {
            Ok(ticket) => answer(ticket, None, false, id).await,
            Err(SubmitError::DuplicateId) => {
                let e = error(-32600, &format!("request id {id} is already in flight"));
                refuse(StatusCode::OK, id, e)
            }
            Err(SubmitError::Closed) => closed(id),
        },
        _ => match channel.deliver(super::channel::one_line(raw)).await {
            Ok(()) => {
                if method == Some("notifications/cancelled") {
                    if let Some(request_id) = message.pointer("/params/requestId") {
                        channel.end_cancelled(request_id);
                    }
                }
                StatusCode::ACCEPTED.into_response()
            }
            Err(_) => closed(Value::Null),
        },
    }
}

/// 404 for a session id that is unknown, ended or expired (MCP 2025-11-25 "Transports:
/// Session Management": the client then opens a new session with `initialize`).
pub(super) fn ended_session(id: Value) -> Response {
    let e = error(
        -32600,
        "unknown, ended or expired session: send initialize (without Mcp-Session-Id) to open a new one",
    );
    refuse(StatusCode::NOT_FOUND, id, e)
}

/// The answer to one POSTed request: JSON when the first message for it is its response, else
/// an SSE stream of its messages up to the response; a request the client cancelled ends its
/// stream without one (an empty stream when nothing was sent yet).
async fn answer(mut ticket: Ticket, session: Option<&str>, stateless: bool, id: Value) -> Response {
    let Some(first) = ticket.next().await else {
        let e = error(-32603, "the session ended before answering");
        return refuse(StatusCode::INTERNAL_SERVER_ERROR, id, e);
    };
    if first.is_cancelled() {
        return sse(futures_util::stream::empty(), session);
    }
    if first.last {
        let status = if stateless {
            mcp::status_of_answer(error_code(&first.json))
        } else {
            StatusCode::OK
        };
        return json_response(status, first.json, session);
    }
    let stream =
        futures_util::stream::unfold((Some(first), ticket), |(pending, mut ticket)| async move {
            let out = match pending {
                Some(out) => out,
                None => ticket.next().await?,
            };
            if out.is_cancelled() {
                return None;
            }
            Some((event(out), (None, ticket)))
        });
    sse(stream, session)
}

/// The JSON-RPC error code of a response, when it is an error. A response that starts like a
/// success ([`crate::wire::head::response_head`]: the session's own answers put `result`
/// after `jsonrpc` and `id`) is not read further.
fn error_code(json: &[u8]) -> Option<i64> {
    if std::str::from_utf8(json)
        .ok()
        .and_then(crate::wire::head::response_head)
        .is_some()
    {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Code {
        code: i64,
    }
    #[derive(serde::Deserialize)]
    struct ErrorAnswer {
        error: Option<Code>,
    }
    serde_json::from_slice::<ErrorAnswer>(json)
        .ok()?
        .error
        .map(|e| e.code)
}

pub(super) fn event(out: Out) -> Result<Event, Infallible> {
    let text = String::from_utf8(out.json)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(Event::default().data(text))
}

pub(super) fn sse<S>(stream: S, session: Option<&str>) -> Response
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    let keep_alive = KeepAlive::new().interval(KEEP_ALIVE);
    let mut response = Sse::new(stream).keep_alive(keep_alive).into_response();
    let headers = response.headers_mut();
    // MCP 2026-07-28 "Receiving Messages": reverse proxies must not buffer the stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    add_session(headers, session);
    response
}

/// The legacy session a GET or DELETE names, or the answer refusing it. A request that names
/// no session is 405 for a 2026-07-28 client (no GET stream, no sessions), else 400.
fn named_session(
    app: &App,
    headers: &HeaderMap,
) -> Result<(String, Arc<super::Channel>), Box<Response>> {
    let modern =
        mcp::header(headers, mcp::PROTOCOL_VERSION).is_some_and(|v| MODERN_VERSIONS.contains(&v));
    let session = if modern {
        None
    } else {
        mcp::session_id(headers).map_err(|r| Box::new(refusal(r, Value::Null)))?
    };
    let Some(session) = session else {
        if modern {
            let e = error(
                -32600,
                "a 2026-07-28 client has no session and no GET stream: GET and DELETE with an \
                 Mcp-Session-Id are for clients of the 2025 revisions; POST each request \
                 (subscriptions/listen for messages related to no request)",
            );
            return Err(Box::new(refuse(
                StatusCode::METHOD_NOT_ALLOWED,
                Value::Null,
                e,
            )));
        }
        let e = error(-32600, "the Mcp-Session-Id header is missing");
        return Err(Box::new(refuse(StatusCode::BAD_REQUEST, Value::Null, e)));
    };
    if let Err(r) = mcp::check_legacy_version(headers) {
        return Err(Box::new(refusal(r, Value::Null)));
    }
    match app.session(session) {
        Some(channel) => Ok((session.to_owned(), channel)),
        None => Err(Box::new(ended_session(Value::Null))),
    }
}

/// GET /mcp: the session's stream of messages related to no request, until the session ends,
/// the client goes away or the server shuts down.
pub async fn get(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if !accepts(&headers, &["text/event-stream"]) {
        let e = error(-32600, "Accept must list text/event-stream");
        return refuse(StatusCode::NOT_ACCEPTABLE, Value::Null, e);
    }
    let (_, channel) = match named_session(&app, &headers) {
        Ok(found) => found,
        Err(response) => return *response,
    };
    let Some(rx) = channel.open_stream() else {
        let e = error(-32600, "this session already has a GET stream open");
        return refuse(StatusCode::CONFLICT, Value::Null, e);
    };
    let closing = app.closing_signal();
    let stream = futures_util::stream::unfold((rx, closing), |(mut rx, closing)| async move {
        let out = tokio::select! {
            out = rx.recv() => out?,
            _ = super::closed(closing.clone()) => return None,
        };
        Some((event(out), (rx, closing)))
    });
    sse(stream, None)
}

/// DELETE /mcp: ends the named session (its servers stop once its requests are answered).
pub async fn delete(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    match named_session(&app, &headers) {
        Ok((session, _)) => {
            app.end_session(&session);
            StatusCode::OK.into_response()
        }
        Err(response) => *response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requests_id_is_found_and_anything_else_is_null() {
        let id = |body: &str| id_of_request(body.as_bytes());
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":"a-1","method":"ping"}"#), "a-1");
        assert_eq!(id(r#"{"method":"tools/call","params":{"id":9},"id":7}"#), 7);
        for unknown in [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method""#,
            r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#,
            "",
        ] {
            assert_eq!(id(unknown), Value::Null, "{unknown}");
        }
    }
}
