//! Issue 5, client-side edge cases against the real binary: ids echoed exactly, duplicate
//! in-flight ids, cancellation, batches per protocol version, requests before `initialize`,
//! over-long lines from either side, and a property test of bad lines in one proxy process.
use crate::common;

use std::cell::RefCell;
use std::time::{Duration, Instant};

use crate::common::faults::*;
use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestRunner};
use serde_json::{json, Value};

const T: Duration = Duration::from_secs(30);

/// The fixture server `fx` with a budget of 20,000 characters.
fn one_fixture() -> String {
    format!(
        "[defaults]\nchar_budget = 20000\n{}",
        fixture_server("fx", &[], "")
    )
}

/// Negative, zero, i64::MIN/MAX, u64::MAX, 10,000-character, unicode and empty string ids are
/// echoed exactly, on `ping` and on `tools/call` (whose envelope `call_id` is the id as text).
#[test]
fn ids_are_echoed_exactly() {
    let (_dir, mut p) = initialized(&one_fixture());
    let ids = [
        json!(-1),
        json!(0),
        json!(i64::MIN),
        json!(i64::MAX),
        json!(u64::MAX),
        json!("x".repeat(10_000)),
        json!("ünïcødé 😀 \"quoted\" \\ \n\u{0}"),
        json!(""),
        json!("1"),
    ];
    for id in &ids {
        p.send(&ping_msg(id.clone()));
        let (resp, _) = p.response(id, T);
        assert_eq!(&resp["id"], id);
        assert_eq!(resp["result"], json!({}));
        let resp = p.call(id.clone(), "echo", json!({"text": "e"}), T);
        assert_eq!(&resp["id"], id);
        let env = envelope_of(&resp);
        let want = match id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        assert_eq!(env["call_id"], want);
    }
    eprintln!("FIGURES ids: {} id shapes echoed exactly", ids.len());
    finish(p, &[]);
}

/// A 100,000-character tool name (no tool's name is longer than 128, MCP 2025-11-25 "Tool
/// names") answers `not_found` with the name cut to its first 128 characters and the marker in
/// the envelope's `tool` and message, in the log line and in the transcript: one request cannot
/// put 100 kB into the model's context. A name of 128 is shown whole.
#[test]
fn a_tool_name_longer_than_any_tools_is_answered_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let (_d, config) = write_config(&one_fixture());
    let mut p = RawProxy::start(&config, &["--transcript", path.to_str().unwrap()]);
    p.initialize("2025-06-18");
    let long = "n".repeat(100_000);
    let shown = format!("{}… [99872 characters cut]", "n".repeat(128));
    let env = envelope_of(&p.call(json!(1), &long, json!({}), T));
    assert_eq!(env["tool"], shown.as_str(), "{}", env["tool"]);
    assert_eq!(env["retryable"], false);
    let message = format!("not_found: no tool named '{shown}'");
    assert_eq!(env["content"], message.as_str());
    let at_most = "m".repeat(128);
    let env = envelope_of(&p.call(json!(2), &at_most, json!({}), T));
    assert_eq!(env["tool"], at_most.as_str());
    let status = p.close(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
    let whole = "n".repeat(129);
    let log = p.stderr();
    assert!(log.contains(&format!("tool={shown} ")), "{log}");
    assert!(!log.contains(&whole), "the whole name is logged");
    let transcript = std::fs::read_to_string(&path).unwrap();
    assert!(transcript.contains(&shown), "{transcript}");
    assert!(!transcript.contains(&whole), "the whole name is recorded");
}

