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
