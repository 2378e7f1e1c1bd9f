//! Cancellation by the client: nobody answers the cancelled request, and its late progress is
//! dropped.

use super::*;

#[tokio::test]
async fn a_cancelled_request_is_answered_by_nobody() {
    let mut p = Piped::start(config(&fixture_server("fx")), None);
    p.ask(&initialize(json!(0), "2025-11-25")).await;
    p.send(&call(json!("slow"), "fx_sleep", json!({"ms": 60_000})))
        .await;
    // The same id while it is in flight: refused, the first undisturbed.
    let dup = p
        .ask(&call(json!("slow"), "fx_echo", json!({"text": "x"})))
        .await;
    assert_eq!(dup["error"]["code"], -32600, "{dup}");
    p.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "slow", "reason": "changed my mind"}}),
    )
    .await;
    let echo = p
        .ask(&call(json!(2), "fx_echo", json!({"text": "after"})))
        .await;
    assert_eq!(echo["id"], 2, "nothing for the cancelled request: {echo}");
    assert_eq!(envelope(&echo)["content"], "after");
    // Its id is free again.
    let reused = p
        .ask(&call(json!("slow"), "fx_echo", json!({"text": "again"})))
        .await;
    assert_eq!(envelope(&reused)["content"], "again", "{reused}");
    p.finish().await;
}

#[tokio::test]
async fn progress_of_a_request_the_client_cancelled_is_dropped() {
    let core = Core::new(config(&fixture_server("fx")), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    send_slow(&c, "slow", "c1").await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "slow"}});
    c.session.feed_line(cancel.to_string().into_bytes()).await;
    // The server's progress after the cancellation (as server-everything sends it): dropped;
    // progress under another token still reaches the client.
    for t in ["c1", "c2"] {
        let progress = json!({"progressToken": t, "progress": 1});
        let session = c.session.clone();
        session
            .server_notification("fx", "notifications/progress", Some(progress))
            .await;
    }
    let seen = c.recv().await;
    assert_eq!(seen["params"]["progressToken"], "c2", "{seen}");
    // A new request may set the token again: its progress passes.
    let mut again = call(json!(3), "fx_progress", json!({"steps": 1}));
    again["params"]["_meta"] = json!({"progressToken": "c1"});
    let progress = c.ask(&again).await;
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    assert_eq!(progress["params"]["progressToken"], "c1");
    core.shutdown().await;
}

#[tokio::test]
async fn cancelling_one_of_two_requests_sharing_a_token_keeps_the_others_progress() {
    let core = Core::new(config(&fixture_server("fx")), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    for id in ["a", "b"] {
        send_slow(&c, id, "shared").await;
    }
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "a"}});
    c.session.feed_line(cancel.to_string().into_bytes()).await;
    let progress = json!({"progressToken": "shared", "progress": 1});
    let session = c.session.clone();
    session
        .server_notification("fx", "notifications/progress", Some(progress))
        .await;
    let seen = c.recv().await;
    assert_eq!(
        seen["params"]["progressToken"], "shared",
        "b is still running: {seen}"
    );
    core.shutdown().await;
}

