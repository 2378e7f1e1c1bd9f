//! What each server is subscribed to on the connection it is ready on now, so that a server
//! gets one `resources/subscribe` per URI (MCP specification 2025-11-25, "Server Features:
//! Resources: Subscriptions").
//!
//! Two senders may subscribe a server to the same URI: the client's request, and the sweep that
//! subscribes a (re)started server again to what the clients hold
//! ([`super::Passthrough::on_server_changed`]). A request sent while the server restarts waits
//! for it and reached its new process besides the sweep, so it was subscribed twice. Here each
//! (server, connection, URI) has one shared answer: the first sender sends the request, any
//! other one (the sweep, another client's or the same client's subscribe) waits for that
//! answer and sends nothing. A refusal is not kept (the next subscribe is sent again); a
//! `resources/unsubscribe` sent to the server forgets the URI ([`SubscribedOn::forget`]), and a
//! new connection (a restart, or a remote server's new session: [`Connection::renewals`])
//! starts with nothing subscribed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::OnceCell;

use super::Upstream;
use crate::downstream::{Connection, Downstream};

/// A server's answer to `resources/subscribe`: its result, or its JSON-RPC error object.
type Answer = Result<Value, Value>;

/// The one answer to a subscription on one connection, shared by every sender.
type Shared = Arc<OnceCell<Answer>>;

/// One server's subscriptions on one connection.
struct OnConnection {
    /// Held, so that a new connection can never reuse its address.
    conn: Arc<Connection>,
    /// [`Connection::renewals`] when the entry was made.
    renewals: u64,
    /// URI → its subscription's answer (pending while the first sender waits for it).
    uris: HashMap<String, Shared>,
}

/// Per server (config name), the URIs subscribed on its current connection.
#[derive(Default)]
pub struct SubscribedOn {
    servers: Mutex<HashMap<String, OnConnection>>,
}

impl SubscribedOn {
    /// The shared answer of `uri` at `server` on `conn`; what was kept for an earlier
    /// connection (or session) of that server is dropped.
    fn shared(&self, server: &str, conn: &Arc<Connection>, uri: &str) -> Shared {
        let renewals = conn.renewals();
        let mut servers = self.servers.lock().unwrap();
        let fresh = || OnConnection {
            conn: conn.clone(),
            renewals,
            uris: HashMap::new(),
        };
        let entry = servers.entry(server.to_owned()).or_insert_with(fresh);
        if !Arc::ptr_eq(&entry.conn, conn) || entry.renewals != renewals {
            *entry = fresh();
        }
        entry.uris.entry(uri.to_owned()).or_default().clone()
    }

    /// Subscribes `ds` to `uri` (`params` are the request's): sent once per connection, see
    /// the module doc. The server is waited for while it (re)starts (up to its
    /// `tool_timeout_sec`), so that the subscription is kept for the connection it reaches.
    pub async fn subscribe(
        &self,
        up: &Upstream<'_>,
        ds: &Downstream,
        params: &Value,
        uri: &str,
    ) -> Answer {
        let ask = || up.ask(ds, "resources/subscribe", params);
        let timeout = up.config.tool_settings(ds.name(), "").tool_timeout.value;
        let Ok(conn) = ds.wait_ready(tokio::time::Instant::now() + timeout).await else {
            return ask().await;
        };
        let shared = self.shared(ds.name(), &conn, uri);
        let answer = shared.get_or_init(ask).await.clone();
        if answer.is_err() {
            self.drop_refused(ds.name(), uri, &shared);
        }
        answer
    }

    /// Forgets a refused subscription, unless it was replaced meanwhile.
    fn drop_refused(&self, server: &str, uri: &str, shared: &Shared) {
        let mut servers = self.servers.lock().unwrap();
        if let Some(entry) = servers.get_mut(server) {
            if entry.uris.get(uri).is_some_and(|s| Arc::ptr_eq(s, shared)) {
                entry.uris.remove(uri);
            }
        }
    }

    /// `server` was sent a `resources/unsubscribe` of `uri`: the next subscribe is sent again.
    pub fn forget(&self, server: &str, uri: &str) {
        if let Some(entry) = self.servers.lock().unwrap().get_mut(server) {
            entry.uris.remove(uri);
        }
    }
}
