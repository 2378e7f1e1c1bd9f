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

/// Every `seq` a `tools/call` takes is in the transcript: positional params, a `_meta` of the
/// wrong shape and a call before `initialize` are refused by the session before the call path,
/// and were answered without a record, their `seq` used up (the transcript read 0, 3, 5). A
/// second request with an id still in flight is refused before it takes a `seq`: no record, no
/// gap.
#[tokio::test]
async fn every_refused_call_is_recorded_and_the_seqs_have_no_gaps() {
    let (_dir, path, core) = recording_fx_redacting(vec!["token".into()]);
    let mut early = Client::open(&core);
    let not_initialized = early
        .ask(&call(json!("e"), "fx_echo", json!({"text": "e"})))
        .await;
    assert_eq!(
        not_initialized["error"]["code"], -32600,
        "{not_initialized}"
    );
    let mut c = Client::open(&core);
    c.initialized().await;
    let positional = c
        .ask(&request(json!("p"), "tools/call", json!([1, 2])))
        .await;
    assert_eq!(positional["error"]["code"], -32602, "{positional}");
    let params = json!({"name": "fx_echo", "arguments": {"token": "s3cret", "text": "m"},
        "_meta": 5});
    let bad_meta = c.ask(&request(json!("m"), "tools/call", params)).await;
    assert_eq!(bad_meta["error"]["code"], -32602, "{bad_meta}");
    let slow = call(json!("s"), "fx_sleep", json!({"ms": 60_000}));
    c.session.feed_line(slow.to_string().into_bytes()).await;
    let again = c
        .ask(&call(json!("s"), "fx_echo", json!({"text": "s"})))
        .await;
    assert_eq!(again["error"]["code"], -32600, "{again}");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "s"}});
    c.session.feed_line(cancel.to_string().into_bytes()).await;
    let ok = c
        .ask(&call(json!("d"), "fx_echo", json!({"text": "d"})))
        .await;
    assert_eq!(envelope(&ok)["content"], "d", "{ok}");
    let records = call_records_once(&core, &path, 5).await;
    let seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4], "{records:?}");
    let seen: Vec<(&Value, &Value, &Value)> = records
        .iter()
        .map(|r| (&r["call_id"], &r["tool"], &r["outcome"]["kind"]))
        .collect();
    let (refused, fx_echo) = (json!("refused"), json!("fx_echo"));
    assert_eq!(
        seen,
        [
            (&json!("e"), &fx_echo, &refused),
            (&json!("p"), &json!(""), &refused),
            (&json!("m"), &fx_echo, &refused),
            (&json!("s"), &json!("fx_sleep"), &json!("cancelled")),
            (&json!("d"), &fx_echo, &json!("result")),
        ],
        "{records:?}"
    );
    let errors = [&not_initialized, &positional, &bad_meta];
    for (r, answer) in records.iter().zip(errors) {
        assert_eq!(r["outcome"]["error"], answer["error"], "{r}");
    }
    let arguments: Vec<&Value> = records[..3].iter().map(|r| &r["arguments"]).collect();
    let want = [
        &json!({"text": "e"}),
        &json!({}),
        &json!({"token": "[redacted]", "text": "m"}),
    ];
    assert_eq!(arguments, want, "{records:?}");
    core.shutdown().await;
}

