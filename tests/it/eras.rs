//! Both protocol eras on one binary: clients of MCP 2026-07-28 (stateless requests with
//! `_meta`, `server/discover`, `subscriptions/listen`) and of the 2025 revisions
//! (`initialize`), against a modern-only server (TypeScript SDK v2 with `legacy: 'reject'`), a
//! dual-era Python SDK server (mcp-server-time, which, being local, is opened legacy) and a legacy
//! server (the stdlib fixture).
use crate::common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

/// The modern-only fixture server (tests/fixtures/modern_server.mjs).
pub(super) fn modern_server(name: &str, extra: &str) -> String {
    let sdk = root().join(".tools/npm-sdk2/node_modules/@modelcontextprotocol/server");
    assert!(
        sdk.exists(),
        "the TypeScript SDK v2 is missing: run `scripts/install-deps` first"
    );
    format!(
        "[mcp_servers.{name}]\ncommand = \"node\"\nargs = [{:?}]\n{extra}\n",
        root()
            .join("tests/fixtures/modern_server.mjs")
            .display()
            .to_string()
    )
}

/// A config with the three kinds of server: `m_` modern-only, `fx_` legacy, time dual-era
/// (which, being local, runs legacy).
fn three_eras() -> (tempfile::TempDir, PathBuf) {
    eras_config("")
}

/// [`three_eras`] and more server tables.
fn eras_config(more: &str) -> (tempfile::TempDir, PathBuf) {
    write_config(&format!(
        "{}{}{}{more}",
        modern_server("modern", "tool_prefix = \"m_\""),
        fixture_server("fx", &[], "tool_prefix = \"fx_\""),
        real_server("time", ""),
    ))
}

/// Runs tests/clients/sdk_client.py in (`Client`) `mode` with `plan` against the proxy with `config`.
pub(super) fn era_client(mode: &str, config: &Path, plan: &Value) -> Value {
    let plan_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(plan_file.path(), plan.to_string()).unwrap();
    let out = Command::new(python())
        .arg(root().join("tests/clients/sdk_client.py"))
        .args(["--mode", mode, "--plan"])
        .arg(plan_file.path())
        .arg("--")
        .arg(bin())
        .args(["serve", "--config"])
        .arg(config)
        .output()
        .unwrap();
    json_stdout(&out, &format!("sdk_client --mode {mode}"))
}

