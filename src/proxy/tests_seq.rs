//! Every record of a transcript takes one `seq`, and no `seq` is left unused: the writer
//! numbers the records as they are made (`TranscriptWriter::record`), so a 2026-07-28 client's
//! `input_required` rounds take none.

use super::cancel::{call_records_once, recording_fx};
use super::*;

/// A 2026-07-28 client's call that needs input spans two requests (the first answered
/// `input_required`): one record, of the retry, carrying the first round's events, and no
/// `seq` for the first round (it took one, left unused: the transcript read 1, 2, 4). An
/// exchange the client never finishes leaves no record and no gap either.
#[tokio::test]
async fn input_required_rounds_take_no_seq() {
    let (_dir, path, core) = recording_fx();
    let mut legacy = Client::open(&core);
    legacy.initialized().await;
    let mut modern = Client::open(&core);
    let caps = json!({"elicitation": {}});
    let ask = json!({"message": "sure?"});
    let first = modern_call("a", "fx_elicit", ask.clone(), json!({}), caps.clone());
    let asked = modern.ask(&first).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].clone();
    // A call of another client between the rounds.
    let between = legacy
        .ask(&call(json!("e"), "fx_echo", json!({"text": "between"})))
        .await;
    assert_eq!(envelope(&between)["content"], "between", "{between}");
    let answers = json!({"1": {"action": "accept", "content": {"ok": true}}});
    let retry = json!({"requestState": state, "inputResponses": answers});
    let done = modern
        .ask(&modern_call(
            "b",
            "fx_elicit",
            ask.clone(),
            retry,
            caps.clone(),
        ))
        .await;
    assert_eq!(envelope(&done)["status"], "ok", "{done}");
    // Asked for input, never retried.
    let left = modern_call("c", "fx_elicit", ask, json!({}), caps);
    let asked = modern.ask(&left).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let last = legacy
        .ask(&call(json!("d"), "fx_echo", json!({"text": "last"})))
        .await;
    assert_eq!(envelope(&last)["content"], "last", "{last}");
    let records = call_records_once(&core, &path, 3).await;
    let seen: Vec<(&Value, &Value)> = records.iter().map(|r| (&r["seq"], &r["call_id"])).collect();
    assert_eq!(
        seen,
        [
            (&json!(0), &json!("e")),
            (&json!(1), &json!("b")),
            (&json!(2), &json!("d"))
        ],
        "{records:?}"
    );
    // The retry's record holds the whole exchange: the server's request and the answer.
    let events = records[1]["events"].as_array().unwrap();
    let directions: Vec<&Value> = events.iter().map(|e| &e["direction"]).collect();
    assert_eq!(
        directions,
        [&json!("server_to_client"), &json!("client_to_server")],
        "{records:?}"
    );
    core.shutdown().await;
}
