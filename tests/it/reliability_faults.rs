//! Issue 5, faults: servers that crash, hang, exit at start, print noise on stdout, answer ids
//! they were never given; signals. Every test runs the real binary and checks that no child of
//! the proxy is left running afterwards.
use crate::common;

use std::time::{Duration, Instant};

use crate::common::faults::*;
use common::*;
use serde_json::json;

const T: Duration = Duration::from_secs(30);

/// 50 `sleep` calls in flight when the server is SIGKILLed: all 50 get a `server_error`
/// envelope at once (long before their 60 s timeout and 30 s sleep), the server is back within
/// the first backoff step, later calls succeed, and the dead child was reaped (no zombie).
#[test]
fn sigkill_during_50_inflight_calls_then_restart() {
    let (_dir, mut p) = initialized_with(
        "tool_timeout_sec = 60\nchar_budget = 500",
        &fixture_server("fx", &[], ""),
    );
    let first = live_children(p.pid());
    assert_eq!(first.len(), 1);
    for i in 0..50 {
        p.send(&call_msg(json!(i), "sleep", json!({"ms": 30000})));
    }
    // The server reads its stdin in order: once this echo is answered, it holds all 50 sleeps.
    let resp = p.call(json!("probe"), "echo", json!({"text": "probe"}), T);
    assert_eq!(envelope_of(&resp)["status"], "ok");

    let killed_at = Instant::now();
    signal(first[0], libc::SIGKILL);
    let got = collect(&p, 50, Duration::from_secs(10));
    let took = killed_at.elapsed();
    assert_eq!(got.len(), 50, "answers: {}", got.len());
    for i in 0..50 {
        let answers = &got[&json!(i).to_string()];
        assert_eq!(answers.len(), 1, "id {i} answered {} times", answers.len());
        let env = envelope_of(&answers[0]);
        assert_eq!(env["status"], "error");
        assert_server_error(&env);
        assert_eq!(env["retryable"], true);
        assert_eq!(env["call_id"], i.to_string());
    }
    assert!(
        took < Duration::from_secs(5),
        "in-flight calls failed after {took:?}"
    );

    // A call made now waits for the restart (backoff 1 s) and succeeds.
    let resp = p.call(json!("after"), "echo", json!({"text": "back"}), T);
    let env = envelope_of(&resp);
    assert_eq!(env["status"], "ok", "{env}");
    assert_eq!(env["content"], "back");
    let back_in = killed_at.elapsed();
    assert!(back_in < Duration::from_secs(15), "back after {back_in:?}");
    for i in 0..5 {
        let resp = p.call(json!(100 + i), "echo", json!({"text": format!("t{i}")}), T);
        assert_eq!(envelope_of(&resp)["content"], format!("t{i}"));
    }
    let now = live_children(p.pid());
    assert_eq!(now.len(), 1);
    assert_ne!(now[0], first[0], "a new child");
    assert!(
        zombie_children(p.pid()).is_empty(),
        "killed child not reaped"
    );
    eprintln!(
        "FIGURES faults sigkill: 50 in-flight calls, 50 answered with server_error in {:?}, server back after {:?}",
        took, back_in
    );
    finish(p, &[first[0]]);
}

/// A server that never answers: calls to it get `timeout` envelopes after tool_timeout_sec,
/// while another server's calls are served meanwhile.
#[test]
fn never_answering_server_times_out_others_keep_serving() {
    let (_dir, mut p) = initialized(&format!(
        "{}{}",
        fixture_server(
            "hang",
            &["--never-answer"],
            "tool_prefix = \"hang_\"\ntool_timeout_sec = 2"
        ),
        fixture_server("ok", &[], "tool_prefix = \"ok_\"")
    ));
    let started = Instant::now();
    for i in 0..5 {
        p.send(&call_msg(
            json!(format!("h{i}")),
            "hang_echo",
            json!({"text": "x"}),
        ));
    }
    for i in 0..20 {
        p.send(&call_msg(
            json!(format!("o{i}")),
            "ok_echo",
            json!({"text": format!("o{i}")}),
        ));
    }
    let got = collect(&p, 25, T);
    for (id, answers) in &got {
        assert_eq!(answers.len(), 1, "{id} answered {} times", answers.len());
        let env = envelope_of(&answers[0]);
        let id: String = serde_json::from_str(id).unwrap();
        if id.starts_with('h') {
            assert_eq!(env["status"], "error");
            assert!(
                env["content"].as_str().unwrap().starts_with("timeout: "),
                "{env}"
            );
            assert_eq!(env["retryable"], true);
        } else {
            assert_eq!(env["status"], "ok");
            assert_eq!(env["content"], id);
        }
    }
    assert_eq!(got.len(), 25);
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(2), "timeouts came too early");
    assert!(took < Duration::from_secs(15), "timeouts took {took:?}");
    // The hanging server is still listed and the healthy one still serves.
    let resp = p.call(json!("later"), "ok_echo", json!({"text": "later"}), T);
    assert_eq!(envelope_of(&resp)["content"], "later");
    finish(p, &[]);
}

