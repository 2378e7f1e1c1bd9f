//! The `Host` check of a loopback bind (DNS rebinding protection) against the in-memory fake
//! session of [`super::tests`], and its absence on other binds.

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::tests::{defaults, json_of, start, start_at};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

fn init() -> Value {
    serde_json::from_str(INIT).unwrap()
}

#[tokio::test]
async fn a_loopback_bind_answers_only_requests_naming_this_machine() {
    let server = start(defaults()).await;
    let port = server
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let cases = [
        (format!("evil.example:{port}"), 421),
        ("evil.example".to_owned(), 421),
        (format!("127.0.0.1.nip.io:{port}"), 421),
        (format!("localhost:{port}"), 200),
        (format!("[::1]:{port}"), 200),
        (format!("127.0.0.1:{port}"), 200),
    ];
    for (host, status) in cases {
        let post = server.post(&init(), None).header("host", &host);
        let response = post.send().await.unwrap();
        assert_eq!(response.status(), status, "{host}");
        if status == 421 {
            let answer = json_of(response).await;
            assert_eq!(answer["id"], Value::Null);
            assert_eq!(answer["error"]["code"], -32600);
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("Host") && message.contains("loopback"),
                "{message}"
            );
        }
    }
}

/// The status line of a request written by hand to the endpoint at `url`.
async fn raw_status(url: &str, head: &str) -> String {
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{head}\r\ncontent-type: application/json\r\naccept: application/json, \
         text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{INIT}",
        INIT.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    answer.lines().next().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_missing_repeated_or_overridden_host_is_refused_on_a_loopback_bind() {
    let server = start(defaults()).await;
    let url = &server.url;
    let missing = raw_status(url, "POST /mcp HTTP/1.1").await;
    assert!(missing.contains(" 400 "), "{missing}");
    let twice = raw_status(
        url,
        "POST /mcp HTTP/1.1\r\nhost: localhost\r\nhost: localhost",
    )
    .await;
    assert!(twice.contains(" 400 "), "{twice}");
    let absolute = "POST http://evil.example/mcp HTTP/1.1\r\nhost: localhost";
    let target = raw_status(url, absolute).await;
    assert!(target.contains(" 421 "), "{target}");
    let old = raw_status(url, "POST /mcp HTTP/1.0").await;
    assert!(old.contains(" 200 "), "HTTP/1.0 has no Host: {old}");
}

/// Two `Origin` headers: only the first was checked, so a foreign second one got through
/// (200); a request with more than one is refused as a bad origin is (403).
#[tokio::test]
async fn a_repeated_origin_is_refused_like_a_foreign_one() {
    let server = start(defaults()).await;
    let url = &server.url;
    let head = "POST /mcp HTTP/1.1\r\nhost: localhost";
    let one = raw_status(url, &format!("{head}\r\norigin: http://localhost")).await;
    assert!(one.contains(" 200 "), "{one}");
    for second in ["https://evil.example", "http://localhost"] {
        let twice = format!("{head}\r\norigin: http://localhost\r\norigin: {second}");
        let status = raw_status(url, &twice).await;
        assert!(status.contains(" 403 "), "{second}: {status}");
    }
}

#[tokio::test]
async fn a_bind_that_is_not_loopback_does_not_check_host() {
    let mut options = defaults();
    options.auth_token = Some("s3cret".into());
    let server = start_at("0.0.0.0:0", options).await;
    let post = server
        .post(&init(), None)
        .bearer_auth("s3cret")
        .header("host", "mcp.example.com");
    assert_eq!(post.send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_body_too_deep_to_parse_is_answered_under_its_own_id() {
    // Over stdio the id of a message nested deeper than the parser's limit is read off the
    // text (`wire::recover`); the HTTP endpoint answers such a body under its id as well.
    let server = start(defaults()).await;
    let session = server.initialize().await;
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":"deep-1","method":"tools/call","params":{{"name":"echo","arguments":{{"x":{}1{}}}}}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let response = server
        .post(&Value::Null, Some(&session))
        .body(deep)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let answer = json_of(response).await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], "deep-1", "{answer}");
}
