//! CORS for the allowed browser origins: a preflight gets 204 with what MCP needs, even on a
//! bind that requires a token; every answer to an allowed origin (JSON, SSE, refusals) names
//! it; a foreign origin stays refused with 403 and gets no CORS headers.

use serde_json::json;

use super::tests::{defaults, init_message, request, start, Server};

const APP: &str = "https://app.example.com";
const TOKEN: &str = "s3cret";

async fn guarded() -> Server {
    let mut options = defaults();
    options.auth_token = Some(TOKEN.into());
    options.allowed_origins = vec![APP.into()];
    start(options).await
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .map_or("", |v| v.to_str().unwrap())
}

async fn preflight(server: &Server, origin: &str) -> reqwest::Response {
    server
        .http
        .request(reqwest::Method::OPTIONS, &server.url)
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "content-type,mcp-protocol-version,mcp-session-id",
        )
        .send()
        .await
        .unwrap()
}

/// A preflight got 405 (and, on a token-protected bind, would have needed the token a browser
/// never sends on one): no page could call the endpoint.
#[tokio::test]
async fn a_preflight_from_an_allowed_origin_gets_204_with_what_mcp_needs() {
    let server = guarded().await;
    // A page on this machine that was not named gets no CORS headers: it cannot read answers.
    let unnamed = preflight(&server, "http://localhost:5173").await;
    assert!(
        unnamed
            .headers()
            .get("access-control-allow-origin")
            .is_none(),
        "{:?}",
        unnamed.headers()
    );
    for origin in [APP] {
        let response = preflight(&server, origin).await;
        assert_eq!(response.status(), 204, "{origin}");
        assert_eq!(header(&response, "access-control-allow-origin"), origin);
        let methods = header(&response, "access-control-allow-methods").to_ascii_uppercase();
        for method in ["GET", "POST", "DELETE"] {
            assert!(methods.contains(method), "{methods}");
        }
        let allowed = header(&response, "access-control-allow-headers").to_ascii_lowercase();
        for name in [
            "content-type",
            "accept",
            "authorization",
            "mcp-protocol-version",
            "mcp-session-id",
            "last-event-id",
            "mcp-method",
            "mcp-name",
        ] {
            assert!(allowed.contains(name), "{name}: {allowed}");
        }
        let vary = header(&response, "vary").to_ascii_lowercase();
        assert!(vary.contains("origin"), "{vary}");
        assert_eq!(header(&response, "access-control-max-age"), "600");
        assert_eq!(header(&response, "allow"), "GET, POST, DELETE");
        assert!(response.bytes().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_foreign_origin_is_refused_403_with_no_cors_headers_preflight_or_not() {
    let server = guarded().await;
    let response = preflight(&server, "https://evil.example").await;
    assert_eq!(response.status(), 403);
    assert_eq!(header(&response, "access-control-allow-origin"), "");
    let post = server
        .post(&init_message(json!(0)), None)
        .bearer_auth(TOKEN)
        .header("origin", "https://evil.example");
    let response = post.send().await.unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(header(&response, "access-control-allow-origin"), "");
}

/// The answers had no `Access-Control-Allow-Origin`: a page could not read them, nor the
/// session id.
#[tokio::test]
async fn answers_to_an_allowed_origin_name_it_and_expose_the_session_id() {
    let server = guarded().await;
    let init = server
        .post(&init_message(json!(0)), None)
        .bearer_auth(TOKEN)
        .header("origin", APP);
    let response = init.send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "access-control-allow-origin"), APP);
    let exposed = header(&response, "access-control-expose-headers").to_ascii_lowercase();
    assert!(exposed.contains("mcp-session-id"), "{exposed}");
    assert!(exposed.contains("mcp-protocol-version"), "{exposed}");
    assert!(header(&response, "vary")
        .to_ascii_lowercase()
        .contains("origin"));
    let session = header(&response, "mcp-session-id").to_owned();

    // An SSE answer (progress comes first) and the GET stream carry it as well.
    let slow = request(json!(1), "slow", json!({"_meta": {"progressToken": "p"}}));
    let post = server.post(&slow, Some(&session)).bearer_auth(TOKEN);
    let response = post.header("origin", APP).send().await.unwrap();
    assert!(header(&response, "content-type").starts_with("text/event-stream"));
    assert_eq!(header(&response, "access-control-allow-origin"), APP);
    let get = server.http.get(&server.url).bearer_auth(TOKEN);
    let get = get
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("origin", APP);
    let response = get.send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "access-control-allow-origin"), APP);
    drop(response);

    // A refusal too, with its challenge readable.
    let post = server.post(&init_message(json!(2)), None);
    let response = post.header("origin", APP).send().await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(header(&response, "access-control-allow-origin"), APP);
    let exposed = header(&response, "access-control-expose-headers").to_ascii_lowercase();
    assert!(exposed.contains("www-authenticate"), "{exposed}");

    // A client that is not a browser sends no Origin and gets no CORS headers.
    let post = server
        .post(&init_message(json!(3)), None)
        .bearer_auth(TOKEN);
    let response = post.send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "access-control-allow-origin"), "");
}