/// A server's progress under a token no request in flight set (never sent, or for a call
/// that is over) reaches no client (MCP 2025-11-25, "Utilities: Progress").
#[tokio::test]
async fn progress_under_a_token_no_request_set_is_dropped() {
    let core = Core::new(config(&fixture_server("fx")), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let bogus = json!({"progressToken": "never\nsent", "progress": 1});
    core.server_notification("fx".into(), "notifications/progress".into(), Some(bogus))
        .await;
    let mut live = call(json!(3), "fx_progress", json!({"steps": 1}));
    live["params"]["_meta"] = json!({"progressToken": "live"});
    let progress = c.ask(&live).await;
    assert_eq!(progress["params"]["progressToken"], "live", "{progress}");
    core.shutdown().await;
}

/// Starts a call of `fx_sleep` (one minute) with request id `id` and progress token `token`.
async fn send_slow(c: &Client, id: &str, token: &str) {
    let mut slow = call(json!(id), "fx_sleep", json!({"ms": 60_000}));
    slow["params"]["_meta"] = json!({ "progressToken": token });
    c.session.feed_line(slow.to_string().into_bytes()).await;
}

/// A call its client cancels is recorded (it was not, and its `seq` went unused): outcome
/// `cancelled`, its arguments, the progress it had, its own `seq`; for a 2025 client and for a
/// 2026-07-28 client alike (the same notification; `serve --http` turns a closed response
/// stream into it). The next call takes the next `seq`.
#[tokio::test]
async fn a_cancelled_call_is_recorded_with_its_progress_in_both_eras() {
    let (_dir, path, core) = recording_fx();
    let mut legacy = Client::open(&core);
    legacy.initialized().await;
    let mut modern = Client::open(&core);
    // Progress, then the answer a minute later.
    let arguments = json!({"steps": 1, "ms": 60_000});
    let mut slow = call(json!("slow"), "fx_progress", arguments.clone());
    slow["params"]["_meta"] = json!({"progressToken": "c1"});
    let mut late = modern_call(
        "late",
        "fx_progress",
        arguments.clone(),
        json!({}),
        json!({}),
    );
    late["params"]["_meta"]["progressToken"] = json!("m1");
    for (c, request, token, id) in [
        (&mut legacy, slow, "c1", "slow"),
        (&mut modern, late, "m1", "late"),
    ] {
        // The progress reaches the client after it was recorded.
        let progress = c.ask(&request).await;
        assert_eq!(progress["params"]["progressToken"], token, "{progress}");
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id}});
        c.session.feed_line(cancel.to_string().into_bytes()).await;
    }
    let after = legacy
        .ask(&call(json!(3), "fx_echo", json!({"text": "after"})))
        .await;
    assert_eq!(after["id"], 3, "{after}");
    let records = call_records_once(&core, &path, 3).await;
    let ids: Vec<(&Value, &Value, &Value)> = records
        .iter()
        .map(|r| (&r["seq"], &r["call_id"], &r["outcome"]["kind"]))
        .collect();
    assert_eq!(
        ids,
        [
            (&json!(0), &json!("slow"), &json!("cancelled")),
            (&json!(1), &json!("late"), &json!("cancelled")),
            (&json!(2), &json!("3"), &json!("result")),
        ],
        "{records:?}"
    );
    for (r, token) in records.iter().zip(["c1", "m1"]) {
        assert_eq!(r["arguments"], arguments, "{r}");
        assert_eq!(r["server"], "fx");
        let progress = &r["events"][0]["message"];
        assert_eq!(progress["method"], "notifications/progress", "{r}");
        assert_eq!(progress["params"]["progressToken"], token);
        assert_eq!(r["envelope"]["status"], "error");
    }
    core.shutdown().await;
}

