//! Multi-round-trip requests across eras through the proxy: a 2026-07-28 server's
//! `InputRequiredResult` passed through, parked calls resumed once, bad `requestState`s refused,
//! undeclared capabilities never asked; and which log messages reach which requests.
use super::eras::{ask, good_meta, modern_request, modern_server};
use crate::common;
use common::*;
use serde_json::{json, Value};
use std::time::Duration;

/// A modern tools/call of `name` with `args`, `extra` keys in its params and `meta`: its answer.
fn modern_call(
    p: &mut RawProxy,
    id: &str,
    name: &str,
    args: Value,
    extra: Value,
    meta: &Value,
) -> Value {
    let mut params = json!({"name": name, "arguments": args});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    ask(p, json!(id), "tools/call", params, meta.clone())
}

/// A modern server's own input_required reaches the client unchanged, and the retry with the
/// server's state is forwarded intact.
fn a_modern_servers_input_required_passes_through(p: &mut RawProxy, elicit: &Value) {
    let go = || json!({"message": "go?"});
    let first = modern_call(p, "b1", "m_ask", go(), json!({}), elicit);
    assert_eq!(first["result"]["requestState"], "ask-round-1", "{first}");
    let asked = &first["result"]["inputRequests"]["answer"];
    assert_eq!(asked["method"], "elicitation/create");
    let retry = json!({"requestState": "ask-round-1", "inputResponses": {"answer": {"action": "accept", "content": {"ok": true}}}});
    let done = modern_call(p, "b2", "m_ask", go(), retry, elicit);
    let content = envelope_of(&done)["content"].as_str().unwrap().to_owned();
    assert!(content.contains("state=ask-round-1"), "{done}");
}

fn modern_meta(capabilities: Value) -> Value {
    let mut meta = good_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    meta
}

/// Retries with a bad `requestState` are refused with -32602 and the call parked with `state`
/// survives each: a forged state; the right state on another tool (the message names the
/// right one); a state no server issued, sent to a legacy server. Other calls go on meanwhile.
fn bad_request_states_are_refused(p: &mut RawProxy, state: &str, answer: &Value, elicit: &Value) {
    let forged = format!("mcp-envelope/{}", "0".repeat(32));
    for (id, tool, bad_state, names) in [
        ("a2", "fx_elicit", forged.as_str(), ""),
        ("a3", "fx_echo", state, "fx_elicit"),
        ("a4", "fx_echo", "made-up", ""),
    ] {
        let args = if tool == "fx_echo" {
            json!({"text": "x"})
        } else {
            json!({"message": "sure?"})
        };
        let retry = json!({"requestState": bad_state, "inputResponses": answer});
        let e = modern_call(p, id, tool, args, retry, elicit);
        assert_eq!(e["error"]["code"], -32602, "{id}: {e}");
        assert!(
            e["error"]["message"].to_string().contains(names),
            "{id}: {e}"
        );
    }
    let other = modern_call(
        p,
        "a5",
        "fx_echo",
        json!({"text": "unaffected"}),
        json!({}),
        &good_meta(),
    );
    assert_eq!(envelope_of(&other)["content"], "unaffected");
}

/// No elicitation declared in a request: the client is never asked.
fn undeclared_elicitation_is_not_asked(p: &mut RawProxy) {
    let refused = modern_call(
        p,
        "a8",
        "fx_elicit",
        json!({"message": "x"}),
        json!({}),
        &good_meta(),
    );
    assert!(
        refused["result"].get("inputRequests").is_none(),
        "{refused}"
    );
    let env = envelope_of(&refused);
    assert!(
        env["content"].as_str().unwrap().contains("-32601"),
        "{refused}"
    );
}

