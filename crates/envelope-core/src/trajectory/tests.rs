use super::*;
use crate::envelope::Envelope;
use crate::mapping::MediaMode;
use crate::mapping::Outcome;
use crate::record::event;
use proptest::prelude::*;
use serde_json::json;
use std::time::{Duration, UNIX_EPOCH};

mod budget;

fn env(call_id: &str, tool: &str, status: Status, content: &str, omitted: u64) -> Envelope {
    Envelope {
        call_id: call_id.into(),
        tool: tool.into(),
        status,
        content: content.into(),
        omitted,
        retryable: false,
    }
}

fn rec(
    start_ms: u64,
    seq: u64,
    call_id: &str,
    tool: &str,
    args: Value,
    envelope: Envelope,
    events: Vec<Value>,
) -> CallRecord {
    CallRecord::new(
        UNIX_EPOCH + Duration::from_millis(start_ms),
        seq,
        call_id,
        tool,
        "s",
        tool,
        args,
        &[],
        1000,
        Duration::from_secs(10),
        MediaMode::Passthrough,
        Outcome::Result {
            result: json!({"content": []}),
        },
        envelope,
        Duration::from_millis(5),
        events,
    )
}

fn ok(start_ms: u64, seq: u64, id: &str, tool: &str, args: Value, content: &str) -> CallRecord {
    rec(
        start_ms,
        seq,
        id,
        tool,
        args,
        env(id, tool, Status::Ok, content, 0),
        vec![],
    )
}

fn all() -> RenderOptions {
    RenderOptions::default()
}

fn budget(n: usize) -> RenderOptions {
    RenderOptions {
        budget: Some(n),
        tokens: None,
    }
}

fn s2c(m: Value) -> Value {
    event("server_to_client", m)
}

fn c2s(m: Value) -> Value {
    event("client_to_server", m)
}

fn seed_records() -> Vec<CallRecord> {
    let mut timeout = rec(
        2_000,
        1,
        "4",
        "git_log",
        json!({"max_count": 50, "repo_path": "/r"}),
        env(
            "4",
            "git_log",
            Status::Error,
            "timeout: no response from server 'git' within 10s",
            0,
        ),
        vec![],
    );
    timeout.outcome = Outcome::Timeout {
        timeout_ms: 10_000,
        timeout_ns: None,
    };
    vec![
        ok(
            1_000,
            0,
            "3",
            "get_current_time",
            json!({"timezone": "Europe/Warsaw"}),
            "datetime=2026-11-30T03:48:18+01:00,timezone=Europe/Warsaw",
        ),
        timeout,
    ]
}

const SEED_GOLDEN: &str = "\
1. [assistant] function_call get_current_time({\"timezone\":\"Europe/Warsaw\"}) [call_id=3]
2. [tool] function_result: datetime=2026-11-30T03:48:18+01:00,timezone=Europe/Warsaw [call_id=3]
3. [assistant] function_call git_log({\"max_count\":50,\"repo_path\":\"/r\"}) [call_id=4]
4. [tool] function_result: error(timeout: no response from server 'git' within 10s) [call_id=4]
";

#[test]
fn golden_pure_text_rendering_is_stable() {
    let records = seed_records();
    assert_eq!(render(&records, &all()), SEED_GOLDEN);
    // Rendering twice gives the same bytes.
    assert_eq!(render(&records, &all()), render(&records, &all()));
}

#[test]
fn empty_transcript_is_empty_string() {
    assert_eq!(render(&[], &all()), "");
    assert_eq!(render(&[], &budget(0)), "");
}

#[test]
fn groups_are_placed_by_start_not_file_order() {
    // The second call started first but ended (and was written) last... and the reverse:
    // the file holds the later-started call first.
    let mut records = seed_records();
    records.reverse();
    assert_eq!(render(&records, &all()), SEED_GOLDEN);
    // Same started_at: seq decides.
    let a = ok(5, 7, "a", "t", json!({}), "x=1");
    let b = ok(5, 6, "b", "t", json!({}), "x=2");
    let out = render(&[a, b], &all());
    assert!(out.starts_with("1. [assistant] function_call t({}) [call_id=b]\n"));
}

/// A call the client cancelled ends with one line saying so, after its events (its progress),
/// instead of the error envelope the record keeps for shape.
#[test]
fn a_cancelled_call_ends_with_one_line_saying_so() {
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "p", "progress": 1, "total": 4}});
    let envelope = env("5", "slow", Status::Error, "cancelled: gone", 0);
    let mut r = rec(1, 0, "5", "slow", json!({}), envelope, vec![s2c(progress)]);
    r.outcome = Outcome::Cancelled;
    assert_eq!(
        render(&[r], &all()),
        "1. [assistant] function_call slow({}) [call_id=5]\n\
         2. [tool] progress for slow: 1/4 [call_id=5]\n\
         3. [user] cancelled: no function_result (the client cancelled the call) [call_id=5]\n"
    );
}

