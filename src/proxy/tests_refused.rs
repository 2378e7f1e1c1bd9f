//! Calls the proxy refuses itself with a JSON-RPC error, before any server sees them: each is
//! recorded (the transcript lists every call) under its own `seq`, with the arguments as the
//! client sent them (redacted as any call's) and the outcome `refused`, whose envelope names
//! the proxy, not a server; replay recomputes it, and `replay --live` does not make it again.

use super::cancel::{call_records_once, recording_fx_redacting};
use super::*;
use envelope_core::replay::live::{plan, LivePlan};

/// Malformed `arguments` (an array), a `name` that is no string and an unknown `requestState`
/// of a 2026-07-28 client, then a call that runs. They were recorded with the outcome
/// `rpc_error`, whose envelope said the server answered the error, with `arguments: {}` for
/// arguments that were no object; `replay --live` then called the tool with `{}` and reported
/// drift.
#[tokio::test]
async fn refused_calls_are_recorded_as_refused_with_the_arguments_sent() {
    let (_dir, path, core) = recording_fx_redacting(vec!["token".into()]);
    let mut legacy = Client::open(&core);
    legacy.initialized().await;
    let mut modern = Client::open(&core);
    let sent_arguments = json!([{"token": "s3cret", "text": "x"}, 5]);
    let bad_arguments = request(
        json!("a"),
        "tools/call",
        json!({"name": "fx_echo", "arguments": sent_arguments}),
    );
    let bad_name = request(
        json!("b"),
        "tools/call",
        json!({"name": 7, "arguments": {"text": "z"}}),
    );
    let state = json!({"requestState": "mcp-envelope/forged", "inputResponses": {}});
    let forged = modern_call("c", "fx_echo", json!({"text": "x"}), state, json!({}));
    let mut errors = Vec::new();
    for (modern_client, message) in [(false, bad_arguments), (false, bad_name), (true, forged)] {
        let c = if modern_client {
            &mut modern
        } else {
            &mut legacy
        };
        let answer = c.ask(&message).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        errors.push(answer["error"].clone());
    }
    let ok = legacy
        .ask(&call(json!("d"), "fx_echo", json!({"text": "y"})))
        .await;
    assert_eq!(envelope(&ok)["content"], "y", "{ok}");
    let records = call_records_once(&core, &path, 4).await;
    let seen: Vec<(&Value, &Value, &Value)> = records
        .iter()
        .map(|r| (&r["call_id"], &r["tool"], &r["outcome"]["kind"]))
        .collect();
    let (refused, result) = (json!("refused"), json!("result"));
    assert_eq!(
        seen,
        [
            (&json!("a"), &json!("fx_echo"), &refused),
            (&json!("b"), &json!(""), &refused),
            (&json!("c"), &json!("fx_echo"), &refused),
            (&json!("d"), &json!("fx_echo"), &result),
        ],
        "{records:?}"
    );
    // As sent, whatever their type, with the transcript's redaction.
    let arguments: Vec<&Value> = records.iter().map(|r| &r["arguments"]).collect();
    let redacted = json!([{"token": "[redacted]", "text": "x"}, 5]);
    let want = [&redacted, &json!({"text": "z"}), &json!({"text": "x"})];
    assert_eq!(arguments[..3], want, "{records:?}");
    for (r, error) in records.iter().zip(&errors) {
        assert_eq!(&r["outcome"]["error"], error, "{r}");
        let content = r["envelope"]["content"].as_str().unwrap();
        let proxy = "invalid_argument: mcp-envelope refused the call before it reached a server";
        assert!(content.starts_with(proxy), "{r}");
        assert!(!content.contains("server '"), "blames a server: {r}");
    }
    core.shutdown().await;
    // Replayed, each envelope comes out as recorded; live, the refused calls are not made again.
    let read = crate::transcript::read_transcript(&path).unwrap().records;
    let replayed = envelope_core::replay::replay(&read, |_| None);
    assert!(replayed.iter().all(|r| r.matches()), "{replayed:?}");
    let plans = plan(&read);
    for p in &plans[..3] {
        assert!(
            matches!(p, LivePlan::Skip(why) if why.starts_with("the proxy refused it")),
            "{plans:?}"
        );
    }
    assert_eq!(plans[3], LivePlan::Call);
}
