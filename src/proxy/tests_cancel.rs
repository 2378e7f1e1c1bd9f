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

/// Starts a call of `fx_sleep` (one minute) with request id `id` and progress token `token`.
async fn send_slow(c: &Client, id: &str, token: &str) {
    let mut slow = call(json!(id), "fx_sleep", json!({"ms": 60_000}));
    slow["params"]["_meta"] = json!({ "progressToken": token });
    c.session.feed_line(slow.to_string().into_bytes()).await;
}
