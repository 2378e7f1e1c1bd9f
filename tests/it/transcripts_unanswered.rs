//! Transcript records of calls the client got no envelope for: the URL-elicitation-required
//! error (-32042), passed to the client as that JSON-RPC error, and calls the client cancelled.
//! Each is recorded like any call (one record per call, no `seq` left unused), and replay and
//! cassettes handle the record.
use super::transcripts::{cli, exits_with, s, stdout, LONG};
use crate::common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// The call records of the transcript at `path` (its tool-list lines left out).
fn call_records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r.get("kind").is_none())
        .collect()
}

/// A call answered with -32042 is recorded with its `rpc_error` outcome between the calls
/// around it (no `seq` gap); replay agrees with the record, and a cassette of it answers the
/// same call with the same -32042 error, not an envelope.
#[test]
fn a_url_elicitation_error_is_recorded_and_played_back_as_that_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let (_d, cfg) = write_config(&fixture_server("fx", &["--features"], ""));
    let mut p = RawProxy::start(&cfg, &["--transcript", s(&path)]);
    p.initialize("2025-11-25");
    let echo = |p: &mut RawProxy, id: i64| p.call(json!(id), "echo", json!({"text": "x"}), LONG);
    assert_eq!(envelope_of(&echo(&mut p, 1))["status"], "ok");
    let asked = p.call(json!(2), "url_elicitation", json!({}), LONG);
    assert_eq!(asked["error"]["code"], -32042, "{asked}");
    assert_eq!(envelope_of(&echo(&mut p, 3))["status"], "ok");
    finish_session(p);
    let records = call_records(&path);
    let seqs: Vec<&Value> = records.iter().map(|r| &r["seq"]).collect();
    assert_eq!(seqs, [&json!(0), &json!(1), &json!(2)], "{records:?}");
    let outcome = &records[1]["outcome"];
    assert_eq!(outcome["kind"], "rpc_error", "{outcome}");
    assert_eq!(outcome["error"], asked["error"], "recorded as received");
    let replayed = cli(&["replay", s(&path)]);
    exits_with(&replayed, 0);
    assert!(
        stdout(&replayed).contains("3 passed"),
        "{}",
        stdout(&replayed)
    );
    // Played back: the client gets the recorded -32042 error itself, data included.
    let mut played = RawProxy::start(&cfg, &["--cassette", s(&path)]);
    played.initialize("2025-11-25");
    let again = played.call(json!(7), "url_elicitation", json!({}), LONG);
    assert_eq!(again["error"], asked["error"], "{again}");
    finish_session(played);
}

/// A call the client cancels is recorded as `cancelled` in its own `seq`; `replay` skips it
/// saying so (exit 0), `render` ends its group with one line saying it was cancelled, `stats`
/// counts it as a `cancelled` error, and a cassette of it does not answer it.
#[test]
fn a_cancelled_call_is_recorded_and_the_transcript_tools_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let (_d, cfg) = write_config(&fixture_server("fx", &[], ""));
    let mut p = RawProxy::start(&cfg, &["--transcript", s(&path)]);
    p.initialize("2025-11-25");
    let slow = json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"ms": 60_000}}});
    p.send(&slow);
    std::thread::sleep(std::time::Duration::from_millis(300));
    p.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "slow", "reason": "changed my mind"}}),
    );
    let echo = p.call(json!(2), "echo", json!({"text": "after"}), LONG);
    assert_eq!(envelope_of(&echo)["content"], "after");
    finish_session(p);
    let records = call_records(&path);
    let kinds: Vec<(&Value, &Value)> = records
        .iter()
        .map(|r| (&r["seq"], &r["outcome"]["kind"]))
        .collect();
    assert_eq!(
        kinds,
        [
            (&json!(0), &json!("cancelled")),
            (&json!(1), &json!("result"))
        ],
        "{records:?}"
    );
    let replayed = cli(&["replay", s(&path)]);
    exits_with(&replayed, 0);
    let text = stdout(&replayed);
    assert!(
        text.contains("skipped sleep {\"ms\":60000} (call_id=slow): the client cancelled it")
            && text.ends_with("1 passed, 0 failed, 1 skipped\n"),
        "{text}"
    );
    let rendered = stdout(&cli(&["render", s(&path)]));
    assert!(
        rendered.contains("2. [user] cancelled: no function_result (the client cancelled the call) [call_id=slow]\n"),
        "{rendered}"
    );
    let stats = stdout(&cli(&["stats", s(&path)]));
    let row = table_row(&stats, "sleep ");
    assert!(row.contains(" cancelled:1 "), "{stats}");
    // Played back, the cancelled call has no answer to give: not found.
    let mut played = RawProxy::start(&cfg, &["--cassette", s(&path)]);
    played.initialize("2025-11-25");
    let again = envelope_of(&played.call(json!(7), "sleep", json!({"ms": 60_000}), LONG));
    let content = again["content"].as_str().unwrap_or_default();
    assert!(content.starts_with("not_found: "), "{again}");
    finish_session(played);
}
