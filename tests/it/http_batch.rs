//! JSON-RPC batches POSTed to `serve --http` (MCP 2025-03-26 "Transports: Streamable HTTP"):
//! answered in a 2025-03-26 session as one JSON array, 202 or an SSE stream, refused in later
//! revisions.
use crate::common::*;
use crate::http_serve::{HttpProxy, ACCEPT, JSON_TYPE};

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

/// Opens the GET stream of `session` and reads its head, so that the messages related to no
/// request (a list change) go there from now on, not into a POST's answer; keep it open.
fn get_stream(proxy: &HttpProxy, session: &str) -> TcpStream {
    let mut stream = TcpStream::connect(&proxy.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n",
        proxy.addr
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    stream
}

/// The JSON messages of an SSE body (one `data:` line each).
fn sse_messages(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap_or_else(|e| panic!("{e}: {data}")))
        .collect()
}

/// A proxy serving the fixture server, and a 2025-03-26 session with its GET stream open (so
/// that a message related to no request never lands in a POST's answer).
fn batch_session() -> (tempfile::TempDir, HttpProxy, String, TcpStream) {
    let (dir, config) = write_config(&fixture_server("fx", &[], ""));
    let proxy = HttpProxy::start(&config, &[], &[]);
    let session = proxy.session_of_version("2025-03-26");
    let stream = get_stream(&proxy, &session);
    (dir, proxy, session, stream)
}

/// A `tools/call` request of `name` with `arguments` under `id`.
fn call_request(id: &str, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
}

/// MCP 2025-03-26 "Transports: Streamable HTTP" lets a POST body batch requests and
/// notifications (later revisions removed batches), and the stdio side answers them in a
/// 2025-03-26 session: `serve --http` refused every batch with 400. Now, in a 2025-03-26
/// session: requests and a notification → one JSON array of the responses; notifications only
/// → 202 with no body; `initialize` in a batch → 400. A 2025-11-25 session still gets 400.
#[test]
fn a_batch_is_answered_in_a_2025_03_26_session_and_refused_in_later_ones() {
    let (_dir, proxy, session, _stream) = batch_session();
    let headers = [ACCEPT, JSON_TYPE, ("Mcp-Session-Id", session.as_str())];
    let note = json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"});
    let batch = json!([
        call_request("b1", "echo", json!({"text": "one"})),
        {"jsonrpc": "2.0", "id": "b2", "method": "ping"},
        note,
        {"jsonrpc": "2.0", "id": "b3", "method": "tools/list"}
    ]);
    let (status, head, body) = proxy.raw_with_head("POST", &headers, &batch.to_string());
    assert_eq!(status, 200, "{head}\n{body}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("content-type: application/json"), "{head}");
    let answers: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let answers = answers
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {body}"));
    let mut ids: Vec<&str> = answers.iter().map(|a| a["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["b1", "b2", "b3"], "{body}");
    for a in answers {
        match a["id"].as_str().unwrap() {
            "b1" => assert_eq!(a["result"]["structuredContent"]["content"], "one", "{a}"),
            "b2" => assert_eq!(a["result"], json!({}), "{a}"),
            _ => assert!(a["result"]["tools"].is_array(), "{a}"),
        }
    }
    let notes = json!([note, note]).to_string();
    let (status, head, body) = proxy.raw_with_head("POST", &headers, &notes);
    assert_eq!(status, 202, "{head}\n{body}");
    assert!(body.is_empty(), "no body: {body:?}");
    let init = json!([{"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {}}]);
    let (status, body) = proxy.raw("POST", &headers, &init.to_string());
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("cannot be part of a batch"), "{body}");
    let later = proxy.session_of_version("2025-11-25");
    let ping = json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]).to_string();
    let later = [ACCEPT, JSON_TYPE, ("Mcp-Session-Id", later.as_str())];
    let (status, body) = proxy.raw("POST", &later, &ping);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("no batches"), "{body}");
    let (status, _) = proxy.stop();
    assert!(status.success());
}

/// A batch whose request reports progress is answered, as a single such request is, with an
/// SSE stream: the progress, then one response per request of the batch.
#[test]
fn a_batch_with_progress_is_answered_with_an_sse_stream() {
    let (_dir, proxy, session, _stream) = batch_session();
    let headers = [ACCEPT, JSON_TYPE, ("Mcp-Session-Id", session.as_str())];
    let mut progress = call_request("p1", "progress", json!({"steps": 2}));
    progress["params"]["_meta"] = json!({"progressToken": "tok"});
    let batch = json!([progress, {"jsonrpc": "2.0", "id": "p2", "method": "ping"}]);
    let (status, head, body) = proxy.raw_with_head("POST", &headers, &batch.to_string());
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(
        head.to_ascii_lowercase().contains("text/event-stream"),
        "{head}"
    );
    let messages = sse_messages(&body);
    let steps = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress");
    let tokens: Vec<&Value> = steps.map(|m| &m["params"]["progressToken"]).collect();
    assert_eq!(tokens, [&json!("tok"), &json!("tok")], "{body}");
    let mut ids: Vec<&str> = messages.iter().filter_map(|m| m["id"].as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["p1", "p2"], "one response each: {body}");
    let (status, _) = proxy.stop();
    assert!(status.success());
}
