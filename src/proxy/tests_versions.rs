//! What a legacy client gets is kept to the protocol version it negotiated.

use super::*;

#[tokio::test]
async fn a_2024_11_05_client_gets_audio_as_text_and_a_later_one_as_audio() {
    for (version, kind) in [("2024-11-05", "text"), ("2025-03-26", "audio")] {
        let mut p = Piped::start(config(&fixture_server("fx")), None);
        let init = p.ask(&initialize(json!(0), version)).await;
        assert_eq!(init["result"]["protocolVersion"], version);
        let answer = p.ask(&call(json!(1), "fx_audio", json!({}))).await;
        let content = answer["result"]["content"].as_array().unwrap();
        assert_eq!(content.len(), 2, "{answer}");
        assert_eq!(content[1]["type"], kind, "{version}: {answer}");
        if kind == "text" {
            let text = content[1]["text"].as_str().unwrap();
            assert!(text.starts_with("[audio audio/wav, "), "{text}");
        }
        assert_eq!(envelope(&answer)["status"], "ok", "{answer}");
        p.finish().await;
    }
}

/// `_meta` holding what every MCP 2026-07-28 request must carry.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// Once a client spoke MCP 2026-07-28 (and opened no legacy session), `ping` without `_meta`
/// is refused as `tools/list` without it is: -32602, as "Base Protocol: General fields,
/// `_meta`" says of any request missing a required field (that revision has no `ping`, so it
/// is exempt from nothing). With `_meta` it is a removed method (-32601). Before any modern
/// request, a `ping` is still answered (2025-11-25 "Lifecycle": pings may precede
/// `initialize`).
#[tokio::test]
async fn after_a_2026_request_ping_without_meta_is_refused_as_tools_list_is() {
    let mut p = Piped::start(config(""), Some(cassette(&[])));
    let pong = p.ask(&request(json!(0), "ping", json!({}))).await;
    assert_eq!(pong["result"], json!({}), "{pong}");
    let params = json!({"_meta": modern_meta()});
    let discover = p.ask(&request(json!(1), "server/discover", params)).await;
    assert_eq!(discover["result"]["resultType"], "complete", "{discover}");
    let mut codes = Vec::new();
    for (id, method) in [(2, "tools/list"), (3, "ping")] {
        let refused = p.ask(&request(json!(id), method, json!({}))).await;
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("protocolVersion"), "{refused}");
        codes.push(refused["error"]["code"].clone());
    }
    assert_eq!(codes, [json!(-32602), json!(-32602)]);
    let no_params = json!({"jsonrpc": "2.0", "id": 4, "method": "ping"});
    assert_eq!(p.ask(&no_params).await["error"]["code"], -32602);
    let params = json!({"_meta": modern_meta()});
    let removed = p.ask(&request(json!(5), "ping", params)).await;
    assert_eq!(removed["error"]["code"], -32601, "{removed}");
    p.finish().await;
}

/// Servers started before any client came (as `serve --http` starts them): a 2026-07-28
/// client's first request, `prompts/list` or `resources/list` without `server/discover`, gets
/// the servers' prompts and resources; it was -32601 "no server offers prompts" until some
/// client sent `server/discover` or `initialize`.
#[tokio::test]
async fn a_modern_clients_first_list_sees_servers_started_before_it() {
    let core = Core::new(config(&feature_server()), None);
    core.start_servers(Core::routable_client_init()).await;
    let mut c = Client::open(&core);
    for (id, method) in [(1, "prompts/list"), (2, "resources/list")] {
        let answer = c
            .ask(&request(json!(id), method, json!({"_meta": modern_meta()})))
            .await;
        assert!(answer.get("result").is_some(), "{method}: {answer}");
    }
    c.session.close().await;
    core.shutdown().await;
}