/// [`era_client`] in each of `modes`, one after the other: each mode with its output. (Not at
/// once: the `auto` mode's `server/discover` probe gives up after 10 s, and three proxies
/// starting their servers together on a loaded machine can take longer.)
fn era_clients(modes: &[&'static str], config: &Path, plan: &Value) -> Vec<(&'static str, Value)> {
    modes
        .iter()
        .map(|&mode| (mode, era_client(mode, config, plan)))
        .collect()
}

/// Asserts that the envelope of a dumped CallToolResult has `text` in its content.
fn assert_content_has(result: &Value, text: &str) {
    let env = envelope(result);
    assert!(
        env["content"].as_str().unwrap().contains(text),
        "{text:?} not in {result}"
    );
}

/// The envelope of a CallToolResult as the SDK client dumped it.
pub(super) fn envelope(result: &Value) -> Value {
    assert!(
        result.get("structuredContent").is_some(),
        "not a tool result: {result}"
    );
    result["structuredContent"].clone()
}

#[test]
fn python_sdk_in_every_mode_reaches_servers_of_every_era() {
    // server-everything (legacy) too.
    let (_dir, config) = eras_config(&real_server("everything", ""));
    let plan = json!([
        {"op": "list_tools"},
        {"op": "call", "name": "m_echo", "arguments": {"text": "from modern"}},
        {"op": "call", "name": "fx_echo", "arguments": {"text": "from legacy"}},
        {"op": "call", "name": "get_current_time", "arguments": {"timezone": "UTC"}},
        {"op": "call", "name": "m_progress", "arguments": {"steps": 3}, "progress": true},
        {"op": "call", "name": "fx_progress", "arguments": {"steps": 2}, "progress": true},
        {"op": "cancel", "name": "m_sleep", "arguments": {"ms": 20000}, "after_s": 1.0},
        {"op": "cancel", "name": "fx_sleep", "arguments": {"ms": 20000}, "after_s": 1.0},
        {"op": "call", "name": "m_rows", "arguments": {"n": 2}},
        {"op": "list_change", "trigger": {"op": "call", "name": "m_add_tool", "arguments": {}}},
        {"op": "call", "name": "echo", "arguments": {"message": "hi everything"}},
        {"op": "call", "name": "get-sum", "arguments": {"a": 2, "b": 3}},
    ]);
    for (mode, out) in era_clients(&["legacy", "auto", "2026-07-28"], &config, &plan) {
        every_era_reached(mode, &out);
    }
}

/// The checks of [`python_sdk_in_every_mode_reaches_servers_of_every_era`] on the output of one
/// client `mode`.
fn every_era_reached(mode: &str, out: &Value) {
    let want_version = if mode == "legacy" {
        "2025-11-25"
    } else {
        "2026-07-28"
    };
    assert_eq!(out["protocolVersion"], want_version, "{mode}: {out}");
    let steps = out["steps"].as_array().unwrap();
    let tools = steps[0]
        .as_array()
        .unwrap_or_else(|| panic!("{mode}: {}", steps[0]));
    for name in ["m_echo", "fx_echo", "get_current_time"] {
        assert!(
            tools.contains(&json!(name)),
            "{mode}: {name} missing in {tools:?}"
        );
    }
    for (step, text) in [(1, "from modern"), (2, "from legacy")] {
        let env = envelope(&steps[step]);
        assert_eq!(env["status"], "ok", "{mode}: {env}");
        assert_eq!(env["content"], text, "{mode}: {env}");
        // call_id is the client's JSON-RPC id: the SDK numbers its requests.
        assert!(
            env["call_id"].as_str().unwrap().parse::<u64>().is_ok(),
            "{mode}: {env}"
        );
    }
    let time = envelope(&steps[3]);
    assert_eq!(time["status"], "ok", "{mode}: {time}");
    assert!(
        time["content"].as_str().unwrap().contains("timezone=UTC"),
        "{mode}: {time}"
    );
    assert_eq!(
        steps[4]["progress"].as_array().unwrap().len(),
        3,
        "{mode}: {}",
        steps[4]
    );
    assert_eq!(
        steps[5]["progress"].as_array().unwrap().len(),
        2,
        "{mode}: {}",
        steps[5]
    );
    assert_eq!(steps[6], json!({"cancelled": true}), "{mode}");
    assert_eq!(steps[7], json!({"cancelled": true}), "{mode}");
    let rows = envelope(&steps[8]);
    assert_eq!(
        rows["content"], "i=0,name=row-0; i=1,name=row-1",
        "{mode}: {rows}"
    );
    assert_eq!(steps[9]["changed"], true, "{mode}: {}", steps[9]);
    assert!(
        steps[9]["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("m_extra")),
        "{mode}: {}",
        steps[9]
    );
    // server-everything (legacy) in every mode.
    assert_content_has(&steps[10], "hi everything");
    assert_content_has(&steps[11], "5");
    if mode != "legacy" {
        // Modern results carry resultType (checked by the SDK) and our serverInfo.
        assert_eq!(
            steps[1]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "mcp-envelope"
        );
    }
}

/// Sends a modern request with `meta` as its `_meta`.
pub(super) fn modern_request(id: Value, method: &str, mut params: Value, meta: Value) -> Value {
    params["_meta"] = meta;
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Sends a modern request (see [`modern_request`]) and waits up to 60 s for its answer.
pub(super) fn ask(p: &mut RawProxy, id: Value, method: &str, params: Value, meta: Value) -> Value {
    p.send(&modern_request(id.clone(), method, params, meta));
    p.response(&id, Duration::from_secs(60)).0
}

pub(super) fn good_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    })
}

#[test]
fn bad_modern_requests_get_clear_errors_and_nothing_else_is_affected() {
    let (_dir, config) = write_config(&fixture_server("fx", &[], ""));
    let mut p = RawProxy::start(&config, &[]);
    let t = Duration::from_secs(60);
    let discover = ask(&mut p, json!(1), "server/discover", json!({}), good_meta());
    let r = &discover["result"];
    assert_eq!(r["supportedVersions"][0], "2026-07-28", "{discover}");
    assert_eq!(r["resultType"], "complete");
    assert_eq!(
        (r["ttlMs"].clone(), r["cacheScope"].clone()),
        (json!(0), json!("private"))
    );
    assert_eq!(r["capabilities"]["tools"]["listChanged"], true);

    // No `_meta` at all from a client that spoke 2026-07-28: -32602.
    p.send(&json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}));
    let (e, _) = p.response(&json!(2), t);
    assert_eq!(e["error"]["code"], -32602, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("protocolVersion"),
        "{e}"
    );
    // A key missing: -32602 naming it.
    let no_caps = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let e = ask(&mut p, json!(3), "tools/list", json!({}), no_caps);
    assert_eq!(e["error"]["code"], -32602, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("clientCapabilities"),
        "{e}"
    );
    // An unknown version: -32022 with the versions we speak.
    let mut future = good_meta();
    future["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let e = ask(
        &mut p,
        json!(4),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
        future,
    );
    assert_eq!(e["error"]["code"], -32022, "{e}");
    assert_eq!(e["error"]["data"]["requested"], "2099-01-01");
    let supported = e["error"]["data"]["supported"].as_array().unwrap();
    assert!(
        supported.contains(&json!("2026-07-28")) && supported.contains(&json!("2025-11-25")),
        "{e}"
    );
    // `ping` is not part of the modern era.
    let e = ask(&mut p, json!(5), "ping", json!({}), good_meta());
    assert_eq!(e["error"]["code"], -32601, "{e}");

    good_modern_requests_still_work(&mut p);
    finish_session(p);
}