/// The healthy server is answered while the other one hangs: its answers come before any
/// timeout envelope (the timeout is 3 s, an echo takes milliseconds).
#[test]
fn healthy_server_answers_before_hanging_ones_time_out() {
    let (_dir, mut p) = initialized(&format!(
        "{}{}",
        fixture_server(
            "hang",
            &["--never-answer"],
            "tool_prefix = \"hang_\"\ntool_timeout_sec = 3"
        ),
        fixture_server("ok", &[], "tool_prefix = \"ok_\"")
    ));
    p.send(&call_msg(json!("h"), "hang_echo", json!({"text": "x"})));
    let sent = Instant::now();
    let resp = p.call(json!("o"), "ok_echo", json!({"text": "fine"}), T);
    assert_eq!(envelope_of(&resp)["content"], "fine");
    assert!(sent.elapsed() < Duration::from_secs(3));
    let (resp, _) = p.response(&json!("h"), T);
    assert!(envelope_of(&resp)["content"]
        .as_str()
        .unwrap()
        .starts_with("timeout: "));
    finish(p, &[]);
}

/// A server that prints banners and a non-JSON line before every answer keeps working.
#[test]
fn noisy_server_lines_are_skipped() {
    let (_dir, mut p) = initialized(&fixture_server("noisy", &["--noisy"], ""));
    for i in 0..20 {
        let resp = p.call(json!(i), "echo", json!({"text": format!("n{i}")}), T);
        assert_eq!(envelope_of(&resp)["content"], format!("n{i}"));
    }
    let resp = p.call(json!("rows"), "rows", json!({"n": 2}), T);
    assert_eq!(envelope_of(&resp)["status"], "ok");
    assert!(
        p.stderr().contains("non-JSON line on stdout skipped"),
        "noise not logged"
    );
    finish(p, &[]);
}

/// `--crash-after 1` with max_restarts = 1: the server answers, crashes, is restarted once,
/// answers, crashes again, and then its tools answer `unavailable` at once.
#[test]
fn crashing_server_becomes_unavailable_after_max_restarts() {
    let (_dir, mut p) = initialized(&fixture_server(
        "crashy",
        &["--crash-after", "1"],
        "max_restarts = 1\ntool_timeout_sec = 30",
    ));
    let mut seen = live_children(p.pid());
    let (mut ok, mut server_errors) = (0, 0);
    let mut unavailable = None;
    for i in 0..20 {
        let resp = p.call(json!(i), "echo", json!({"text": "hi"}), T);
        let env = envelope_of(&resp);
        let content = env["content"].as_str().unwrap().to_owned();
        seen.extend(live_children(p.pid()));
        if env["status"] == "ok" {
            ok += 1;
        } else if content.starts_with("server_error: ") {
            // A call sent in the instant between the answer and the crash.
            server_errors += 1;
        } else {
            assert!(content.starts_with("unavailable: "), "{env}");
            assert_eq!(env["retryable"], false);
            unavailable = Some(content);
            break;
        }
    }
    assert_eq!(
        ok, 2,
        "one answer per start (the first and the single restart)"
    );
    let reason = unavailable.expect("the server never became unavailable");
    assert!(reason.contains("gave up after 1 restart"), "{reason}");
    // Stays unavailable, answered at once.
    let t = Instant::now();
    let resp = p.call(json!("again"), "echo", json!({"text": "hi"}), T);
    assert!(envelope_of(&resp)["content"]
        .as_str()
        .unwrap()
        .starts_with("unavailable: "));
    assert!(t.elapsed() < Duration::from_secs(3));
    assert!(live_children(p.pid()).is_empty());
    assert!(zombie_children(p.pid()).is_empty());
    eprintln!(
        "FIGURES faults crash-after: {ok} ok, {server_errors} server_error, then unavailable"
    );
    finish(p, &seen);
}

/// A server that exits at start is logged with its stderr tail and does not hold up the
/// client's `initialize` or the other server's tools.
#[test]
fn server_exiting_at_start_is_logged_and_others_serve() {
    let (_dir, config) = write_config(&format!(
        "{}{}",
        fixture_server(
            "dead",
            &["--exit-at-start", "3"],
            "tool_prefix = \"dead_\"\nmax_restarts = 1\nstartup_timeout_sec = 15"
        ),
        fixture_server("live", &[], "tool_prefix = \"live_\"")
    ));
    let mut p = RawProxy::start(&config, &[]);
    let t = Instant::now();
    p.initialize("2025-06-18");
    let init_took = t.elapsed();
    assert!(
        init_took < Duration::from_secs(8),
        "initialize took {init_took:?}: a dead server must not hold it up for startup_timeout_sec (15 s)"
    );
    let names = tool_names(&list_tools(&mut p));
    assert!(names.iter().any(|n| n == "live_echo"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("dead_")), "{names:?}");
    let resp = p.call(json!(1), "live_echo", json!({"text": "alive"}), T);
    assert_eq!(envelope_of(&resp)["content"], "alive");
    let resp = p.call(json!(2), "dead_echo", json!({"text": "x"}), T);
    assert!(envelope_of(&resp)["content"]
        .as_str()
        .unwrap()
        .starts_with("not_found: "));
    // Both attempts logged with the server's own stderr line.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !p.stderr().contains("gave up") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = p.stderr();
    assert!(
        log.contains("--exit-at-start: exiting with code 3"),
        "stderr tail missing from the log:\n{log}"
    );
    assert!(log.contains("unavailable"), "{log}");
    finish(p, &[]);
}

