//! The error path, message cutting and the CallToolResult we answer with.

use std::time::Duration;

use super::*;

// ---- error path ------------------------------------------------------------------------

#[test]
fn a_timeout_keeps_its_fraction_of_a_millisecond_only_when_it_has_one() {
    let whole = serde_json::to_string(&Outcome::timeout(Duration::from_secs(1))).unwrap();
    assert_eq!(whole, r#"{"kind":"timeout","timeout_ms":1000}"#);
    let fraction = Outcome::timeout(Duration::from_micros(1500));
    let text = serde_json::to_string(&fraction).unwrap();
    assert_eq!(
        text,
        r#"{"kind":"timeout","timeout_ms":1,"timeout_ns":1500000}"#
    );
    assert_eq!(serde_json::from_str::<Outcome>(&text).unwrap(), fraction);
}

#[test]
fn settings_read_in_seconds_from_one_second_up_and_in_milliseconds_below() {
    for (d, text) in [
        (Duration::from_secs(60), "60s"),
        (Duration::from_millis(1500), "1.5s"),
        (Duration::from_millis(500), "500ms"),
        (Duration::from_micros(500), "0.5ms"),
    ] {
        assert_eq!(seconds_text(d), text);
    }
    assert_eq!(millis_text(Duration::from_secs(30)), "30000");
    assert_eq!(millis_text(Duration::from_micros(250)), "0.25");
}

#[test]
fn a_timeout_is_named_in_whole_seconds_else_in_milliseconds_with_their_fraction() {
    for (timeout, text) in [
        (Duration::from_micros(500), "0.5ms"),
        (Duration::from_millis(250), "250ms"),
        (Duration::from_nanos(1), "0.000001ms"),
        (Duration::from_micros(1_000_500), "1000.5ms"),
        (Duration::from_secs(10), "10s"),
    ] {
        let within = format!("timeout: no response from server 'git' within {text}");
        let envelope = map(Outcome::timeout(timeout), 500).envelope;
        assert_error(&envelope, ErrorType::Timeout, &within);
    }
}

#[test]
fn proxy_side_errors() {
    assert_error(
        &map(
            Outcome::Timeout {
                timeout_ms: 10_000,
                timeout_ns: None,
            },
            500,
        )
        .envelope,
        ErrorType::Timeout,
        "timeout: no response from server 'git' within 10s",
    );
    assert_error(
        &map(
            Outcome::Timeout {
                timeout_ms: 1500,
                timeout_ns: None,
            },
            500,
        )
        .envelope,
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
    let unknown: Outcome = serde_json::from_value(json!({"kind": "no_such_tool"})).unwrap();
    let mapped = map_outcome(
        &unknown,
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
        (-32600, ErrorType::Unavailable),
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

/// The envelope of a call that failed with `error` after its server's request `method` got
/// `input_error` (made by the client when `by_client`), through [`crate::mapping::errors::input_failure`] as
/// the proxy decides it; `None` when the call's error is the server's own.
fn after_input(
    method: &str,
    input_error: Value,
    by_client: bool,
    error: Value,
) -> Option<Envelope> {
    let outcome = crate::mapping::errors::input_failure(method, &input_error, by_client, &error)?;
    let c = MappingContext {
        server: "py",
        ..ctx(500, MediaMode::Passthrough)
    };
    Some(map_outcome(&outcome, &c).envelope)
}

#[test]
fn a_call_failing_for_a_capability_the_client_lacks_is_unavailable() {
    let refused = json!({"code": -32601, "message": "`sampling/createMessage` cannot be sent to the client: the client did not declare `sampling` at initialize"});
    let failed = json!({"code": -32601, "message": "Method not found"});
    for by_client in [false, true] {
        let env = after_input(
            "sampling/createMessage",
            refused.clone(),
            by_client,
            failed.clone(),
        );
        assert_error(
            &env.unwrap(),
            ErrorType::Unavailable,
            "unavailable: the tool needs the client's `sampling` capability, which this client did not declare (server 'py' sent sampling/createMessage); the call failed with error -32601: Method not found",
        );
    }
    // The call's error is another: the server's own.
    let other = json!({"code": -32603, "message": "boom"});
    assert!(after_input("sampling/createMessage", refused.clone(), false, other).is_none());
    // A -32601 for a request that needs no capability: not a missing capability.
    assert!(after_input("ping", refused, false, failed).is_none());
    // The proxy's own other errors (no answer in time) keep their mapping.
    let late = json!({"code": -32001, "message": "the client did not answer"});
    assert!(after_input("elicitation/create", late.clone(), false, late).is_none());
}

#[test]
fn a_call_failing_for_the_clients_own_error_is_unavailable_not_a_server_error() {
    let theirs = json!({"code": -1, "message": "the user's client failed"});
    let env = after_input("elicitation/create", theirs.clone(), true, theirs.clone());
    assert_error(
        &env.unwrap(),
        ErrorType::Unavailable,
        "unavailable: the client answered server 'py''s elicitation/create with error -1: the user's client failed; the call failed with error -1: the user's client failed",
    );
    // The same code made by the proxy, or another code: the server's own error.
    assert!(after_input("elicitation/create", theirs.clone(), false, theirs.clone()).is_none());
    let other = json!({"code": -32603, "message": "boom"});
    assert!(after_input("elicitation/create", theirs, true, other.clone()).is_none());
    // Without an error of the client's, -1 stays the server's: server_error, retryable.
    assert_error(
        &rpc(json!({"code": -1, "message": "x"})),
        ErrorType::ServerError,
        "server_error: server 'time' answered error -1: x",
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

    let mapped = map(
        Outcome::Timeout {
            timeout_ms: 2000,
            timeout_ns: None,
        },
        100,
    );
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
            Outcome::Timeout {
                timeout_ms: 10_000,
                timeout_ns: None,
            },
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
        (
            Outcome::NoSuchTool {
                servers_down: vec![],
                exposed_as: vec![],
                dropped: vec![],
            },
            json!({"kind": "no_such_tool"}),
        ),
        (
            Outcome::NoSuchTool {
                servers_down: vec!["'a' (stopped)".into()],
                exposed_as: vec![],
                dropped: vec![],
            },
            json!({"kind": "no_such_tool", "servers_down": ["'a' (stopped)"]}),
        ),
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

#[test]
fn an_unknown_tool_names_the_servers_down_that_could_offer_it() {
    let down = Outcome::NoSuchTool {
        servers_down: vec!["'a' (stopped)".into(), "'b' (it is still starting)".into()],
        exposed_as: vec![],
        dropped: vec![],
    };
    let mapped = map_outcome(
        &down,
        &MappingContext {
            call_id: "9",
            tool: "x",
            server: "",
            budget: crate::budget::Budget::chars(500),
            text: Default::default(),
            media: MediaMode::Passthrough,
        },
    );
    assert_error(
        &mapped.envelope,
        ErrorType::NotFound,
        "not_found: no tool named 'x' among the tools offered now; not serving, so their tools \
         are not offered until they are back: 'a' (stopped), 'b' (it is still starting)",
    );
}

#[test]
fn a_name_several_servers_give_points_to_the_names_their_tools_have() {
    let envelope = |outcome: &Outcome| {
        let ctx = MappingContext {
            call_id: "9",
            tool: "echo",
            server: "",
            budget: crate::budget::Budget::chars(500),
            text: Default::default(),
            media: MediaMode::Passthrough,
        };
        map_outcome(outcome, &ctx).envelope
    };
    let strings = |all: &[&str]| all.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let map = |exposed_as: &[&str], servers_down: &[&str]| {
        envelope(&Outcome::NoSuchTool {
            servers_down: strings(servers_down),
            exposed_as: strings(exposed_as),
            dropped: vec![],
        })
    };
    let said = "not_found: no tool named 'echo': more than one server offers that name, so each \
                one's tool is named after its server; did you mean";
    // not_found stays final (envelope spec: the agent's fault, not retryable).
    assert_error(
        &map(&["a__echo", "b__echo"], &[]),
        ErrorType::NotFound,
        &format!("{said} 'a__echo' or 'b__echo'?"),
    );
    assert_error(
        &map(&["a__echo", "b__echo", "c__echo"], &["'c' (stopped)"]),
        ErrorType::NotFound,
        &format!(
            "{said} 'a__echo', 'b__echo' or 'c__echo'? Also not serving, so their tools are not \
             offered until they are back: 'c' (stopped)"
        ),
    );
    // As a transcript records it, and read back.
    let wire = json!({"kind": "no_such_tool", "exposed_as": ["a__echo", "b__echo"]});
    let back: Outcome = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), wire);
    assert_eq!(envelope(&back), map(&["a__echo", "b__echo"], &[]));
}

#[test]
fn a_tool_dropped_for_its_definition_says_where_and_why_and_that_retrying_will_not_help() {
    let dropped = |server: &str, tool: &str, reason: &str| crate::tool_validation::DroppedTool {
        server: server.into(),
        tool: tool.into(),
        reason: reason.into(),
    };
    let outcome = Outcome::NoSuchTool {
        servers_down: vec!["'c' (stopped)".into()],
        exposed_as: vec![],
        dropped: vec![dropped("h", "bad", "`inputSchema` is not a JSON object")],
    };
    let ctx = MappingContext {
        call_id: "9",
        tool: "h_bad",
        server: "",
        budget: crate::budget::Budget::chars(500),
        text: Default::default(),
        media: MediaMode::Passthrough,
    };
    let mapped = map_outcome(&outcome, &ctx);
    assert_error(
        &mapped.envelope,
        ErrorType::NotFound,
        "not_found: no tool named 'h_bad' is offered: server 'h' lists it (as 'bad'), but the \
         proxy dropped it from its catalog because `inputSchema` is not a JSON object. Retrying \
         will not help: the tool's definition must be fixed on the server. Also not serving, so \
         their tools are not offered until they are back: 'c' (stopped)",
    );
    assert!(!mapped.envelope.retryable);
    // As a transcript records it, and read back; a record without it reads as before.
    let wire = json!({"kind": "no_such_tool", "servers_down": ["'c' (stopped)"],
        "dropped": [{"server": "h", "tool": "bad", "reason": "`inputSchema` is not a JSON object"}]});
    assert_eq!(serde_json::to_value(&outcome).unwrap(), wire);
    let back: Outcome = serde_json::from_value(wire).unwrap();
    assert_eq!(back, outcome);
    let same_name = Outcome::NoSuchTool {
        servers_down: vec![],
        exposed_as: vec![],
        dropped: vec![dropped("h", "h_bad", "`name` is empty")],
    };
    assert_eq!(
        map_outcome(&same_name, &ctx).envelope.content,
        "not_found: no tool named 'h_bad' is offered: server 'h' lists it, but the proxy \
         dropped it from its catalog because `name` is empty. Retrying will not help: the \
         tool's definition must be fixed on the server"
    );
}

/// A call the proxy refused itself (`{"kind":"refused","error":{…}}`) maps to the type of its
/// code, its message naming the proxy, not a server; an error object without a code too.
#[test]
fn a_refused_call_names_the_proxy_not_a_server() {
    let outcome: Outcome = serde_json::from_value(json!({"kind": "refused",
        "error": {"code": -32602, "message": "`arguments` must be an object"}}))
    .unwrap();
    let c = MappingContext {
        server: "fx",
        ..ctx(2000, MediaMode::Passthrough)
    };
    let env = map_outcome(&outcome, &c).envelope;
    assert_eq!(
        env.content,
        "invalid_argument: mcp-envelope refused the call before it reached a server (error -32602): `arguments` must be an object"
    );
    assert!(!env.retryable);
    let odd = Outcome::Refused { error: json!("no") };
    let env = map_outcome(&odd, &c).envelope;
    assert_eq!(
        env.content,
        "invalid_argument: mcp-envelope refused the call before it reached a server: \"no\""
    );
}

/// A server that reports its failed request to the client as a tool error (`isError`, the
/// request's error in its text, as the SDKs do) gets the outcome a JSON-RPC error would:
/// `input_failed`, which maps to `unavailable`; the result is kept in the error's `data`, and a
/// tool error that does not name the request's error stays the tool's own.
#[test]
fn a_tool_error_that_repeats_a_refused_request_is_input_failed() {
    use crate::mapping::errors::input_failure_in_result;
    let refused = json!({"code": -32601, "message": "sampling/createMessage cannot be sent: no"});
    let result = json!({"content": [{"type": "text",
        "text": "MCP error -32601: sampling/createMessage cannot be sent: no"}], "isError": true});
    let outcome = input_failure_in_result("sampling/createMessage", &refused, false, &result)
        .expect("input_failed");
    let Outcome::InputFailed { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(error["code"], -32601);
    assert_eq!(error["data"]["result"], result);
    let env = map_outcome(&outcome, &ctx(500, MediaMode::Passthrough)).envelope;
    assert!(env.content.starts_with("unavailable: "), "{}", env.content);
    let other = json!({"content": [{"type": "text", "text": "disk full"}], "isError": true});
    assert!(input_failure_in_result("sampling/createMessage", &refused, false, &other).is_none());
    let success = json!({"content": [{"type": "text", "text": refused["message"]}]});
    assert!(input_failure_in_result("sampling/createMessage", &refused, false, &success).is_none());
}