/// A second request with the id of one still in flight gets -32600 at once, and the first is
/// still answered with its own result.
#[test]
fn duplicate_inflight_id_is_rejected_first_still_answered() {
    let (_dir, mut p) = initialized(&one_fixture());
    for id in [json!(5), json!("dup")] {
        p.send(&call_msg(
            id.clone(),
            "sleep",
            json!({"ms": 800, "text": "first"}),
        ));
        p.send(&call_msg(id.clone(), "echo", json!({"text": "second"})));
        let (a, _) = p.response(&id, T);
        assert_eq!(a["error"]["code"], -32600, "{a}");
        let (b, _) = p.response(&id, T);
        assert_eq!(envelope_of(&b)["content"], "first");
        // Not answered a third time.
        assert!(p.try_recv(Duration::from_millis(300)).is_none());
        // Once answered, the id is free again.
        let c = p.call(id.clone(), "echo", json!({"text": "third"}), T);
        assert_eq!(envelope_of(&c)["content"], "third");
    }
    finish(p, &[]);
}

/// `notifications/cancelled` for an in-flight `sleep`: nobody answers it (waiting well past the
/// sleep), the fixture received the cancellation for its own id, later calls are fine.
#[test]
fn cancelled_request_is_never_answered() {
    let (_dir, config) = write_config(&one_fixture());
    let mut p = RawProxy::start(&config, &["--log-level", "debug"]);
    p.initialize("2025-06-18");
    p.send(&call_msg(json!("c1"), "sleep", json!({"ms": 1500})));
    let resp = p.call(json!("probe"), "echo", json!({"text": "x"}), T);
    assert_eq!(envelope_of(&resp)["status"], "ok");
    p.send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"user"}}));
    let until = Instant::now() + Duration::from_millis(3000);
    while let Some(msg) = p.try_recv(until.saturating_duration_since(Instant::now())) {
        assert_ne!(
            msg.get("id"),
            Some(&json!("c1")),
            "cancelled request answered: {msg}"
        );
    }
    let log = p.stderr();
    let fixture_saw = log.lines().any(|l| {
        l.contains("server stderr") && l.contains("cancelled") && !l.contains("not in flight")
    });
    assert!(
        fixture_saw,
        "the fixture did not get the cancellation:\n{log}"
    );
    let resp = p.call(json!("c1"), "echo", json!({"text": "after"}), T);
    assert_eq!(envelope_of(&resp)["content"], "after");
    finish(p, &[]);
}

fn batch() -> Value {
    json!([
        call_msg(json!("b1"), "echo", json!({"text": "one"})),
        {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"z","progress":1}},
        ping_msg(json!("b2")),
        {"jsonrpc":"2.0","id":"b3","method":"tools/list"},
    ])
}

/// 2025-03-26 has batches: 3 requests + 1 notification → one array of 3 responses.
#[test]
fn batch_answered_as_array_in_2025_03_26() {
    let (_dir, config) = write_config(&one_fixture());
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-03-26");
    p.send(&batch());
    let msg = p.recv(T);
    let arr = msg
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {msg}"));
    assert_eq!(arr.len(), 3);
    let mut ids: Vec<&str> = arr.iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, ["b1", "b2", "b3"]);
    for r in arr {
        match r["id"].as_str().unwrap() {
            "b1" => assert_eq!(envelope_of(r)["content"], "one"),
            "b2" => assert_eq!(r["result"], json!({})),
            _ => assert!(r["result"]["tools"].is_array()),
        }
    }
    assert!(p.try_recv(Duration::from_millis(300)).is_none());
    finish(p, &[]);
}

/// The same id twice in one batch: the first runs, the second gets -32600 (not a second
/// answer with the same id).
#[test]
fn duplicate_ids_inside_a_batch_reject_the_second() {
    let (_dir, config) = write_config(&one_fixture());
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-03-26");
    p.send(&json!([
        call_msg(json!("d"), "echo", json!({"text": "first"})),
        call_msg(json!("d"), "echo", json!({"text": "second"})),
        ping_msg(json!(7)),
        ping_msg(json!(7)),
    ]));
    let msg = p.recv(T);
    let arr = msg
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {msg}"));
    assert_eq!(arr.len(), 4, "{msg}");
    let d: Vec<&Value> = arr.iter().filter(|r| r["id"] == "d").collect();
    assert_eq!(d.len(), 2);
    assert_eq!(envelope_of(d[0])["content"], "first", "{msg}");
    assert_eq!(d[1]["error"]["code"], -32600, "{msg}");
    let pings: Vec<&Value> = arr.iter().filter(|r| r["id"] == 7).collect();
    assert_eq!(pings[0]["result"], json!({}));
    assert_eq!(pings[1]["error"]["code"], -32600);
    assert!(p.try_recv(Duration::from_millis(300)).is_none());
    finish(p, &[]);
}

