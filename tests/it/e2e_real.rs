//! End-to-end tests of the real binary against the real pinned servers (server-everything,
//! mcp-server-time, mcp-server-git), driven by the Python MCP SDK, a raw JSON-RPC client and the
//! MCP Inspector CLI (issue 3).
use crate::common;
use common::*;
use mcp_envelope::envelope::Envelope;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(60);

/// A config with all three real servers (git on `repo`) plus `extra` TOML.
fn all_three(repo: &Path, extra: &str) -> String {
    format!(
        "{extra}\n{}{}{}",
        real_server("everything", ""),
        real_server("time", ""),
        git_server(repo, "")
    )
}

/// Runs the SDK driver directly against a server command (no proxy) and returns its report.
fn sdk_direct(command: &[String], plan: &Value) -> Value {
    sdk_run(command, plan)
}

#[test]
fn sdk_lists_tools_of_all_three_servers_with_envelope_schema_and_passthrough_fields() {
    let repo = git_repo(2);
    let (_d, cfg) = write_config(&all_three(repo.path(), ""));
    let report = sdk_session(&cfg, &json!([{"op": "list_tools"}]), &[]);
    let listed = report["steps"][0].as_array().expect("tool list").clone();
    let names: Vec<&str> = listed.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get_current_time",
        "convert_time",
        "git_status",
        "git_log",
        "git_diff",
        "git_show",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    // No duplicates.
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "duplicate names in {names:?}");
    for t in &listed {
        assert_eq!(
            t["outputSchema"],
            Envelope::json_schema(),
            "outputSchema of {}",
            t["name"]
        );
    }
    // description and inputSchema are passed through unchanged: compare with each server's own
    // answer to the same SDK.
    let time_direct = sdk_direct(
        &[
            tools()
                .join("venv/bin/mcp-server-time")
                .display()
                .to_string(),
            "--local-timezone".into(),
            "UTC".into(),
        ],
        &json!([{"op": "list_tools"}]),
    );
    let git_direct = sdk_direct(
        &[
            tools()
                .join("venv/bin/mcp-server-git")
                .display()
                .to_string(),
            "--repository".into(),
            repo.path().display().to_string(),
        ],
        &json!([{"op": "list_tools"}]),
    );
    let every_direct = sdk_direct(&everything_cmd(), &json!([{"op": "list_tools"}]));
    let mut compared = 0;
    for direct in [&time_direct, &git_direct, &every_direct] {
        for d in direct["steps"][0].as_array().unwrap() {
            let name = d["name"].as_str().unwrap();
            let Some(ours) = listed.iter().find(|t| t["name"] == name) else {
                // server-everything offers some tools conditionally (by client capabilities).
                continue;
            };
            assert_eq!(
                ours["description"], d["description"],
                "description of {name}"
            );
            assert_eq!(
                ours["inputSchema"], d["inputSchema"],
                "inputSchema of {name}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 9 + 2 + 3, "compared only {compared} tools");
    // The git server has 12 tools, all of them listed.
    assert_eq!(git_direct["steps"][0].as_array().unwrap().len(), 12);
    assert_eq!(names.iter().filter(|n| n.starts_with("git_")).count(), 12);
}

#[test]
fn sdk_get_current_time_structured_content_becomes_one_row() {
    let (_d, cfg) = write_config(&real_server("time", ""));
    let report = sdk_session(
        &cfg,
        &json!([{"op": "call", "name": "get_current_time", "arguments": {"timezone": "Europe/Warsaw"}}]),
        &[],
    );
    let result = &report["steps"][0];
    let env = &result["structuredContent"];
    assert_eq!(result["isError"], false);
    assert_eq!(env["tool"], "get_current_time");
    assert_eq!(env["status"], "ok");
    assert_eq!(env["omitted"], 0);
    assert_eq!(env["retryable"], false);
    let content = env["content"].as_str().unwrap();
    // One row (no row separator), keys sorted.
    assert!(!content.contains("; "), "more than one row: {content}");
    let keys: Vec<&str> = content
        .split(',')
        .map(|kv| kv.split_once('=').unwrap().0)
        .collect();
    assert_eq!(keys, ["datetime", "day_of_week", "is_dst", "timezone"]);
    assert!(content.ends_with(",timezone=Europe/Warsaw"), "{content}");
    let datetime = content
        .strip_prefix("datetime=")
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    assert!(
        datetime.ends_with("+01:00") || datetime.ends_with("+02:00"),
        "{datetime}"
    );
    // The text block carries the same envelope.
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, env);
}

/// A raw proxy with git (git_log budget `budget`) on `repo`, initialized.
fn git_log_via_proxy(repo: &Path, budget: usize) -> Value {
    let (_d, cfg) = write_config(&git_server(
        repo,
        &format!("[mcp_servers.git.tools.git_log]\nchar_budget = {budget}"),
    ));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-06-18");
    let resp = p.call(
        json!(1),
        "git_log",
        json!({"repo_path": repo.display().to_string(), "max_count": 100}),
        LONG,
    );
    let env = envelope_of(&resp);
    finish_session(p);
    env
}

#[test]
fn git_log_is_truncated_with_the_right_omitted_count() {
    let repo = git_repo(30);
    let full = git_log_via_proxy(repo.path(), 1_000_000);
    assert_eq!(full["status"], "ok");
    assert_eq!(full["omitted"], 0);
    let full_content = full["content"].as_str().unwrap();
    let total_lines = full_content.split('\n').count();
    assert_eq!(
        full_content.matches("Message: commit number ").count(),
        30,
        "all 30 commits in the full log"
    );
    let cut = git_log_via_proxy(repo.path(), 300);
    assert_eq!(cut["status"], "truncated");
    assert_eq!(cut["retryable"], false);
    let content = cut["content"].as_str().unwrap();
    assert!(content.chars().count() <= 300, "{} chars", content.len());
    assert!(
        full_content.starts_with(content),
        "not a prefix of the full log"
    );
    // Whole lines only: the next full-content character is the line separator.
    assert_eq!(full_content[content.len()..].chars().next(), Some('\n'));
    let kept = content.split('\n').count();
    assert_eq!(cut["omitted"], json!(total_lines - kept));
    // Greedy fill: the next line would not have fitted.
    let next_line = full_content[content.len() + 1..]
        .split('\n')
        .next()
        .unwrap();
    assert!(content.chars().count() + 1 + next_line.chars().count() > 300);
}

#[test]
fn huge_echo_under_small_budget_is_truncated_quickly() {
    let (_d, cfg) = write_config(&real_server(
        "everything",
        "[mcp_servers.everything.tools.echo]\nchar_budget = 200",
    ));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-06-18");
    let text = "x".repeat(100_000);
    let start = Instant::now();
    let resp = p.call(json!("big"), "echo", json!({"message": text}), LONG);
    let elapsed = start.elapsed();
    let env = envelope_of(&resp);
    assert_eq!(env["call_id"], "big");
    assert_eq!(env["status"], "truncated");
    assert!(env["content"].as_str().unwrap().chars().count() <= 200);
    assert!(env["omitted"].as_u64().unwrap() >= 1);
    assert!(
        elapsed < Duration::from_secs(10),
        "took {elapsed:?} for one echo"
    );
    // The whole answer is small: the 100 KB never reached the client.
    assert!(resp.to_string().len() < 2_000, "{}", resp.to_string().len());
    finish_session(p);
}

/// The decoded size of base64 text.
fn b64_len(data: &str) -> usize {
    let pad = data.bytes().rev().take_while(|b| *b == b'=').count();
    data.len() / 4 * 3 - pad
}

#[test]
fn tiny_image_is_passed_through_or_described() {
    let direct = sdk_direct(
        &everything_cmd(),
        &json!([{"op": "call", "name": "get-tiny-image", "arguments": {}}]),
    );
    let direct_images: Vec<&Value> = direct["steps"][0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "image")
        .collect();
    assert_eq!(direct_images.len(), 1);
    let image = direct_images[0];
    let data = image["data"].as_str().unwrap();

    // passthrough
    let (_d, cfg) = write_config(&real_server("everything", ""));
    let report = sdk_session(
        &cfg,
        &json!([{"op": "call", "name": "get-tiny-image", "arguments": {}}]),
        &[],
    );
    let result = &report["steps"][0];
    let blocks = result["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "text");
    let passed: Vec<&Value> = blocks[1..].iter().collect();
    assert_eq!(passed, vec![image], "image block changed");
    let env = &result["structuredContent"];
    assert_eq!(env["status"], "ok");
    assert!(!env["content"].as_str().unwrap().contains(data));

    // describe
    let (_d2, cfg2) = write_config(&real_server("everything", "media = \"describe\""));
    let report = sdk_session(
        &cfg2,
        &json!([{"op": "call", "name": "get-tiny-image", "arguments": {}}]),
        &[],
    );
    let result = &report["steps"][0];
    assert_eq!(result["content"].as_array().unwrap().len(), 1, "no image");
    let content = result["structuredContent"]["content"].as_str().unwrap();
    let row = format!(
        "bytes={},mimeType={},type=image",
        b64_len(data),
        image["mimeType"].as_str().unwrap()
    );
    assert!(content.contains(&row), "{row} not in {content}");
    assert!(!content.contains(data));
}

#[test]
fn unknown_tool_and_bad_timezone_are_error_envelopes() {
    let (_d, cfg) = write_config(&real_server("time", ""));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-06-18");
    let env = envelope_of(&p.call(json!(5), "no_such_tool", json!({}), LONG));
    assert_eq!(
        env,
        json!({"call_id":"5","tool":"no_such_tool","status":"error",
               "content":"not_found: no tool named 'no_such_tool'","omitted":0,"retryable":false})
    );
    let env = envelope_of(&p.call(
        json!(6),
        "get_current_time",
        json!({"timezone": "Mars/Phobos"}),
        LONG,
    ));
    assert_eq!(env["status"], "error");
    assert_eq!(env["retryable"], false);
    assert_eq!(env["omitted"], 0);
    let content = env["content"].as_str().unwrap();
    // mcp-server-time answers isError with a plain message: the mapping gives tool_error.
    assert!(
        content.starts_with("tool_error: server 'time' reported: ")
            && content.contains("Mars/Phobos"),
        "{content}"
    );
    finish_session(p);
}

#[test]
fn protocol_ping_unknown_method_parse_error_and_keeps_serving() {
    let (_d, cfg) = write_config(&real_server("time", ""));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-11-25");
    p.send(&json!({"jsonrpc":"2.0","id":"p1","method":"ping"}));
    let (resp, _) = p.response(&json!("p1"), LONG);
    assert_eq!(resp["result"], json!({}));
    p.send(&json!({"jsonrpc":"2.0","id":"u1","method":"no/such_method","params":{}}));
    let (resp, _) = p.response(&json!("u1"), LONG);
    assert_eq!(resp["error"]["code"], -32601);
    p.send_raw("this is not json {");
    let resp = p.recv(LONG);
    assert_eq!(resp["error"]["code"], -32700, "{resp}");
    assert_eq!(resp["id"], Value::Null);
    assert!(resp.as_object().unwrap().contains_key("id"));
    // Still serving.
    let env = envelope_of(&p.call(
        json!(9),
        "get_current_time",
        json!({"timezone": "UTC"}),
        LONG,
    ));
    assert_eq!(env["status"], "ok");
    assert!(env["content"].as_str().unwrap().ends_with("timezone=UTC"));
    finish_session(p);
}

#[test]
fn old_protocol_versions_initialize_and_call() {
    for version in ["2024-11-05", "2025-03-26"] {
        let (_d, cfg) = write_config(&real_server("time", ""));
        let mut p = RawProxy::start(&cfg, &[]);
        let init = p.initialize(version);
        assert_eq!(init["protocolVersion"], version);
        assert!(init["serverInfo"]["name"].is_string());
        p.send(&json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
        let (list, _) = p.response(&json!(2), LONG);
        let names: Vec<&str> = list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["get_current_time", "convert_time", "envelope_next_page"]
        );
        let env = envelope_of(&p.call(
            json!(3),
            "get_current_time",
            json!({"timezone": "UTC"}),
            LONG,
        ));
        assert_eq!(env["status"], "ok");
        finish_session(p);
    }
}

#[test]
fn stdin_eof_exits_zero_and_reaps_all_three_servers() {
    let repo = git_repo(1);
    let (_d, cfg) = write_config(&all_three(repo.path(), ""));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-06-18");
    let kids = children_of(p.pid());
    assert_eq!(kids.len(), 3, "three server children: {kids:?}");
    let st = p.close(Duration::from_secs(20));
    assert_eq!(st.code(), Some(0));
    assert!(wait_gone(&kids, Duration::from_secs(10)).is_empty());
}

fn inspector() -> std::path::PathBuf {
    tools().join("npm/node_modules/.bin/mcp-inspector")
}

/// Runs the Inspector CLI against the proxy; returns its stdout parsed as JSON.
///
/// Oddity: the Inspector takes `--config` for itself (its own server-list file) even after the
/// server command, and then demands `--server`; so the proxy's config is passed through the
/// environment instead (`-e MCP_ENVELOPE_CONFIG=...`; the Inspector gives the server only a
/// minimal environment otherwise).
fn inspector_run(cfg: &Path, method_args: &[&str]) -> Value {
    let out = Command::new(inspector())
        .arg("--cli")
        .arg("-e")
        .arg(format!("MCP_ENVELOPE_CONFIG={}", cfg.display()))
        .arg(bin())
        .arg("serve")
        .args(method_args)
        .output()
        .unwrap();
    json_stdout(&out, "inspector")
}

#[test]
fn inspector_cli_lists_and_calls_tools() {
    let (_d, cfg) = write_config(&real_server("time", ""));
    let list = inspector_run(&cfg, &["--method", "tools/list"]);
    let tools = list["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    // The proxy's own page tool comes last.
    assert_eq!(
        names,
        ["get_current_time", "convert_time", "envelope_next_page"]
    );
    for t in tools {
        assert_eq!(t["outputSchema"], Envelope::json_schema());
    }
    let call = inspector_run(
        &cfg,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "get_current_time",
            "--tool-arg",
            "timezone=UTC",
        ],
    );
    let env = &call["structuredContent"];
    assert_eq!(env["tool"], "get_current_time");
    assert_eq!(env["status"], "ok");
    assert_eq!(env["omitted"], 0);
    assert!(env["content"].as_str().unwrap().ends_with("timezone=UTC"));
    assert_eq!(call["isError"], false);
}