#[test]
fn parked_calls_resume_once_and_bad_request_states_are_refused() {
    // A short tool timeout: the parked call outlives it (the clock stops while parked).
    let (_dir, config) = write_config(&format!(
        "{}{}",
        fixture_server("fx", &[], "tool_prefix = \"fx_\"\ntool_timeout_sec = 2"),
        modern_server("modern", "tool_prefix = \"m_\"")
    ));
    let mut p = RawProxy::start(&config, &[]);
    let elicit = modern_meta(json!({"elicitation": {}}));
    let call = modern_call;
    let sure = || json!({"message": "sure?"});
    let first = call(&mut p, "a1", "fx_elicit", sure(), json!({}), &elicit);
    let r = &first["result"];
    assert_eq!(r["resultType"], "input_required", "{first}");
    assert_eq!(r["inputRequests"]["1"]["method"], "elicitation/create");
    assert_eq!(r["inputRequests"]["1"]["params"]["message"], "sure?");
    let state = r["requestState"].as_str().unwrap().to_owned();
    assert!(state.starts_with("mcp-envelope/"), "{state}");

    let answer = json!({"1": {"action": "accept", "content": {"ok": true}}});
    bad_request_states_are_refused(&mut p, &state, &answer, &elicit);

    std::thread::sleep(Duration::from_secs(3));
    let retry = json!({"requestState": state, "inputResponses": answer});
    let done = call(&mut p, "a6", "fx_elicit", sure(), retry.clone(), &elicit);
    let env = envelope_of(&done);
    assert_eq!(env["call_id"], "a6", "{done}");
    assert_eq!(env["status"], "ok", "not timed out while parked: {done}");
    assert!(
        env["content"].as_str().unwrap().contains("accept"),
        "{done}"
    );
    // The same retry again: its call has ended.
    let e = call(&mut p, "a7", "fx_elicit", sure(), retry, &elicit);
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let message = e["error"]["message"].as_str().unwrap();
    assert!(message.contains("already ended"), "{e}");

    undeclared_elicitation_is_not_asked(&mut p);
    a_modern_servers_input_required_passes_through(&mut p, &elicit);
    finish_session(p);
}

#[test]
fn a_legacy_client_is_not_asked_for_what_it_did_not_declare() {
    let (_dir, config) = write_config(&modern_server("modern", ""));
    let mut p = RawProxy::start(&config, &[]);
    p.send(
        &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    p.response(&json!("init"), Duration::from_secs(60));
    p.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    p.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sample", "arguments": {"prompt": "p"}}}));
    let (done, others) = p.response(&json!(1), Duration::from_secs(60));
    assert!(
        others
            .iter()
            .all(|m| m.get("method").is_none() || m.get("id").is_none()),
        "the client was asked: {others:?}"
    );
    let env = envelope_of(&done);
    assert_eq!(env["status"], "error", "{done}");
    // The server saw the capabilities the client declared (no sampling) and refused itself.
    assert!(
        env["content"].as_str().unwrap().contains("sampling"),
        "{done}"
    );
    // Elicitation it declared: asked through an ordinary request, then the call is retried.
    p.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask", "arguments": {"message": "q"}}}));
    let ask = p.recv(Duration::from_secs(60));
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    p.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"ok": true}}}));
    let (done, _) = p.response(&json!(2), Duration::from_secs(60));
    assert!(
        envelope_of(&done)["content"]
            .as_str()
            .unwrap()
            .contains("action=accept"),
        "{done}"
    );
    finish_session(p);
}

#[test]
fn log_messages_reach_only_modern_requests_that_asked() {
    let (_dir, config) = write_config(&fixture_server("fx", &["--features"], ""));
    let mut p = RawProxy::start(&config, &[]);
    let t = Duration::from_secs(60);
    let log_call = |p: &mut RawProxy, id: &str, meta: Value| {
        let params = json!({"name": "log", "arguments": {}});
        p.send(&modern_request(json!(id), "tools/call", params, meta));
        let (answer, others) = p.response(&json!(id), t);
        assert_eq!(envelope_of(&answer)["status"], "ok", "{answer}");
        let mut seen = others;
        while let Some(m) = p.try_recv(Duration::from_millis(500)) {
            seen.push(m);
        }
        seen.iter()
            .filter(|m| m["method"] == "notifications/message")
            .count()
    };
    assert_eq!(
        log_call(&mut p, "quiet", good_meta()),
        0,
        "no logLevel, no log messages"
    );
    let mut debug = good_meta();
    debug["io.modelcontextprotocol/logLevel"] = json!("debug");
    assert_eq!(log_call(&mut p, "loud", debug), 1);
    let mut errors_only = good_meta();
    errors_only["io.modelcontextprotocol/logLevel"] = json!("error");
    assert_eq!(
        log_call(&mut p, "strict", errors_only),
        0,
        "an info message is below `error`"
    );
    finish_session(p);
}

