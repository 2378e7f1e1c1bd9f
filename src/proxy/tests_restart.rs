//! A server that restarts (a crash and the automatic restart, or a config reload): what the
//! client made through the proxy survives the restart.

use super::*;

impl Client {
    /// Sends `message` and returns the answer with its id, skipping the notifications before it.
    async fn answer(&mut self, message: &Value) -> Value {
        self.session
            .feed_line(message.to_string().into_bytes())
            .await;
        loop {
            let m = self.recv().await;
            if m.get("id") == message.get("id") {
                return m;
            }
        }
    }

    /// What the fixture server `fx` holds subscriptions to once it says `want` (polled: a
    /// restarted server is subscribed again in the background), or what it says last.
    async fn held_subscriptions(&mut self, first_id: i64, want: &str) -> String {
        let mut said = String::new();
        for id in first_id..first_id + 200 {
            let read = request(
                json!(id),
                "resources/read",
                json!({"uri": "hidden://fx/subscriptions"}),
            );
            let answer = self.answer(&read).await;
            said = answer["result"]["contents"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if said == want {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        said
    }
}

/// The fixture server `fx`'s connection now, once it is ready.
async fn ready_connection(core: &Arc<Core>) -> Arc<crate::downstream::Connection> {
    for _ in 0..600 {
        let fx = core.servers().iter().find(|d| d.name() == "fx").cloned();
        if let Some(crate::downstream::ServerState::Ready(conn)) = fx.map(|d| d.state()) {
            if !conn.is_closed() {
                return conn;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fx is not ready");
}

/// Waits until `fx` is ready on a connection other than `before` (it restarted).
async fn restarted(core: &Arc<Core>, before: &Arc<crate::downstream::Connection>) {
    for _ in 0..600 {
        if !Arc::ptr_eq(&ready_connection(core).await, before) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fx did not restart");
}

const DOC: &str = "fixture://fx/doc/1";

/// A client that subscribed to a resource keeps its subscription when the server crashes and
/// is restarted: the new process is subscribed again (it would send no
/// `notifications/resources/updated` otherwise).
#[tokio::test]
async fn a_crashed_and_restarted_server_is_subscribed_again() {
    let core = Core::new(config(&feature_server()), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let sub = c
        .answer(&request(
            json!(2),
            "resources/subscribe",
            json!({"uri": DOC}),
        ))
        .await;
    assert_eq!(sub["result"], json!({}), "{sub}");
    let before = ready_connection(&core).await;
    c.answer(&call(json!(3), "fx_crash", json!({}))).await;
    restarted(&core, &before).await;
    let want = format!("subscribed: {DOC}");
    assert_eq!(c.held_subscriptions(10, &want).await, want);
    c.session.close().await;
    core.shutdown().await;
}

/// The same when a config reload restarts the server (its launch changed).
#[tokio::test]
async fn a_server_restarted_by_a_reload_is_subscribed_again() {
    let core = Core::new(config(&feature_server()), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let sub = c
        .answer(&request(
            json!(2),
            "resources/subscribe",
            json!({"uri": DOC}),
        ))
        .await;
    assert_eq!(sub["result"], json!({}), "{sub}");
    let before = ready_connection(&core).await;
    let changed = format!("{}env = {{ FIXTURE_RELOADED = \"1\" }}\n", feature_server());
    let changes = core.apply_config((*config(&changed)).clone()).await;
    assert_eq!(changes.restart, ["fx"]);
    restarted(&core, &before).await;
    let want = format!("subscribed: {DOC}");
    assert_eq!(c.held_subscriptions(10, &want).await, want);
    c.session.close().await;
    core.shutdown().await;
}