#[test]
fn arguments_keep_recorded_key_order() {
    let r = ok(0, 0, "1", "t", json!({"z": 1, "a": [true, null]}), "");
    assert_eq!(
        render(&[r], &all()),
        "1. [assistant] function_call t({\"z\":1,\"a\":[true,null]}) [call_id=1]\n\
             2. [tool] function_result:  [call_id=1]\n"
    );
    let r = ok(0, 0, "1", "ping", Value::Null, "pong");
    assert!(render(&[r], &all()).starts_with("1. [assistant] function_call ping() [call_id=1]\n"));
}

#[test]
fn newlines_inside_a_result_stay_on_one_line() {
    let r = ok(
        0,
        0,
        "1",
        "cat",
        json!({}),
        "first\nsecond\r\nthird\tx\u{7}",
    );
    let out = render(&[r], &all());
    assert_eq!(out.lines().count(), 2);
    assert_eq!(
        out.lines().nth(1).unwrap(),
        "2. [tool] function_result: first\\nsecond\\r\\nthird\\u{9}x\\u{7} [call_id=1]"
    );
}

#[test]
fn odd_characters_are_escaped_or_passed_safely() {
    let r = ok(
        0,
        0,
        "1",
        "t\u{202E}x",
        json!({"k": "a\u{200B}b\u{200F}c\u{FFFD}d\u{2028}e\u{85}"}),
        "é😀\u{FEFF}",
    );
    let out = render(&[r], &all());
    assert_eq!(
            out,
            "1. [assistant] function_call t\\u{202e}x({\"k\":\"a\\u{200b}b\\u{200f}c\u{FFFD}d\\u{2028}e\\u{85}\"}) [call_id=1]\n\
             2. [tool] function_result: é😀\\u{feff} [call_id=1]\n"
        );
}

#[test]
fn truncated_result_shows_omitted_count() {
    let r = rec(
        0,
        0,
        "9",
        "ls",
        json!({}),
        env("9", "ls", Status::Truncated, "a=1; a=2", 3),
        vec![],
    );
    assert_eq!(
        render(&[r], &all()).lines().nth(1).unwrap(),
        "2. [tool] function_result: a=1; a=2 (+3 omitted) [call_id=9]"
    );
}

#[test]
fn error_result_and_proxy_errors() {
    let mut r = rec(
        0,
        0,
        "2",
        "x",
        json!({}),
        env(
            "2",
            "x",
            Status::Error,
            "server_error: server 'git' exited (signal 9)",
            0,
        ),
        vec![],
    );
    r.outcome = Outcome::ServerExited {
        detail: "signal 9".into(),
    };
    assert_eq!(
            render(&[r], &all()).lines().nth(1).unwrap(),
            "2. [tool] function_result: error(server_error: server 'git' exited (signal 9)) [call_id=2]"
        );
}