/// 2025-06-18 removed batches: a batch gets one -32600 error.
#[test]
fn batch_rejected_in_2025_06_18() {
    let (_dir, mut p) = initialized(&one_fixture());
    p.send(&batch());
    let msg = p.recv(T);
    assert!(msg.is_object(), "{msg}");
    assert_eq!(msg["error"]["code"], -32600);
    assert_eq!(msg["id"], Value::Null);
    assert!(p.try_recv(Duration::from_millis(300)).is_none());
    p.send(&ping_msg(json!(1)));
    assert_eq!(p.response(&json!(1), T).0["result"], json!({}));
    finish(p, &[]);
}

/// Before `initialize`: `tools/list` is an error, `ping` works; a second `initialize` is an
/// error and does not disturb the session.
#[test]
fn lifecycle_errors() {
    let (_dir, config) = write_config(&one_fixture());
    let mut p = RawProxy::start(&config, &[]);
    p.send(&json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}));
    let (r, _) = p.response(&json!(1), T);
    assert!(r["error"]["code"].is_i64(), "{r}");
    p.send(&call_msg(json!(2), "echo", json!({"text": "x"})));
    let (r, _) = p.response(&json!(2), T);
    assert!(r["error"]["code"].is_i64(), "{r}");
    p.send(&ping_msg(json!(3)));
    assert_eq!(p.response(&json!(3), T).0["result"], json!({}));
    assert!(
        children_of(p.pid()).is_empty(),
        "no server before initialize"
    );
    let init = p.initialize("2025-06-18");
    assert_eq!(init["protocolVersion"], "2025-06-18");
    p.send(
        &json!({"jsonrpc":"2.0","id":"again","method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}),
    );
    let (r, _) = p.response(&json!("again"), T);
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let r = p.call(json!(4), "echo", json!({"text": "still"}), T);
    assert_eq!(envelope_of(&r)["content"], "still");
    finish(p, &[]);
}

/// Lines longer than max_message_bytes: from the client → -32600 (with the id when it is at the
/// start of the line, else null) and the next request is served; from a server (an answer of
/// 20,000 bytes) → a `server_error` envelope and the proxy keeps serving.
///
/// The limit is 8,192 bytes rather than 1,000: the fixture's own `tools/list` answer is about
/// 3.4 KB and goes through the same limit.
#[test]
fn over_long_lines_from_either_side() {
    let (_dir, mut p) =
        initialized_with("max_message_bytes = 8192", &fixture_server("fx", &[], ""));
    let long = call_msg(json!("long-1"), "echo", json!({"text": "x".repeat(20_000)}));
    p.send(&long);
    let (r, _) = p.response(&json!("long-1"), T);
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("max_message_bytes"));
    // The id only at the end: the error has id null.
    let tail_id = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"{}\"}}}},\"id\":\"tail\"}}",
        "y".repeat(20_000)
    );
    p.send_raw(&tail_id);
    let r = p.recv(T);
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert_eq!(r["id"], Value::Null);
    let r = p.call(json!(2), "echo", json!({"text": "next"}), T);
    assert_eq!(envelope_of(&r)["content"], "next");

    let r = p.call(json!(3), "big", json!({"bytes": 20_000}), T);
    let env = envelope_of(&r);
    assert_eq!(env["status"], "error");
    let content = env["content"].as_str().unwrap();
    assert!(content.starts_with("server_error: "), "{content}");
    assert!(content.contains("max_message_bytes"), "{content}");
    let r = p.call(json!(4), "big", json!({"bytes": 100}), T);
    assert_eq!(envelope_of(&r)["status"], "ok");
    let r = p.call(json!(5), "echo", json!({"text": "still"}), T);
    assert_eq!(envelope_of(&r)["content"], "still");
    finish(p, &[]);
}

