use super::*;
use proptest::prelude::*;
use serde_json::{json, Map};

const SERVER: &str = "git";

fn ctx(budget: usize, media: MediaMode) -> MappingContext<'static> {
    MappingContext {
        call_id: "c7",
        tool: "git_log",
        server: SERVER,
        budget: crate::budget::Budget::chars(budget),
        text: crate::mapping::TextShape {
            long_rows: crate::budget::LongRows::Keep,
            ..Default::default()
        },
        media,
    }
}

fn map(outcome: Outcome, budget: usize) -> Mapped {
    map_outcome(&outcome, &ctx(budget, MediaMode::Passthrough))
}

fn map_result_with(result: Value, budget: usize, media: MediaMode) -> Mapped {
    map_outcome(&Outcome::Result { result }, &ctx(budget, media))
}

fn ok(result: Value, budget: usize) -> Envelope {
    map_result_with(result, budget, MediaMode::Passthrough).envelope
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn assert_error(env: &Envelope, error_type: ErrorType, content: &str) {
    assert_eq!(env.status, Status::Error);
    assert_eq!(env.content, content);
    assert_eq!(env.omitted, 0);
    assert_eq!(env.retryable, error_type.is_retryable());
    assert!(env.content.starts_with(&format!("{error_type}: ")));
}

// ---- success path ----------------------------------------------------------------------

#[test]
fn time_server_structured_content_is_one_row() {
    let sc = json!({"timezone": "Europe/Warsaw", "datetime": "2026-11-30T03:48:18+01:00", "day_of_week": "Monday", "is_dst": false});
    let result = json!({
        "content": [text(&sc.to_string())],
        "structuredContent": sc,
        "isError": false
    });
    let env = ok(result, 2000);
    assert_eq!(
        env.content,
        "datetime=2026-11-30T03:48:18+01:00,day_of_week=Monday,is_dst=false,timezone=Europe/Warsaw"
    );
    assert_eq!(env.status, Status::Ok);
    assert_eq!(env.omitted, 0);
    assert_eq!(env.call_id, "c7");
    assert_eq!(env.tool, "git_log");
    assert!(!env.retryable);
}

#[test]
fn git_log_text_is_truncated_with_rows_omitted() {
    let log = "commit 3f2a9c1d\nAuthor: Ada <ada@example.org>\nDate:   Mon Nov 30 03:48:18 2026 +0100\n\n    Fix the parser\n\ncommit 1b7e0aa2\nAuthor: Bob <bob@example.org>\n";
    let env = ok(json!({"content": [text(log)]}), 45);
    assert_eq!(
        env.content,
        "commit 3f2a9c1d\nAuthor: Ada <ada@example.org>"
    );
    assert_eq!(env.status, Status::Truncated);
    assert_eq!(env.omitted, 6);
    let env = ok(json!({"content": [text(log)]}), 2000);
    assert_eq!(env.content, log.strip_suffix('\n').unwrap());
    assert_eq!(env.status, Status::Ok);
}

#[test]
fn single_array_field_gives_header_row_then_items() {
    let sc = json!({"items": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}], "total": 3});
    let env = ok(
        json!({"content": [], "structuredContent": sc.clone()}),
        2000,
    );
    assert_eq!(
        env.content,
        "total=3; id=1,name=a; id=2,name=b; id=3,name=c"
    );
    // Same from a text block holding the JSON.
    let env = ok(json!({"content": [text(&sc.to_string())]}), 2000);
    assert_eq!(
        env.content,
        "total=3; id=1,name=a; id=2,name=b; id=3,name=c"
    );
    // No other fields: no header row.
    let env = ok(
        json!({"content": [], "structuredContent": {"items": [{"a": 1}]}}),
        100,
    );
    assert_eq!(env.content, "a=1");
    // Budget: header plus one item.
    let env = ok(json!({"content": [], "structuredContent": sc}), 20);
    assert_eq!(env.content, "total=3; id=1,name=a");
    assert_eq!(env.omitted, 2);
}

