//! The HTTP layer's limits against the in-memory fake session of [`super::tests`]: idle
//! sessions expire, the session cap, answers while stopping, the body limit, and the
//! protocol version error of a newer client, answers for a wrong path or method, and the
//! `--http` address syntax.

use std::time::Duration;

use serde_json::{json, Value};

use super::tests::{defaults, init_message, json_of, modern, request, start, Server};

/// Polls `session` with `echo` until it is answered with `status` (at most ~10 s).
async fn wait_for_status(server: &Server, session: &str, status: u16) -> reqwest::Response {
    let echo = request(json!(1), "echo", json!({}));
    for _ in 0..200 {
        let response = server.post(&echo, Some(session)).send().await.unwrap();
        if response.status() == status {
            return response;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("session never answered {status}");
}

fn echo_status(response: &reqwest::Response) -> u16 {
    response.status().as_u16()
}

#[tokio::test]
async fn an_idle_session_expires_and_its_id_gets_404_a_busy_one_stays() {
    let mut options = defaults();
    options.session_idle = Duration::from_millis(300);
    let server = start(options).await;
    let idle = server.initialize().await;
    let busy = server.initialize().await;
    let stream = server.get_stream(&busy).await;
    assert_eq!(stream.status(), 200);
    // Nothing more is asked of `idle`: it is ended after its idle time.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let echo = request(json!(5), "echo", json!({}));
    let gone = server.post(&echo, Some(&idle)).send().await.unwrap();
    assert_eq!(gone.status(), 404);
    let error = json_of(gone).await;
    assert_eq!(error["id"], 5);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("expired") && message.contains("initialize"),
        "{message}"
    );
    // The session with its GET stream open stays; a new initialize opens a fresh session.
    let kept = server.post(&echo, Some(&busy)).send().await.unwrap();
    assert_eq!(echo_status(&kept), 200);
    let again = server.initialize().await;
    assert_ne!(again, idle);
    drop(stream);
}

#[tokio::test]
async fn beyond_the_cap_the_oldest_idle_session_goes_then_initialize_gets_503() {
    let mut options = defaults();
    options.max_sessions = 2;
    let server = start(options).await;
    let first = server.initialize().await;
    let _first_stream = server.get_stream(&first).await;
    let second = server.initialize().await;
    // `second` is idle: it makes room for `third`.
    let third = server.initialize().await;
    wait_for_status(&server, &second, 404).await;
    let _third_stream = server.get_stream(&third).await;
    // Both live sessions have their GET stream open: no room.
    let init = init_message(json!(9));
    let refused = server.post(&init, None).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "5");
    assert!(refused.headers().get("mcp-session-id").is_none());
    let error = json_of(refused).await;
    assert_eq!(error["id"], 9);
    assert_eq!(error["error"]["code"], -32000);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("too many sessions") && message.contains('2'),
        "{message}"
    );
    let echo = request(json!(1), "echo", json!({}));
    for live in [&first, &third] {
        let answer = server.post(&echo, Some(live)).send().await.unwrap();
        assert_eq!(answer.status(), 200);
    }
}

#[tokio::test]
async fn while_stopping_new_requests_get_503_and_the_call_in_flight_finishes() {
    let mut server = start(defaults()).await;
    let session = server.initialize().await;
    let late = request(json!("late-1"), "late", json!({}));
    let in_flight = tokio::spawn(server.post(&late, Some(&session)).send());
    for _ in 0..200 {
        if server
            .seen
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|m| m["method"] == "late")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.stop.take().unwrap().send(()).unwrap();
    // New connections are still accepted, and answered with 503 until the call is done.
    let fresh = || {
        reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap()
    };
    let init = init_message(json!(0));
    let mut refused = None;
    for _ in 0..200 {
        let response = fresh()
            .post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(init.to_string())
            .send()
            .await
            .expect("the listener still accepts connections while stopping");
        if response.status() == 503 {
            refused = Some(response);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = refused.expect("a request while stopping gets 503");
    assert_eq!(refused.headers()["retry-after"], "5");
    assert_eq!(refused.headers()["content-type"], "application/json");
    let error = json_of(refused).await;
    assert_eq!(error["id"], 0, "the request's id: {error}");
    assert_eq!(error["error"]["code"], -32000);
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("shutting down"));
    // Where the id cannot be known, it is null: a body that is not JSON, a notification.
    for body in [
        "{\"id\": 7, \"method\"",
        r#"{"jsonrpc": "2.0", "method": "notifications/x"}"#,
    ] {
        let response = fresh()
            .post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 503);
        assert_eq!(json_of(response).await["id"], Value::Null, "{body}");
    }
    server.release.notify_one();
    let answer = in_flight.await.unwrap().unwrap();
    assert_eq!(answer.status(), 200);
    let answer = json_of(answer).await;
    assert_eq!(answer["id"], "late-1");
    assert!(answer["result"].is_object(), "{answer}");
    tokio::time::timeout(Duration::from_secs(20), &mut server.task)
        .await
        .expect("the server stops once the call is answered")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413_with_a_json_rpc_error_naming_it() {
    let mut options = defaults();
    options.max_body_bytes = 1000;
    let server = start(options).await;
    let big = request(json!(1), "echo", json!({"pad": "x".repeat(5000)}));
    let response = server.post(&big, None).send().await.unwrap();
    assert_eq!(response.status(), 413);
    assert_eq!(response.headers()["content-type"], "application/json");
    let error = json_of(response).await;
    assert_eq!(error["id"], Value::Null);
    assert_eq!(error["error"]["code"], -32600);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("1000 bytes"), "{message}");
}