/// A 2025-era server's `input_required` result cannot be retried (it issues no state a
/// 2026-07-28 client could send back through it): a modern client gets the error envelope a
/// legacy client gets, not the raw result (found by a fresh-user test).
#[test]
fn a_legacy_servers_input_required_is_an_error_envelope_for_a_modern_client() {
    let (_dir, config) = write_config(&fixture_server("a", &["--features"], ""));
    let mut p = RawProxy::start(&config, &[]);
    let params = json!({"name": "input_required", "arguments": {}});
    let answer = ask(&mut p, json!("m1"), "tools/call", params, good_meta());
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    let e = envelope_of(&answer);
    assert_eq!(
        (e["status"].as_str(), e["retryable"].as_bool()),
        (Some("error"), Some(false))
    );
    assert!(
        e["content"]
            .as_str()
            .unwrap()
            .starts_with("input_required: "),
        "{e}"
    );
    finish_session(p);
}

/// The modern fixture server with its resources and prompts (`--passthrough`), unprefixed.
fn modern_passthrough_server() -> String {
    let table = modern_server("modern", "");
    table.replace(
        "modern_server.mjs\"]",
        "modern_server.mjs\", \"--passthrough\"]",
    )
}

/// A legacy client that declared `capabilities` at `initialize`, to a proxy of the modern
/// fixture server with its resources and prompts.
fn legacy_client(config: &std::path::Path, capabilities: Value) -> RawProxy {
    let mut p = RawProxy::start(config, &[]);
    p.send(
        &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    p.response(&json!("init"), Duration::from_secs(60));
    p.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    p
}

/// A 2026-07-28 server's `InputRequiredResult` to a 2025 client's `resources/read` or
/// `prompts/get` is bridged as a `tools/call`'s: the client is asked through an ordinary
/// `elicitation/create`, and the request is retried with the answer and the server's
/// `requestState` (the server echoes both). It reached the client raw before.
#[test]
fn a_legacy_clients_read_and_prompt_are_bridged_through_its_elicitation() {
    let (_dir, config) = write_config(&modern_passthrough_server());
    let mut p = legacy_client(&config, json!({"elicitation": {}}));
    let t = Duration::from_secs(60);
    for (id, method, params, message) in [
        (
            1,
            "resources/read",
            json!({"uri": "note://secret"}),
            "read the secret?",
        ),
        (2, "prompts/get", json!({"name": "confirm"}), "confirm?"),
    ] {
        p.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let asked = p.recv(t);
        assert_eq!(asked["method"], "elicitation/create", "{method}: {asked}");
        assert_eq!(asked["params"]["message"], message, "{asked}");
        let answer = json!({"action": "accept", "content": {"ok": true}});
        p.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}));
        let (done, _) = p.response(&json!(id), t);
        let result = &done["result"];
        assert!(result.get("resultType").is_none(), "{method}: {done}");
        let text = match method {
            "resources/read" => &result["contents"][0]["text"],
            _ => &result["messages"][0]["content"]["text"],
        };
        let text = text.as_str().unwrap_or_else(|| panic!("{method}: {done}"));
        assert!(
            text.ends_with("action=accept state=confirm-round-1"),
            "{done}"
        );
    }
    finish_session(p);
}

