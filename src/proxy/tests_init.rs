//! `initialize` params checked against `InitializeRequestParams` (MCP 2025-11-25 schema) over
//! stdio: a refused `initialize` initializes nothing, and a correct one still works after it.

use super::*;

#[tokio::test]
async fn initialize_without_required_params_is_invalid_params_and_initializes_nothing() {
    let mut p = Piped::start(config(""), Some(cassette(&[])));
    let bare = json!({"jsonrpc": "2.0", "id": "bare", "method": "initialize"});
    let no_info = json!({"jsonrpc": "2.0", "id": "no-info", "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}}});
    let no_caps = json!({"jsonrpc": "2.0", "id": "no-caps", "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "clientInfo": {"name": "c", "version": "1"}}});
    for (message, named) in [
        (
            bare,
            "missing `protocolVersion`, `capabilities`, `clientInfo`",
        ),
        (no_info, "missing `clientInfo`"),
        (no_caps, "missing `capabilities`"),
    ] {
        let answer = p.ask(&message).await;
        assert_eq!(answer["id"], message["id"], "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let text = answer["error"]["message"].as_str().unwrap();
        assert!(text.contains(named), "{text}");
    }
    let early = p.ask(&request(json!(1), "tools/list", json!({}))).await;
    assert_eq!(
        early["error"]["code"], -32600,
        "still not initialized: {early}"
    );
    let init = p.ask(&initialize(json!(2), "2025-11-25")).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    p.finish().await;
}
