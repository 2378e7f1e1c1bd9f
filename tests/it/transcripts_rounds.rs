//! Transcripts of tool calls that needed input from the client (sampling, elicitation): the
//! call's record holds the server's request and the client's answer as `events`, alike whichever
//! era the client speaks (a 2025 client answers requests; a 2026-07-28 client answers
//! `input_required` rounds) and whichever era the server speaks, with `redact_keys` applied;
//! `replay`, `stats` and `render` read such a transcript.
use super::eras::{era_client, modern_server};
use super::transcripts::{cli, exits_with, stdout};
use crate::common;
use common::*;

use std::path::Path;

use serde_json::{json, Value};

/// The calls each client makes: a legacy server's elicitation and sampling, a modern server's.
const TOOLS: [&str; 4] = ["fx_elicit", "fx_sample", "m_ask", "m_sample"];

/// Runs the SDK client in `mode` through a proxy recording a transcript into `path`; the call
/// records.
fn recorded_calls(mode: &str, path: &Path) -> Vec<Value> {
    let (_d, config) = write_config(&format!(
        "[transcript]\npath = {:?}\nredact_keys = [\"ok\"]\n{}{}",
        path.display().to_string(),
        modern_server("modern", "tool_prefix = \"m_\""),
        fixture_server("fx", &[], "tool_prefix = \"fx_\""),
    ));
    let plan = json!([
        {"op": "call", "name": "fx_elicit", "arguments": {"message": "sure?"}},
        {"op": "call", "name": "fx_sample", "arguments": {"prompt": "p"}},
        {"op": "call", "name": "m_ask", "arguments": {"message": "deploy?"}},
        {"op": "call", "name": "m_sample", "arguments": {"prompt": "p"}},
    ]);
    let out = era_client(mode, &config, &plan);
    for (i, step) in out["steps"].as_array().unwrap().iter().enumerate() {
        let env = &step["structuredContent"];
        assert_eq!(env["status"], "ok", "{mode}: step {i}: {step}");
    }
    let text = std::fs::read_to_string(path).unwrap();
    replayed_live_skips_every_call(path, &config);
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] != "tools")
        .collect()
}

/// `replay --live` of the transcript at `path` against `config` skips every call, as each
/// asked the client for input (no client answers on a live re-run), and reports no drift.
fn replayed_live_skips_every_call(path: &Path, config: &Path) {
    let (path, config) = (path.to_str().unwrap(), config.to_str().unwrap());
    let live = cli(&["replay", "--live", path, "--config", config]);
    let text = stdout(&live);
    exits_with(&live, 0);
    for line in text.lines().take(TOOLS.len()) {
        assert!(line.starts_with("skipped "), "{text}");
        assert!(line.contains("a server asked the client"), "{text}");
    }
    assert!(text.ends_with("0 passed, 0 failed, 4 skipped\n"), "{text}");
}

/// A call's events as (direction, what): the request's method, or `result`/`error`.
fn shape(events: &Value) -> Vec<(String, String)> {
    let Some(events) = events.as_array() else {
        return Vec::new();
    };
    events
        .iter()
        .map(|e| {
            let m = &e["message"];
            let what = match m.get("method") {
                Some(method) => method.as_str().unwrap().to_owned(),
                None if m.get("result").is_some() => "result".into(),
                None => "error".into(),
            };
            (e["direction"].as_str().unwrap().to_owned(), what)
        })
        .collect()
}

/// The record of `tool` (exactly one per call) and its events' shapes, with the client's answer
/// checked: the elicitation accepted (its `ok` redacted), the sampled text.
fn events_of(mode: &str, records: &[Value], tool: &str) -> Vec<(String, String)> {
    let mine: Vec<&Value> = records.iter().filter(|r| r["tool"] == tool).collect();
    assert_eq!(mine.len(), 1, "{mode}: one record for {tool}: {records:?}");
    let events = &mine[0]["events"];
    let answer = events
        .as_array()
        .and_then(|e| e.iter().find(|e| e["direction"] == "client_to_server"))
        .unwrap_or_else(|| panic!("{mode}: {tool}: no answer of the client in {events}"));
    let result = &answer["message"]["result"];
    if tool.ends_with("elicit") || tool.ends_with("ask") {
        assert_eq!(result["action"], "accept", "{mode}: {tool}: {answer}");
        assert_eq!(result["content"]["ok"], "[redacted]", "{mode}: {tool}");
    } else {
        let text = result["content"]["text"].as_str().unwrap_or_default();
        assert_eq!(text, "sampled: fixed answer", "{mode}: {tool}: {answer}");
    }
    let request = &events[0]["message"];
    assert_eq!(
        request["id"], answer["message"]["id"],
        "{mode}: {tool}: the answer names the request: {events}"
    );
    shape(events)
}