/// A server answer that starts like a success response but is not valid JSON answers its call
/// with a `server_error` envelope at once (not a timeout), whether the line is small or large
/// (large lines, >= 64 KiB, are validated only when their result is mapped, >= 1 MiB off the
/// runtime thread); the session goes on, and a valid large result is still mapped.
#[test]
fn answers_that_are_not_valid_json_are_server_errors() {
    // The default tool_timeout_sec (60 s) is far beyond T: an answer in time is not a timeout.
    let (_dir, mut p) = initialized(&one_fixture());
    for (i, bytes) in [10usize, 100_000, 3_000_000].into_iter().enumerate() {
        let started = Instant::now();
        let r = p.call(json!(i), "big_broken", json!({ "bytes": bytes }), T);
        let env = envelope_of(&r);
        let content = env["content"].as_str().unwrap();
        assert_eq!(env["status"], "error", "{bytes}: {env}");
        assert!(content.starts_with("server_error: "), "{bytes}: {content}");
        assert!(content.contains("not valid JSON"), "{bytes}: {content}");
        assert_eq!(env["retryable"], true);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "answered, not timed out"
        );
        let r = p.call(
            json!(format!("after-{i}")),
            "echo",
            json!({"text": "next"}),
            T,
        );
        assert_eq!(envelope_of(&r)["content"], "next");
    }
    // Valid JSON that is not a valid response (wrong "jsonrpc") answers its call too.
    let r = p.call(json!("invalid"), "invalid_answer", json!({}), T);
    let env = envelope_of(&r);
    assert_server_error(&env);
    // Valid large results, members in the order Python servers and the TypeScript SDK use.
    for tool in ["big_rows", "big_rows_ts"] {
        for n in [2_000u64, 100_000] {
            let r = p.call(json!(format!("{tool}-{n}")), tool, json!({ "n": n }), T);
            let env = envelope_of(&r);
            assert_eq!(env["status"], "truncated", "{tool}: {env}");
            // Object rows are rendered `k=v …` and joined with "; ".
            let kept = env["content"].as_str().unwrap().split("; ").count() as u64;
            assert_eq!(env["omitted"].as_u64().unwrap() + kept, n, "{tool}: {env}");
        }
    }
    finish(p, &[]);
}

/// Strategies for bad lines.
fn wrong_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z{}\\[\\]\"]{0,12}".prop_map(Value::from),
        prop::collection::vec(any::<i32>().prop_map(Value::from), 0..3).prop_map(Value::Array),
        Just(json!({"nested": {"x": [1, null]}})),
    ]
}

/// A message whose fields are each either right or wrong-typed, or missing.
fn mangled(method: &'static str, fields: &'static [(&'static str, Value)]) -> BoxedStrategy<Value> {
    let n = fields.len();
    (
        prop::collection::vec((0u8..3, wrong_value()), n),
        0u8..4,
        wrong_value(),
    )
        .prop_map(move |(choices, top, bad)| {
            let mut params = serde_json::Map::new();
            for ((name, good), (c, w)) in fields.iter().zip(choices) {
                match c {
                    0 => {
                        params.insert((*name).into(), good.clone());
                    }
                    1 => {
                        params.insert((*name).into(), w);
                    }
                    _ => {}
                }
            }
            let mut msg = json!({"jsonrpc":"2.0","method":method,"params":Value::Object(params)});
            match top {
                0 => msg["params"] = bad,
                1 => msg["jsonrpc"] = bad,
                2 => msg["method"] = bad,
                _ => {}
            }
            msg
        })
        .boxed()
}

fn init_fields() -> &'static [(&'static str, Value)] {
    Box::leak(Box::new([
        ("protocolVersion", json!("2025-06-18")),
        ("capabilities", json!({})),
        ("clientInfo", json!({"name": "fuzz", "version": "1"})),
    ]))
}
fn list_fields() -> &'static [(&'static str, Value)] {
    Box::leak(Box::new([("cursor", json!("0"))]))
}
fn call_fields() -> &'static [(&'static str, Value)] {
    Box::leak(Box::new([
        ("name", json!("add")),
        ("arguments", json!({"a": 1, "b": 2})),
        ("_meta", json!({"progressToken": "t"})),
    ]))
}

