//! Requests whose `params` are by position (a JSON array): every MCP request takes an object,
//! so they are -32602, also for methods that read no params and inside a batch.

use super::*;

#[tokio::test]
async fn params_by_position_are_invalid_params_for_every_method() {
    let mut p = Piped::start(config(""), Some(cassette(&[])));
    p.ask(&initialize(json!(0), "2025-03-26")).await;
    let cases = [
        request(json!(1), "ping", json!([])),
        request(json!(2), "tools/list", json!([{"cursor": "x"}])),
        request(json!(3), "tools/call", json!(["echo", {"text": "a"}])),
        request(json!(4), "resources/list", json!([])),
    ];
    for message in &cases {
        let answer = p.ask(message).await;
        assert_eq!(answer["id"], message["id"], "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{message} -> {answer}");
        let text = answer["error"]["message"].as_str().unwrap();
        assert!(text.contains("as an object, not an array"), "{text}");
    }
    let batch = json!([
        request(json!(5), "ping", json!([])),
        request(json!(6), "ping", json!({})),
    ]);
    let answers = p.ask(&batch).await;
    assert_eq!(answers[0]["error"]["code"], -32602, "{answers}");
    assert_eq!(answers[1], json!({"jsonrpc": "2.0", "id": 6, "result": {}}));
    p.finish().await;
}

/// A request whose `_meta` is not an object, or whose `_meta.progressToken` is neither a string
/// nor an integer, is -32602 naming it, before anything is forwarded (a server that chokes on
/// it never answers, and the call waited for its timeout).
#[tokio::test]
async fn a_malformed_meta_is_invalid_params_for_every_method() {
    let mut p = Piped::start(config(""), Some(cassette(&[])));
    p.ask(&initialize(json!(0), "2025-11-25")).await;
    let call = |meta: Value| json!({"name": "echo", "arguments": {"text": "a"}, "_meta": meta});
    let cases = [
        (
            call(json!({"progressToken": {"obj": 1}})),
            "tools/call",
            "_meta.progressToken",
        ),
        (
            call(json!({"progressToken": 1.5})),
            "tools/call",
            "_meta.progressToken",
        ),
        (call(json!("str")), "tools/call", "`_meta`"),
        (json!({"_meta": []}), "tools/list", "`_meta`"),
        (
            json!({"uri": "x://y", "_meta": 3}),
            "resources/read",
            "`_meta`",
        ),
        (
            json!({"_meta": {"progressToken": true}}),
            "ping",
            "_meta.progressToken",
        ),
    ];
    for (i, (params, method, names)) in cases.into_iter().enumerate() {
        let message = request(json!(i + 1), method, params);
        let answer = p.ask(&message).await;
        assert_eq!(answer["id"], message["id"], "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{message} -> {answer}");
        let text = answer["error"]["message"].as_str().unwrap();
        assert!(text.contains(names), "{text}");
    }
    p.finish().await;
}