/// A bridged read the client cancels while its elicitation is open: the proxy tells the client
/// the elicitation is cancelled too (it was left open, a dialog waiting for an answer nobody
/// wanted; found by a fresh-user tester), and the read gets no answer.
#[test]
fn a_cancelled_bridged_read_cancels_its_open_elicitation() {
    let (_dir, config) = write_config(&modern_passthrough_server());
    let mut p = legacy_client(&config, json!({"elicitation": {}}));
    let t = Duration::from_secs(60);
    p.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
        "params": {"uri": "note://secret"}}),
    );
    let asked = p.recv(t);
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    p.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "user left"}}),
    );
    let cancelled = p.recv(t);
    assert_eq!(
        cancelled["method"], "notifications/cancelled",
        "{cancelled}"
    );
    assert_eq!(cancelled["params"]["requestId"], asked["id"], "{cancelled}");
    p.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    let (pong, others) = p.response(&json!(2), t);
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert!(
        others.iter().all(|m| m["id"] != 1),
        "the cancelled read was answered: {others:?}"
    );
    finish_session(p);
}

/// A 2025 client that declared no elicitation is not asked, and gets a JSON-RPC error naming
/// what was needed instead of a raw `InputRequiredResult` (here the server's own: it saw the
/// capabilities the client declared and refused itself, -32021).
#[test]
fn a_legacy_client_without_the_capability_gets_an_error_naming_it() {
    let (_dir, config) = write_config(&modern_passthrough_server());
    let mut p = legacy_client(&config, json!({}));
    let t = Duration::from_secs(60);
    p.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "note://secret"}}));
    let (done, others) = p.response(&json!(1), t);
    assert!(
        others.iter().all(|m| m.get("id").is_none()),
        "the client was asked: {others:?}"
    );
    let error = &done["error"];
    assert!(error.is_object(), "{done}");
    assert!(
        error.to_string().contains("elicitation"),
        "names the capability: {done}"
    );
    finish_session(p);
}

/// A 2026-07-28 client gets the server's `InputRequiredResult` unchanged, and its retry with
/// the server's `requestState` reaches the same server.
#[test]
fn a_modern_clients_read_and_prompt_pass_input_required_through() {
    let (_dir, config) = write_config(&modern_passthrough_server());
    let mut p = RawProxy::start(&config, &[]);
    let meta = modern_meta(json!({"elicitation": {}}));
    for (id, method, params) in [
        ("r", "resources/read", json!({"uri": "note://secret"})),
        ("g", "prompts/get", json!({"name": "confirm"})),
    ] {
        let first = ask(
            &mut p,
            json!(format!("{id}1")),
            method,
            params.clone(),
            meta.clone(),
        );
        let interim = &first["result"];
        assert_eq!(interim["resultType"], "input_required", "{method}: {first}");
        assert_eq!(interim["requestState"], "confirm-round-1", "{first}");
        let asked = &interim["inputRequests"]["confirm"];
        assert_eq!(asked["method"], "elicitation/create", "{first}");
        let mut retry = params;
        retry["requestState"] = json!("confirm-round-1");
        retry["inputResponses"] = json!({"confirm": {"action": "decline"}});
        let done = ask(&mut p, json!(format!("{id}2")), method, retry, meta.clone());
        assert_eq!(done["result"]["resultType"], "complete", "{method}: {done}");
        assert!(
            done.to_string()
                .contains("action=decline state=confirm-round-1"),
            "{method}: {done}"
        );
    }
    finish_session(p);
}

/// An `InputRequiredResult` to a request MCP 2026-07-28 allows none for (`completion/complete`,
/// from a hand-written server: the SDK refuses to send one) is a -32603 error naming the server
/// and the request for a 2025 client, which could not read it; the client is not asked.
#[test]
fn a_forbidden_input_required_is_an_error_for_a_legacy_client() {
    let script = root().join("tests/fixtures/modern_raw_server.py");
    let table = format!(
        "[mcp_servers.raw]\ncommand = \"python3\"\nargs = [{:?}]\n",
        script.display().to_string()
    );
    let (_dir, config) = write_config(&table);
    let mut p = legacy_client(&config, json!({"elicitation": {}}));
    let params =
        json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}});
    p.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "completion/complete", "params": params}));
    let (done, others) = p.response(&json!(1), Duration::from_secs(60));
    assert!(
        others.iter().all(|m| m.get("id").is_none()),
        "the client was asked: {others:?}"
    );
    assert_eq!(done["error"]["code"], -32603, "{done}");
    let message = done["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("server 'raw'") && message.contains("`completion/complete`"),
        "{done}"
    );
    finish_session(p);
}
