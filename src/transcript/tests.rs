//! Unit tests of the transcript writer, reader and replay over a config.
use super::*;
use crate::outcome::{map_outcome, MappingContext};
use serde_json::json;
use std::time::UNIX_EPOCH;

#[test]
fn rfc3339_with_millis() {
    let t = UNIX_EPOCH + Duration::from_millis(1_796_010_498_123);
    assert_eq!(rfc3339_utc_millis(t), "2026-11-30T03:48:18.123Z");
    assert_eq!(rfc3339_utc_millis(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    // A leap day.
    let t = UNIX_EPOCH + Duration::from_secs(951_782_400);
    assert_eq!(rfc3339_utc_millis(t), "2000-02-29T00:00:00.000Z");
}

#[test]
fn redacts_at_any_depth_case_insensitively() {
    let keys: Vec<String> = ["password", "api_key"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut v = json!({"user": "u", "Password": "p", "nested": [{"API_KEY": 1, "ok": {"password": {"x": 1}}}]});
    redact(&mut v, &keys);
    assert_eq!(
        v,
        json!({"user": "u", "Password": "[redacted]", "nested": [{"API_KEY": "[redacted]", "ok": {"password": "[redacted]"}}]})
    );
}

/// The default `[transcript] redact_keys`.
fn default_keys() -> Vec<String> {
    crate::config::DEFAULT_REDACT_KEYS
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn redaction_matches_the_usual_spellings_of_secret_keys() {
    let keys = default_keys();
    let mut v = json!({
        "access_token": "a", "apiKey": "b", "x-api-key": "c",
        "headers": {"Authorization": "Bearer d"}, "client_secret": "e",
        "query": "keep", "max_tokens": 5, "passwd": "f", "private_key": "g",
        "credentials": {"pass": "h"}, "Set-Cookie": "i", "jwt": "j", "author": "keep"
    });
    redact(&mut v, &keys);
    assert_eq!(
        v,
        json!({
            "access_token": "[redacted]", "apiKey": "[redacted]", "x-api-key": "[redacted]",
            "headers": {"Authorization": "[redacted]"}, "client_secret": "[redacted]",
            "query": "keep", "max_tokens": 5, "passwd": "[redacted]",
            "private_key": "[redacted]", "credentials": "[redacted]",
            "Set-Cookie": "[redacted]", "jwt": "[redacted]", "author": "keep"
        })
    );
    for pattern in crate::redact::SECRET_KEY_PATTERNS {
        assert!(
            keys.iter().any(|k| k == pattern),
            "{pattern} is no default key"
        );
    }
}

/// `progressToken` ends in `token` but is a protocol field (MCP `_meta.progressToken`), not a
/// secret: a transcript keeps it, so a recorded progress notification still says which call it
/// belongs to. A key that merely contains it is still redacted.
#[test]
fn the_progress_token_is_kept() {
    let keys = default_keys();
    let mut v = json!({
        "params": {"_meta": {"progressToken": "p7"}, "progressToken": 3},
        "my_progressToken": "s"
    });
    redact(&mut v, &keys);
    assert_eq!(
        v,
        json!({
            "params": {"_meta": {"progressToken": "p7"}, "progressToken": 3},
            "my_progressToken": "[redacted]"
        })
    );
}

/// A record written from a raw response line is byte for byte the record with the parsed
/// outcome (same keys, same order), with the result's text kept exactly as received.
#[test]
fn raw_result_lines_match_parsed_records() {
    let mut rec = record("c1", json!({"rows": [{"a": 1}, {"b": "é"}]}), 100);
    rec.events = vec![json!({"direction": "server_to_client", "message": {"m": 1}})];
    let result = match &rec.outcome {
        Outcome::Result { result } => result.clone(),
        _ => unreachable!(),
    };
    for line in [
        format!(r#"{{"jsonrpc":"2.0","id":5,"result":{result}}}"#),
        format!(r#"{{"result":{result},"jsonrpc":"2.0","id":"x"}}"#),
    ] {
        let raw = record_line_with_raw_result(&rec, &line);
        assert_eq!(raw, serde_json::to_vec(&rec).unwrap(), "{line}");
        let back: CallRecord = serde_json::from_slice(&raw).unwrap();
        assert_eq!(back, rec);
    }
    // Spacing inside the result is kept as received.
    let spaced = r#"{"jsonrpc":"2.0","id":5,"result":{ "content" : [] }}"#;
    let raw = String::from_utf8(record_line_with_raw_result(&rec, spaced)).unwrap();
    assert!(
        raw.contains(r#""outcome":{"kind":"result","result":{ "content" : [] }}"#),
        "{raw}"
    );
    // No valid result: recorded as an invalid response.
    for bad in [
        r#"{"jsonrpc":"2.0","id":5}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":[1,}"#,
    ] {
        let raw: Value = serde_json::from_slice(&record_line_with_raw_result(&rec, bad)).unwrap();
        assert_eq!(raw["outcome"]["kind"], "invalid_response", "{bad}");
    }
}

fn record(call_id: &str, rows: Value, budget: usize) -> CallRecord {
    let outcome = Outcome::Result {
        result: json!({"content": [], "structuredContent": rows}),
    };
    let ctx = MappingContext {
        call_id,
        tool: "t",
        server: "s",
        budget: crate::budget::Budget::chars(budget),
        text: crate::outcome::TextShape {
            long_rows: crate::budget::LongRows::Keep,
            ..Default::default()
        },
        media: MediaMode::Passthrough,
    };
    let envelope = map_outcome(&outcome, &ctx).envelope;
    CallRecord::new(
        UNIX_EPOCH,
        0,
        call_id,
        "t",
        "s",
        "t",
        json!({"token": "x"}),
        &["token".to_string()],
        budget,
        Duration::from_secs(1),
        MediaMode::Passthrough,
        outcome,
        envelope,
        Duration::from_millis(3),
        Vec::new(),
    )
}

#[test]
fn round_trip_and_replay_detects_budget_changes() {
    let r = record("1", json!([{"a": 1}, {"a": 2}]), 100);
    assert_eq!(r.arguments, json!({"token": "[redacted]"}));
    let text = to_text(std::slice::from_ref(&r));
    let t = parse_transcript(&text, Path::new("x.jsonl")).unwrap();
    assert_eq!(t.records, vec![r.clone()]);
    assert!(replay(&t, None).iter().all(ReplayResult::matches));
    let cfg = Config::parse(
        "[defaults]\nchar_budget = 3\n[mcp_servers.s]\ncommand = \"x\"\n",
        Path::new("/c.toml"),
        &|_| None,
    )
    .unwrap();
    let results = replay(&t, Some(&cfg));
    assert!(!results[0].matches());
    assert_eq!(results[0].recomputed.omitted, 1);
    assert!(results[0].diff().iter().any(|l| l.contains("omitted")));
}

#[test]
fn broken_last_line_is_tolerated_but_not_a_middle_one() {
    let good = to_text(&[record("1", json!([{"a": 1}]), 10)]);
    let text = format!("{good}{{\"v\":1,\"call");
    let t = parse_transcript(&text, Path::new("x.jsonl")).unwrap();
    assert_eq!(t.records.len(), 1);
    assert!(t.broken_last_line.unwrap().contains("x.jsonl:2"));
    let text = format!("{{\"v\":1,\"call\n{good}");
    match parse_transcript(&text, Path::new("x.jsonl")) {
        Err(ReadError::BadLine { line: 1, .. }) => {}
        other => panic!("{other:?}"),
    }
}

/// A last line that is whole but wrong (no newline after it, or a wrong member) is an error as
/// any other line is; only a line cut short is forgiven. A damaged one-record golden file
/// replayed green before (0 passed, 0 failed). So is a last character cut short.
#[test]
fn a_last_line_that_is_whole_but_wrong_is_an_error() {
    let good = to_text(&[record("1", json!([{"a": 1}]), 10)]);
    let one = good.trim_end();
    let wrong_budget = one.replacen("\"char_budget\":10", "\"char_budget\":-5", 1);
    assert_ne!(wrong_budget, one);
    let bom = format!("\u{feff}{one}");
    let unknown_kind = one.replacen("\"kind\":\"result\"", "\"kind\":\"bogus\"", 1);
    assert_ne!(unknown_kind, one);
    for (text, line) in [
        (format!("{good}{wrong_budget}"), 2),
        (format!("{good}{wrong_budget}\n"), 2),
        (bom, 1),
        (format!("{good}{unknown_kind}"), 2),
    ] {
        match parse_transcript(&text, Path::new("x.jsonl")) {
            Err(ReadError::BadLine { line: l, .. }) if l == line => {}
            other => panic!("{text}: {other:?}"),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.jsonl");
    let mut bytes = format!("{good}{{\"v\":1,\"call_id\":\"é").into_bytes();
    bytes.pop();
    std::fs::write(&path, &bytes).unwrap();
    let t = read_transcript(&path).unwrap();
    assert_eq!(t.records.len(), 1);
    assert!(t.broken_last_line.unwrap().contains("cut.jsonl:2"));
    std::fs::write(&path, b"\xff\n").unwrap();
    assert!(matches!(read_transcript(&path), Err(ReadError::Io { .. })));
}

#[test]
fn writer_creates_the_file_with_mode_0600_and_appends_whole_lines() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let w = TranscriptWriter::open(path.clone(), vec![]).unwrap();
    w.record(record("1", json!([{"a": 1}]), 10));
    w.record(record("2", json!([{"a": 2}]), 10));
    w.flush();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let t = read_transcript(&path).unwrap();
    assert_eq!(t.records.len(), 2);
    assert_eq!(t.records[1].call_id, "2");
}

/// A symlinked path is not followed and a FIFO is not written: each is an error naming the
/// path and why, when the writer is opened (they were logged, and the proxy ran without
/// recording); an existing file others could read becomes 0600.
#[test]
fn writer_refuses_symlinks_and_fifos_and_tightens_loose_modes() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.jsonl");
    std::fs::write(&target, "").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = TranscriptWriter::open(link.clone(), vec![]).unwrap_err();
    assert_eq!(err.path, link);
    assert!(err.why.contains("symbolic link"), "{err}");
    assert!(err.to_string().contains("link.jsonl"), "{err}");
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "followed the link");

    let w = TranscriptWriter::open(target.clone(), vec![]).unwrap();
    w.record(record("2", json!([{"a": 2}]), 10));
    w.flush();
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(read_transcript(&target).unwrap().records.len(), 1);

    let fifo = dir.path().join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let err = TranscriptWriter::open(fifo.clone(), vec![]).unwrap_err();
    assert!(err.why.contains("FIFO"), "{err}");
}

/// A directory, a missing directory, a file where a directory should be and a file without
/// write permission are each an error naming the path and why (they were logged, and the
/// proxy ran without recording).
#[test]
fn unwritable_paths_are_errors_naming_the_path_and_why() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let read_only = dir.path().join("read-only.jsonl");
    std::fs::write(&read_only, "").unwrap();
    std::fs::set_permissions(&read_only, std::fs::Permissions::from_mode(0o400)).unwrap();
    // root may write any file: only a non-root run sees the permission refused.
    // SAFETY: geteuid takes nothing and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cases = vec![
        (dir.path().to_owned(), "is a directory, not a file"),
        (dir.path().join("missing/t.jsonl"), "does not exist"),
        (file.join("t.jsonl"), "is not one"),
    ];
    if !root {
        cases.push((read_only, "permission denied"));
    }
    for (path, why) in cases {
        let err = TranscriptWriter::open(path.clone(), vec![]).unwrap_err();
        assert_eq!(err.path, path);
        assert!(err.why.contains(why), "{path:?}: {err}");
        assert!(err.to_string().contains(&format!("{path:?}")), "{err}");
    }
}

/// Records are numbered as they are queued, whatever `seq` they were made with: 0, 1, 2, ….
#[test]
fn records_are_numbered_as_they_are_queued() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let w = TranscriptWriter::open(path.clone(), vec![]).unwrap();
    for (i, made_with) in [7u64, 7, 0].into_iter().enumerate() {
        let mut r = record(&i.to_string(), json!([]), 10);
        r.seq = made_with;
        w.record(r);
    }
    w.flush();
    let seqs: Vec<u64> = read_transcript(&path)
        .unwrap()
        .records
        .iter()
        .map(|r| r.seq)
        .collect();
    assert_eq!(seqs, [0, 1, 2]);
}

#[test]
fn a_full_queue_drops_records_instead_of_growing() {
    let (tx, _rx) = std_mpsc::sync_channel(MAX_QUEUED_RECORDS);
    let w = TranscriptWriter {
        tx,
        redact_keys: vec![],
        dropped: Default::default(),
        next_seq: Default::default(),
    };
    for i in 0..MAX_QUEUED_RECORDS + 10 {
        w.record(record(&i.to_string(), json!([]), 10));
    }
    assert_eq!(w.dropped(), 10);
    w.flush();
}

#[test]
fn update_records_budgets_and_rewrite_keeps_the_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(
        &path,
        to_text(&[record("1", json!([{"a": 1}, {"a": 2}]), 100)]),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let cfg = Config::parse(
        "[defaults]\nchar_budget = 3\n[mcp_servers.s]\ncommand = \"x\"\n",
        Path::new("/c.toml"),
        &|_| None,
    )
    .unwrap();
    let mut t = read_transcript(&path).unwrap();
    let results = replay(&t, Some(&cfg));
    apply_update(&mut t.records, results, Some(&cfg));
    rewrite(&path, &t).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let t = read_transcript(&path).unwrap();
    assert_eq!(t.records[0].char_budget, 3);
    assert_eq!(t.records[0].envelope.omitted, 1);
    // Replaying without a config now agrees with the updated file.
    assert!(replay(&t, None).iter().all(ReplayResult::matches));
}

#[test]
fn other_format_versions_are_named() {
    match parse_transcript("{\"v\":99}\n", Path::new("x.jsonl")) {
        Err(ReadError::BadLine {
            line: 1, message, ..
        }) => {
            assert!(message.contains("version 99"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}
