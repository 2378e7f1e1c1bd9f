//! Faults, continued: what a server sends that it should not (malformed tool definitions,
//! secrets on stderr, requests nobody answers, another server's names, list-change storms,
//! endless paging, deeply nested errors, too many tools) and a proxy killed with SIGKILL. Every
//! test runs the real binary and checks that no child of the proxy is left running afterwards.
use crate::common;

use std::time::{Duration, Instant};

use crate::common::faults::*;
use common::*;
use serde_json::json;

use super::reliability_faults::T;

/// Tool definitions that break the rules (an `inputSchema` that is not an object schema, a
/// name with a space) are dropped, with a warning in the log; the server's other tools and
/// every other server's tools reach a strict client (the Python SDK rejects a whole
/// `tools/list` with one malformed tool).
#[test]
fn malformed_tool_definitions_are_dropped_not_the_whole_list() {
    let bad = json!([
        {"name": "bad_schema", "inputSchema": "not-an-object"},
        {"name": "has space", "inputSchema": {"type": "object"}},
        {"name": "not_object_schema", "inputSchema": {"type": "string"}}
    ])
    .to_string();
    let (_dir, config) = write_config(&format!(
        "{}{}",
        hostile_server("h", &["--tools-json", &bad], "tool_prefix = \"h_\""),
        fixture_server("fx", &[], "")
    ));
    let report = sdk_session(
        &config,
        &json!([{"op": "list_tools"}, {"op": "call", "name": "echo", "arguments": {"text": "x"}}]),
        &[],
    );
    let tools = report["steps"][0]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"));
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(names.contains(&"h_raw_args"), "{names:?}");
    for bad in ["h_bad_schema", "h_has space", "h_not_object_schema"] {
        assert!(!names.contains(&bad), "{bad} offered: {names:?}");
    }
    assert_eq!(
        report["steps"][1]["structuredContent"]["content"], "x",
        "{report}"
    );
    // The raw client sees the same and the log names each dropped tool.
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-06-18");
    let list = list_tools(&mut p);
    assert!(!tool_names(&list).iter().any(|n| n.contains("bad")));
    let log = p.stderr();
    assert!(
        log.contains("tool \\\"bad_schema\\\" dropped")
            || log.contains("tool \"bad_schema\" dropped"),
        "{log}"
    );
    assert!(log.contains("has space"), "{log}");
    // A call of a dropped tool says it exists, why it is not offered, and that a retry cannot
    // help (not a bare "no tool named").
    let env = envelope_of(&p.call(json!(9), "h_bad_schema", json!({}), T));
    assert_eq!(
        env["content"],
        "not_found: no tool named 'h_bad_schema' is offered: server 'h' lists it (as \
         'bad_schema'), but the proxy dropped it from its catalog because `inputSchema` is not \
         a JSON object. Retrying will not help: the tool's definition must be fixed on the \
         server",
        "{env}"
    );
    assert_eq!(env["retryable"], false, "{env}");
    let env = envelope_of(&p.call(json!(10), "h_nope", json!({}), T));
    assert_eq!(env["content"], "not_found: no tool named 'h_nope'", "{env}");
    finish(p, &[]);
}

/// A server that dies while a process it started still holds its stdout: the death is seen
/// from the exit itself (not from end of stdout, which never comes): the call in flight gets
/// `server_error` rather than waiting out its timeout, the server is restarted, and the
/// leftover process is stopped.
#[test]
fn server_death_is_seen_while_a_grandchild_holds_its_stdout() {
    let (_dir, mut p) = initialized(&hostile_server(
        "h",
        &["--grandchild"],
        "tool_timeout_sec = 8",
    ));
    let server = live_children(p.pid());
    assert_eq!(server.len(), 1);
    let grandchildren = children_of(server[0]);
    assert_eq!(grandchildren.len(), 1, "the server's `sleep` child");
    let resp = p.call(json!(1), "die", json!({}), T);
    let env = envelope_of(&resp);
    let content = env["content"].as_str().unwrap();
    assert!(content.starts_with("server_error: "), "{env}");
    assert!(content.contains("exit status: 7"), "{env}");
    let resp = p.call(json!(2), "echo", json!({"text": "back"}), T);
    assert_eq!(envelope_of(&resp)["content"], "back");
    assert!(
        wait_gone(&grandchildren, Duration::from_secs(5)).is_empty(),
        "the dead server's child is still running"
    );
    let mut seen = server.clone();
    seen.extend(grandchildren);
    finish(p, &seen);
}