#[test]
fn two_arrays_of_objects_or_empty_or_mixed_arrays_make_one_row() {
    let env = ok(
        json!({"content": [], "structuredContent": {"a": [{"x": 1}], "b": [{"y": 2}]}}),
        100,
    );
    assert_eq!(env.content, r#"a=[{"x":1}],b=[{"y":2}]"#);
    let env = ok(
        json!({"content": [], "structuredContent": {"a": [], "n": 1}}),
        100,
    );
    assert_eq!(env.content, "a=[],n=1");
    let env = ok(
        json!({"content": [], "structuredContent": {"a": [{"x": 1}, 2]}}),
        100,
    );
    assert_eq!(env.content, r#"a=[{"x":1},2]"#);
    // One array of objects next to an array of scalars: the scalar array is a header field.
    let env = ok(
        json!({"content": [], "structuredContent": {"tags": [1, 2], "rows": [{"x": 1}]}}),
        100,
    );
    assert_eq!(env.content, "tags=[1,2]; x=1");
}

#[test]
fn array_of_objects_and_mixed_array() {
    let env = ok(
        json!({"content": [], "structuredContent": [{"b": 2, "a": 1}, {"a": 3}]}),
        100,
    );
    assert_eq!(env.content, "a=1,b=2; a=3");
    let env = ok(
        json!({"content": [text(r#"[{"a": 1}, 5, "s", [1, 2], null]"#)]}),
        100,
    );
    assert_eq!(
        env.content,
        "a=1; value=5; value=s; value=[1,2]; value=null"
    );
    let env = ok(json!({"content": [text("[]")]}), 100);
    assert_eq!(env.content, "");
    assert_eq!(env.status, Status::Ok);
}

#[test]
fn scalar_structured_content_is_a_value_row() {
    for (sc, expected) in [
        (json!(42), "value=42"),
        (json!("hi"), "value=hi"),
        (json!(true), "value=true"),
        (json!(-1.5), "value=-1.5"),
    ] {
        assert_eq!(
            ok(json!({"content": [], "structuredContent": sc}), 100).content,
            expected
        );
    }
    // null counts as absent: rows come from content.
    let env = ok(
        json!({"content": [text("x")], "structuredContent": null}),
        100,
    );
    assert_eq!(env.content, "x");
}

#[test]
fn text_json_only_when_it_looks_like_and_parses_as_object_or_array() {
    assert_eq!(
        ok(json!({"content": [text(" {\"a\": 1}\n")]}), 100).content,
        "a=1"
    );
    // Starts like JSON but does not parse: lines.
    assert_eq!(
        ok(json!({"content": [text("{not json\n}")]}), 100).content,
        "{not json\n}"
    );
    // A bare JSON scalar in text stays text.
    assert_eq!(ok(json!({"content": [text("42")]}), 100).content, "42");
    assert_eq!(
        ok(json!({"content": [text("\"q\"")]}), 100).content,
        "\"q\""
    );
}

#[test]
fn crlf_lines_trailing_newline_and_blank_lines() {
    let env = ok(json!({"content": [text("one\r\ntwo\r\n")]}), 100);
    assert_eq!(env.content, "one\ntwo");
    let env = ok(json!({"content": [text("a\n\nb\n")]}), 100);
    assert_eq!(env.content, "a\n\nb");
    // Budget counts the blank line and its separators: "a\n\n" is 3.
    let env = ok(json!({"content": [text("a\n\nb\n")]}), 3);
    assert_eq!(env.content, "a\n");
    assert_eq!(env.omitted, 1);
    // Only the last \r of a line is dropped, and only before \n.
    let env = ok(json!({"content": [text("x\r\r\ny\r")]}), 100);
    assert_eq!(env.content, "x\r\ny");
    // Empty text: no rows.
    let env = ok(json!({"content": [text("")]}), 100);
    assert_eq!((env.content.as_str(), env.omitted), ("", 0));
    // Two text blocks: their lines join with \n; an object row in between uses "; ".
    let env = ok(
        json!({"content": [text("a"), text("b"), text("{\"k\":1}"), text("c")]}),
        100,
    );
    assert_eq!(env.content, "a\nb; k=1; c");
}

#[test]
fn lengths_are_unicode_scalar_values() {
    let env = ok(json!({"content": [text("żółć\n😀😀")]}), 7);
    assert_eq!(env.content, "żółć\n😀😀");
    let env = ok(json!({"content": [text("żółć\n😀😀")]}), 6);
    assert_eq!(env.content, "żółć");
    assert_eq!(env.omitted, 1);
}

// ---- media ---------------------------------------------------------------------------------

#[test]
fn base64_decoded_sizes() {
    assert_eq!(base64_decoded_len(""), 0);
    assert_eq!(base64_decoded_len("TWFu"), 3); // "Man", padding 0
    assert_eq!(base64_decoded_len("TWE="), 2); // "Ma", padding 1
    assert_eq!(base64_decoded_len("TQ=="), 1); // "M", padding 2
    assert_eq!(base64_decoded_len("TWFuTQ=="), 4);
    assert_eq!(base64_decoded_len("TWFuTQ"), 4); // unpadded
    assert_eq!(base64_decoded_len("TWFuTWE=\n"), 5);
    // Line breaks inside (RFC 2045) are not data; malformed padding never underflows.
    assert_eq!(base64_decoded_len("AAAA\nAA==\n"), 4);
    assert_eq!(base64_decoded_len("=="), 0);
    assert_eq!(base64_decoded_len("AAA="), 2);
}

fn image(data: &str) -> Value {
    json!({"type": "image", "data": data, "mimeType": "image/png"})
}

#[test]
fn image_and_audio_pass_through_untouched_and_are_not_rows() {
    let audio = json!({"type": "audio", "data": "TWE=", "mimeType": "audio/wav", "annotations": {"priority": 1}});
    let result = json!({"content": [text("caption"), image("TWFu"), audio.clone(), text("end")]});
    let mapped = map_result_with(result, 100, MediaMode::Passthrough);
    assert_eq!(mapped.envelope.content, "caption\nend");
    assert_eq!(mapped.envelope.status, Status::Ok);
    assert_eq!(mapped.media, vec![image("TWFu"), audio]);
}

#[test]
fn media_described_with_decoded_size() {
    let result = json!({"content": [image("TWFu"), image("TWE="), {"type": "audio", "data": "TQ==", "mimeType": "audio/wav"}]});
    let mapped = map_result_with(result, 500, MediaMode::Describe);
    assert!(mapped.media.is_empty());
    assert_eq!(
        mapped.envelope.content,
        "bytes=3,mimeType=image/png,type=image; bytes=2,mimeType=image/png,type=image; bytes=1,mimeType=audio/wav,type=audio"
    );
}

#[test]
fn media_with_structured_content() {
    let result =
        json!({"content": [text("{\"a\":1}"), image("TWFu")], "structuredContent": {"a": 1}});
    let mapped = map_result_with(result.clone(), 500, MediaMode::Passthrough);
    assert_eq!(mapped.envelope.content, "a=1");
    assert_eq!(mapped.media, vec![image("TWFu")]);
    let mapped = map_result_with(result, 500, MediaMode::Describe);
    assert_eq!(
        mapped.envelope.content,
        "a=1; bytes=3,mimeType=image/png,type=image"
    );
    assert!(mapped.media.is_empty());
}

#[test]
fn resource_link_row() {
    let result = json!({"content": [
        {"type": "resource_link", "uri": "file:///repo/README.md", "name": "README.md", "mimeType": "text/markdown", "description": "x"},
        {"type": "resource_link", "uri": "file:///a", "name": "a"}
    ]});
    assert_eq!(
        ok(result, 500).content,
        "mimeType=text/markdown,name=README.md,type=resource_link,uri=file:///repo/README.md; name=a,type=resource_link,uri=file:///a"
    );
}

#[test]
fn embedded_text_resource_gives_uri_row_then_text_rows() {
    let result = json!({"content": [
        {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "line 1\nline 2\n"}},
        {"type": "resource", "resource": {"uri": "file:///d.json", "text": "{\"k\": \"v\"}"}}
    ]});
    assert_eq!(
        ok(result, 500).content,
        "uri=file:///notes.txt; line 1\nline 2; uri=file:///d.json; k=v"
    );
}

#[test]
fn blob_resource_is_media() {
    let blob = json!({"type": "resource", "resource": {"uri": "file:///logo.png", "mimeType": "image/png", "blob": "TWE="}});
    let result = json!({"content": [text("see"), blob.clone()]});
    let mapped = map_result_with(result.clone(), 500, MediaMode::Passthrough);
    assert_eq!(mapped.envelope.content, "see");
    assert_eq!(mapped.media, vec![blob]);
    let mapped = map_result_with(result, 500, MediaMode::Describe);
    assert_eq!(
        mapped.envelope.content,
        "see; bytes=2,mimeType=image/png,type=resource,uri=file:///logo.png"
    );
    assert!(mapped.media.is_empty());
}

#[test]
fn unknown_and_malformed_blocks_become_object_rows() {
    let result = json!({"content": [
        {"type": "hologram", "x": 1},
        {"type": "text"},
        {"type": "image", "mimeType": "image/png"},
        "bare",
        {"type": "resource", "resource": {"uri": "u"}}
    ]});
    let mapped = map_result_with(result, 500, MediaMode::Passthrough);
    assert!(mapped.media.is_empty());
    assert_eq!(
        mapped.envelope.content,
        r#"type=hologram,x=1; type=text; mimeType=image/png,type=image; value=bare; resource={"uri":"u"},type=resource"#
    );
}

#[test]
fn invalid_call_tool_results_are_server_errors() {
    let env = ok(json!("hello"), 500);
    assert_error(
        &env,
        ErrorType::ServerError,
        "server_error: invalid CallToolResult from server 'git': the result is string, not an object",
    );
    let env = ok(json!({"isError": false}), 500);
    assert_error(
        &env,
        ErrorType::ServerError,
        "server_error: invalid CallToolResult from server 'git': `content` is missing",
    );
    let env = ok(json!({"content": "text"}), 500);
    assert_error(
        &env,
        ErrorType::ServerError,
        "server_error: invalid CallToolResult from server 'git': `content` is string, not an array",
    );
    // ... unless structuredContent exists.
    let env = ok(
        json!({"content": "text", "structuredContent": {"a": 1}}),
        500,
    );
    assert_eq!(env.content, "a=1");
    let env = ok(json!({"structuredContent": {"a": 1}}), 500);
    assert_eq!(env.content, "a=1");
}

#[test]
fn huge_borrowed_scalars_are_left_out_without_being_copied_whole() {
    let big = "x".repeat(100_000);
    let env = ok(
        json!({"content": [], "structuredContent": [1, big.clone(), 2]}),
        50,
    );
    assert_eq!(env.content, "value=1");
    assert_eq!(env.omitted, 2);
    // A string of exactly the room left still fits: the bounded copy keeps budget + 1.
    let env = ok(
        json!({"content": [], "structuredContent": ["y".repeat(44)]}),
        50,
    );
    assert_eq!(env.content, format!("value={}", "y".repeat(44)));
    let env = ok(
        json!({"content": [], "structuredContent": {"note": big, "rows": [{"a": 1}]}}),
        50,
    );
    assert_eq!(env.content, "");
    assert_eq!(env.omitted, 2);
}

// ---- error path ------------------------------------------------------------------------

#[test]
fn proxy_side_errors() {
    assert_error(
        &map(Outcome::Timeout { timeout_ms: 10_000 }, 500).envelope,
        ErrorType::Timeout,
        "timeout: no response from server 'git' within 10s",
    );
    assert_error(
        &map(Outcome::Timeout { timeout_ms: 1500 }, 500).envelope,
        ErrorType::Timeout,
        "timeout: no response from server 'git' within 1500ms",
    );
    assert_error(
        &map(
            Outcome::ServerExited {
                detail: "exit status 1".into(),
            },
            500,
        )
        .envelope,
        ErrorType::ServerError,
        "server_error: server 'git' exited during the call: exit status 1",
    );
    assert_error(
        &map(
            Outcome::InvalidResponse {
                detail: "line is not JSON".into(),
            },
            500,
        )
        .envelope,
        ErrorType::ServerError,
        "server_error: server 'git' sent an invalid response: line is not JSON",
    );
    assert_error(
        &map(
            Outcome::Unavailable {
                reason: "gave up after 5 restarts".into(),
            },
            500,
        )
        .envelope,
        ErrorType::Unavailable,
        "unavailable: server 'git' is unavailable: gave up after 5 restarts",
    );
    let mapped = map_outcome(
        &Outcome::NoSuchTool,
        &MappingContext {
            call_id: "9",
            tool: "x",
            server: "",
            budget: crate::budget::Budget::chars(500),
            text: crate::mapping::TextShape {
                long_rows: crate::budget::LongRows::Keep,
                ..Default::default()
            },
            media: MediaMode::Passthrough,
        },
    );
    assert_error(
        &mapped.envelope,
        ErrorType::NotFound,
        "not_found: no tool named 'x'",
    );
    assert_eq!(mapped.envelope.call_id, "9");
    assert!(mapped.media.is_empty());
}

fn rpc(error: Value) -> Envelope {
    let c = MappingContext {
        server: "time",
        ..ctx(500, MediaMode::Passthrough)
    };
    map_outcome(&Outcome::RpcError { error }, &c).envelope
}

#[test]
fn json_rpc_error_codes() {
    let cases = [
        (-32001, ErrorType::Timeout),
        (-32603, ErrorType::ServerError),
        (-32000, ErrorType::ServerError),
        (-32601, ErrorType::NotFound),
        (-32002, ErrorType::NotFound),
        (-32602, ErrorType::InvalidArgument),
        (-32700, ErrorType::ServerError),
        (42, ErrorType::ServerError),
    ];
    for (code, t) in cases {
        let env = rpc(json!({"code": code, "message": "Unknown tool: foo"}));
        assert_error(
            &env,
            t,
            &format!("{t}: server 'time' answered error {code}: Unknown tool: foo"),
        );
    }
    assert_error(
        &rpc(json!({"code": -32603})),
        ErrorType::ServerError,
        "server_error: server 'time' answered error -32603",
    );
    assert_error(
        &rpc(json!("boom")),
        ErrorType::ServerError,
        "server_error: server 'time' answered an error that is not a JSON-RPC error object: \"boom\"",
    );
    assert_error(
        &rpc(json!({"message": "no code"})),
        ErrorType::ServerError,
        "server_error: server 'time' answered an error that is not a JSON-RPC error object: {\"message\":\"no code\"}",
    );
}

#[test]
fn rate_limit_and_overloaded_via_json_rpc_data() {
    assert_error(
        &rpc(
            json!({"code": -32000, "message": "slow down", "data": {"type": "rate_limit", "retry_after": 3}}),
        ),
        ErrorType::RateLimit,
        "rate_limit: server 'time' answered error -32000: slow down",
    );
    assert_error(
        &rpc(json!({"code": -32603, "message": "busy", "data": {"error": {"type": "overloaded"}}})),
        ErrorType::Overloaded,
        "overloaded: server 'time' answered error -32603: busy",
    );
    // Other data types do not change the code's mapping.
    assert_error(
        &rpc(json!({"code": -32602, "message": "bad", "data": {"type": "validation"}})),
        ErrorType::InvalidArgument,
        "invalid_argument: server 'time' answered error -32602: bad",
    );
}

#[test]
fn rate_limit_and_overloaded_via_structured_content() {
    let env = ok(
        json!({"content": [text("Too many requests")], "structuredContent": {"error": {"type": "rate_limit", "message": "10 requests per minute exceeded"}}, "isError": true}),
        500,
    );
    assert_error(
        &env,
        ErrorType::RateLimit,
        "rate_limit: server 'git' reported: 10 requests per minute exceeded",
    );
    let env = ok(
        json!({"content": [], "structuredContent": {"error": {"type": "overloaded"}}, "isError": true}),
        500,
    );
    assert_error(
        &env,
        ErrorType::Overloaded,
        "overloaded: server 'git' is overloaded",
    );
    // Without isError it is data.
    let env = ok(
        json!({"content": [], "structuredContent": {"error": {"type": "rate_limit"}}}),
        500,
    );
    assert_eq!(env.content, r#"error={"type":"rate_limit"}"#);
}

#[test]
fn is_error_results_are_tool_errors_with_their_text() {
    let env = ok(
        json!({"content": [text("fatal: not a git repository"), image("TWFu"), text("(or any parent)")], "isError": true}),
        500,
    );
    assert_error(
        &env,
        ErrorType::ToolError,
        "tool_error: server 'git' reported: fatal: not a git repository\n(or any parent)",
    );
    let mapped = map_result_with(
        json!({"content": [text("x"), image("TWFu")], "isError": true}),
        500,
        MediaMode::Passthrough,
    );
    assert!(mapped.media.is_empty());
    let env = ok(json!({"content": [], "isError": true}), 500);
    assert_error(
        &env,
        ErrorType::ToolError,
        "tool_error: tool 'git_log' on server 'git' reported an error without a message",
    );
    let env = ok(
        json!({"content": [], "structuredContent": {"error": {"type": "quota", "message": "quota exhausted"}}, "isError": true}),
        500,
    );
    assert_error(
        &env,
        ErrorType::ToolError,
        "tool_error: server 'git' reported: quota exhausted",
    );
}

#[test]
fn mcp_error_32602_text_is_invalid_argument() {
    let env = ok(
        json!({"content": [text("MCP error -32602: Invalid arguments for tool get_current_time: timezone required")], "isError": true}),
        500,
    );
    assert_error(
        &env,
        ErrorType::InvalidArgument,
        "invalid_argument: server 'git' reported: MCP error -32602: Invalid arguments for tool get_current_time: timezone required",
    );
    // Not an error result: just text.
    let env = ok(json!({"content": [text("MCP error -32602: x")]}), 500);
    assert_eq!(env.status, Status::Ok);
}

#[test]
fn error_types_vocabulary() {
    let names: Vec<&str> = ErrorType::ALL.iter().map(|t| t.as_str()).collect();
    assert_eq!(
        names,
        [
            "timeout",
            "rate_limit",
            "server_error",
            "overloaded",
            "not_found",
            "invalid_argument",
            "unavailable",
            "tool_error"
        ]
    );
    for t in ErrorType::ALL {
        assert_eq!(ErrorType::parse(t.as_str()), Some(t));
    }
    assert_eq!(ErrorType::parse("Timeout"), None);
    let retryable: Vec<bool> = ErrorType::ALL.iter().map(|t| t.is_retryable()).collect();
    assert_eq!(
        retryable,
        [true, true, true, true, false, false, false, false]
    );
}

// ---- cutting long messages -------------------------------------------------------------

#[test]
fn long_error_message_is_cut_with_marker() {
    let text_1234 = "e".repeat(1234);
    let env = ok(json!({"content": [text(&text_1234)], "isError": true}), 100);
    let message = env.content.strip_prefix("tool_error: ").unwrap();
    assert_eq!(message.chars().count(), 100);
    // "server 'git' reported: " (23) + text: a four-digit count makes a 23-character
    // marker, so 77 characters are kept (the 23 of the prefix and 54 of the text).
    assert_eq!(
        message,
        format!(
            "server 'git' reported: {}… [1180 characters cut]",
            "e".repeat(54)
        )
    );
}

#[test]
fn long_rpc_error_messages_are_cut_naming_the_server() {
    // Through the RPC path, naming the server.
    let env = rpc(json!({"code": -32603, "message": "ł".repeat(1000)}));
    let message = env.content.strip_prefix("server_error: ").unwrap();
    assert_eq!(message.chars().count(), 500);
    assert!(message.starts_with("server 'time' answered error -32603: łł"));
    assert!(message.ends_with("characters cut]"));
}

// ---- answering -------------------------------------------------------------------------

#[test]
fn call_tool_result_shape() {
    let mapped = map_result_with(
        json!({"content": [text("hello"), image("TWFu"), image("TQ==")]}),
        100,
        MediaMode::Passthrough,
    );
    let answer = call_tool_result(&mapped);
    let envelope = mapped.envelope.to_value();
    assert_eq!(
        answer,
        json!({
            "content": [
                {"type": "text", "text": mapped.envelope.to_json()},
                image("TWFu"),
                image("TQ==")
            ],
            "structuredContent": envelope,
            "isError": false
        })
    );
    assert_eq!(
        answer["content"][0]["text"],
        r#"{"call_id":"c7","tool":"git_log","status":"ok","content":"hello","omitted":0,"retryable":false}"#
    );
    assert_eq!(mapped.clone().into_call_tool_result(), answer);
    let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["content", "structuredContent", "isError"]);

    let mapped = map(Outcome::Timeout { timeout_ms: 2000 }, 100);
    let answer = call_tool_result(&mapped);
    assert_eq!(answer["isError"], true);
    assert_eq!(answer["content"].as_array().unwrap().len(), 1);
    assert_eq!(answer["structuredContent"], mapped.envelope.to_value());
}

#[test]
fn outcome_serde_round_trip() {
    let all = [
        (
            Outcome::Result {
                result: json!({"content": [text("x")]}),
            },
            json!({"kind": "result", "result": {"content": [{"type": "text", "text": "x"}]}}),
        ),
        (
            Outcome::RpcError {
                error: json!({"code": -32602, "message": "m"}),
            },
            json!({"kind": "rpc_error", "error": {"code": -32602, "message": "m"}}),
        ),
        (
            Outcome::Timeout { timeout_ms: 10_000 },
            json!({"kind": "timeout", "timeout_ms": 10000}),
        ),
        (
            Outcome::ServerExited { detail: "d".into() },
            json!({"kind": "server_exited", "detail": "d"}),
        ),
        (
            Outcome::InvalidResponse { detail: "d".into() },
            json!({"kind": "invalid_response", "detail": "d"}),
        ),
        (
            Outcome::Unavailable { reason: "r".into() },
            json!({"kind": "unavailable", "reason": "r"}),
        ),
        (Outcome::NoSuchTool, json!({"kind": "no_such_tool"})),
    ];
    for (outcome, wire) in all {
        assert_eq!(serde_json::to_value(&outcome).unwrap(), wire);
        let back: Outcome = serde_json::from_value(wire).unwrap();
        assert_eq!(back, outcome);
        let text = serde_json::to_string(&outcome).unwrap();
        assert_eq!(serde_json::from_str::<Outcome>(&text).unwrap(), outcome);
    }
    assert_eq!(
        serde_json::to_value(MediaMode::Describe).unwrap(),
        json!("describe")
    );
    assert_eq!(MediaMode::default(), MediaMode::Passthrough);
}

// ---- properties ------------------------------------------------------------------------

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z{}\\[\\]\":,=\\n\\r é😀]{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "text",
            "image",
            "audio",
            "resource",
            "resource_link",
            "TWE=",
            "{\"a\":[{\"b\":1}]}",
            "[1,{\"c\":2}]",
            "MCP error -32602: x",
            "rate_limit",
            "overloaded",
        ])
        .prop_map(Value::from),
    ];
    let keys = prop::sample::select(vec![
        "type",
        "text",
        "data",
        "mimeType",
        "resource",
        "uri",
        "name",
        "blob",
        "content",
        "structuredContent",
        "isError",
        "error",
        "message",
        "code",
        "items",
        "k",
    ]);
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

fn arb_outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        arb_json().prop_map(|result| Outcome::Result { result }),
        (
            prop::collection::vec(arb_json(), 0..5),
            prop::option::of(arb_json()),
            prop::option::of(arb_json())
        )
            .prop_map(|(content, sc, is_error)| {
                let mut r = Map::new();
                r.insert("content".into(), Value::Array(content));
                if let Some(sc) = sc {
                    r.insert("structuredContent".into(), sc);
                }
                if let Some(e) = is_error {
                    r.insert("isError".into(), e.is_truthy_bool());
                }
                Outcome::Result {
                    result: Value::Object(r),
                }
            }),
        arb_json().prop_map(|error| Outcome::RpcError { error }),
        any::<u64>().prop_map(|timeout_ms| Outcome::Timeout { timeout_ms }),
        ".{0,40}".prop_map(|detail| Outcome::ServerExited { detail }),
        ".{0,40}".prop_map(|detail| Outcome::InvalidResponse { detail }),
        ".{0,40}".prop_map(|reason| Outcome::Unavailable { reason }),
        Just(Outcome::NoSuchTool),
    ]
}

