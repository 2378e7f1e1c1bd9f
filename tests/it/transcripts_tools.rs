//! The tools over transcripts end to end: `stats` of the golden transcript (table, JSON, an
//! HTML report rendered in headless Chromium), `replay --live` drift after a server changes, and
//! cassettes that serve a recorded session without its servers.
use super::transcripts::{cli, golden_dir, s, stderr, stdout, LONG};
use crate::common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[test]
fn stats_of_the_golden_transcript() {
    let jsonl = golden_dir().join("real_servers.jsonl");
    let out = cli(&["stats", s(&jsonl)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("TOOL") && lines[0].contains("SUGGESTED_TOKEN_BUDGET"),
        "{table}"
    );
    let git_log = lines
        .iter()
        .find(|l| l.starts_with("git_log "))
        .expect("git_log row");
    let cells: Vec<&str> = git_log.split_whitespace().collect();
    // TOOL SERVER CALLS ERRORS TRUNCATED ...
    assert_eq!(&cells[1..5], ["git", "1", "-", "1"], "{git_log}");
    assert!(
        table.contains("timeout:1") && table.contains("not_found:1"),
        "{table}"
    );

    let out = cli(&["stats", s(&jsonl), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = doc["tools"].as_array().unwrap();
    let calls: u64 = tools.iter().map(|t| t["calls"].as_u64().unwrap()).sum();
    let records = std::fs::read_to_string(&jsonl).unwrap().lines().count() as u64;
    assert_eq!(calls, records);
    let log = tools.iter().find(|t| t["tool"] == "git_log").unwrap();
    assert!(
        log["raw_chars"].as_u64() > log["envelope_chars"].as_u64(),
        "{log}"
    );
    assert!(
        log["raw_tokens"].as_u64() > log["envelope_tokens"].as_u64(),
        "{log}"
    );
    assert_eq!(log["tokenizer"], "o200k_base");
    assert!(log["suggested_token_budget"].as_u64() > Some(0), "{log}");
    let out = cli(&["stats", s(&jsonl), "--tokenizer", "cl100k"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown tokenizer is a usage error"
    );
    assert!(stderr(&out).contains("cl100k_base"), "{}", stderr(&out));
    // The suggested budget keeps the recorded git_log result whole: it is its full length.
    let budget = log["suggested_char_budget"].as_u64().unwrap();
    assert!(
        budget > 600,
        "the recorded git_log was truncated at 600: {log}"
    );
}

/// The HTML report rendered by a real browser: headless Chromium loads it, its DOM has the
/// chart with one group per tool, and a screenshot is taken. Chromium is installed by
/// `scripts/install-deps` in CI; elsewhere the test says it skipped when Chromium is missing.
#[test]
fn stats_html_report_renders_in_headless_chromium() {
    let jsonl = golden_dir().join("real_servers.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("stats.html");
    let out = cli(&["stats", s(&jsonl), "--html", s(&html)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let Some(chromium) = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have Chromium (scripts/install-deps)"
        );
        eprintln!("skipped: no Chromium on this machine");
        return;
    };
    let url = format!("file://{}", html.display());
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ];
    let profile = dir.path().join("profile");
    let browser = |extra: &[String]| {
        Command::new(&chromium)
            .args(flags)
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(&url)
            .output()
            .unwrap()
    };
    let dom = browser(&["--dump-dom".to_owned()]);
    let dom = stdout(&dom);
    assert!(dom.contains("<svg id=\"saved-chart\""), "{dom}");
    let tools = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["tool"].to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert_eq!(dom.matches("class=\"tool\"").count(), tools, "{dom}");
    let png = dir.path().join("stats.png");
    let shot = browser(&[
        format!("--screenshot={}", png.display()),
        "--window-size=1100,700".to_owned(),
    ]);
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{e}: {}", stderr(&shot)));
    assert_eq!(&bytes[1..4], b"PNG");
    assert!(
        bytes.len() > 5_000,
        "a blank page would be tiny: {} bytes",
        bytes.len()
    );
    if let Some(keep) = std::env::var_os("STATS_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
}

/// `replay --live`: the recorded calls made again against the real servers. Unchanged servers:
/// no drift (content ignored, since the time changes); a secret argument makes its call
/// skipped, not guessed. New commits in the repository: git_log drifts in rows and content, and
/// the exit code says so.
#[test]
fn replay_live_reports_drift_after_the_server_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let repo = git_repo(10);
    let (_d, cfg) = write_config(&format!(
        "{}{}{}",
        real_server("time", ""),
        git_server(
            repo.path(),
            "[mcp_servers.git.tools.git_log]\nchar_budget = 300"
        ),
        fixture_server("fx", &[], "")
    ));
    let mut p = RawProxy::start(&cfg, &["--transcript", s(&path)]);
    p.initialize("2025-06-18");
    let calls = [
        ("get_current_time", json!({"timezone": "Europe/Warsaw"})),
        ("get_current_time", json!({"timezone": "Mars/Phobos"})),
        (
            "git_log",
            json!({"repo_path": repo.path().display().to_string(), "max_count": 20}),
        ),
        ("echo", json!({"text": "hi", "token": "s3cret"})),
    ];
    for (i, (tool, args)) in calls.iter().enumerate() {
        envelope_of(&p.call(json!(i + 1), tool, args.clone(), LONG));
    }
    assert!(p.close(Duration::from_secs(15)).success());

    let live = |extra: &[&str]| {
        let mut args = vec!["replay", "--live", s(&path), "--config", s(&cfg)];
        args.extend_from_slice(extra);
        cli(&args)
    };
    let out = live(&["--ignore-content"]);
    let o = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{o}{}", stderr(&out));
    let lines: Vec<&str> = o.lines().collect();
    assert_eq!(lines.len(), 5, "{o}");
    assert!(lines[..3].iter().all(|l| l.starts_with("same ")), "{o}");
    assert!(
        lines[3].starts_with("skipped echo") && lines[3].contains("redacted"),
        "{o}"
    );
    assert_eq!(lines[4], "3 passed, 0 failed, 1 skipped");

    // Five more commits: git_log now answers 15 rows instead of 10.
    git_commits(repo.path(), "later commit", 5);
    let out = live(&["--ignore-content"]);
    let o = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{o}{}", stderr(&out));
    assert!(o.contains("drift   git_log"), "{o}");
    assert!(o.contains("  rows: "), "{o}");
    assert!(!o.contains("  content:"), "content ignored: {o}");
    let out = live(&[]);
    let o = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{o}");
    assert!(
        o.contains("  content:") && o.contains("later commit"),
        "{o}"
    );
}

/// The plan of calls recorded and then played back from a cassette.
fn cassette_plan(repo: &Path) -> Value {
    json!([
        {"op": "list_tools"},
        {"op": "call", "name": "get_current_time", "arguments": {"timezone": "Europe/Warsaw"}},
        {"op": "call", "name": "get_current_time", "arguments": {"timezone": "Mars/Phobos"}},
        {"op": "call", "name": "git_log", "arguments": {"repo_path": repo.display().to_string(), "max_count": 40}},
        {"op": "call", "name": "echo", "arguments": {"message": "hi"}},
        {"op": "call", "name": "get-sum", "arguments": {"a": 2, "b": 3}},
        {"op": "call", "name": "get-tiny-image", "arguments": {}},
    ])
}

/// Servers of the recording's names whose programs do not exist: a proxy that tried to start
/// one would find it unavailable.
fn uninstalled_servers(git_log_budget: usize) -> String {
    format!(
        "[mcp_servers.everything]\ncommand = \"/nonexistent/mcp-server-everything\"\n\
         [mcp_servers.time]\ncommand = \"mcp-server-time-not-installed\"\n\
         [mcp_servers.git]\ncommand = \"mcp-server-git-not-installed\"\n\
         [mcp_servers.git.tools.git_log]\nchar_budget = {git_log_budget}\n"
    )
}

/// A session recorded against the real servers, then served from the cassette to the Python
/// SDK client with none of the servers installed: the same tools and identical envelopes; a
/// budget change applies to the recorded data; an unrecorded call names the closest one.
#[test]
fn cassette_serves_a_recorded_session_without_its_servers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let repo = git_repo(40);
    let (_d, cfg) = write_config(&format!(
        "{}{}{}",
        real_server("everything", ""),
        real_server("time", ""),
        // The cassette offers what the session offered: git_commit stays hidden on playback
        // although the playback config does not hide it.
        git_server(
            repo.path(),
            "disabled_tools = [\"git_commit\"]\n[mcp_servers.git.tools.git_log]\nchar_budget = 300"
        )
    ));
    let plan = cassette_plan(repo.path());
    let live = sdk_session(&cfg, &plan, &["--transcript", s(&path)]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.matches("\"kind\":\"tools\"").count(),
        3,
        "one tool list per server"
    );

    let (_d2, offline) = write_config(&uninstalled_servers(300));
    let played = sdk_session(&offline, &plan, &["--cassette", s(&path)]);
    let names = |report: &Value| {
        let mut v: Vec<(String, String)> = report["steps"][0]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["name"].to_string(), t["inputSchema"].to_string()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names(&played),
        names(&live),
        "the same tools with the same schemas"
    );
    let shown = format!("{:?}", names(&played));
    assert!(!shown.contains("\\\"git_commit\\\""), "{shown}");
    for i in 1..plan.as_array().unwrap().len() {
        assert_eq!(
            played["steps"][i], live["steps"][i],
            "step {i}: {}",
            plan[i]
        );
    }
    assert_eq!(live["steps"][3]["structuredContent"]["status"], "truncated");

    // Budgets come from the current config: git_log at 100 characters omits more.
    let (_d3, smaller) = write_config(&uninstalled_servers(100));
    let mut plan2 = plan.as_array().unwrap().clone();
    plan2.push(json!({"op": "call", "name": "get-sum", "arguments": {"a": 2, "b": 4}}));
    let replayed = sdk_session(&smaller, &Value::Array(plan2), &["--cassette", s(&path)]);
    let (before, after) = (
        &live["steps"][3]["structuredContent"],
        &replayed["steps"][3]["structuredContent"],
    );
    assert!(
        after["omitted"].as_u64() > before["omitted"].as_u64(),
        "{before} {after}"
    );
    let miss = &replayed["steps"][7]["structuredContent"];
    assert_eq!(miss["status"], "error", "{miss}");
    let content = miss["content"].as_str().unwrap();
    assert!(
        content.starts_with("not_found: ")
            && content.contains(r#"closest recorded call is get-sum {"a":2,"b":3}"#),
        "{content}"
    );
}

/// `--cassette-mode record-missing`: a call the cassette lacks goes to the real server and is
/// appended; the next strict run answers it from the cassette; a call it answers, and a tool list
/// it holds, are not appended again.
#[test]
fn cassette_record_missing_appends_new_calls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.jsonl");
    let (_d, cfg) = write_config(&fixture_server("fx", &[], ""));
    let call = |mode: &str, text: &str| {
        let mut p = RawProxy::start(&cfg, &["--cassette", s(&path), "--cassette-mode", mode]);
        p.initialize("2025-06-18");
        let env = envelope_of(&p.call(json!(1), "echo", json!({"text": text}), LONG));
        finish_session(p);
        env
    };
    let first = call("record-missing", "a");
    assert_eq!(first["status"], "ok", "{first}");
    assert_eq!(call("strict", "a"), first);
    assert_eq!(
        call("strict", "b")["content"]
            .as_str()
            .unwrap()
            .split(':')
            .next(),
        Some("not_found")
    );
    let b = call("record-missing", "b");
    assert_eq!(b["status"], "ok", "{b}");
    assert_eq!(call("strict", "b"), b);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| !l.contains("\"kind\":\"tools\""))
            .count(),
        2,
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("\"kind\":\"tools\""))
            .count(),
        1,
        "the same tool list is recorded once: {text}"
    );
    // Calls the cassette answers are not appended again: a session run twice leaves it as it was.
    assert_eq!(call("record-missing", "a"), first);
    assert_eq!(call("record-missing", "b"), b);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // The proxy's own answers (here an unknown tool's) are not appended either.
    for _ in 0..2 {
        let args = ["--cassette", s(&path), "--cassette-mode", "record-missing"];
        let mut p = RawProxy::start(&cfg, &args);
        p.initialize("2025-06-18");
        let env = envelope_of(&p.call(json!(2), "nosuch", json!({}), LONG));
        assert_eq!(env["status"], "error", "{env}");
        finish_session(p);
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

/// A cassette of one call of `notes` (server `rec`) recorded with `char_budget` 12 and
/// `text_rows` "blocks": three blank-line-separated paragraphs.
fn cassette_with_recorded_settings(dir: &Path) -> PathBuf {
    let text = "first para\n\nsecond para\n\nthird";
    let record = json!({
        "v": 1, "started_at": "2026-12-01T00:00:00.000Z", "seq": 0, "call_id": "1",
        "tool": "notes", "server": "rec", "server_tool": "notes", "arguments": {},
        "char_budget": 12, "long_rows": "split", "text_rows": "blocks", "timeout_ms": 1000,
        "outcome": {"kind": "result", "result": {"content": [{"type": "text", "text": text}]}},
        "envelope": {"call_id": "1", "tool": "notes", "status": "truncated",
                     "content": "first para", "omitted": 2, "retryable": false},
        "duration_ms": 1
    });
    let path = dir.join("calls.jsonl");
    std::fs::write(&path, format!("{record}\n")).unwrap();
    path
}

/// The envelope `serve --cassette CASSETTE [args]` answers a call of `notes` with, run in
/// `dir` with no config to discover there or under `XDG_CONFIG_HOME`.
fn cassette_envelope(dir: &Path, cassette: &Path, args: &[&str]) -> Value {
    cassette_session(dir, cassette, "notes", args).1
}

/// The tool names `serve --cassette CASSETTE [args]` lists, and the envelope it answers a call
/// of `tool` with (see [`cassette_envelope`]).
fn cassette_session(
    dir: &Path,
    cassette: &Path,
    tool: &str,
    args: &[&str],
) -> (Vec<String>, Value) {
    use std::io::{BufRead, Write};
    let mut child = Command::new(bin())
        .args(["serve", "--cassette", s(cassette)])
        .args(args)
        .current_dir(dir)
        .env_remove("MCP_ENVELOPE_CONFIG")
        .env("XDG_CONFIG_HOME", dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}});
    for message in [init, initialized, list, call] {
        writeln!(stdin, "{message}").unwrap();
    }
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap());
    let listed = lines
        .find(|m| m["id"] == 2)
        .expect("an answer to tools/list");
    let answer = lines.find(|m| m["id"] == 1).expect("an answer to the call");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let tools = listed["result"]["tools"].as_array().unwrap().iter();
    let names = tools.map(|t| t["name"].as_str().unwrap().to_owned());
    (names.collect(), envelope_of(&answer))
}