#[test]
fn empty_call_id_leaves_out_the_suffix() {
    let ev = s2c(
        json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}),
    );
    let r = rec(
        0,
        0,
        "",
        "t",
        json!({"a": 1}),
        env("", "t", Status::Ok, "a=1", 0),
        vec![ev],
    );
    assert_eq!(
        render(&[r], &all()),
        "1. [assistant] function_call t({\"a\":1})\n\
             2. [tool] progress for t: 1\n\
             3. [tool] function_result: a=1\n"
    );
}

fn elicitation(action_result: Value) -> CallRecord {
    rec(
        0,
        0,
        "4",
        "git_commit",
        json!({"message": "m"}),
        env("4", "git_commit", Status::Ok, "committed", 0),
        vec![
            s2c(
                json!({"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"message":"Confirm commit?","requestedSchema":{"type":"object"}}}),
            ),
            c2s(json!({"jsonrpc":"2.0","id":0,"result":action_result})),
        ],
    )
}

#[test]
fn elicitation_accept_decline_cancel() {
    let out = render(
        &[elicitation(
            json!({"action":"accept","content":{"ok":true}}),
        )],
        &all(),
    );
    assert_eq!(
        out,
        "1. [assistant] function_call git_commit({\"message\":\"m\"}) [call_id=4]\n\
             2. [tool] elicitation_request for git_commit: \"Confirm commit?\" [call_id=4]\n\
             3. [user] elicitation_response for git_commit: accept {\"ok\":true} [call_id=4]\n\
             4. [tool] function_result: committed [call_id=4]\n"
    );
    for action in ["decline", "cancel"] {
        let out = render(&[elicitation(json!({ "action": action }))], &all());
        assert_eq!(
            out.lines().nth(2).unwrap(),
            format!("3. [user] elicitation_response for git_commit: {action} [call_id=4]")
        );
    }
    let out = render(&[elicitation(json!({"action":"accept"}))], &all());
    assert_eq!(
        out.lines().nth(2).unwrap(),
        "3. [user] elicitation_response for git_commit: accept [call_id=4]"
    );
}

#[test]
fn elicitation_error_answer() {
    let mut r = elicitation(json!({}));
    r.events[1] =
        c2s(json!({"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found"}}));
    assert_eq!(
            render(&[r], &all()).lines().nth(2).unwrap(),
            "3. [user] elicitation_response for git_commit: error(-32601: Method not found) [call_id=4]"
        );
}

#[test]
fn the_proxys_own_answer_is_labelled_as_the_proxys() {
    let mut r = elicitation(json!({}));
    let error =
        json!({"code":-32602,"message":"the client gave no response for input request `1`"});
    r.events[1] = event(
        "proxy_to_server",
        json!({"jsonrpc":"2.0","id":0,"error":error}),
    );
    assert_eq!(
        render(&[r], &all()).lines().nth(2).unwrap(),
        "3. [proxy] elicitation_response for git_commit: error(-32602: the client gave no response for input request `1`) [call_id=4]"
    );
}

#[test]
fn sampling_request_and_response() {
    let long = "w".repeat(150) + " " + &"v".repeat(100);
    let r = rec(
        0,
        0,
        "5",
        "summarize",
        json!({}),
        env("5", "summarize", Status::Ok, "done", 0),
        vec![
            s2c(
                json!({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Summarize\nthe log"}}],"maxTokens":100}}),
            ),
            c2s(
                json!({"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"Three commits."},"model":"claude-x","stopReason":"endTurn"}}),
            ),
            s2c(
                json!({"jsonrpc":"2.0","id":"s2","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":long}}]}}),
            ),
            c2s(
                json!({"jsonrpc":"2.0","id":"s2","error":{"code":-1,"message":"User rejected sampling request"}}),
            ),
        ],
    );
    let out = render(&[r], &all());
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[1],
        "2. [tool] sampling_request for summarize: \"Summarize\\nthe log\" [call_id=5]"
    );
    assert_eq!(
            lines[2],
            "3. [assistant] sampling_response for summarize: accept \"Three commits.\" (model=claude-x) [call_id=5]"
        );
    assert_eq!(
        lines[3],
        format!(
            "4. [tool] sampling_request for summarize: \"{}\"… [51 characters cut] [call_id=5]",
            &long[..200]
        )
    );
    assert_eq!(
            lines[4],
            "5. [assistant] sampling_response for summarize: error(-1: User rejected sampling request) [call_id=5]"
        );
    assert_eq!(lines[5], "6. [tool] function_result: done [call_id=5]");
}