trait TruthyBool {
    fn is_truthy_bool(&self) -> Value;
}
impl TruthyBool for Value {
    /// Half the time a real bool, otherwise the value itself (isError of any shape).
    fn is_truthy_bool(&self) -> Value {
        match self {
            Value::Null => Value::Bool(true),
            Value::Bool(_) => self.clone(),
            Value::Number(_) => Value::Bool(false),
            other => other.clone(),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn text_content_never_exceeds_budget(
        lines in prop::collection::vec("[a-z é😀\\r{\\[]{0,10}", 0..12),
        trailing in any::<bool>(),
        budget in 0usize..80,
    ) {
        let mut t = lines.join("\n");
        if trailing { t.push('\n'); }
        let env = ok(json!({"content": [text(&t)]}), budget);
        prop_assert_ne!(env.status, Status::Error);
        prop_assert!(env.content.chars().count() <= budget);
        prop_assert_eq!(env.status == Status::Truncated, env.omitted > 0);
    }

    #[test]
    fn any_outcome_maps_without_panicking(
        outcome in arb_outcome(),
        budget in 0usize..120,
        describe in any::<bool>(),
    ) {
        let media = if describe { MediaMode::Describe } else { MediaMode::Passthrough };
        let mapped = map_outcome(&outcome, &ctx(budget, media));
        let env = &mapped.envelope;
        match env.status {
            Status::Error => {
                let (t, message) = env.content.split_once(": ").unwrap();
                let t = ErrorType::parse(t).unwrap();
                prop_assert_eq!(env.retryable, t.is_retryable());
                prop_assert_eq!(env.omitted, 0);
                if budget >= 40 {
                    prop_assert!(message.chars().count() <= budget);
                }
                prop_assert!(mapped.media.is_empty());
            }
            _ => {
                prop_assert!(env.content.chars().count() <= budget);
                prop_assert!(!env.retryable);
                if describe { prop_assert!(mapped.media.is_empty()); }
            }
        }
        let answer = call_tool_result(&mapped);
        prop_assert_eq!(&answer["structuredContent"], &env.to_value());
        prop_assert_eq!(answer["isError"].as_bool(), Some(env.status == Status::Error));
        let round: Outcome = serde_json::from_str(&serde_json::to_string(&outcome).unwrap()).unwrap();
        prop_assert_eq!(round, outcome);
    }
}

// ---- raw results -----------------------------------------------------------------------

fn raw_ctx(budget: usize, media: MediaMode) -> (String, MappingContext<'static>) {
    (
        String::new(),
        MappingContext {
            call_id: "c1",
            tool: "t",
            server: "s",
            budget: crate::budget::Budget::chars(budget),
            text: crate::mapping::TextShape {
                long_rows: crate::budget::LongRows::Keep,
                ..Default::default()
            },
            media,
        },
    )
}

/// `map_raw_result` of `text` equals `map_outcome` of the fully parsed result.
fn assert_raw_same(text: &str, budget: usize, media: MediaMode) {
    let (_, ctx) = raw_ctx(budget, media);
    let result: Value = serde_json::from_str(text).unwrap();
    let full = map_outcome(&Outcome::Result { result }, &ctx);
    let lazy = map_raw_result(text, &ctx);
    assert_eq!(lazy, full, "budget {budget}: {text}");
    // The same result inside a whole response line, members in either order: mapped in
    // one pass, or given up on (then the caller parses in full) but never different.
    for line in [
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{text}}}"#),
        format!(r#"{{"result":{text},"id":"x","jsonrpc":"2.0"}}"#),
    ] {
        if let Some(lazy) = map_raw_response(&line, &ctx) {
            assert_eq!(lazy, full, "budget {budget}: {line}");
        }
    }
}

#[test]
fn raw_responses_that_are_not_plain_success_responses_are_given_up_on() {
    let (_, ctx) = raw_ctx(100, MediaMode::Passthrough);
    let ok = r#"{"structuredContent":{"rows":[{"a":1},{"a":2}]}}"#;
    let good = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok}}}"#);
    assert_eq!(
        map_raw_response(&good, &ctx).unwrap().envelope.status,
        Status::Ok
    );
    for line in [
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok},"error":{{}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok},"result":{ok}}}"#),
        format!(r#"{{"jsonrpc":"1.0","id":1,"result":{ok}}}"#),
        format!(r#"{{"jsonrpc":"2.0","result":{ok}}}"#),
        r#"{"jsonrpc":"2.0","id":1}"#.to_string(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok}}} x"#),
        r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"rows":[{"a":1},tru]}}}"#
            .to_string(),
    ] {
        assert!(map_raw_response(&line, &ctx).is_none(), "{line}");
    }
}

