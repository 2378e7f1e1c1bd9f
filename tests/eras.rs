//! Both protocol eras on one binary: clients of MCP 2026-07-28 (stateless requests with
//! `_meta`, `server/discover`, `subscriptions/listen`) and of the 2025 revisions
//! (`initialize`), against a modern-only server (TypeScript SDK v2 with `legacy: 'reject'`), a
//! dual-era Python SDK server (mcp-server-time, which answers `server/discover`) and a legacy
//! server (the stdlib fixture).
mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

/// The modern-only fixture server (tests/fixtures/modern_server.mjs).
fn modern_server(name: &str, extra: &str) -> String {
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

/// A config with the three kinds of server: `m_` modern-only, `fx_` legacy, time dual-era.
fn three_eras() -> (tempfile::TempDir, PathBuf) {
    write_config(&format!(
        "{}{}{}",
        modern_server("modern", "tool_prefix = \"m_\""),
        fixture_server("fx", &[], "tool_prefix = \"fx_\""),
        real_server("time", "")
    ))
}

/// Runs tests/clients/sdk_era_client.py in `mode` with `plan` against the proxy with `config`.
fn era_client(mode: &str, config: &Path, plan: &Value) -> Value {
    let plan_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(plan_file.path(), plan.to_string()).unwrap();
    let out = Command::new(python())
        .arg(root().join("tests/clients/sdk_era_client.py"))
        .args(["--mode", mode, "--plan"])
        .arg(plan_file.path())
        .arg("--")
        .arg(bin())
        .args(["serve", "--config"])
        .arg(config)
        .output()
        .unwrap();
    json_stdout(&out, &format!("sdk_era_client --mode {mode}"))
}

/// The envelope of a CallToolResult as the SDK client dumped it.
fn envelope(result: &Value) -> Value {
    assert!(
        result.get("structuredContent").is_some(),
        "not a tool result: {result}"
    );
    result["structuredContent"].clone()
}

#[test]
fn python_sdk_in_every_mode_reaches_servers_of_every_era() {
    let (_dir, config) = three_eras();
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
    ]);
    let runs: Vec<_> = ["legacy", "auto", "2026-07-28"]
        .into_iter()
        .map(|mode| {
            let (config, plan) = (config.clone(), plan.clone());
            std::thread::spawn(move || (mode, era_client(mode, &config, &plan)))
        })
        .collect();
    for run in runs {
        let (mode, out) = run.join().unwrap();
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
        if mode != "legacy" {
            // Modern results carry resultType (checked by the SDK) and our serverInfo.
            assert_eq!(
                steps[1]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                "mcp-envelope"
            );
        }
    }
}

/// Sends a modern request with `meta` as its `_meta`.
fn modern_request(id: Value, method: &str, mut params: Value, meta: Value) -> Value {
    params["_meta"] = meta;
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn good_meta() -> Value {
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
    p.send(&modern_request(
        json!(1),
        "server/discover",
        json!({}),
        good_meta(),
    ));
    let (discover, _) = p.response(&json!(1), t);
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
    p.send(&modern_request(json!(3), "tools/list", json!({}), no_caps));
    let (e, _) = p.response(&json!(3), t);
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
    p.send(&modern_request(
        json!(4),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
        future,
    ));
    let (e, _) = p.response(&json!(4), t);
    assert_eq!(e["error"]["code"], -32022, "{e}");
    assert_eq!(e["error"]["data"]["requested"], "2099-01-01");
    let supported = e["error"]["data"]["supported"].as_array().unwrap();
    assert!(
        supported.contains(&json!("2026-07-28")) && supported.contains(&json!("2025-11-25")),
        "{e}"
    );
    // `ping` is not part of the modern era.
    p.send(&modern_request(json!(5), "ping", json!({}), good_meta()));
    let (e, _) = p.response(&json!(5), t);
    assert_eq!(e["error"]["code"], -32601, "{e}");

    // Good modern requests still work, with resultType and the envelope.
    p.send(&modern_request(
        json!(6),
        "tools/list",
        json!({}),
        good_meta(),
    ));
    let (list, _) = p.response(&json!(6), t);
    assert_eq!(list["result"]["resultType"], "complete", "{list}");
    assert_eq!(list["result"]["ttlMs"], 0);
    p.send(&modern_request(
        json!("c-7"),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "still here"}}),
        good_meta(),
    ));
    let (call, _) = p.response(&json!("c-7"), t);
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
    p.send(&modern_request(
        json!(9),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "both"}}),
        good_meta(),
    ));
    let (call, _) = p.response(&json!(9), t);
    assert_eq!(envelope_of(&call)["content"], "both");
    finish_session(p);
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

    // Cancelled: no answer, no more notifications; the other stream ends gracefully at shutdown.
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
    let out = Command::new(bin())
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| panic!("no line for {name}: {text}"))
    };
    assert!(
        line("modern").starts_with("modern ready 2026-07-28 (modern) "),
        "{text}"
    );
    assert!(
        line("time").starts_with("time ready 2026-07-28 (modern) "),
        "{text}"
    );
    assert!(
        line("fx").starts_with("fx ready 2025-11-25 (legacy) "),
        "{text}"
    );
    assert!(text.contains("PROTOCOL"), "{text}");
}