#[test]
fn roots_and_progress_and_other_messages() {
    let r = rec(
        0,
        0,
        "6",
        "git_log",
        json!({}),
        env("6", "git_log", Status::Ok, "ok", 0),
        vec![
            s2c(
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":3,"total":10,"message":"scanning"}}),
            ),
            s2c(json!({"jsonrpc":"2.0","id":7,"method":"roots/list"})),
            c2s(
                json!({"jsonrpc":"2.0","id":7,"result":{"roots":[{"uri":"file:///r","name":"r"},{"uri":"file:///s"}]}}),
            ),
            s2c(
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":0.5}}),
            ),
            s2c(json!({"jsonrpc":"2.0","id":8,"method":"ping"})),
            c2s(json!({"jsonrpc":"2.0","id":8,"result":{}})),
            c2s(json!({"jsonrpc":"2.0","id":99,"result":{"x":1}})),
            json!("not an event"),
        ],
    );
    assert_eq!(
        render(&[r], &all()),
        "1. [assistant] function_call git_log({}) [call_id=6]\n\
             2. [tool] progress for git_log: 3/10 scanning [call_id=6]\n\
             3. [tool] roots_request for git_log [call_id=6]\n\
             4. [user] roots_response for git_log: [\"file:///r\",\"file:///s\"] [call_id=6]\n\
             5. [tool] progress for git_log: 0.5 [call_id=6]\n\
             6. [tool] request ping for git_log [call_id=6]\n\
             7. [user] response ping for git_log: {} [call_id=6]\n\
             8. [user] response for git_log: {\"x\":1} [call_id=6]\n\
             9. [tool] event for git_log: \"not an event\" [call_id=6]\n\
             10. [tool] function_result: ok [call_id=6]\n"
    );
}

