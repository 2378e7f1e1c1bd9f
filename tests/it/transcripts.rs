//! Transcripts end to end (issue 4): recording through `serve --transcript` against the real
//! servers, `replay` (unchanged, with a smaller budget, `--update`), `render`, broken lines, and
//! the committed golden transcript of real-server outputs.
//!
//! Regenerating the golden files (after an intended change of the mapping or of the rendering):
//!
//!     UPDATE_GOLDEN=1 cargo test --test transcripts golden
//!
//! re-records `tests/golden/real_servers.jsonl` against the pinned real servers and rewrites
//! `tests/golden/real_servers.render.txt`; review the diff before committing.
use crate::common;
use common::*;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

pub(super) const LONG: Duration = Duration::from_secs(60);

/// Runs `mcp-envelope ARGS`.
pub(super) fn cli(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

pub(super) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(super) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that `out` exited with `code`, showing both outputs otherwise.
pub(super) fn exits_with(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}{}",
        stdout(out),
        stderr(out)
    );
}

pub(super) fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const RECORD_KEYS: [&str; 20] = [
    "v",
    "started_at",
    "seq",
    "call_id",
    "tool",
    "server",
    "server_tool",
    "arguments",
    "char_budget",
    "long_rows",
    "text_rows",
    "timeout_ms",
    "media",
    "outcome",
    "envelope",
    "duration_ms",
    "events",
    "token_budget",
    "tokenizer",
    "chars_unlimited",
];

/// Records a session with time, git (git_log budget 300) and the fixture into `path`.
fn record_session(path: &Path, repo: &Path) {
    let (_d, cfg) = write_config(&format!(
        "{}{}{}",
        real_server("time", ""),
        git_server(repo, "[mcp_servers.git.tools.git_log]\nchar_budget = 300"),
        fixture_server("fx", &[], "")
    ));
    let mut p = RawProxy::start(&cfg, &["--transcript", s(path)]);
    p.initialize("2025-06-18");
    let calls = [
        ("get_current_time", json!({"timezone": "Europe/Warsaw"})),
        ("get_current_time", json!({"timezone": "Mars/Phobos"})),
        (
            "git_log",
            json!({"repo_path": repo.display().to_string(), "max_count": 20}),
        ),
        ("echo", json!({"text": "hi", "token": "s3cret"})),
    ];
    for (i, (tool, args)) in calls.iter().enumerate() {
        envelope_of(&p.call(json!(i + 1), tool, args.clone(), LONG));
    }
    let kids = children_of(p.pid());
    assert!(p.close(Duration::from_secs(15)).success());
    assert!(wait_gone(&kids, Duration::from_secs(10)).is_empty());
}

#[test]
fn recorded_session_replays_updates_and_renders() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let repo = git_repo(10);
    record_session(&path, repo.path());
    recorded_file_is_private_and_complete(&path);
    // Replay unchanged.
    let out = cli(&["replay", s(&path)]);
    exits_with(&out, 0);
    let o = stdout(&out);
    let lines: Vec<&str> = o.lines().collect();
    assert_eq!(lines.len(), 5, "{o}");
    assert!(lines[..4].iter().all(|l| l.starts_with("ok ")), "{o}");
    assert_eq!(lines[4], "4 passed, 0 failed");

    let (_d, small) = write_config(&format!(
        "[defaults]\nchar_budget = 10\n{}{}{}",
        real_server("time", ""),
        git_server(repo.path(), ""),
        fixture_server("fx", &[], "")
    ));
    replay_with_a_smaller_budget_fails_with_diffs(&path, &small);
    let updated = dir.path().join("updated.jsonl");
    std::fs::copy(&path, &updated).unwrap();
    update_rewrites_the_envelopes(&updated, &small);
    render_numbers_the_lines_within_a_budget(&path);
}