#[tokio::test]
async fn a_newer_clients_version_gets_the_unsupported_version_error_with_our_versions() {
    let server = start(defaults()).await;
    let (mut body, mut headers) = modern(json!(4), "tools/list", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    headers[0].1 = "2099-01-01".into();
    let response = server.post_modern(&(body, headers)).send().await.unwrap();
    assert_eq!(response.status(), 400);
    let error = json_of(response).await;
    assert_eq!(error["id"], 4);
    // The same error object as over stdio.
    assert_eq!(
        error["error"],
        crate::era::unsupported_version("2099-01-01")
    );
    assert_eq!(error["error"]["data"]["supported"][0], "2026-07-28");
    assert!(
        server.seen.0.lock().unwrap().is_empty(),
        "refused before any session"
    );
}

/// A request its client cancels (`notifications/cancelled`, MCP 2025-11-25 "Utilities:
/// Cancellation") gets no answer, and the POST that carried it ends: an event stream with no
/// message. The session is then idle again, so it expires like any other.
#[tokio::test]
async fn a_cancelled_requests_post_ends_unanswered_and_its_session_can_expire() {
    let mut options = defaults();
    options.session_idle = Duration::from_millis(300);
    let server = start(options).await;
    let session = server.initialize().await;
    let hang = request(json!(78), "hang", json!({}));
    let pending = tokio::spawn(server.post(&hang, Some(&session)).send());
    let seen_hang = || server.seen.0.lock().unwrap().iter().any(|m| m["id"] == 78);
    for _ in 0..200 {
        if seen_hang() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen_hang(), "the session never got the request");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 78, "reason": "no longer needed"}});
    let accepted = server.post(&cancel, Some(&session)).send().await.unwrap();
    assert_eq!(accepted.status(), 202);
    let ended = tokio::time::timeout(Duration::from_secs(20), pending)
        .await
        .expect("the cancelled request's POST never ended")
        .unwrap()
        .unwrap();
    assert_eq!(ended.status(), 200);
    let kind = ended.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let body = ended.text().await.unwrap();
    assert!(!body.contains("data:"), "no answer is sent: {body:?}");
    // Nothing is pending any more: the session idles out.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let echo = request(json!(79), "echo", json!({}));
    let gone = server.post(&echo, Some(&session)).send().await.unwrap();
    assert_eq!(gone.status(), 404);
}

#[tokio::test]
async fn a_wrong_path_or_method_gets_its_status_with_a_json_rpc_error_saying_why() {
    let server = start(defaults()).await;
    let other = server.url.replace("/mcp", "/other");
    let response = server.http.post(&other).send().await.unwrap();
    assert_eq!(response.status(), 404);
    let error = json_of(response).await;
    assert_eq!(error["error"]["code"], -32600);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("/mcp"), "{message}");

    let response = server.http.put(&server.url).send().await.unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "GET, POST, DELETE");
    let error = json_of(response).await;
    assert!(error["error"]["message"].as_str().unwrap().contains("POST"));

    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = server
            .http
            .request(method, &server.url)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405);
        let error = json_of(response).await;
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("no session"), "{message}");
    }
}

#[test]
fn the_listen_address_is_an_ip_and_port_or_localhost_and_port() {
    use super::parse_listen_addr;
    let parsed = |text: &str| parse_listen_addr(text).map(|a| a.to_string());
    assert_eq!(parsed("127.0.0.1:8080").unwrap(), "127.0.0.1:8080");
    assert_eq!(parsed("[::1]:0").unwrap(), "[::1]:0");
    assert_eq!(parsed("localhost:18439").unwrap(), "127.0.0.1:18439");
    assert_eq!(parsed("LocalHost:1").unwrap(), "127.0.0.1:1");
    for wrong in [
        "localhost",
        "localhost:99999",
        "example.com:80",
        "8080",
        ":80",
    ] {
        let message = parse_listen_addr(wrong).unwrap_err();
        assert!(message.contains("localhost:8080"), "{wrong}: {message}");
    }
}