/// A server answering ids it was never given: those answers are logged and ignored; the real
/// answer still arrives.
#[test]
fn bogus_ids_from_server_are_ignored() {
    let (_dir, mut p) = initialized(&fixture_server("fx", &[], ""));
    for i in 0..3 {
        let (resp, others) = {
            p.send(&call_msg(json!(i), "bogus_id", json!({})));
            p.response(&json!(i), T)
        };
        let env = envelope_of(&resp);
        assert_eq!(env["status"], "ok");
        assert_eq!(env["content"], "ok");
        assert!(others.iter().all(|m| !is_response(m)), "{others:?}");
    }
    // Nothing else for the client.
    assert!(p.try_recv(Duration::from_millis(300)).is_none());
    assert!(p.stderr().contains("not pending ignored"));
    finish(p, &[]);
}

fn signal_shutdown(sig: i32) {
    let (_dir, mut p) = initialized(&format!(
        "{}{}",
        fixture_server("a", &[], "tool_prefix = \"a_\""),
        fixture_server("b", &[], "tool_prefix = \"b_\"")
    ));
    let kids = live_children(p.pid());
    assert_eq!(kids.len(), 2);
    let resp = p.call(json!(1), "a_echo", json!({"text": "x"}), T);
    assert_eq!(envelope_of(&resp)["status"], "ok");
    // One call in flight when the signal arrives: it is answered, not lost.
    p.send(&call_msg(json!(2), "b_sleep", json!({"ms": 300})));
    std::thread::sleep(Duration::from_millis(100));
    signal(p.pid(), sig);
    let (resp, _) = p.response(&json!(2), T);
    assert!(envelope_of(&resp)["call_id"] == "2");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = p.child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "no exit after signal {sig}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "stderr:\n{}", p.stderr());
    let left = wait_gone(&kids, Duration::from_secs(5));
    assert!(left.is_empty(), "children left: {left:?}");
}

/// SIGTERM shuts down like stdin EOF: in-flight call answered, exit 0, every child gone.
#[test]
fn sigterm_stops_children_and_exits_zero() {
    signal_shutdown(libc::SIGTERM);
}

/// SIGINT the same.
#[test]
fn sigint_stops_children_and_exits_zero() {
    signal_shutdown(libc::SIGINT);
}

/// A server-to-client request (`roots/list`) the client never answers does not keep the proxy
/// running after stdin closes: exit 0 and every child gone.
#[test]
fn unanswered_server_request_does_not_block_shutdown() {
    let (_dir, mut p) = initialized(&fixture_server("fx", &[], "tool_timeout_sec = 60"));
    let kids = live_children(p.pid());
    p.send(&call_msg(json!("r"), "roots", json!({})));
    let req = p.recv(T);
    assert_eq!(req["method"], "roots/list", "{req}");
    // Never answered. Close stdin: the proxy drains for a while, then must exit.
    let t = Instant::now();
    let status = p.close(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
    assert!(t.elapsed() < Duration::from_secs(15));
    assert!(wait_gone(&kids, Duration::from_secs(5)).is_empty());
}

/// A byte that is not UTF-8 on a server's stderr, then 20 MB of a `\r` progress bar without a
/// newline: the server keeps running (its stderr pipe stays open, so its next write does not
/// fail) and the proxy's memory does not grow with the unended line.
#[test]
fn stderr_with_invalid_utf8_and_an_endless_line_keeps_the_server_alive() {
    let (_dir, mut p) = initialized(&hostile_server("h", &[], "tool_timeout_sec = 60"));
    let kids = live_children(p.pid());
    let before = rss_kib(p.pid());
    let resp = p.call(json!(1), "stderr_junk", json!({"bytes": 20_000_000}), T);
    let env = envelope_of(&resp);
    assert_eq!(env["content"], "junk written", "{env}");
    // The echo tool writes to stderr before answering: a closed pipe would kill it.
    for i in 0..3 {
        let resp = p.call(json!(10 + i), "echo", json!({"text": format!("e{i}")}), T);
        assert_eq!(envelope_of(&resp)["content"], format!("e{i}"));
    }
    assert_eq!(live_children(p.pid()), kids, "the server was restarted");
    let grown = rss_kib(p.pid()).saturating_sub(before);
    assert!(grown < 10 * 1024, "RSS grew by {grown} KiB");
    eprintln!("FIGURES faults stderr: 20 MB progress bar, RSS +{grown} KiB");
    finish(p, &kids);
}

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