/// A session recorded with `tool_prefix = "t_"` on server `rec` and the same tool name on a
/// second server `other` (prefix `o_`), served from its cassette without `--config`: the tools
/// keep the names the session gave them (no prefix lost, no collision renaming), and a call
/// under the recorded name gets the recorded answer.
#[test]
fn cassette_without_config_offers_the_recorded_tool_names() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = cassette_with_recorded_settings(dir.path());
    let tools = |server: &str, prefix: &str| {
        json!({"v": 1, "kind": "tools", "recorded_at": "2026-12-01T00:00:00.000Z",
            "server": server, "tool_prefix": prefix,
            "tools": [{"name": "notes", "inputSchema": {"type": "object"}}]})
    };
    let calls = std::fs::read_to_string(&cassette).unwrap();
    let lists = format!("{}\n{}\n", tools("rec", "t_"), tools("other", "o_"));
    std::fs::write(
        &cassette,
        lists + &calls.replace("\"tool\":\"notes\"", "\"tool\":\"t_notes\""),
    )
    .unwrap();
    let (names, envelope) = cassette_session(dir.path(), &cassette, "t_notes", &[]);
    assert_eq!(names[..2], ["t_notes", "o_notes"], "{names:?}");
    assert_eq!(envelope["status"], "truncated", "{envelope}");
    assert_eq!(envelope["content"], "first para");
}

/// `serve --cassette` without `--config` maps each recorded call with the settings it was
/// recorded with (here 12 characters, blocks), as `replay` does; an explicit `--config` wins.
#[test]
fn cassette_without_config_maps_with_the_recorded_settings() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = cassette_with_recorded_settings(dir.path());
    let played = cassette_envelope(dir.path(), &cassette, &[]);
    let recorded = json!({"call_id": "1", "tool": "notes", "status": "truncated",
        "content": "first para", "omitted": 2, "retryable": false});
    assert_eq!(played, recorded);
    let (_d, cfg) = write_config("[defaults]\nchar_budget = 100\n");
    let configured = cassette_envelope(dir.path(), &cassette, &["--config", s(&cfg)]);
    assert_eq!(configured["status"], "ok", "{configured}");
    assert_eq!(
        configured["content"], "first para\n\nsecond para\n\nthird",
        "--config's char_budget and built-in text_rows (lines) apply"
    );
}
