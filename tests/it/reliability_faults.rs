//! Issue 5, faults: servers that crash, hang, exit at start, print noise on stdout, answer ids
//! they were never given; signals. Every test runs the real binary and checks that no child of
//! the proxy is left running afterwards.
use crate::common;

use std::time::{Duration, Instant};

use crate::common::faults::*;
use common::*;
use serde_json::json;

pub(super) const T: Duration = Duration::from_secs(30);

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
    // A name only the down server could offer: not_found names it and why; a name under the
    // live server's prefix does not.
    let resp = p.call(json!(3), "dead_echo", json!({"text": "x"}), T);
    let content = envelope_of(&resp)["content"].as_str().unwrap().to_owned();
    assert!(content.starts_with("not_found: "), "{content}");
    assert!(
        content.contains("'dead' (") && content.contains("gave up"),
        "{content}"
    );
    let resp = p.call(json!(4), "live_nosuch", json!({}), T);
    assert_eq!(
        envelope_of(&resp)["content"],
        "not_found: no tool named 'live_nosuch'"
    );
    finish(p, &[]);
}

/// A server answering ids it was never given: those answers are warned about and ignored; the real
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
    assert!(p
        .stderr()
        .contains("answer for an id that was never sent ignored"));
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

/// A request sent over stdio after SIGTERM, while a call in flight drains, is answered at once
/// with a JSON-RPC error under its id saying the proxy is shutting down (as `serve --http`
/// answers 503); the call in flight is answered too, and the proxy exits 0.
#[test]
fn a_request_during_the_drain_is_refused_not_lost() {
    let (_dir, mut p) = initialized(&fixture_server("a", &[], "tool_prefix = \"a_\""));
    p.send(&call_msg(json!(1), "a_sleep", json!({"ms": 3000})));
    std::thread::sleep(Duration::from_millis(200));
    signal(p.pid(), libc::SIGTERM);
    let deadline = Instant::now() + T;
    while !p.stderr().contains("signal received") {
        assert!(
            Instant::now() < deadline,
            "no shutdown logged: {}",
            p.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    p.send(&json!({"jsonrpc": "2.0", "id": "late", "method": "tools/list"}));
    let (late, _) = p.response(&json!("late"), T);
    assert_eq!(late["error"]["code"], -32000, "{late}");
    let message = late["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("shutting down"), "{late}");
    let (first, _) = p.response(&json!(1), T);
    assert_eq!(envelope_of(&first)["call_id"], "1", "{first}");
    let status = p.close(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "stderr:\n{}", p.stderr());
}

/// A batch (protocol 2025-03-26, the revision with batches) sent while the proxy drains: its
/// request is refused (in an array, as a batch is answered), and its response to a server's
/// `sampling/createMessage` still reaches the call being drained, which finishes with the
/// client's answer.
#[test]
fn a_batch_during_the_drain_still_answers_the_server() {
    let (_dir, config) = write_config(&fixture_server("a", &[], "tool_prefix = \"a_\""));
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-03-26");
    p.send(&call_msg(json!(1), "a_sample", json!({"prompt": "Sure?"})));
    let asked = p.recv(T);
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    signal(p.pid(), libc::SIGTERM);
    let deadline = Instant::now() + T;
    while !p.stderr().contains("signal received") {
        assert!(Instant::now() < deadline, "no shutdown logged");
        std::thread::sleep(Duration::from_millis(20));
    }
    p.send(&json!([
        {"jsonrpc": "2.0", "id": asked["id"], "result": {"role": "assistant", "model": "m",
            "content": {"type": "text", "text": "yes-from-client"}}},
        {"jsonrpc": "2.0", "id": "late", "method": "tools/list"}
    ]));
    let refused = p.recv(T);
    assert_eq!(refused[0]["id"], "late", "{refused}");
    assert_eq!(refused[0]["error"]["code"], -32000, "{refused}");
    let (first, _) = p.response(&json!(1), T);
    let env = envelope_of(&first);
    assert_eq!(env["status"], "ok", "{env}");
    let content = env["content"].as_str().unwrap_or_default();
    assert!(content.contains("yes-from-client"), "{env}");
    let status = p.close(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "stderr:\n{}", p.stderr());
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