/// What the fuzz loop counts.
#[derive(Default)]
struct Tally {
    lines: usize,
    with_id: usize,
    init_successes: usize,
}

/// Sends `line`; when it had an id, waits for that id's answer; then a fresh `ping` must be
/// answered.
fn probe(
    p: &mut RawProxy,
    tally: &mut Tally,
    line: &str,
    id: Option<&Value>,
) -> Result<(), TestCaseError> {
    tally.lines += 1;
    let ping_id = json!(format!("ping-{}", tally.lines));
    p.send_raw(line);
    p.send(&ping_msg(ping_id.clone()));
    let deadline = Instant::now() + T;
    let (mut got_id, mut got_ping) = (id.is_none(), false);
    while !(got_id && got_ping) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(msg) = p.try_recv(left) else {
            return Err(TestCaseError::fail(format!(
                "no answer (id answered: {got_id}, ping: {got_ping}) after line {line:.300}"
            )));
        };
        let mid = msg.get("id");
        if mid == Some(&ping_id) {
            prop_assert_eq!(&msg["result"], &json!({}));
            got_ping = true;
        } else if id.is_some() && mid == id && is_response(&msg) {
            if msg["result"]["protocolVersion"].is_string() {
                tally.init_successes += 1;
            }
            got_id = true;
        }
    }
    if id.is_some() {
        tally.with_id += 1;
    }
    Ok(())
}

/// Bad lines in one proxy process: random bytes, truncated JSON, and `initialize`, `tools/list`
/// and `tools/call` with every field right, wrong-typed or missing. Each request-shaped line
/// gets its answer; after every line a fresh `ping` is answered; at most one `initialize` ever
/// succeeds; the proxy is alive at the end and exits cleanly.
#[test]
fn bad_input_never_breaks_the_session() {
    let (_dir, config) = write_config(&one_fixture());
    let p = RefCell::new(RawProxy::start(&config, &[]));
    let tally = RefCell::new(Tally::default());
    let counter = RefCell::new(0u64);
    let fresh = || {
        let mut c = counter.borrow_mut();
        *c += 1;
        json!(format!("fz-{c}"))
    };
    let cfg = PtConfig {
        cases: 64,
        failure_persistence: None,
        ..PtConfig::default()
    };

    // Requests of `method` with mangled fields, each under a fresh id it must be answered by.
    let run_mangled = |method: &'static str, fields| {
        let mut runner = TestRunner::new(cfg.clone());
        runner
            .run(&mangled(method, fields), |mut msg| {
                let id = fresh();
                msg["id"] = id.clone();
                let line = msg.to_string();
                probe(
                    &mut p.borrow_mut(),
                    &mut tally.borrow_mut(),
                    &line,
                    Some(&id),
                )
            })
            .unwrap();
    };

    // `initialize` before the session starts (wrong types may still initialize once).
    run_mangled("initialize", init_fields());
    if tally.borrow().init_successes == 0 {
        p.borrow_mut().initialize("2025-06-18");
    }
    assert!(
        tally.borrow().init_successes <= 1,
        "initialize succeeded twice"
    );

    // Random bytes (no newline inside: one line each).
    let mut runner = TestRunner::new(cfg.clone());
    runner
        .run(&prop::collection::vec(any::<u8>(), 1..300), |mut bytes| {
            bytes.retain(|b| *b != b'\n');
            let line = String::from_utf8_lossy(&bytes).into_owned();
            probe(&mut p.borrow_mut(), &mut tally.borrow_mut(), &line, None)
        })
        .unwrap();

    // Truncated valid messages.
    let mut runner = TestRunner::new(cfg.clone());
    runner
        .run(&(0usize..200, 0u8..3), |(cut, which)| {
            let id = fresh();
            let full = match which {
                0 => call_msg(id, "echo", json!({"text": "truncated"})),
                1 => json!({"jsonrpc":"2.0","id":id,"method":"tools/list"}),
                _ => ping_msg(id),
            }
            .to_string();
            let line: String = full.chars().take(cut.min(full.len() - 1)).collect();
            probe(&mut p.borrow_mut(), &mut tally.borrow_mut(), &line, None)
        })
        .unwrap();

    // Wrong types in `tools/list` and `tools/call` params, and in the envelope fields.
    run_mangled("tools/list", list_fields());
    run_mangled("tools/call", call_fields());
    let p = p.into_inner();
    assert!(p.child.id() > 0 && alive(p.pid()), "proxy died");
    let t = tally.into_inner();
    eprintln!(
        "FIGURES bad input: {} bad lines tried ({} with an id, each answered), {} pings after them all answered",
        t.lines, t.with_id, t.lines
    );
    finish(p, &[]);
}