/// A request whose handling panics (a bug of the proxy's: a fresh-user tester found one in the
/// mapping of a hostile server's answer) is answered -32603 to its id, and the session goes on:
/// before, its task died without an answer and the client waited forever.
#[tokio::test]
async fn a_request_whose_handling_panics_is_answered_and_the_session_goes_on() {
    let core = Core::new(config(&feature_server()), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    for id in [json!(41), json!("p")] {
        let answer = c
            .ask(&request(id.clone(), "mcp-envelope/test-panic", json!({})))
            .await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("a panic made by a test"), "{message}");
    }
    let ok = c
        .ask(&call(json!(42), "fx_echo", json!({"text": "y"})))
        .await;
    assert_eq!(envelope(&ok)["content"], "y", "{ok}");
    c.session.close().await;
    core.shutdown().await;
    // In a batch (2025-03-26) too: the batch's answer holds the -32603 beside the others.
    let mut p = Piped::start(config(""), Some(cassette(&[])));
    p.ask(&initialize(json!(0), "2025-03-26")).await;
    let batch = json!([
        request(json!(1), "mcp-envelope/test-panic", json!({})),
        request(json!(2), "ping", json!({})),
    ]);
    let answers = p.ask(&batch).await;
    assert_eq!(answers[0]["id"], 1, "{answers}");
    assert_eq!(answers[0]["error"]["code"], -32603, "{answers}");
    assert_eq!(answers[1], json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    p.finish().await;
}

/// A URL's password and a secret `key=value` inside a string argument are recorded as
/// `[redacted]` in its arguments and its events (the server's requests, the client's answers),
/// whatever `redact_keys` say (a fresh-user tester found
/// `"url": "https://u:v14@h/x?token=v15"` in a transcript in clear text); the server still
/// gets the arguments as sent.
#[tokio::test]
async fn secrets_inside_string_arguments_are_not_recorded() {
    let (_dir, path, core) = recording_fx_redacting(vec!["nothing".into()]);
    let mut c = Client::open(&core);
    c.initialized().await;
    let text = "https://u:v14@h/x?token=v15&page=2";
    let answer = c
        .ask(&call(json!(1), "fx_echo", json!({ "text": text })))
        .await;
    assert_eq!(envelope(&answer)["content"], text, "{answer}");
    let records = call_records_once(&core, &path, 1).await;
    assert_eq!(
        records[0]["arguments"]["text"],
        "https://u:[redacted]@h/x?token=[redacted]&page=2"
    );
    // The same in the call's events: the server's request and the client's answer.
    let sample = call(json!(2), "fx_sample", json!({"prompt": "secret=EL6"}));
    c.session.feed_line(sample.to_string().into_bytes()).await;
    let asked = c.recv().await;
    let reply = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"role": "assistant",
        "content": {"type": "text", "text": "your api_key=EL4"}, "model": "m"}});
    c.ask(&reply).await;
    let records = call_records_once(&core, &path, 2).await;
    let events = records[1]["events"].to_string();
    assert!(events.contains("secret=[redacted]"), "{events}");
    assert!(
        !events.contains("EL6") && !events.contains("EL4"),
        "{events}"
    );
    c.session.close().await;
    core.shutdown().await;
}

/// A server's request the session did not declare the capability for is refused without
/// asking the client, and the call says which capability it needed.
#[tokio::test]
async fn a_servers_request_is_refused_for_a_session_that_did_not_declare_it() {
    let core = Core::new(config(&fixture_server("fx")), None);
    core.start_servers(Core::routable_client_init()).await;
    let mut c = Client::open(&core);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "no-sampling", "version": "1"}}});
    c.ask(&init).await;
    let done = c
        .ask(&call(json!(2), "fx_sample", json!({"prompt": "hi"})))
        .await;
    assert_eq!(done["id"], 2, "the client is not asked: {done}");
    let content = envelope(&done)["content"].as_str().unwrap().to_owned();
    assert!(content.contains("did not declare `sampling`"), "{done}");
    // A server that reports the refusal as a tool error (as the SDKs do): `unavailable`,
    // naming the capability, not `tool_error` (a fresh-user tester found it misclassified).
    let strict = json!({"prompt": "hi", "strict": true});
    let done = c.ask(&call(json!(3), "fx_sample", strict)).await;
    let content = envelope(&done)["content"].as_str().unwrap().to_owned();
    assert!(content.starts_with("unavailable: "), "{done}");
    assert!(content.contains("`sampling` capability"), "{done}");
    core.shutdown().await;
}
