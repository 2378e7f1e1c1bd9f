//! A Python SDK server (mcp 2.3.0) that serves both eras over stdio and asks the client mid-call
//! through the SDK's classic API (`create_message`, `elicit`, `list_roots`), which the SDK
//! refuses in the 2026-07-28 era: the proxy opens local servers with `initialize`, so such a
//! server runs legacy and its requests reach clients of both eras.
use super::eras::{ask, callback_methods, envelope, era_client, good_meta};
use crate::common;
use common::*;
use serde_json::{json, Value};
use std::time::Duration;

/// The server table of tests/fixtures/sdk_stdio_server.py named `name`.
pub(super) fn sdk_stdio_server(name: &str, extra: &str) -> String {
    let script = root().join("tests/fixtures/sdk_stdio_server.py");
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = [{:?}]\n{extra}\n",
        python().display().to_string(),
        script.display().to_string()
    )
}

/// The content of the envelope of each step of an `era_client` run, `mode` naming the client.
fn contents(mode: &str, out: &Value) -> Vec<String> {
    let steps = out["steps"].as_array().unwrap();
    steps
        .iter()
        .map(|step| {
            let env = envelope(step);
            assert_eq!(env["status"], "ok", "{mode}: {env}");
            env["content"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn a_dual_era_sdk_server_samples_elicits_and_lists_roots_for_both_client_eras() {
    let (_dir, config) = write_config(&sdk_stdio_server("py", ""));
    let text = ok_stdout(&check(&config));
    assert!(
        table_row(&text, "py ").starts_with("py ready 2025-11-25 (legacy) "),
        "{text}"
    );
    let plan = json!([
        {"op": "call", "name": "sample", "arguments": {"prompt": "p"}},
        {"op": "call", "name": "ask", "arguments": {}},
        {"op": "call", "name": "roots", "arguments": {}},
    ]);
    for mode in ["legacy", "2026-07-28"] {
        let out = era_client(mode, &config, &plan);
        let content = contents(mode, &out);
        assert_eq!(content[0], "sampled: sampled: fixed answer", "{mode}");
        assert_eq!(content[1], "elicited: accept {\"ok\":true}", "{mode}");
        assert_eq!(content[2], "roots: file:///tmp", "{mode}");
        let asked = callback_methods(&out);
        assert_eq!(
            asked,
            ["sampling/createMessage", "elicitation/create", "roots/list"],
            "{mode}"
        );
    }
}

/// A legacy client's call of `roots` whose `roots/list` request it answers with `result`: the
/// call's envelope.
fn legacy_roots_answered_with(p: &mut RawProxy, result: Value) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": "r1", "method": "tools/call",
        "params": {"name": "roots", "arguments": {}}});
    p.send(&call);
    loop {
        let msg = p.recv(Duration::from_secs(60));
        if msg["id"] == "r1" && msg.get("method").is_none() {
            return envelope_of(&msg);
        }
        if let (Some(method), Some(id)) = (msg["method"].as_str(), msg.get("id")) {
            let answer = if method == "roots/list" {
                result.clone()
            } else {
                json!({})
            };
            p.send(&json!({"jsonrpc": "2.0", "id": id, "result": answer}));
        }
    }
}

/// Asserts that `env` is the error of a server told at once that the client's result was not
/// an object (not a `timeout`, nor whatever the server made of waiting for its answer).
fn assert_refused_at_once(env: &Value) {
    assert_ne!(env["status"], "timeout", "{env}");
    assert_eq!(env["status"], "error", "{env}");
    let content = env["content"].as_str().unwrap();
    assert!(
        content.contains("-32603: the client's result is not a JSON object"),
        "{env}"
    );
}

/// A client's answer that is not a JSON object (every MCP `Result` is one) reaches the server
/// as a -32603 error, so its tool fails at once: before, the SDK server dropped the answer and
/// waited until the tool timeout (`timeout`, retryable). Both client eras: a legacy client's
/// response, and a 2026-07-28 client's `inputResponses` entry.
#[test]
fn a_client_answer_that_is_not_an_object_fails_the_servers_request_at_once() {
    let (_dir, config) = write_config(&sdk_stdio_server("py", "tool_timeout_sec = 20"));
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-11-25");
    let env = legacy_roots_answered_with(&mut p, json!("garbage"));
    assert_refused_at_once(&env);
    finish_session(p);

    let mut p = RawProxy::start(&config, &[]);
    let mut meta = good_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"roots": {}});
    let params = json!({"name": "roots", "arguments": {}});
    let first = ask(
        &mut p,
        json!("m1"),
        "tools/call",
        params.clone(),
        meta.clone(),
    );
    let r = &first["result"];
    assert_eq!(r["inputRequests"]["1"]["method"], "roots/list", "{first}");
    let mut retry = params;
    retry["requestState"] = r["requestState"].clone();
    retry["inputResponses"] = json!({"1": "garbage"});
    let done = ask(&mut p, json!("m2"), "tools/call", retry, meta);
    let env = envelope_of(&done);
    assert_refused_at_once(&env);
    finish_session(p);
}

/// A legacy client's call of `tool` whose requests from the server it answers with the error
/// `error`: the call's envelope.
fn legacy_call_answered_with_error(p: &mut RawProxy, tool: &str, error: &Value) -> Value {
    p.send(
        &json!({"jsonrpc": "2.0", "id": "e1", "method": "tools/call",
        "params": {"name": tool, "arguments": {"prompt": "p"}}}),
    );
    loop {
        let msg = p.recv(Duration::from_secs(60));
        if msg["id"] == "e1" && msg.get("method").is_none() {
            return envelope_of(&msg);
        }
        if let (Some(_), Some(id)) = (msg["method"].as_str(), msg.get("id")) {
            p.send(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
        }
    }
}

/// An SDK server's tool fails with the error its request to the client got. A client that did
/// not declare `sampling` (refused by the proxy with -32601): `unavailable` naming sampling, not
/// `not_found` (the tool exists). A client's own error answer (-1): `unavailable`, not the
/// retryable `server_error` (the server only passed on what the client said).
#[test]
fn a_tool_failing_for_the_clients_answer_is_unavailable_not_the_servers_fault() {
    let (_dir, config) = write_config(&sdk_stdio_server("py", "tool_timeout_sec = 20"));
    let mut p = RawProxy::start(&config, &[]);
    p.send(
        &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    p.response(&json!("init"), Duration::from_secs(60));
    p.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let env = legacy_call_answered_with_error(&mut p, "sample", &json!({}));
    assert_eq!(env["retryable"], false, "{env}");
    let content = env["content"].as_str().unwrap();
    assert!(
        content.starts_with("unavailable: the tool needs the client's `sampling` capability, which this client did not declare (server 'py' sent sampling/createMessage); the call failed with error -32601: "),
        "{env}"
    );
    let error = json!({"code": -1, "message": "the user's client failed"});
    let env = legacy_call_answered_with_error(&mut p, "roots", &error);
    assert_eq!(env["retryable"], false, "{env}");
    assert_eq!(
        env["content"],
        "unavailable: the client answered server 'py''s roots/list with error -1: the user's client failed; the call failed with error -1: the user's client failed",
        "{env}"
    );
    finish_session(p);
}
