//! Every record of a transcript takes one `seq`, and no `seq` is left unused: the writer
//! numbers the records as they are made (`TranscriptWriter::record`), so a 2026-07-28 client's
//! `input_required` rounds take none, and a call cancelled before its task ran is recorded (as
//! `refused` when the proxy refuses such a call whatever happens).

use super::cancel::{call_records_once, recording_fx};
use super::*;

/// The seqs of `records`, sorted, and whether they are 0, 1, 2, … without a gap.
fn contiguous(records: &[Value]) -> bool {
    let mut seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    seqs.sort_unstable();
    seqs.iter().copied().eq(0..records.len() as u64)
}

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

/// Calls cancelled before their task ran (the cancellation fed right after the call, with no
/// yield between): each is recorded, and the seqs have no gap. Those the proxy refuses
/// whatever happens are recorded as `refused` with the error it would have answered: params
/// sent as an array and `arguments` that are no object were not recorded at all (their `seq`
/// left unused); a `_meta` of the wrong shape and a call before `initialize` were recorded
/// as `cancelled`. A well-formed call is recorded as `cancelled`.
#[tokio::test]
async fn calls_cancelled_before_their_task_ran_are_recorded_without_gaps() {
    let (_dir, path, core) = recording_fx();
    let early = Client::open(&core);
    let mut c = Client::open(&core);
    let cancel = |id: &str| {
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id}})
    };
    let not_initialized = call(json!("i"), "fx_echo", json!({"text": "i"}));
    early
        .session
        .feed_line(not_initialized.to_string().into_bytes())
        .await;
    early
        .session
        .feed_line(cancel("i").to_string().into_bytes())
        .await;
    c.initialized().await;
    let bad_meta = json!({"name": "fx_echo", "arguments": {"text": "m"}, "_meta": 5});
    let cancelled_early = [
        request(json!("p"), "tools/call", json!([1, 2])),
        request(
            json!("a"),
            "tools/call",
            json!({"name": "fx_echo", "arguments": [1]}),
        ),
        request(json!("m"), "tools/call", bad_meta),
        call(json!("s"), "fx_sleep", json!({"ms": 60_000})),
    ];
    for message in cancelled_early {
        let id = message["id"].as_str().unwrap();
        c.session.feed_line(message.to_string().into_bytes()).await;
        c.session
            .feed_line(cancel(id).to_string().into_bytes())
            .await;
    }
    let ok = c
        .ask(&call(json!("d"), "fx_echo", json!({"text": "d"})))
        .await;
    assert_eq!(ok["id"], "d", "nothing for the cancelled calls: {ok}");
    let records = call_records_once(&core, &path, 6).await;
    assert!(contiguous(&records), "{records:?}");
    let mut seen: Vec<(&str, &str, &Value)> = records
        .iter()
        .map(|r| {
            let id = r["call_id"].as_str().unwrap();
            (
                id,
                r["outcome"]["kind"].as_str().unwrap(),
                &r["outcome"]["error"]["code"],
            )
        })
        .collect();
    seen.sort_unstable_by_key(|(id, ..)| *id);
    let (refused, none) = ("refused", &Value::Null);
    assert_eq!(
        seen,
        [
            ("a", refused, &json!(-32602)),
            ("d", "result", none),
            ("i", refused, &json!(-32600)),
            ("m", refused, &json!(-32602)),
            ("p", refused, &json!(-32602)),
            ("s", "cancelled", none),
        ],
        "{records:?}"
    );
    let arguments = |id: &str| &records.iter().find(|r| r["call_id"] == id).unwrap()["arguments"];
    assert_eq!(arguments("a"), &json!([1]));
    assert_eq!(arguments("m"), &json!({"text": "m"}));
    assert_eq!(arguments("p"), &json!({}));
    core.shutdown().await;
}