/// Good modern requests work (with resultType and the envelope), and `initialize` after a
/// `server/discover` opens a legacy session as well.
fn good_modern_requests_still_work(p: &mut RawProxy) {
    let t = Duration::from_secs(60);
    let list = ask(p, json!(6), "tools/list", json!({}), good_meta());
    assert_eq!(list["result"]["resultType"], "complete", "{list}");
    assert_eq!(list["result"]["ttlMs"], 0);
    let call = ask(
        p,
        json!("c-7"),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "still here"}}),
        good_meta(),
    );
    assert_eq!(call["result"]["resultType"], "complete", "{call}");
    let env = envelope_of(&call);
    assert_eq!(
        (env["call_id"].clone(), env["content"].clone()),
        (json!("c-7"), json!("still here"))
    );

    // `initialize` after a successful `server/discover` opens a legacy session as well.
    let init = p.initialize("2025-06-18");
    assert_eq!(init["protocolVersion"], "2025-06-18", "{init}");
    let legacy = p.call(json!(8), "echo", json!({"text": "legacy"}), t);
    assert_eq!(envelope_of(&legacy)["content"], "legacy");
    assert!(
        legacy["result"].get("resultType").is_none(),
        "no modern keys for a legacy request: {legacy}"
    );
    let call = ask(
        p,
        json!(9),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "both"}}),
        good_meta(),
    );
    assert_eq!(envelope_of(&call)["content"], "both");
}

#[test]
fn listen_streams_are_acknowledged_tagged_and_filtered() {
    let (_dir, config) = write_config(&fixture_server("fx", &[], ""));
    let mut p = RawProxy::start(&config, &[]);
    let t = Duration::from_secs(60);
    let filter = |tools: bool| json!({"notifications": {"toolsListChanged": tools, "promptsListChanged": true}});
    p.send(&modern_request(
        json!("tools"),
        "subscriptions/listen",
        filter(true),
        good_meta(),
    ));
    let ack = p.recv(t);
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "we honour tool changes only: {ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "tools"
    );
    p.send(&modern_request(
        json!("none"),
        "subscriptions/listen",
        filter(false),
        good_meta(),
    ));
    let ack = p.recv(t);
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "none",
        "{ack}"
    );

    p.send(&modern_request(
        json!(1),
        "tools/call",
        json!({"name": "add_tool", "arguments": {}}),
        good_meta(),
    ));
    let (_, mut seen) = p.response(&json!(1), t);
    while let Some(m) = p.try_recv(Duration::from_secs(3)) {
        seen.push(m);
    }
    let changes: Vec<&Value> = seen
        .iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed")
        .collect();
    assert_eq!(
        changes.len(),
        1,
        "one stream asked for tool changes: {seen:?}"
    );
    assert_eq!(
        changes[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "tools"
    );

    a_cancelled_stream_ends_and_the_other_ends_at_shutdown(p);
}

/// After the stream `tools` is cancelled: no answer, no more notifications for it; the stream
/// `none` ends gracefully when the proxy shuts down.
fn a_cancelled_stream_ends_and_the_other_ends_at_shutdown(mut p: RawProxy) {
    let t = Duration::from_secs(60);
    p.send(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"tools"}}),
    );
    p.send(&modern_request(
        json!(2),
        "tools/call",
        json!({"name": "add_tool", "arguments": {}}),
        good_meta(),
    ));
    let (_, seen) = p.response(&json!(2), t);
    assert!(
        seen.iter()
            .all(|m| m["method"] != "notifications/tools/list_changed"),
        "{seen:?}"
    );
    drop(seen);
    let kids = children_of(p.pid());
    let st = p.close(Duration::from_secs(15));
    assert!(st.success());
    let mut rest = Vec::new();
    while let Some(m) = p.try_recv(Duration::from_millis(500)) {
        rest.push(m);
    }
    assert!(
        rest.iter()
            .any(|m| m["id"] == "none" && m["result"]["resultType"] == "complete"),
        "graceful end of the open stream: {rest:?}"
    );
    assert!(rest.iter().all(|m| m["id"] != "tools"), "{rest:?}");
    assert!(wait_gone(&kids, Duration::from_secs(10)).is_empty());
}

