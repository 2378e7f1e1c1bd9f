//! Transcript records of calls the client got no envelope for: the URL-elicitation-required
//! error (-32042), passed to the client as that JSON-RPC error. Each is recorded like any call
//! (one record per call, no `seq` left unused), and replay and cassettes handle the record.
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