/// The call records of the transcript at `path` once it holds `n` (waiting for the writer),
/// sorted by `seq`.
pub(super) async fn call_records_once(core: &Core, path: &Path, n: usize) -> Vec<Value> {
    let read = || -> Vec<Value> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap());
        lines.filter(|r| r.get("kind").is_none()).collect()
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        core.transcript.as_ref().unwrap().flush();
        let mut records = read();
        if records.len() >= n || tokio::time::Instant::now() > deadline {
            records.sort_by_key(|r| r["seq"].as_u64());
            return records;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A call whose `notifications/cancelled` comes right after it, before its task ran (the
/// cancellation aborts the task before its first poll), is recorded as cancelled with its
/// arguments, server and `seq` (it left no record at all). The next call takes the next `seq`.
#[tokio::test]
async fn a_call_cancelled_before_its_task_ran_is_recorded_as_cancelled() {
    let (_dir, path, core) = recording_fx();
    let mut c = Client::open(&core);
    c.initialized().await;
    let arguments = json!({"ms": 60_000});
    let slow = call(json!(7), "fx_sleep", arguments.clone());
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7}});
    // Both fed without a yield between them: the call's task has not run.
    c.session.feed_line(slow.to_string().into_bytes()).await;
    c.session.feed_line(cancel.to_string().into_bytes()).await;
    let after = c
        .ask(&call(json!(8), "fx_echo", json!({"text": "after"})))
        .await;
    assert_eq!(after["id"], 8, "nothing for the cancelled call: {after}");
    let mut records = call_records_once(&core, &path, 2).await;
    assert_eq!(records.len(), 2, "{records:?}");
    // Numbered as written: the two records take 0 and 1, in whichever order they were made.
    let mut seqs: Vec<_> = records.iter().map(|r| r["seq"].as_u64()).collect();
    seqs.sort();
    assert_eq!(seqs, [Some(0), Some(1)], "{records:?}");
    records.sort_by(|a, b| a["call_id"].as_str().cmp(&b["call_id"].as_str()));
    let first = &records[0];
    assert_eq!(first["call_id"], "7", "{first}");
    assert_eq!(first["outcome"]["kind"], "cancelled", "{first}");
    assert_eq!(first["arguments"], arguments);
    assert_eq!(first["server"], "fx");
    assert_eq!(first["server_tool"], "sleep");
    assert_eq!(records[1]["outcome"]["kind"], "result");
    core.shutdown().await;
}

/// A core with the `fx` fixture server recording into a transcript in a new temporary folder
/// (kept while the returned guard lives), and the transcript's path.
pub(super) fn recording_fx() -> (tempfile::TempDir, std::path::PathBuf, Arc<Core>) {
    recording_fx_redacting(Vec::new())
}

/// [`recording_fx`] whose transcript redacts the argument keys `redact_keys`.
pub(super) fn recording_fx_redacting(
    redact_keys: Vec<String>,
) -> (tempfile::TempDir, std::path::PathBuf, Arc<Core>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let writer = crate::transcript::TranscriptWriter::open(path.clone(), redact_keys).unwrap();
    let core = Core::new(config(&fixture_server("fx")), Some(writer));
    (dir, path, core)
}

/// A call cancelled while the proxy maps its large result (over 1 MiB, mapped on the blocking
/// pool) is recorded as cancelled: it was marked answered before the mapping, so its record
/// was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_while_its_large_result_is_mapped_is_recorded() {
    let (_dir, path, core) = recording_fx();
    let mut c = Client::open(&core);
    c.initialized().await;
    let (started, go) = super::calls::hold::hold("large");
    let big = call(json!("large"), "fx_big", json!({"bytes": 2_000_000}));
    c.session.feed_line(big.to_string().into_bytes()).await;
    tokio::task::spawn_blocking(move || started.recv().unwrap())
        .await
        .unwrap();
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "large"}});
    c.session.feed_line(cancel.to_string().into_bytes()).await;
    let after = c
        .ask(&call(json!(2), "fx_echo", json!({"text": "after"})))
        .await;
    assert_eq!(after["id"], 2, "nothing for the cancelled call: {after}");
    go.send(()).unwrap();
    let mut records = call_records_once(&core, &path, 2).await;
    // Records are numbered as they are written: the cancelled call's (made when its task is
    // dropped) and the next call's may come in either order.
    records.sort_by(|a, b| a["call_id"].as_str().cmp(&b["call_id"].as_str()));
    let seen: Vec<(&Value, &Value)> = records
        .iter()
        .map(|r| (&r["call_id"], &r["outcome"]["kind"]))
        .collect();
    assert_eq!(
        seen,
        [
            (&json!("2"), &json!("result")),
            (&json!("large"), &json!("cancelled"))
        ],
        "{records:?}"
    );
    assert_eq!(records[1]["tool"], "fx_big");
    assert_eq!(records[1]["arguments"], json!({"bytes": 2_000_000}));
    core.shutdown().await;
}
