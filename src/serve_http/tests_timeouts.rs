//! Slow clients over a real socket: a request's head or body that does not arrive in time
//! loses its connection (slowloris), so such clients cannot tie the endpoint up.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::tests::{defaults, start, Server};
use super::HttpOptions;

/// How long a test waits for the server to close a connection before failing.
const PATIENCE: Duration = Duration::from_secs(10);

fn short(mut options: HttpOptions) -> HttpOptions {
    options.body_timeout = Duration::from_millis(300);
    options.header_timeout = Duration::from_millis(300);
    options
}

/// Writes `sent` to the endpoint and keeps the connection open without sending more; returns
/// what the server sent before closing it (a failure when it is still open after
/// [`PATIENCE`]).
async fn stall(server: &Server, sent: &str) -> String {
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(sent.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut answer)).await;
    assert!(
        read.is_ok(),
        "the connection is still open; got so far: {answer:?}"
    );
    String::from_utf8_lossy(&answer).into_owned()
}

const HEAD: &str = "POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
                    accept: application/json, text/event-stream\r\ncontent-length: 1000\r\n";

/// Headers plus 5 of 1000 announced bytes kept a connection open forever.
#[tokio::test]
async fn a_body_that_stops_arriving_gets_408_and_the_connection_closes() {
    let server = start(short(defaults())).await;
    let answer = stall(&server, &format!("{HEAD}\r\n{{\"js")).await;
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let error: Value = serde_json::from_str(body).unwrap();
    assert_eq!(error["id"], Value::Null);
    assert_eq!(error["error"]["code"], -32600);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("--body-timeout-secs"), "{message}");
}

/// A request head sent in part, or none at all, was waited for forever (axum::serve gives
/// hyper no timer).
#[tokio::test]
async fn a_head_that_stops_arriving_loses_its_connection() {
    let server = start(short(defaults())).await;
    let answer = stall(&server, "POST /mcp HTTP/1.1\r\nhost: localhost\r\n").await;
    assert_eq!(answer, "", "hyper closes without an answer");
    assert_eq!(stall(&server, "").await, "");
}

/// On a token-protected bind, a client without the token that announces a body it never sends
/// is answered 401 and loses its connection too: the body is not waited for.
#[tokio::test]
async fn without_the_token_a_stalled_body_is_not_waited_for() {
    let mut options = defaults();
    options.auth_token = Some("s3cret-s3cret-s3cret".into());
    let server = start(options).await;
    let answer = stall(&server, &format!("{HEAD}\r\n{{\"js")).await;
    assert!(answer.starts_with("HTTP/1.1 401 "), "{answer}");
}

/// A body sent in parts within the time is read whole as before.
#[tokio::test]
async fn a_body_sent_in_parts_in_time_is_served() {
    let mut options = defaults();
    options.body_timeout = Duration::from_secs(5);
    let server = start(options).await;
    let body = super::tests::init_message(Value::from(1)).to_string();
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = HEAD.replace("1000", &body.len().to_string());
    let (first, rest) = body.split_at(10);
    let head = format!("{head}connection: close\r\n\r\n{first}");
    stream.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stream.write_all(rest.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
}