#[test]
fn binary_content_is_described() {
    let b64 = "iVBORw0KGgoAAAANSUhEUgAA".repeat(50); // 1200 chars → 900 bytes
    let r = rec(
        0,
        0,
        "7",
        "upload",
        // The URL's stray `==` after complete groups is padding, not data: still 900 bytes.
        json!({"file": b64, "url": format!("data:image/png;base64,{b64}=="), "note": "n".repeat(510)}),
        env("7", "upload", Status::Ok, "ok", 0),
        vec![
            s2c(
                json!({"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}}]}}),
            ),
            c2s(
                json!({"jsonrpc":"2.0","id":1,"result":{"content":{"type":"audio","data":"AAAA"},"model":"m"}}),
            ),
            s2c(
                json!({"jsonrpc":"2.0","id":2,"method":"x/y","params":{"resource":{"uri":"file:///a.pdf","mimeType":"application/pdf","blob":"AAAAAA=="}}}),
            ),
        ],
    );
    let out = render(&[r], &all());
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
            lines[0],
            format!(
                "1. [assistant] function_call upload({{\"file\":\"<base64, 900 bytes>\",\"url\":\"<image/png, 900 bytes>\",\"note\":\"{}… [10 characters cut]\"}}) [call_id=7]",
                "n".repeat(500)
            )
        );
    assert_eq!(
        lines[1],
        "2. [tool] sampling_request for upload: <image/png, 8 bytes> [call_id=7]"
    );
    assert_eq!(
            lines[2],
            "3. [assistant] sampling_response for upload: accept <audio, 3 bytes> (model=m) [call_id=7]"
        );
    assert_eq!(
            lines[3],
            "4. [tool] request x/y for upload: {\"resource\":{\"uri\":\"file:///a.pdf\",\"mimeType\":\"application/pdf\",\"blob\":\"<application/pdf, 4 bytes>\"}} [call_id=7]"
        );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        "[A-Za-z0-9+/]{490,620}={0,2}".prop_map(Value::from),
        prop_oneof![
            Just("image"),
            Just("audio"),
            Just("text"),
            Just("elicitation/create"),
            Just("sampling/createMessage"),
            Just("roots/list"),
            Just("notifications/progress")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("type".to_owned()),
                        Just("data".to_owned()),
                        Just("blob".to_owned()),
                        Just("mimeType".to_owned()),
                        Just("method".to_owned()),
                        Just("id".to_owned()),
                        Just("params".to_owned()),
                        Just("result".to_owned()),
                        Just("error".to_owned()),
                        Just("message".to_owned()),
                        Just("messages".to_owned()),
                        Just("content".to_owned()),
                        Just("action".to_owned()),
                        Just("code".to_owned()),
                        Just("roots".to_owned()),
                        Just("progress".to_owned()),
                        any::<String>(),
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn arb_event() -> impl Strategy<Value = Value> {
    prop_oneof![
        arb_json(),
        (
            prop_oneof![
                Just("server_to_client"),
                Just("client_to_server"),
                Just("x")
            ],
            arb_json()
        )
            .prop_map(|(d, m)| event(d, m)),
    ]
}

fn arb_record() -> impl Strategy<Value = CallRecord> {
    (
        (
            any::<String>(),
            any::<u64>(),
            any::<String>(),
            any::<String>(),
        ),
        arb_json(),
        (
            prop_oneof![
                Just(Status::Ok),
                Just(Status::Truncated),
                Just(Status::Error)
            ],
            any::<String>(),
            any::<u64>(),
        ),
        prop::collection::vec(arb_event(), 0..5),
    )
        .prop_map(
            |((started_at, seq, call_id, tool), args, (status, content, omitted), events)| {
                let mut r = rec(
                    0,
                    seq,
                    &call_id,
                    &tool,
                    args,
                    env(&call_id, &tool, status, &content, omitted),
                    events,
                );
                r.started_at = started_at;
                r
            },
        )
}

fn numbered(line: &str) -> bool {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && line[digits..].starts_with(". [")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn render_never_panics_and_keeps_one_item_per_line(
        records in prop::collection::vec(arb_record(), 0..5),
        b in prop::option::of(0usize..3000),
    ) {
        let out = render(&records, &all());
        prop_assert!(out.is_empty() || out.ends_with('\n'));
        let lines: Vec<&str> = out.split_terminator('\n').collect();
        for (i, line) in lines.iter().enumerate() {
            prop_assert!(numbered(line), "line {i}: {line:?}");
            let prefix = format!("{}. [", i + 1);
            prop_assert!(line.starts_with(&prefix), "line {}: {:?}", i, line);
        }
        let expected: usize = records.iter().map(|r| r.events.len() + 2).sum();
        prop_assert_eq!(lines.len(), expected);

        let out = render(&records, &RenderOptions { budget: b, tokens: None });
        let lines: Vec<&str> = out.split_terminator('\n').collect();
        let kept: Vec<&&str> = lines.iter().filter(|l| numbered(l)).collect();
        let kept_len: usize = kept.iter().map(|l| l.chars().count() + 1).sum();
        if let Some(b) = b {
            prop_assert!(kept_len <= b);
        }
        for line in &lines[kept.len()..] {
            prop_assert!(line.ends_with("omitted for budget)"), "{line:?}");
        }
        prop_assert!(lines.len() <= kept.len() + 1);
    }
}