/// A server's stderr reaches the model (in the `unavailable` envelope's last stderr lines) and
/// the log only with every value of the environment the proxy passed to it, and every value of
/// a secret-looking key, replaced by `[redacted]`.
#[test]
fn secrets_in_server_stderr_are_redacted_from_envelopes_and_logs() {
    let secret = "sk-live-0123456789abcdef";
    let (_dir, config) = write_config(&hostile_server(
        "h",
        &[],
        &format!("max_restarts = 0\nenv = {{ UPSTREAM_KEY = \"{secret}\" }}"),
    ));
    let mut p = RawProxy::start(&config, &["--log-level", "debug"]);
    p.initialize("2025-06-18");
    let text = format!("upstream rejected credentials API_TOKEN={secret}");
    let resp = p.call(json!(1), "say_stderr", json!({"text": text}), T);
    assert_eq!(envelope_of(&resp)["content"], "said");
    let resp = p.call(
        json!(2),
        "say_stderr",
        json!({"text": "login password=hunter2 failed"}),
        T,
    );
    assert_eq!(envelope_of(&resp)["content"], "said");
    let kids = live_children(p.pid());
    p.send(&call_msg(json!(3), "die", json!({})));
    let _ = p.response(&json!(3), T);
    let deadline = Instant::now() + Duration::from_secs(10);
    let env = loop {
        let resp = p.call(json!("after"), "echo", json!({"text": "x"}), T);
        let env = envelope_of(&resp);
        if env["content"]
            .as_str()
            .unwrap()
            .starts_with("unavailable: ")
            || Instant::now() > deadline
        {
            break env;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let content = env["content"].as_str().unwrap();
    assert!(content.starts_with("unavailable: "), "{env}");
    assert!(content.contains("API_TOKEN=[redacted]"), "{env}");
    assert!(content.contains("password=[redacted]"), "{env}");
    assert!(
        !content.contains(secret) && !content.contains("hunter2"),
        "{env}"
    );
    let log = p.stderr();
    assert!(
        log.contains("API_TOKEN=[redacted]"),
        "the stderr line is logged"
    );
    assert!(!log.contains(secret) && !log.contains("hunter2"), "{log}");
    finish(p, &kids);
}

/// Requests a server sends to a client that never answers them: at most 64 per server wait
/// (the rest are refused at once, so they cannot pile up), the server's own
/// `notifications/cancelled` withdraws them (the client is told, the server is never
/// answered), and one left waiting is cancelled after the server's tool_timeout_sec, the
/// server getting an error answer.
#[test]
fn server_requests_the_client_never_answers_are_bounded_cancelled_and_timed_out() {
    let (_dir, mut p) = initialized(&hostile_server("h", &[], "tool_timeout_sec = 5"));
    let is_ping = |m: &serde_json::Value| m["method"] == "ping" && m.get("id").is_some();
    let (resp, mut seen) = {
        p.send(&call_msg(json!(1), "ping_client", json!({"n": 200})));
        p.response(&json!(1), T)
    };
    assert_eq!(envelope_of(&resp)["content"], "sent");
    while let Some(m) = p.try_recv(Duration::from_millis(500)) {
        seen.push(m);
    }
    let forwarded: Vec<serde_json::Value> = seen
        .iter()
        .filter(|m| is_ping(m))
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(forwarded.len(), 64, "pings forwarded to the client");
    let answers = |p: &mut RawProxy, id: &str| -> String {
        let resp = p.call(json!(id), "answers", json!({}), T);
        envelope_of(&resp)["content"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        answers(&mut p, "a1"),
        "answered 136",
        "the rest refused at once"
    );

    let (_, mut seen) = {
        p.send(&call_msg(json!(2), "cancel_pings", json!({})));
        p.response(&json!(2), T)
    };
    while let Some(m) = p.try_recv(Duration::from_millis(500)) {
        seen.push(m);
    }
    let cancelled: Vec<&serde_json::Value> = seen
        .iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .map(|m| &m["params"]["requestId"])
        .collect();
    assert_eq!(cancelled.len(), 64, "{seen:?}");
    assert!(cancelled.iter().all(|id| forwarded.contains(id)));
    assert_eq!(
        answers(&mut p, "a2"),
        "answered 136",
        "cancelled ones are not answered"
    );

    // The slots are free again; this one is never answered and times out.
    let (_, mut seen) = {
        p.send(&call_msg(json!(3), "ping_client", json!({"n": 1})));
        p.response(&json!(3), T)
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    let ping = loop {
        if let Some(m) = seen.iter().find(|m| is_ping(m)) {
            break m["id"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the new ping never reached the client"
        );
        seen.extend(p.try_recv(Duration::from_millis(200)));
    };
    let cancel = loop {
        assert!(
            Instant::now() < deadline,
            "the unanswered ping was never cancelled"
        );
        if let Some(m) = p.try_recv(Duration::from_millis(200)) {
            if m["method"] == "notifications/cancelled" {
                break m;
            }
        }
    };
    assert_eq!(cancel["params"]["requestId"], ping, "{cancel}");
    assert_eq!(answers(&mut p, "a3"), "answered 137");
    finish(p, &[]);
}

/// Exposed names stay with their tools: `gh` and `jira` both offer `echo` (exposed as
/// `gh__echo` and `jira__echo`); when `aaa` adds a tool named `gh__echo` later, calls to
/// `gh__echo` still reach `gh` and the newcomer gets the numbered name. Numbered names go in
/// config file order, not alphabetical order.
#[test]
fn a_server_cannot_take_over_another_servers_exposed_name() {
    let (_dir, mut p) = initialized(&format!(
        "{}{}{}",
        hostile_server("aaa", &[], ""),
        hostile_server("gh", &[], ""),
        hostile_server("jira", &[], "")
    ));
    let resp = p.call(json!(1), "gh__echo", json!({"text": "to-gh"}), T);
    assert_eq!(envelope_of(&resp)["content"], "to-gh");
    let (resp, others) = {
        p.send(&call_msg(
            json!(2),
            "aaa__add_tool",
            json!({"name": "gh__echo"}),
        ));
        p.response(&json!(2), T)
    };
    assert_eq!(envelope_of(&resp)["content"], "tool gh__echo");
    if !others
        .iter()
        .any(|m| m["method"] == "notifications/tools/list_changed")
    {
        let changed = p.recv(T);
        assert_eq!(
            changed["method"], "notifications/tools/list_changed",
            "{changed}"
        );
    }
    let list = list_tools(&mut p);
    let names = tool_names(&list);
    assert!(names.contains(&"gh__echo__2".to_owned()), "{names:?}");
    let resp = p.call(json!(3), "gh__echo", json!({"text": "still-gh"}), T);
    assert_eq!(
        envelope_of(&resp)["content"],
        "still-gh",
        "went to the wrong server"
    );
    let resp = p.call(json!(4), "gh__echo__2", json!({}), T);
    assert_eq!(envelope_of(&resp)["content"], "added gh__echo");
    finish(p, &[]);

    // zeta comes first in the file: it keeps the plain name its prefix makes.
    let (_dir, mut p) = initialized(&format!(
        "{}{}{}",
        hostile_server(
            "zeta",
            &[],
            "tool_prefix = \"alpha__\"\nenabled_tools = [\"echo\"]"
        ),
        hostile_server("alpha", &[], "enabled_tools = [\"echo\"]"),
        hostile_server("beta", &[], "enabled_tools = [\"echo\"]")
    ));
    let list = list_tools(&mut p);
    let mut names = tool_names(&list);
    names.sort();
    assert_eq!(
        names,
        [
            "alpha__echo",
            "alpha__echo__2",
            "beta__echo",
            "envelope_next_page"
        ]
    );
    let resp = p.call(json!(5), "alpha__echo", json!({"text": "z"}), T);
    assert_eq!(envelope_of(&resp)["content"], "z");
    assert!(
        p.stderr()
            .contains("server 'alpha' exposes it as 'alpha__echo__2'"),
        "{}",
        p.stderr()
    );
    finish(p, &[]);
}

/// A server that runs fine between crashes keeps being restarted: with `max_restarts = 1`,
/// killed twice after more than 10 s of serving each time, it is back both times (before,
/// only five stable minutes reset the count, so a server killed once a minute became
/// `unavailable` for good). A crash loop still gives up
/// (`crashing_server_becomes_unavailable_after_max_restarts`).
#[test]
fn a_server_that_runs_fine_between_crashes_keeps_being_restarted() {
    let (_dir, mut p) = initialized(&hostile_server("h", &[], "max_restarts = 1"));
    let mut seen = Vec::new();
    for round in 0..2 {
        let kids = wait_children(p.pid(), 1, T);
        assert_eq!(kids.len(), 1, "round {round}");
        seen.extend(kids.iter().copied());
        let resp = p.call(json!(format!("r{round}")), "echo", json!({"text": "up"}), T);
        assert_eq!(envelope_of(&resp)["content"], "up");
        std::thread::sleep(Duration::from_secs(11));
        signal(kids[0], libc::SIGKILL);
        assert!(wait_gone(&kids, Duration::from_secs(5)).is_empty());
    }
    let resp = p.call(json!("last"), "echo", json!({"text": "still here"}), T);
    assert_eq!(
        envelope_of(&resp)["content"],
        "still here",
        "{}",
        p.stderr()
    );
    finish(p, &seen);
}

/// 2,000 `notifications/tools/list_changed` in a burst cost a few `tools/list` refreshes, not
/// 2,000: more notifications during a refresh ask for one more refresh after it.
#[test]
fn list_changed_storms_are_coalesced() {
    let (_dir, mut p) = initialized(&hostile_server("h", &[], ""));
    let resp = p.call(json!(1), "storm", json!({"n": 2000}), T);
    assert_eq!(envelope_of(&resp)["content"], "stormed");
    std::thread::sleep(Duration::from_secs(1));
    let resp = p.call(json!(2), "stats", json!({}), T);
    let stats = envelope_of(&resp)["content"].as_str().unwrap().to_owned();
    let lists: u32 = stats.strip_prefix("tools_list ").unwrap().parse().unwrap();
    assert!(
        lists <= 4,
        "{lists} tools/list requests for one start and 2000 notifications"
    );
    eprintln!("FIGURES faults list_changed storm: 2000 notifications, {lists} tools/list in all");
    let resp = p.call(json!(3), "echo", json!({"text": "fine"}), T);
    assert_eq!(envelope_of(&resp)["content"], "fine");
    finish(p, &[]);
}

/// A server whose `tools/list` repeats its `nextCursor` forever: paging stops at the repeat,
/// the server is ready with the tools listed so far, and the log says why.
#[test]
fn endless_tools_list_paging_stops_at_a_repeated_cursor() {
    let (_dir, mut p) = initialized(&hostile_server(
        "h",
        &["--endless-pages"],
        "startup_timeout_sec = 10",
    ));
    let list = list_tools(&mut p);
    assert_eq!(tool_names(&list), ["echo", "envelope_next_page"]);
    let resp = p.call(json!(1), "echo", json!({"text": "paged"}), T);
    assert_eq!(envelope_of(&resp)["content"], "paged");
    assert!(p.stderr().contains("repeated the cursor"), "{}", p.stderr());
    finish(p, &[]);
}

/// A proxy killed with SIGKILL cannot stop its servers itself: a server that ignores stdin EOF
/// and SIGTERM still dies with it (the parent-death signal).
#[test]
fn servers_die_with_a_sigkilled_proxy() {
    let (_dir, mut p) = initialized(&hostile_server("h", &["--ignore-stdin-eof"], ""));
    let resp = p.call(json!(1), "echo", json!({"text": "up"}), T);
    assert_eq!(envelope_of(&resp)["content"], "up");
    let kids = live_children(p.pid());
    assert_eq!(kids.len(), 1);
    signal(p.pid(), libc::SIGKILL);
    let _ = p.child.wait();
    let left = wait_gone(&kids, Duration::from_secs(5));
    for pid in &left {
        signal(*pid, libc::SIGKILL);
    }
    assert!(
        left.is_empty(),
        "server {left:?} outlived the SIGKILLed proxy"
    );
}

/// An error response whose `data` is nested deeper than the JSON parser allows answers its
/// call at once (`server_error`), instead of leaving it to time out.
#[test]
fn an_error_response_with_deeply_nested_data_answers_the_call_at_once() {
    let (_dir, mut p) = initialized(&hostile_server("h", &[], "tool_timeout_sec = 20"));
    let resp = p.call(json!(1), "deep_error", json!({"depth": 1000}), T);
    let env = envelope_of(&resp);
    let content = env["content"].as_str().unwrap();
    assert!(content.starts_with("server_error: "), "{env}");
    assert!(content.contains("not valid JSON"), "{env}");
    let resp = p.call(json!(2), "echo", json!({"text": "next"}), T);
    assert_eq!(envelope_of(&resp)["content"], "next");
    finish(p, &[]);
}

/// A server listing 3,000 tools: 2,000 are offered (with a warning), so the merged
/// `tools/list` answer stays far below the longest line a client accepts.
#[test]
fn tools_per_server_are_bounded() {
    let (_dir, mut p) = initialized(&hostile_server("h", &["--many-tools", "3000"], ""));
    let list = list_tools(&mut p);
    // The server's tools (the proxy adds its own `envelope_*` tools).
    let names: Vec<String> = tool_names(&list)
        .into_iter()
        .filter(|n| !n.starts_with("envelope_"))
        .collect();
    assert_eq!(names.len(), 2000, "tools offered");
    assert!(names.contains(&"echo".to_owned()));
    assert!(
        p.stderr().contains("tool(s) dropped: more than 2000 tools"),
        "{}",
        p.stderr()
    );
    let resp = p.call(json!(1), "t10", json!({}), T);
    assert_eq!(envelope_of(&resp)["content"], "tool t10");
    finish(p, &[]);
}

/// A lone surrogate escape in a server's answer (Python's `json.dumps` of an undecodable file
/// name) becomes U+FFFD and the call maps normally; before, the whole answer failed as
/// `server_error` (retryable, though every retry failed the same way).
#[test]
fn a_lone_surrogate_in_an_answer_becomes_the_replacement_character() {
    let (_dir, mut p) = initialized(&hostile_server("h", &[], ""));
    let resp = p.call(json!(1), "surrogate", json!({}), T);
    let env = envelope_of(&resp);
    assert_eq!(env["status"], "ok", "{env}");
    assert_eq!(env["content"], "name-\u{fffd}.txt", "{env}");
    finish(p, &[]);
}

/// A server line over `max_message_bytes` without a newline fails the request whose id starts
/// it at once, with the error of an over-long line that has its newline (before, the call
/// waited for its tool timeout); the rest of the line is dropped and the server still serves.
#[test]
fn an_over_long_answer_without_its_newline_fails_its_call_at_once() {
    let server = hostile_server("h", &[], "tool_timeout_sec = 600");
    let (_dir, mut p) = initialized_with("max_message_bytes = 65536", &server);
    let resp = p.call(json!(1), "unterminated", json!({"bytes": 300_000}), T);
    let env = envelope_of(&resp);
    let content = env["content"].as_str().unwrap();
    assert!(content.starts_with("server_error: "), "{env}");
    assert!(content.contains("max_message_bytes"), "{env}");
    let resp = p.call(json!(2), "echo", json!({"text": "after"}), T);
    assert_eq!(envelope_of(&resp)["content"], "after");
    finish(p, &[]);
}