/// An `initialize` without the params MCP 2025-11-25 requires (`InitializeRequestParams`) gets
/// -32602 naming the missing member, and opens no session: no `Mcp-Session-Id`, no session fed
/// or counted against `max_sessions`, and an invented id is still an unknown session.
#[tokio::test]
async fn an_initialize_missing_required_params_opens_no_session() {
    let mut options = defaults();
    options.max_sessions = 1;
    let server = start(options).await;
    let bare = json!({"jsonrpc": "2.0", "id": "bare", "method": "initialize"});
    let mut no_info = init_message(json!("no-info"));
    no_info["params"]
        .as_object_mut()
        .unwrap()
        .remove("clientInfo");
    let mut no_version = init_message(json!("no-version"));
    no_version["params"]
        .as_object_mut()
        .unwrap()
        .remove("protocolVersion");
    for (init, named) in [
        (
            bare,
            "missing `protocolVersion`, `capabilities`, `clientInfo`",
        ),
        (no_info, "missing `clientInfo`"),
        (no_version, "missing `protocolVersion`"),
    ] {
        let response = server.post(&init, None).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(
            response.headers().get("mcp-session-id").is_none(),
            "{named}: {:?}",
            response.headers()
        );
        let answer = json_of(response).await;
        assert_eq!(answer["id"], init["id"], "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{message}");
    }
    assert!(
        server.seen.0.lock().unwrap().is_empty(),
        "a session was fed"
    );
    let echo = request(json!(1), "echo", json!({}));
    let invented = "0123456789abcdef0123456789abcdef";
    let unknown = server.post(&echo, Some(invented)).send().await.unwrap();
    assert_eq!(unknown.status(), 404);
    let answer = json_of(unknown).await;
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("unknown, ended or expired session"),
        "{message}"
    );
    // The one session allowed is still free.
    let session = server.initialize().await;
    let ok = server.post(&echo, Some(&session)).send().await.unwrap();
    assert_eq!(ok.status(), 200);
}

/// `HEAD /mcp` ran the GET handler (400 "Mcp-Session-Id missing"): it is a method the
/// endpoint does not take, 405 with `Allow`.
#[tokio::test]
async fn head_gets_405_with_allow() {
    let server = start(defaults()).await;
    let response = server.http.head(&server.url).send().await.unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "GET, POST, DELETE");
}

/// A session id outside visible ASCII was reported as a missing header; it is said to be
/// no valid session id, on POST (single and batch), GET and DELETE.
#[tokio::test]
async fn a_session_id_outside_visible_ascii_is_said_to_be_invalid_not_missing() {
    let server = start(defaults()).await;
    let bad = reqwest::header::HeaderValue::from_bytes("sessi\u{f6}n".as_bytes()).unwrap();
    let echo = request(json!(1), "echo", json!({}));
    let batch = json!([request(json!(2), "echo", json!({}))]);
    let requests = [
        server.post(&echo, None),
        server.post(&batch, None),
        server.post(&init_message(json!(3)), None),
        server
            .http
            .get(&server.url)
            .header("accept", "text/event-stream"),
        server.http.delete(&server.url),
    ];
    for request in requests {
        let request = request.header("mcp-session-id", bad.clone());
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 400);
        let answer = json_of(response).await;
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("not a valid session id"), "{message}");
    }
    // Two session ids: which one is meant is a guess, so neither is taken (the first was).
    let twice = server
        .post(&echo, None)
        .header("mcp-session-id", "a")
        .header("mcp-session-id", "b");
    let response = twice.send().await.unwrap();
    assert_eq!(response.status(), 400);
    let answer = json_of(response).await;
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("more than one Mcp-Session-Id"),
        "{message}"
    );
}

/// `--max-body-bytes 0` was accepted (every POST then got 413); it is refused at start like
/// `--max-sessions 0`, and so is `--body-timeout-secs 0`.
#[test]
fn zero_limits_are_refused_at_start() {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        http: super::HttpArgs,
    }
    let parse = |flag: &str, value: &str| {
        <Cli as clap::Parser>::try_parse_from(["x", "--http", "127.0.0.1:0", flag, value])
    };
    for flag in ["--max-body-bytes", "--max-sessions", "--body-timeout-secs"] {
        let error = parse(flag, "0").err().unwrap();
        assert_eq!(
            error.kind(),
            clap::error::ErrorKind::ValueValidation,
            "{flag}"
        );
        assert!(parse(flag, "1").is_ok(), "{flag}");
    }
}
