//! The `mcp-envelope envelope` filter: bad input is a clear error on stderr and exit 2.

use assert_cmd::Command;

fn run(args: &[&str], stdin: &str) -> (i32, String, String) {
    let out = Command::cargo_bin("mcp-envelope")
        .unwrap()
        .args(args)
        .write_stdin(stdin)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn seed_sample() {
    let (code, stdout, _) = run(
        &["envelope", "--budget", "8"],
        r#"{"call_id":"t1","tool":"sql","rows":[{"b":2,"a":1},{"a":9,"b":8}]}"#,
    );
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "{\"call_id\":\"t1\",\"tool\":\"sql\",\"status\":\"truncated\",\"content\":\"a=1,b=2\",\"omitted\":1,\"retryable\":false}\n"
    );
}

#[test]
fn not_json_is_exit_2() {
    let (code, stdout, stderr) = run(&["envelope", "--budget", "8"], "{nope");
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(stderr.contains("not valid JSON"), "{stderr}");
}

#[test]
fn not_an_object_is_exit_2() {
    let (code, _, stderr) = run(&["envelope", "--budget", "8"], "[1,2]");
    assert_eq!(code, 2);
    assert!(stderr.contains("must be a JSON object"), "{stderr}");
}

#[test]
fn bad_row_is_named() {
    let (code, _, stderr) = run(&["envelope", "--budget", "8"], r#"{"rows":[{"a":1},"x"]}"#);
    assert_eq!(code, 2);
    assert!(stderr.contains("rows[1]"), "{stderr}");
}

#[test]
fn rows_not_a_list_is_exit_2() {
    let (code, _, stderr) = run(&["envelope", "--budget", "8"], r#"{"rows":{"a":1}}"#);
    assert_eq!(code, 2);
    assert!(stderr.contains("list of objects"), "{stderr}");
}

/// `envelope --budget 0` is the envelope function with a zero budget, which the envelope
/// spec defines (the shared vectors' cases of budget 0): a result's content is cut to
/// nothing, an error keeps its message. `render --budget 0` is a usage error: no call fits.
#[test]
fn zero_budget_is_the_spec_case_for_envelope_and_a_usage_error_for_render() {
    let (code, stdout, stderr) = run(
        &["envelope", "--budget", "0"],
        r#"{"call_id":"t1","tool":"sql","rows":[{"a":1}]}"#,
    );
    assert_eq!(code, 0, "{stderr}");
    let env: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(env["content"], "");
    assert_eq!(env["omitted"], 1);
    let (code, stdout, _) = run(
        &["envelope", "--budget", "0"],
        r#"{"call_id":"t2","tool":"x","error":{"type":"overloaded","message":"busy"}}"#,
    );
    assert_eq!(code, 0);
    let env: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(env["content"], "overloaded: busy");
    let (code, _, stderr) = run(&["render", "--budget", "0", "/nonexistent.jsonl"], "");
    assert_eq!(code, 2);
    assert!(stderr.contains("at least 1"), "{stderr}");
}

#[test]
fn negative_or_missing_budget_is_exit_2() {
    let (code, _, stderr) = run(&["envelope", "--budget", "-1"], "{}");
    assert_eq!(code, 2);
    assert!(stderr.contains("--budget"), "{stderr}");
    let (code, _, stderr) = run(&["envelope"], "{}");
    assert_eq!(code, 2);
    assert!(stderr.contains("--budget"), "{stderr}");
}