#[test]
fn check_shows_each_servers_era() {
    let (_dir, config) = three_eras();
    let text = ok_stdout(&check(&config));
    let line = |name: &str| table_row(&text, &format!("{name} "));
    assert!(
        line("modern").starts_with("modern ready 2026-07-28 (modern) "),
        "{text}"
    );
    // A dual-era local server is opened with `initialize` (see handshake::Order::LegacyFirst).
    assert!(
        line("time").starts_with("time ready 2025-11-25 (legacy) "),
        "{text}"
    );
    assert!(
        line("fx").starts_with("fx ready 2025-11-25 (legacy) "),
        "{text}"
    );
    assert!(text.contains("PROTOCOL"), "{text}");
}

#[test]
fn sampling_elicitation_and_roots_round_trip_in_every_pairing() {
    let (_dir, config) = three_eras();
    let plan = json!([
        {"op": "call", "name": "m_ask", "arguments": {"message": "deploy?"}},
        {"op": "call", "name": "m_sample", "arguments": {"prompt": "p"}},
        {"op": "call", "name": "m_roots", "arguments": {}},
        {"op": "call", "name": "fx_elicit", "arguments": {"message": "sure?"}},
        {"op": "call", "name": "fx_sample", "arguments": {"prompt": "p"}},
        {"op": "call", "name": "fx_roots", "arguments": {}},
    ]);
    for (mode, out) in era_clients(&["legacy", "2026-07-28"], &config, &plan) {
        let steps = out["steps"].as_array().unwrap();
        let content = |i: usize| {
            let env = envelope(&steps[i]);
            assert_eq!(env["status"], "ok", "{mode}: step {i}: {env}");
            env["content"].as_str().unwrap().to_owned()
        };
        // Modern server: input_required, fulfilled by the client, retried with the state.
        assert!(
            content(0).contains("action=accept") && content(0).contains("state=ask-round-1"),
            "{mode}: {}",
            content(0)
        );
        assert!(content(1).contains("sampled: fixed answer"), "{mode}");
        assert!(content(2).contains("uri=file:///tmp"), "{mode}");
        // Legacy server: its requests reach the client (as input_required for a modern one).
        assert!(
            content(3).contains("\"action\":\"accept\""),
            "{mode}: {}",
            content(3)
        );
        assert!(content(4).contains("sampled: fixed answer"), "{mode}");
        assert!(content(5).contains("file:///tmp"), "{mode}");
        let handled = callback_methods(&out);
        assert_eq!(
            handled,
            ["elicitation/create", "sampling/createMessage", "roots/list"].repeat(2),
            "{mode}: each input request reached the client once"
        );
        if mode == "2026-07-28" {
            // The answer to the retry carries the retry's id, a fresh one.
            let first: u64 = envelope(&steps[3])["call_id"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!(first > 0);
        }
    }
}

#[test]
fn typescript_client_pinned_to_2026_07_28() {
    let (_dir, config) = three_eras();
    let plan = json!([
        {"op": "list_tools"},
        {"op": "call", "name": "m_echo", "arguments": {"text": "ts modern"}},
        {"op": "call", "name": "fx_echo", "arguments": {"text": "ts legacy"}},
        {"op": "call", "name": "m_progress", "arguments": {"steps": 3}, "progress": true},
        {"op": "call", "name": "m_ask", "arguments": {"message": "q"}},
        {"op": "call", "name": "fx_elicit", "arguments": {"message": "q"}},
        {"op": "call", "name": "fx_roots", "arguments": {}},
        {"op": "list_change", "trigger": {"name": "m_add_tool", "arguments": {}}},
    ]);
    let out = Command::new("node")
        .arg(root().join("tests/clients/ts_modern_client.mjs"))
        .arg(plan.to_string())
        .arg(bin())
        .args(["serve", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let out = json_stdout(&out, "ts_modern_client");
    let steps = out["steps"].as_array().unwrap();
    let tools = steps[0].as_array().unwrap();
    assert!(
        tools.contains(&json!("m_echo")) && tools.contains(&json!("get_current_time")),
        "{out}"
    );
    assert_eq!(envelope(&steps[1])["content"], "ts modern");
    assert_eq!(envelope(&steps[2])["content"], "ts legacy");
    // Progress: the proxy forwards every notification (the Python SDK test counts them); this
    // client reports a varying number of them even when it talks to the server directly.
    assert_eq!(envelope(&steps[3])["content"], "done 3", "{}", steps[3]);
    assert_content_has(&steps[4], "action=accept");
    assert_content_has(&steps[5], "accept");
    assert_content_has(&steps[6], "file:///tmp");
    assert_eq!(
        steps[7],
        json!({"changed": true, "honored": {"toolsListChanged": true}})
    );
    assert_eq!(
        out["handled"],
        json!(["elicitation/create", "elicitation/create", "roots/list"])
    );
}

/// The method of each server-to-client request the `era_client` run `out` answered, in order.
pub(super) fn callback_methods(out: &Value) -> Vec<&str> {
    out["callbacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["method"].as_str().unwrap())
        .collect()
}

/// The members of `result` that only MCP 2026-07-28 defines (a 2025 client must get none).
fn modern_only_members(result: &Value) -> Vec<&str> {
    let mut found: Vec<&str> = ["resultType", "ttlMs", "cacheScope"]
        .into_iter()
        .filter(|k| result.get(*k).is_some())
        .collect();
    if result
        .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
        .is_some()
    {
        found.push("serverInfo");
    }
    found
}

/// Every kind of result a 2026-07-28 server gives reaches a client of a 2025 revision without
/// the members only MCP 2026-07-28 defines (`resultType`; `ttlMs` and `cacheScope` of
/// `CacheableResult`; `_meta` `serverInfo`), with the rest as the server sent it; a 2026-07-28
/// client still gets the server's cache hints.
#[test]
fn a_2025_client_gets_a_2026_servers_results_without_2026_only_members() {
    let table = modern_server("modern", "tool_prefix = \"m_\"").replace(
        "modern_server.mjs\"]",
        "modern_server.mjs\", \"--passthrough\"]",
    );
    assert!(table.contains("--passthrough"), "{table}");
    let (_dir, config) = write_config(&table);
    let mut p = RawProxy::start(&config, &[]);
    let t = Duration::from_secs(60);
    let init = p.initialize("2025-11-25");
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
    let mut legacy = |id: i64, method: &str, params: Value| {
        p.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let (answer, _) = p.response(&json!(id), t);
        let result = answer["result"].clone();
        assert!(result.is_object(), "{method}: {answer}");
        assert_eq!(modern_only_members(&result), [""; 0], "{method}: {answer}");
        result
    };
    let tools = legacy(1, "tools/list", json!({}));
    assert!(tools["tools"].as_array().unwrap().len() > 1, "{tools}");
    let call = legacy(
        2,
        "tools/call",
        json!({"name": "m_echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(envelope_of(&json!({ "result": call }))["content"], "hi");
    let listed = legacy(3, "resources/list", json!({}));
    assert_eq!(listed["resources"][0]["uri"], "note://one", "{listed}");
    let templates = legacy(4, "resources/templates/list", json!({}));
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"],
        "note://{name}"
    );
    let read = legacy(5, "resources/read", json!({"uri": "note://one"}));
    assert_eq!(read["contents"][0]["text"], "note one", "{read}");
    let prompts = legacy(6, "prompts/list", json!({}));
    let prompt = prompts["prompts"][0]["name"].clone();
    assert!(prompt.as_str().unwrap().ends_with("greet"), "{prompts}");
    let got = legacy(
        7,
        "prompts/get",
        json!({"name": prompt, "arguments": {"name": "ann"}}),
    );
    assert_eq!(got["messages"][0]["content"]["text"], "Hello ann", "{got}");
    let refs = [
        (json!({"type": "ref/prompt", "name": prompt}), "b", "bob"),
        (
            json!({"type": "ref/resource", "uri": "note://{name}"}),
            "t",
            "two",
        ),
    ];
    for (id, (r, value, wanted)) in (8..).zip(refs) {
        let params = json!({"ref": r, "argument": {"name": "name", "value": value}});
        let completed = legacy(id, "completion/complete", params);
        assert_eq!(
            completed["completion"]["values"],
            json!([wanted]),
            "{completed}"
        );
    }

    let modern = ask(
        &mut p,
        json!(10),
        "resources/read",
        json!({"uri": "note://one"}),
        good_meta(),
    );
    let r = &modern["result"];
    assert_eq!(
        (
            r["resultType"].clone(),
            r["ttlMs"].clone(),
            r["cacheScope"].clone()
        ),
        (json!("complete"), json!(60000), json!("public")),
        "{modern}"
    );
    finish_session(p);
}