fn small_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-1000i64..1000).prop_map(Value::from),
        "[a-z;{} ]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec(("[a-c]", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn row_object() -> impl Strategy<Value = Value> {
    prop::collection::vec(("[a-d]", small_value()), 0..3)
        .prop_map(|kv| Value::Object(kv.into_iter().collect()))
}

fn row_array() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::collection::vec(row_object(), 0..40),
        1 => prop::collection::vec(small_value(), 0..40),
    ]
    .prop_map(Value::from)
}

fn structured() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => row_array(),
        3 => prop::collection::vec(
            ("[a-e]", prop_oneof![2 => row_array(), 1 => small_value()]),
            0..4
        )
        .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        1 => small_value(),
    ]
}

fn raw_result_value() -> impl Strategy<Value = Value> {
    let block = prop_oneof![
        "[a-z\n{}\\[\\]]{0,10}".prop_map(|t| json!({"type": "text", "text": t})),
        Just(json!({"type": "image", "mimeType": "image/png", "data": "TWFu"})),
        Just(json!({"type": "resource_link", "uri": "u", "name": "n"})),
        small_value(),
    ];
    (
        prop::option::of(structured()),
        prop::option::of(prop::collection::vec(block, 0..4)),
        prop::option::of(prop_oneof![
            Just(json!(true)),
            Just(json!(false)),
            Just(json!(1))
        ]),
        any::<bool>(),
    )
        .prop_map(|(sc, content, is_error, null_sc)| {
            let mut m = Map::new();
            if let Some(c) = content {
                m.insert("content".into(), Value::from(c));
            }
            match sc {
                Some(sc) => {
                    m.insert("structuredContent".into(), sc);
                }
                None if null_sc => {
                    m.insert("structuredContent".into(), Value::Null);
                }
                None => {}
            }
            if let Some(e) = is_error {
                m.insert("isError".into(), e);
            }
            Value::Object(m)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn raw_mapping_equals_full_mapping(
        result in raw_result_value(),
        budget in 0usize..80,
        describe in any::<bool>(),
        pretty in any::<bool>(),
    ) {
        let media = if describe { MediaMode::Describe } else { MediaMode::Passthrough };
        let text = if pretty {
            serde_json::to_string_pretty(&result).unwrap()
        } else {
            serde_json::to_string(&result).unwrap()
        };
        assert_raw_same(&text, budget, media);
    }
}

#[test]
fn raw_mapping_edge_cases() {
    let rows: Vec<Value> = (0..500).map(|i| json!({"i": i})).collect();
    let cases = [
        json!({"structuredContent": {"rows": rows}}).to_string(),
        json!({"structuredContent": {"rows": rows, "n": 500, "more": [1, 2]}}).to_string(),
        json!({"structuredContent": {"a": rows, "b": rows}}).to_string(),
        json!({"structuredContent": rows, "content": [image("TWFu")]}).to_string(),
        json!({"structuredContent": rows, "isError": true}).to_string(),
        json!({"structuredContent": {"rows": []}}).to_string(),
        json!({"structuredContent": {"rows": [{"a": 1}, 2]}}).to_string(),
        json!({"structuredContent": {"error": {"type": "rate_limit"}}, "isError": true})
            .to_string(),
        // Duplicate and escaped keys: parsed in full, last duplicate wins.
        r#"{"structuredContent": {"rows": [{"a":1}]}, "structuredContent": [1, 2, 3]}"#.into(),
        r#"{"structuredContent": {"rows": [{"a":1},{"b":2}], "rows": [{"c":3}]}}"#.into(),
        r#"{"structured\u0043ontent": [{"a":1},{"b":2},{"c":3}], "content": []}"#.into(),
        r#"{"structuredContent": {"r\u006fws": [{"a":1},{"b":2}]}}"#.into(),
        r#" { "structuredContent" : [ {"a" : 1} , 7 , { } ] , "isError" : false } "#.into(),
        "[1, 2]".into(),
        "null".into(),
        r#"{"content": "x"}"#.into(),
        r#"{"structuredContent": null}"#.into(),
    ];
    for text in &cases {
        for budget in [0, 1, 2, 3, 5, 10, 20, 100, 5000] {
            for media in [MediaMode::Passthrough, MediaMode::Describe] {
                assert_raw_same(text, budget, media);
            }
        }
    }
}