/// The file written by `record_session`: mode 0600, one CallRecord per line, the token
/// redacted.
fn recorded_file_is_private_and_complete(path: &Path) {
    let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "mode {mode:o}");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(!text.contains("s3cret"), "secret written to the transcript");
    let (lists, records) = split_lines(&text);
    assert_eq!(records.len(), 4);
    let mut servers: Vec<&str> = lists
        .iter()
        .map(|l| l["server"].as_str().unwrap())
        .collect();
    servers.sort_unstable();
    assert_eq!(servers, ["fx", "git", "time"], "one tool list per server");
    assert!(lists
        .iter()
        .all(|l| l["v"] == 1 && l["tools"].as_array().is_some_and(|t| !t.is_empty())));
    for (i, r) in records.iter().enumerate() {
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        for k in &keys {
            assert!(RECORD_KEYS.contains(k), "unexpected key {k}");
        }
        for k in &RECORD_KEYS[..16] {
            assert!(keys.contains(k), "record {i} lacks {k}: {r}");
        }
        assert_eq!(r["v"], 1);
        assert_eq!(r["seq"], i as u64);
        assert_eq!(r["call_id"], (i + 1).to_string());
        assert_eq!(r["envelope"]["call_id"], r["call_id"]);
    }
    assert_eq!(records[0]["server"], "time");
    assert_eq!(records[0]["envelope"]["status"], "ok");
    assert_eq!(records[1]["envelope"]["status"], "error");
    assert_eq!(records[2]["server"], "git");
    assert_eq!(records[2]["char_budget"], 300);
    assert_eq!(records[2]["envelope"]["status"], "truncated");
    assert_eq!(records[2]["outcome"]["kind"], "result");
    assert_eq!(
        records[3]["arguments"],
        json!({"text": "hi", "token": "[redacted]"})
    );
}

/// Replay with a smaller budget (`small`, a config): changed lines with a diff, exit 1.
fn replay_with_a_smaller_budget_fails_with_diffs(path: &Path, small: &Path) {
    let out = cli(&["--config", s(small), "replay", s(path)]);
    exits_with(&out, 1);
    let o = stdout(&out);
    let changed = o.lines().filter(|l| l.starts_with("changed ")).count();
    // time ok (row > 10 chars), time error (message cut), git_log; echo "hi" still fits.
    assert_eq!(changed, 3, "{o}");
    assert!(
        o.lines()
            .any(|l| l.starts_with("ok ") && l.contains("echo")),
        "{o}"
    );
    // Each changed line is followed by at least one diff line.
    let all: Vec<&str> = o.lines().collect();
    for (i, l) in all.iter().enumerate() {
        if l.starts_with("changed ") {
            let next = all[i + 1];
            assert!(
                !next.starts_with("ok ") && !next.starts_with("changed "),
                "no diff after {l}"
            );
        }
    }
    assert!(o.ends_with("1 passed, 3 failed\n"), "{o}");
}

/// `--update` rewrites the envelopes of `updated` (a copy of the recording); a second replay
/// with the same config passes.
fn update_rewrites_the_envelopes(updated: &Path, small: &Path) {
    let out = cli(&["--config", s(small), "replay", s(updated), "--update"]);
    exits_with(&out, 0);
    assert!(stdout(&out).contains("updated 3 envelope(s)"));
    let out = cli(&["--config", s(small), "replay", s(updated)]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).ends_with("4 passed, 0 failed\n"));
    // The updated envelopes are the small-budget ones; the tool lists are kept.
    let (lists, records) = split_lines(&std::fs::read_to_string(updated).unwrap());
    assert_eq!(lists.len(), 3, "--update keeps the tool lists");
    let first = &records[0];
    assert_eq!(first["envelope"]["status"], "truncated");
    // The time server's one JSON object is longer than 10 characters: its first piece
    // (`long_rows = "split"`), the rest counted in `omitted`.
    let content = first["envelope"]["content"].as_str().unwrap();
    assert_eq!(content.chars().count(), 10, "{content}");
    assert!(content.starts_with("datetime="), "{content}");
    assert!(first["envelope"]["omitted"].as_u64().unwrap() > 1);
}

