//! Every case of the shared envelope vectors (`tests/vectors/envelope.jsonl`, a copy of
//! `shared/vectors/envelope.jsonl`), through the library and through the CLI filter.

use assert_cmd::Command;
use mcp_envelope::envelope::{summarize_tool_result, ToolResult};
use serde_json::Value;

struct Case {
    line: usize,
    result: Value,
    budget: usize,
    expected: Value,
}

fn cases() -> Vec<Case> {
    let text = include_str!("../vectors/envelope.jsonl");
    let cases: Vec<Case> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
            Case {
                line: i + 1,
                result: v["result"].clone(),
                budget: v["budget"].as_u64().expect("budget") as usize,
                expected: v["expected"].clone(),
            }
        })
        .collect();
    assert!(
        cases.len() >= 70,
        "expected the full vector file, got {}",
        cases.len()
    );
    cases
}

#[test]
fn vectors_through_the_library() {
    for case in cases() {
        let result = ToolResult::from_json(&case.result).expect("vector results are valid");
        let got = summarize_tool_result(&result, case.budget).to_value();
        assert_eq!(got, case.expected, "vector line {}", case.line);
        // Key order is part of the contract.
        let keys: Vec<&String> = got.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "call_id",
                "tool",
                "status",
                "content",
                "omitted",
                "retryable"
            ]
        );
    }
}

#[test]
fn vectors_through_the_cli() {
    for case in cases() {
        let out = Command::cargo_bin("mcp-envelope")
            .unwrap()
            .args(["envelope", "--budget", &case.budget.to_string()])
            .write_stdin(case.result.to_string())
            .output()
            .unwrap();
        assert!(out.status.success(), "vector line {}: {:?}", case.line, out);
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_eq!(stdout.matches('\n').count(), 1, "one line of output");
        let got: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(got, case.expected, "vector line {}", case.line);
        let expected_line = serde_json::to_string(&case.expected).unwrap();
        assert_eq!(
            stdout.trim_end(),
            expected_line,
            "compact JSON, keys in spec order"
        );
    }
}
