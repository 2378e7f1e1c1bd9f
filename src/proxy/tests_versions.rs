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