/// A `ping` sent while `initialize` waits for a slow server is answered at once; a request
/// sent meanwhile is answered after `initialize`, with the servers' tools.
#[test]
fn ping_during_a_slow_initialize_is_answered_at_once() {
    let (_dir, config) = write_config(&hostile_server("slow", &["--init-delay-ms", "3000"], ""));
    let mut p = RawProxy::start(&config, &[]);
    p.send(
        &json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}),
    );
    p.send(&ping_msg(json!("p")));
    p.send(&json!({"jsonrpc":"2.0","id":"l","method":"tools/list"}));
    let first = p.recv(T);
    assert_eq!(first["id"], "p", "the ping waited for initialize: {first}");
    assert_eq!(first["result"], json!({}));
    let second = p.recv(T);
    assert_eq!(second["id"], "init", "{second}");
    let third = p.recv(T);
    assert_eq!(third["id"], "l", "{third}");
    assert!(tool_names(&third).contains(&"echo".to_owned()), "{third}");
    finish(p, &[]);
}

/// Requests the JSON parser refuses but whose outer members are readable (nested deeper than
/// its recursion limit, a lone surrogate escape) get -32700 under their own id, not `null`.
#[test]
fn unparsable_requests_keep_their_id() {
    let (_dir, mut p) = initialized(&one_fixture());
    let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
    p.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"x","n":{deep}}}}}}}"#
    ));
    let resp = p.recv(T);
    assert_eq!(resp["id"], "deep", "{resp}");
    assert_eq!(resp["error"]["code"], -32700, "{resp}");
    p.send_raw(r#"{"jsonrpc":"2.0","params":{"s":"\ud800","id":1},"id":42,"method":"ping"}"#);
    let resp = p.recv(T);
    assert_eq!(resp["id"], 42, "{resp}");
    assert_eq!(resp["error"]["code"], -32700, "{resp}");
    p.send(&ping_msg(json!("after")));
    assert_eq!(p.response(&json!("after"), T).0["result"], json!({}));
    finish(p, &[]);
}

/// Arguments reach the server as the client wrote them, even numbers that no 64-bit integer or
/// double holds exactly.
#[test]
fn big_numbers_in_arguments_are_forwarded_exactly() {
    let (_dir, mut p) = initialized_with("char_budget = 20000", &hostile_server("h", &[], ""));
    let arguments = r#"{"big":123456789012345678901234567890,"neg":-98765432109876543210987,"dec":3.14159265358979323846264338327950288,"small":1,"s":"é"}"#;
    p.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"raw_args","arguments":{arguments}}}}}"#
    ));
    let (resp, _) = p.response(&json!(1), T);
    let seen = envelope_of(&resp)["content"].as_str().unwrap().to_owned();
    assert!(
        seen.contains(&format!(r#""arguments":{arguments}"#)),
        "the server got: {seen}"
    );
    finish(p, &[]);
}
