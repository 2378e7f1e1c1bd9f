//! End-to-end tests of behaviours only the fixture server can trigger deterministically:
//! timeouts, a killed server, pagination, name collisions, prefixes, allow/deny lists, tool-list
//! changes, progress, server-to-client requests and error mapping (issue 3).
use crate::common;
use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(60);

fn names(tools: &Value) -> Vec<String> {
    let mut v: Vec<String> = tools
        .as_array()
        .unwrap_or_else(|| panic!("not a tool list: {tools}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    v.sort();
    v
}

/// The fixture's tool names (sorted), listed through the proxy without pagination (the
/// proxy's own page tool left out).
fn fixture_names() -> Vec<String> {
    let (_d, cfg) = write_config(&fixture_server("fx", &[], ""));
    let r = sdk_session(&cfg, &json!([{"op": "list_tools"}]), &[]);
    let mut names = names(&r["steps"][0]);
    names.retain(|n| n != "envelope_next_page");
    names
}

#[test]
fn slow_tool_times_out_and_the_proxy_keeps_serving() {
    let (_d, cfg) = write_config(&fixture_server(
        "fx",
        &[],
        "[mcp_servers.fx.tools.sleep]\ntool_timeout_sec = 1",
    ));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-06-18");
    let start = Instant::now();
    let env = envelope_of(&p.call(json!(1), "sleep", json!({"ms": 5000}), LONG));
    let elapsed = start.elapsed();
    assert_eq!(
        env,
        json!({"call_id":"1","tool":"sleep","status":"error",
               "content":"timeout: no response from server 'fx' within 1s",
               "omitted":0,"retryable":true})
    );
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(4),
        "{elapsed:?}"
    );
    let env = envelope_of(&p.call(json!(2), "echo", json!({"text": "after"}), LONG));
    assert_eq!(env["status"], "ok");
    assert_eq!(env["content"], "after");
    finish_session(p);
}

#[test]
fn a_timeout_under_a_millisecond_is_named_in_milliseconds_not_as_0s() {
    let (_d, cfg) = write_config(&fixture_server(
        "fx",
        &[],
        "[mcp_servers.fx.tools.sleep]\ntool_timeout_sec = 0.0005",
    ));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-06-18");
    let env = envelope_of(&p.call(json!(1), "sleep", json!({"ms": 2000}), LONG));
    assert_eq!(
        env["content"], "timeout: no response from server 'fx' within 0.5ms",
        "{env}"
    );
    finish_session(p);
}

#[test]
fn killed_server_mid_call_is_a_retryable_server_error_at_once() {
    let (_d, cfg) = write_config(&fixture_server("fx", &[], ""));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-06-18");
    let kids = children_of(p.pid());
    assert_eq!(kids.len(), 1);
    p.send(&json!({"jsonrpc":"2.0","id":"s","method":"tools/call",
                   "params":{"name":"sleep","arguments":{"ms":30000}}}));
    std::thread::sleep(Duration::from_millis(500));
    let killed = Instant::now();
    // SAFETY: plain libc call on a pid we just read from /proc as our child's child.
    let rc = unsafe { libc_kill(kids[0] as i32, 9) };
    assert_eq!(rc, 0);
    let (resp, _) = p.response(&json!("s"), LONG);
    let elapsed = killed.elapsed();
    let env = envelope_of(&resp);
    assert_eq!(env["status"], "error");
    assert_eq!(env["retryable"], true);
    let content = env["content"].as_str().unwrap();
    assert!(
        content.starts_with("server_error: server 'fx' exited during the call"),
        "{content}"
    );
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert!(wait_gone(&kids, Duration::from_secs(5)).is_empty());
    // A restarted server (if any) is stopped on EOF like any other.
    finish_session(p);
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[test]
fn paginated_downstream_tools_are_all_listed() {
    let all = fixture_names();
    assert!(all.len() > 10, "{all:?}");
    let (_d, cfg) = write_config(&fixture_server("fx", &["--page-size", "2"], ""));
    let r = sdk_session(&cfg, &json!([{"op": "list_tools"}]), &[]);
    let mut expected = all;
    expected.push("envelope_next_page".into());
    expected.sort();
    assert_eq!(names(&r["steps"][0]), expected);
}

#[test]
fn colliding_names_are_both_exposed_with_server_prefix() {
    let (_d, cfg) = write_config(&format!(
        "{}{}",
        fixture_server("a", &[], ""),
        fixture_server("b", &[], "")
    ));
    let r = sdk_session(
        &cfg,
        &json!([{"op": "list_tools"},
                {"op": "call", "name": "a__echo", "arguments": {"text": "from a"}},
                {"op": "call", "name": "b__echo", "arguments": {"text": "from b"}},
                {"op": "call", "name": "echo", "arguments": {"text": "x"}}]),
        &[],
    );
    let listed = names(&r["steps"][0]);
    let all = fixture_names();
    let mut expected: Vec<String> = all
        .iter()
        .flat_map(|n| [format!("a__{n}"), format!("b__{n}")])
        .collect();
    // The proxy's own page tool is listed too.
    expected.push("envelope_next_page".into());
    expected.sort();
    assert_eq!(listed, expected);
    assert_eq!(r["steps"][1]["structuredContent"]["content"], "from a");
    assert_eq!(r["steps"][2]["structuredContent"]["content"], "from b");
    // The shared name points to the names its tools have.
    assert_eq!(
        r["steps"][3]["structuredContent"]["content"],
        "not_found: no tool named 'echo': more than one server offers that name, so each one's \
         tool is named after its server; did you mean 'a__echo' or 'b__echo'?"
    );
}

#[test]
fn tool_prefix_and_allow_deny_lists() {
    let (_d, cfg) = write_config(&format!(
        "{}{}{}",
        fixture_server("p", &[], "tool_prefix = \"fx_\""),
        fixture_server(
            "allow",
            &[],
            "tool_prefix = \"al_\"\nenabled_tools = [\"echo\", \"rows\"]"
        ),
        fixture_server(
            "deny",
            &[],
            "tool_prefix = \"de_\"\ndisabled_tools = [\"echo\"]"
        ),
    ));
    let r = sdk_session(
        &cfg,
        &json!([{"op": "list_tools"},
                {"op": "call", "name": "fx_echo", "arguments": {"text": "prefixed"}},
                {"op": "call", "name": "de_echo", "arguments": {"text": "x"}}]),
        &[],
    );
    let listed = names(&r["steps"][0]);
    let all = fixture_names();
    let with = |prefix: &str, keep: &dyn Fn(&str) -> bool| -> Vec<String> {
        all.iter()
            .filter(|n| keep(n))
            .map(|n| format!("{prefix}{n}"))
            .collect()
    };
    let mut expected = with("fx_", &|_| true);
    expected.extend(with("al_", &|n| n == "echo" || n == "rows"));
    expected.extend(with("de_", &|n| n != "echo"));
    expected.push("envelope_next_page".into());
    expected.sort();
    assert_eq!(listed, expected);
    let env = &r["steps"][1]["structuredContent"];
    assert_eq!(env["tool"], "fx_echo");
    assert_eq!(env["content"], "prefixed");
    assert_eq!(
        r["steps"][2]["structuredContent"]["content"],
        "not_found: no tool named 'de_echo'"
    );
}

#[test]
fn added_tool_is_announced_and_listed() {
    let (_d, cfg) = write_config(&fixture_server("fx", &[], ""));
    let r = sdk_session(
        &cfg,
        &json!([{"op": "list_tools"},
                {"op": "call", "name": "add_tool", "arguments": {}},
                {"op": "wait", "seconds": 1.0},
                {"op": "list_tools"},
                {"op": "call", "name": "extra", "arguments": {}}]),
        &[],
    );
    let before = names(&r["steps"][0]);
    assert!(!before.contains(&"extra".to_owned()));
    assert_eq!(r["steps"][1]["structuredContent"]["content"], "added");
    let after = names(&r["steps"][3]);
    let mut expected = before.clone();
    expected.push("extra".into());
    expected.sort();
    assert_eq!(after, expected);
    assert_eq!(r["steps"][4]["structuredContent"]["content"], "extra");
    let changed = r["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["method"] == "notifications/tools/list_changed")
        .count();
    assert!(changed >= 1, "no list_changed in {}", r["notifications"]);
}

#[test]
fn progress_notifications_reach_the_client_with_its_token() {
    let (_d, cfg) = write_config(&fixture_server("fx", &[], ""));
    let r = sdk_session(
        &cfg,
        &json!([{"op": "call", "name": "progress", "arguments": {"steps": 3}, "progress": true}]),
        &[],
    );
    let result = &r["steps"][0];
    assert_eq!(result["structuredContent"]["content"], "done");
    assert_eq!(
        result["progress"],
        json!([{"progress":1.0,"total":3.0},{"progress":2.0,"total":3.0},{"progress":3.0,"total":3.0}])
    );
}

#[test]
fn elicit_sample_and_roots_are_answered_by_the_client() {
    let (_d, cfg) = write_config(&fixture_server("fx", &[], ""));
    let r = sdk_session(
        &cfg,
        &json!([{"op": "call", "name": "elicit", "arguments": {"message": "Sure?"}},
                {"op": "call", "name": "sample", "arguments": {"prompt": "Say hi"}},
                {"op": "call", "name": "roots", "arguments": {}}]),
        &[],
    );
    let content = |i: usize| -> String {
        let env = &r["steps"][i]["structuredContent"];
        assert_eq!(env["status"], "ok", "{env}");
        env["content"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        content(0),
        r#"result={"action":"accept","content":{"ok":true}}"#
    );
    let sample = content(1);
    assert!(
        sample.contains("sampled: fixed answer") && sample.contains("fixture-model"),
        "{sample}"
    );
    let roots = content(2);
    assert!(roots.contains("file:///tmp"), "{roots}");
}

#[test]
fn error_results_map_to_their_types() {
    let (_d, cfg) = write_config(&fixture_server("fx", &[], ""));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-06-18");
    let mut call = |id: i64, name: &str, args: Value| -> Value {
        envelope_of(&p.call(json!(id), name, args, LONG))
    };
    let env = call(1, "rate_limited", json!({}));
    assert_eq!(env["status"], "error");
    assert_eq!(
        env["content"],
        "rate_limit: server 'fx' reported: try again in 2s"
    );
    assert_eq!(env["retryable"], true);
    for (id, code, ty, retryable) in [
        (2, -32602, "invalid_argument", false),
        (3, -32601, "not_found", false),
        (4, -32603, "server_error", true),
    ] {
        let env = call(
            id,
            "rpc_error",
            json!({"code": code, "message": format!("boom {code}")}),
        );
        assert_eq!(env["status"], "error", "{env}");
        assert_eq!(env["retryable"], retryable, "{env}");
        let content = env["content"].as_str().unwrap();
        assert!(
            content.starts_with(&format!("{ty}: ")) && content.contains(&format!("boom {code}")),
            "{code}: {content}"
        );
    }
    let env = call(5, "fail", json!({"message": "it broke"}));
    assert_eq!(env["content"], "tool_error: server 'fx' reported: it broke");
    assert_eq!(env["retryable"], false);
    finish_session(p);
}

/// Numbers cross the proxy as written, both ways: an id and an argument beyond 64 bits reach
/// the server and come back exact, and so do the figures of a JSON result. They used to become
/// the nearest `f64` (`1.2345678901234568e29`) under status `ok`.
#[test]
fn numbers_beyond_64_bits_and_long_decimals_are_kept_exactly() {
    let (_d, cfg) = write_config(&fixture_server("fx", &[], ""));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-06-18");
    let big = |text: &str| -> Value { serde_json::from_str(text).unwrap() };
    let id = big("123456789012345678901234567890");
    let answer = p.call(id.clone(), "add", json!({"a": id, "b": 1}), LONG);
    assert_eq!(answer["id"].to_string(), "123456789012345678901234567890");
    let env = envelope_of(&answer);
    assert_eq!(env["call_id"], "123456789012345678901234567890");
    assert_eq!(env["content"], "123456789012345678901234567891", "{env}");
    let table = r#"{"total":98765432109876543210987654321,"share":0.12345678901234567890123}"#;
    let env = envelope_of(&p.call(json!(2), "echo", json!({"text": table}), LONG));
    assert_eq!(
        env["content"], "share=0.12345678901234567890123,total=98765432109876543210987654321",
        "{env}"
    );
    assert_eq!(env["status"], "ok");
    finish_session(p);
}
