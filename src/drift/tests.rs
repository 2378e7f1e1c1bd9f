use std::path::Path;

use serde_json::json;

use super::*;
use crate::outcome::Outcome;

fn config(char_budget: usize) -> Config {
    let text = format!(
        "[defaults]\nchar_budget = {char_budget}\n[mcp_servers.git]\ncommand = \"git-server\"\n"
    );
    Config::parse(&text, Path::new("/c/config.toml"), &|_| None).unwrap()
}

/// A record of `git_log` on server `git` with `outcome`, its envelope mapped at budget 1000.
fn record(outcome: Outcome) -> CallRecord {
    crate::transcript::test_record("git_log", json!({"max_count": 3}), outcome, 1000, 5)
}

fn text(t: &str) -> Outcome {
    Outcome::Result {
        result: json!({"content": [{"type": "text", "text": t}]}),
    }
}

#[test]
fn the_same_answer_is_no_drift_whatever_the_budget() {
    let a = record(text("one\ntwo\nthree"));
    let b = record(text("one\ntwo\nthree"));
    for budget in [3, 8, 1000] {
        assert_eq!(
            compare(&a, &b, &config(budget), DriftOptions::default()),
            Verdict::Same
        );
    }
}

#[test]
fn rows_and_content_drift_are_reported_line_by_line() {
    let a = record(text("one\ntwo\nthree"));
    let b = record(text("one\n2\nthree\nfour"));
    let Verdict::Drift(lines) = compare(&a, &b, &config(1000), DriftOptions::default()) else {
        panic!("expected drift");
    };
    assert_eq!(
        lines,
        [
            "  rows: 3 -> 4",
            "  content:",
            "    - two",
            "    + 2",
            "    + four",
        ]
    );
    let opts = DriftOptions {
        ignore_content: true,
    };
    let Verdict::Drift(lines) = compare(&a, &b, &config(1000), opts) else {
        panic!("row count still drifts");
    };
    assert_eq!(lines, ["  rows: 3 -> 4"]);
    let same_rows = record(text("uno\ndos\ntres"));
    assert_eq!(compare(&a, &same_rows, &config(1000), opts), Verdict::Same);
}

#[test]
fn status_and_error_type_drift() {
    let ok = record(text("fine"));
    let timeout = record(Outcome::Timeout {
        timeout_ms: 10,
        timeout_ns: None,
    });
    let Verdict::Drift(lines) = compare(&ok, &timeout, &config(1000), DriftOptions::default())
    else {
        panic!("expected drift");
    };
    assert_eq!(lines[0], "  status: ok -> error");
    assert_eq!(lines[1], "  error type: none -> timeout");
    assert_eq!(row_count(&timeout), None);
    assert_eq!(error_type(&timeout.envelope), Some("timeout"));
}

#[test]
fn redaction_markers_are_found_at_any_depth() {
    assert!(has_redacted(&json!({"a": [{"token": "[redacted]"}]})));
    assert!(!has_redacted(&json!({"a": ["redacted", 1, null]})));
    // A secret replaced inside a string or a key (the server's secret values).
    assert!(has_redacted(&json!({"text": "tok [redacted] here"})));
    assert!(has_redacted(&json!({"k-[redacted]": 1})));
}
