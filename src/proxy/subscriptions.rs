//! Resource subscriptions per session (MCP 2025-11-25, server/resources, "Subscriptions").
//!
//! Several clients share one server, and a server keeps one subscription per URI for the
//! connection the proxy holds. So the proxy keeps who subscribed: a
//! `notifications/resources/updated` reaches only the sessions that subscribed to its URI; a
//! session's `resources/unsubscribe` reaches the server only when no other session still holds
//! the URI (the others keep their updates); a session that ends releases its URIs, and the
//! server is told to unsubscribe those that nobody holds any more.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::session::Session;
use super::Core;
use crate::passthrough::Upstream;

/// Which sessions (by [`Session::id`]) hold a subscription to which URI.
#[derive(Debug, Default)]
pub(super) struct Subscriptions {
    holders: Mutex<HashMap<String, HashSet<u64>>>,
}

impl Subscriptions {
    /// Records that `session` subscribed to `uri` (after the server accepted).
    pub(super) fn hold(&self, session: u64, uri: &str) {
        let mut holders = self.holders.lock().unwrap();
        holders.entry(uri.to_owned()).or_default().insert(session);
    }

    /// `session` unsubscribes from `uri`: whether the server must be told, that is whether no
    /// other session holds it. A session that did not hold it is passed on as well (the server
    /// answers for what it knows).
    pub(super) fn release(&self, session: u64, uri: &str) -> bool {
        let mut holders = self.holders.lock().unwrap();
        let Some(sessions) = holders.get_mut(uri) else {
            return true;
        };
        if !sessions.remove(&session) {
            return sessions.is_empty();
        }
        let last = sessions.is_empty();
        if last {
            holders.remove(uri);
        }
        last
    }

    /// `session` ended: the URIs it held that nobody holds any more (to unsubscribe from).
    pub(super) fn release_all(&self, session: u64) -> Vec<String> {
        let mut holders = self.holders.lock().unwrap();
        let mut orphaned = Vec::new();
        holders.retain(|uri, sessions| {
            if sessions.remove(&session) && sessions.is_empty() {
                orphaned.push(uri.clone());
                return false;
            }
            true
        });
        orphaned.sort();
        orphaned
    }

    /// Whether `session` subscribed to `uri`.
    pub(super) fn wants(&self, session: u64, uri: &str) -> bool {
        let holders = self.holders.lock().unwrap();
        holders.get(uri).is_some_and(|s| s.contains(&session))
    }
}

/// The `uri` of a request's or a notification's params.
fn uri_of(params: Option<&Value>) -> Option<&str> {
    params?.get("uri")?.as_str()
}

impl Session {
    /// `resources/subscribe` and `resources/unsubscribe` for this session, passed to the
    /// server as needed (see the module doc); `None` for any other method.
    pub(super) async fn resource_subscription(
        &self,
        up: &Upstream<'_>,
        method: &str,
        params: &Option<Value>,
    ) -> Option<Result<Value, Value>> {
        let uri = uri_of(params.as_ref())?.to_owned();
        let subscriptions = &self.core.subscriptions;
        match method {
            "resources/subscribe" => {
                let answer = self
                    .core
                    .passthrough
                    .handle(up, method, params.clone())
                    .await?;
                if answer.is_ok() {
                    subscriptions.hold(self.id(), &uri);
                }
                Some(answer)
            }
            "resources/unsubscribe" if !subscriptions.release(self.id(), &uri) => {
                // Another session still holds it: the server keeps sending its updates.
                Some(Ok(json!({})))
            }
            _ => None,
        }
    }

    /// Whether a server's `notifications/resources/updated` is for this session: it
    /// subscribed to the URI. Other notifications always are.
    pub(super) fn wants_update(&self, method: &str, params: Option<&Value>) -> bool {
        if method != "notifications/resources/updated" {
            return true;
        }
        uri_of(params).is_some_and(|uri| self.core.subscriptions.wants(self.id(), uri))
    }
}

impl Core {
    /// Releases what session `id` subscribed to; the server is told to unsubscribe from what
    /// no session holds any more (in the background: the session is gone, nobody waits).
    pub(super) fn release_subscriptions(self: &Arc<Self>, id: u64) {
        let orphaned = self.subscriptions.release_all(id);
        let requests = orphaned.into_iter().map(|uri| json!({ "uri": uri }));
        self.tell_servers("resources/unsubscribe", requests.collect());
    }

    /// Sends `method` once with each of `params` through the passthrough routing, in the
    /// background and in order, answers ignored: for a session that has gone, nobody waits.
    /// Without a runtime (a session dropped at exit) there is no server left to tell.
    pub(super) fn tell_servers(self: &Arc<Self>, method: &'static str, params: Vec<Value>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if params.is_empty() {
            return;
        }
        let core = self.clone();
        runtime.spawn(async move {
            let up = core.upstream(None);
            for params in params {
                let _ = core.passthrough.handle(&up, method, Some(params)).await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_hears_an_unsubscribe_only_from_the_last_holder() {
        let s = Subscriptions::default();
        s.hold(1, "a://x");
        s.hold(2, "a://x");
        s.hold(1, "a://x");
        assert!(s.wants(1, "a://x") && s.wants(2, "a://x"));
        assert!(!s.wants(3, "a://x"));
        assert!(!s.release(1, "a://x"), "session 2 still holds it");
        assert!(!s.wants(1, "a://x"));
        assert!(!s.release(3, "a://x"), "a non-holder changes nothing");
        assert!(s.wants(2, "a://x"));
        assert!(s.release(2, "a://x"), "the last holder");
        assert!(s.release(2, "a://x"), "nobody holds it: passed on");
    }

    #[test]
    fn an_ended_session_orphans_only_what_nobody_else_holds() {
        let s = Subscriptions::default();
        s.hold(1, "a://only-1");
        s.hold(1, "a://both");
        s.hold(2, "a://both");
        s.hold(2, "a://only-2");
        assert_eq!(s.release_all(1), ["a://only-1"]);
        assert!(s.wants(2, "a://both") && !s.wants(1, "a://both"));
        assert_eq!(s.release_all(2), ["a://both", "a://only-2"]);
        assert!(s.release_all(2).is_empty());
    }
}