/// `replay`, `stats` and `render` read the transcript at `path`; `render` pairs each request
/// with its answer.
fn readers_accept(path: &Path) {
    let path = path.to_str().unwrap();
    exits_with(&cli(&["replay", path]), 0);
    exits_with(&cli(&["stats", path]), 0);
    let rendered = cli(&["render", path]);
    exits_with(&rendered, 0);
    let text = stdout(&rendered);
    for line in [
        "elicitation_response for fx_elicit: accept",
        "sampling_response for fx_sample: accept",
        "elicitation_response for m_ask: accept",
        "sampling_response for m_sample: accept",
    ] {
        assert!(text.contains(line), "{line:?} not in {text}");
    }
}

#[test]
fn input_rounds_are_recorded_as_events_in_either_era() {
    let dir = tempfile::tempdir().unwrap();
    let (legacy_file, modern_file) = (dir.path().join("l.jsonl"), dir.path().join("m.jsonl"));
    let legacy = recorded_calls("legacy", &legacy_file);
    let modern = recorded_calls("2026-07-28", &modern_file);
    for tool in TOOLS {
        let method = if tool.ends_with("sample") {
            "sampling/createMessage"
        } else {
            "elicitation/create"
        };
        let expected = vec![
            ("server_to_client".to_owned(), method.to_owned()),
            ("client_to_server".to_owned(), "result".to_owned()),
        ];
        assert_eq!(events_of("legacy", &legacy, tool), expected, "{tool}");
        assert_eq!(events_of("2026-07-28", &modern, tool), expected, "{tool}");
    }
    readers_accept(&legacy_file);
    readers_accept(&modern_file);
}

/// A 2026-07-28 client's retry that gives no response for the server's elicitation: the proxy
/// answers the server -32602 itself, and the transcript says so (`proxy_to_server`), so
/// `render` labels it `[proxy]`, not as the user's answer.
#[test]
fn the_proxys_own_answer_to_a_server_is_recorded_and_rendered_as_the_proxys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let (_d, config) = write_config(&format!(
        "[transcript]\npath = {:?}\n{}",
        path.display().to_string(),
        fixture_server("fx", &[], "tool_prefix = \"fx_\""),
    ));
    let mut p = RawProxy::start(&config, &[]);
    let mut meta = super::eras::good_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
    let params = |extra: Value| {
        let mut params = json!({"name": "fx_elicit", "arguments": {"message": "sure?"}});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        params
    };
    let first = super::eras::ask(
        &mut p,
        json!("a1"),
        "tools/call",
        params(json!({})),
        meta.clone(),
    );
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = json!({"requestState": state, "inputResponses": {}});
    let done = super::eras::ask(&mut p, json!("a2"), "tools/call", params(retry), meta);
    assert!(done["result"]["structuredContent"].is_object(), "{done}");
    finish_session(p);
    let text = std::fs::read_to_string(&path).unwrap();
    let record: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["tool"] == "fx_elicit")
        .unwrap();
    let events = shape(&record["events"]);
    let answer = ("proxy_to_server".to_owned(), "error".to_owned());
    assert_eq!(events.last(), Some(&answer), "{record}");
    let render = cli(&["render", path.to_str().unwrap()]);
    exits_with(&render, 0);
    let out = stdout(&render);
    assert!(
        out.contains("[proxy] elicitation_response for fx_elicit: error(-32602: the client gave no response for input request `1`)"),
        "{out}"
    );
    assert!(!out.contains("[user]"), "{out}");
}