/// Render: numbered lines, one call + one result per call here; with `--budget` the first two
/// groups fit and the rest is one left-out line.
fn render_numbers_the_lines_within_a_budget(path: &Path) {
    let out = cli(&["render", s(path)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let o = stdout(&out);
    let lines: Vec<&str> = o.lines().collect();
    assert_eq!(lines.len(), 8, "{o}");
    assert_eq!(
        lines[0],
        r#"1. [assistant] function_call get_current_time({"timezone":"Europe/Warsaw"}) [call_id=1]"#
    );
    assert!(
        lines[1].starts_with("2. [tool] function_result: datetime="),
        "{o}"
    );
    assert!(
        lines[3].starts_with("4. [tool] function_result: error(tool_error: "),
        "{o}"
    );
    assert!(lines[5].contains(" omitted) [call_id=3]"), "{o}");
    assert_eq!(
        lines[6],
        r#"7. [assistant] function_call echo({"text":"hi","token":"[redacted]"}) [call_id=4]"#
    );
    assert_eq!(lines[7], "8. [tool] function_result: hi [call_id=4]");
    // --budget: the first two groups and the line counting the rest fit, exactly.
    let trailer = "(2 more calls omitted for budget)\n";
    let budget = lines[..4]
        .iter()
        .map(|l| l.chars().count() + 1)
        .sum::<usize>()
        + trailer.chars().count();
    let out = cli(&["render", s(path), "--budget", &budget.to_string()]);
    assert_eq!(out.status.code(), Some(0));
    let o2 = stdout(&out);
    let expected = format!("{}\n{trailer}", lines[..4].join("\n"));
    assert_eq!(o2, expected);
    assert_eq!(o2.chars().count(), budget);
}

#[test]
fn broken_last_line_warns_and_broken_middle_line_fails() {
    let dir = tempfile::tempdir().unwrap();
    let golden = golden_dir().join("real_servers.jsonl");
    let text = std::fs::read_to_string(&golden).unwrap();
    let n = text.lines().count();

    let broken_last = dir.path().join("last.jsonl");
    std::fs::write(&broken_last, format!("{text}{{\"v\":1,\"started_at\":\"20")).unwrap();
    let out = cli(&["replay", s(&broken_last)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).ends_with(&format!("{n} passed, 0 failed\n")));
    let err = stderr(&out);
    assert!(
        err.contains("warning:") && err.contains(&format!("last.jsonl:{}", n + 1)),
        "{err}"
    );
    let out = cli(&["render", s(&broken_last)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning:"));
    assert_eq!(
        stdout(&out),
        std::fs::read_to_string(golden_dir().join("real_servers.render.txt")).unwrap()
    );

    let broken_middle = dir.path().join("middle.jsonl");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(2, "{\"v\":1,\"oops\"");
    std::fs::write(&broken_middle, lines.join("\n") + "\n").unwrap();
    for cmd in ["replay", "render", "stats"] {
        let out = cli(&[cmd, s(&broken_middle)]);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(
            err.contains("middle.jsonl") && err.contains('3'),
            "{cmd}: {err}"
        );
    }
}

/// A transcript's lines parsed: (tool-list records, call records).
fn split_lines(text: &str) -> (Vec<Value>, Vec<Value>) {
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .partition(|v| v["kind"] == "tools")
}

pub(super) fn golden_dir() -> PathBuf {
    root().join("tests/golden")
}

/// Records the golden transcript against the real servers (only with UPDATE_GOLDEN=1).
fn record_golden(path: &Path) {
    let repo = git_repo(30);
    let (_d, cfg) = write_config(&format!(
        "{}{}{}{}",
        real_server("everything", ""),
        real_server("time", ""),
        git_server(
            repo.path(),
            "[mcp_servers.git.tools.git_log]\nchar_budget = 300"
        ),
        fixture_server(
            "fx",
            &[],
            "[mcp_servers.fx.tools.sleep]\ntool_timeout_sec = 1"
        )
    ));
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec.jsonl");
    let mut p = RawProxy::start(&cfg, &["--transcript", s(&rec)]);
    p.initialize("2025-06-18");
    let calls = [
        ("get_current_time", json!({"timezone": "Europe/Warsaw"})),
        ("get_current_time", json!({"timezone": "Mars/Phobos"})),
        ("git_log", json!({"repo_path": "/repo", "max_count": 30})),
        ("everything__echo", json!({"message": "hello golden"})),
        ("get-sum", json!({"a": 2, "b": 3})),
        ("get-tiny-image", json!({})),
        ("no_such_tool", json!({})),
        ("sleep", json!({"ms": 3000})),
    ];
    for (i, (tool, args)) in calls.iter().enumerate() {
        let mut args = args.clone();
        if *tool == "git_log" {
            args["repo_path"] = json!(repo.path().display().to_string());
        }
        envelope_of(&p.call(json!(i + 1), tool, args, LONG));
    }
    let kids = children_of(p.pid());
    assert!(p.close(Duration::from_secs(15)).success());
    assert!(wait_gone(&kids, Duration::from_secs(10)).is_empty());
    // The temporary repository path is not stable: store a fixed one in the arguments.
    let text = std::fs::read_to_string(&rec)
        .unwrap()
        .replace(&repo.path().display().to_string(), "/repo");
    std::fs::create_dir_all(golden_dir()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn golden_real_servers_replay_and_render() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let jsonl = golden_dir().join("real_servers.jsonl");
    let render = golden_dir().join("real_servers.render.txt");
    if update {
        record_golden(&jsonl);
    }
    assert_replay_passes(&jsonl, 8);
    let out = cli(&["render", s(&jsonl)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    if update {
        std::fs::write(&render, &out.stdout).unwrap();
    }
    assert_eq!(
        stdout(&out),
        std::fs::read_to_string(&render).unwrap(),
        "render changed; regenerate with UPDATE_GOLDEN=1 if intended"
    );
    // Pin a few envelopes of the golden outputs explicitly as well.
    let records: Vec<Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let env = |i: usize| &records[i]["envelope"];
    assert_eq!(env(0)["status"], "ok");
    assert_eq!(env(1)["retryable"], false);
    assert_eq!(env(2)["status"], "truncated");
    assert_eq!(env(3)["content"], "Echo: hello golden");
    assert_eq!(env(4)["content"], "The sum of 2 and 3 is 5.");
    assert_eq!(env(6)["content"], "not_found: no tool named 'no_such_tool'");
    assert_eq!(
        env(7)["content"],
        "timeout: no response from server 'fx' within 1s"
    );
    assert_eq!(env(7)["retryable"], true);
}

/// The offline `replay` reads only budgets and mapping settings from `--config`, so a config
/// whose servers take secrets from variables that are not set (a CI job) still replays (here
/// with the budgets the golden transcript was recorded with); a command that starts servers
/// still refuses it, naming the variable.
#[test]
fn offline_replay_does_not_need_the_servers_secrets() {
    let var = "MCP_ENVELOPE_TEST_NEVER_SET";
    let (_d, cfg) = write_config(&format!(
        "[mcp_servers.fx]\ncommand = \"python3\"\nenv = {{ TOKEN = \"${{{var}}}\" }}\n\
         [mcp_servers.web]\nurl = \"https://${{{var}}}.example/mcp\"\n\
         http_headers = {{ Authorization = \"Bearer ${{{var}}}\" }}\n\
         [mcp_servers.git]\ncommand = \"${{{var}}}\"\n\
         [mcp_servers.git.tools.git_log]\nchar_budget = 300\n"
    ));
    let jsonl = golden_dir().join("real_servers.jsonl");
    let out = cli(&["--config", s(&cfg), "replay", s(&jsonl)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).ends_with("8 passed, 0 failed\n"),
        "{}",
        stdout(&out)
    );
    let check = cli(&["--config", s(&cfg), "check"]);
    assert_eq!(check.status.code(), Some(2), "{}", stderr(&check));
    assert!(stderr(&check).contains(var), "{}", stderr(&check));
}

/// Large results (lines of 64 KiB and more, mapped in one pass without a tree) are recorded
/// verbatim from the line, whichever order the server writes the response's members in, and
/// replay recomputes exactly the envelopes that were sent.
#[test]
fn large_results_are_recorded_verbatim_and_replay_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let (_d, cfg) = write_config(&format!(
        "[defaults]\nchar_budget = 500\n{}",
        fixture_server("fx", &[], "")
    ));
    let mut p = RawProxy::start(&cfg, &["--transcript", s(&path)]);
    p.initialize("2025-06-18");
    let calls = [
        ("big_rows", json!({"n": 3000})),
        ("big_rows_ts", json!({"n": 3000})),
        ("big_rows", json!({"n": 200_000})),
        ("big", json!({"bytes": 100_000})),
        ("rows", json!({"n": 3})),
    ];
    let mut sent = Vec::new();
    for (i, (tool, args)) in calls.iter().enumerate() {
        let r = p.call(json!(i), tool, args.clone(), LONG);
        sent.push(envelope_of(&r));
    }
    finish_session(p);
    let text = std::fs::read_to_string(&path).unwrap();
    let (_, records) = split_lines(&text);
    assert_eq!(records.len(), calls.len());
    for (record, envelope) in records.iter().zip(&sent) {
        assert_eq!(&record["envelope"], envelope);
        assert_eq!(record["outcome"]["kind"], "result", "{}", record["tool"]);
    }
    let rows = records[2]["outcome"]["result"]["structuredContent"]["rows"]
        .as_array()
        .unwrap();
    assert_eq!(rows.len(), 200_000);
    assert_eq!(rows[199_999]["i"], 199_999);
    assert_replay_passes(&path, calls.len());
}

/// `replay` of `path` exits 0 and reports all `n` records unchanged.
fn assert_replay_passes(path: &Path, n: usize) {
    let out = cli(&["replay", s(path)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "an envelope recomputed from a recorded outcome changed:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    let summary = format!("{n} passed, 0 failed\n");
    assert!(stdout(&out).ends_with(&summary), "{}", stdout(&out));
}
