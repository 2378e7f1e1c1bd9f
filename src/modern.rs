//! The upstream side of MCP 2026-07-28: what a modern client gets besides what both eras share.
//!
//! - `server/discover` is answered with our versions, capabilities, identity and instructions
//!   ([`discover_result`]; MCP 2026-07-28 "Server: Discovery");
//! - `subscriptions/listen` streams ([`Listeners`]): the acknowledgement first, then every list
//!   change the client's filter asked for, each with `io.modelcontextprotocol/subscriptionId`
//!   (the listen request's JSON-RPC id) in `_meta`; a stream ends when the client cancels it
//!   (no answer) or when the proxy shuts down (a graceful `complete` result) ("Basic: Patterns:
//!   Subscriptions");
//! - which server notifications reach a client that has not opened a legacy session
//!   ([`passes_without_session`]): only request-scoped ones (progress); free-floating list
//!   changes go only to listen streams, log messages only to requests that asked with
//!   `logLevel`.
//!
//! The per-request `_meta` itself is read by [`crate::era`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use crate::era::{self, META_SUBSCRIPTION_ID};
use crate::jsonrpc;

/// The `SubscriptionFilter` keys, each with the notification method it opts in to.
pub const FILTER_KEYS: [(&str, &str); 3] = [
    ("toolsListChanged", "notifications/tools/list_changed"),
    ("promptsListChanged", "notifications/prompts/list_changed"),
    (
        "resourcesListChanged",
        "notifications/resources/list_changed",
    ),
];

/// One open `subscriptions/listen` stream.
#[derive(Debug, Clone, PartialEq)]
struct Listener {
    /// The listen request's JSON-RPC id (the `subscriptionId`).
    id: Value,
    /// The notification methods it agreed to deliver.
    methods: Vec<&'static str>,
}

/// The modern clients' state of one session: whether one has spoken, and their open streams.
#[derive(Debug, Default)]
pub struct Listeners {
    seen: AtomicBool,
    open: Mutex<Vec<Listener>>,
    /// The `logLevel` of each modern request in flight that asked for log messages.
    log_levels: Arc<Mutex<HashMap<u64, String>>>,
    next_log: AtomicU64,
}

/// Keeps a request's `logLevel` in [`Listeners`] while the request is in flight.
#[derive(Debug)]
pub struct LogInterest {
    key: u64,
    levels: Arc<Mutex<HashMap<u64, String>>>,
}

impl Drop for LogInterest {
    fn drop(&mut self) {
        self.levels.lock().unwrap().remove(&self.key);
    }
}

impl Listeners {
    /// Records that a modern request arrived.
    pub fn mark_seen(&self) {
        self.seen.store(true, Ordering::Release);
    }

    /// Whether any modern request arrived in this session.
    pub fn seen(&self) -> bool {
        self.seen.load(Ordering::Acquire)
    }

    /// Opens a stream for the listen request `id` with `params` (its `notifications` filter).
    /// `offered` says which list changes we can deliver (a `SubscriptionFilter` key). Returns
    /// the acknowledgement to send first, or a -32602 error object for a malformed filter.
    pub fn open(
        &self,
        id: &Value,
        params: Option<&Value>,
        offered: impl Fn(&str) -> bool,
    ) -> Result<Value, Value> {
        let filter = match params.and_then(|p| p.get("notifications")) {
            Some(Value::Object(f)) => f,
            _ => return Err(era::invalid_params(
                "`subscriptions/listen` needs params.notifications (a SubscriptionFilter object)",
            )),
        };
        let mut agreed = Map::new();
        let mut methods = Vec::new();
        for (key, method) in FILTER_KEYS {
            match filter.get(key) {
                None | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) if offered(key) => {
                    agreed.insert(key.into(), Value::Bool(true));
                    methods.push(method);
                }
                Some(Value::Bool(true)) => {}
                Some(_) => {
                    return Err(era::invalid_params(&format!(
                        "`notifications.{key}` must be a boolean"
                    )))
                }
            }
        }
        let mut open = self.open.lock().unwrap();
        if open.iter().any(|l| l.id == *id) {
            return Err(
                json!({"code": -32600, "message": format!("a subscription with id {id} is already open")}),
            );
        }
        open.push(Listener {
            id: id.clone(),
            methods,
        });
        Ok(jsonrpc::notification(
            "notifications/subscriptions/acknowledged",
            Some(json!({ "notifications": agreed, "_meta": { META_SUBSCRIPTION_ID: id } })),
        ))
    }

    /// Records a modern request's `logLevel` until the returned guard is dropped (when the
    /// request is answered); `None` when it asked for no log messages.
    pub fn log_interest(&self, level: Option<&str>) -> Option<LogInterest> {
        let key = self.next_log.fetch_add(1, Ordering::Relaxed);
        self.log_levels
            .lock()
            .unwrap()
            .insert(key, level?.to_owned());
        Some(LogInterest {
            key,
            levels: self.log_levels.clone(),
        })
    }

    /// Whether a server's `notifications/message` with `params` may reach a modern client: only
    /// while a request that asked with `logLevel` at or below its level is in flight (MCP
    /// 2026-07-28 `RequestMetaObject`: without `logLevel` a server MUST NOT send log messages
    /// for a request).
    pub fn wants_log(&self, params: Option<&Value>) -> bool {
        let Some(level) = params.and_then(|p| p.get("level")).and_then(Value::as_str) else {
            return false;
        };
        self.log_levels
            .lock()
            .unwrap()
            .values()
            .any(|wanted| era::log_level_passes(level, wanted))
    }

    /// Closes the stream opened by request `id` (the client cancelled it); whether there was one.
    pub fn cancel(&self, id: &Value) -> bool {
        let mut open = self.open.lock().unwrap();
        let before = open.len();
        open.retain(|l| l.id != *id);
        open.len() != before
    }

    /// The notifications to send for a list change `method` (e.g.
    /// `notifications/tools/list_changed`): one per stream that asked for it, tagged with its
    /// `subscriptionId`.
    pub fn fan_out(&self, method: &str) -> Vec<Value> {
        self.open
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.methods.contains(&method))
            .map(|l| {
                jsonrpc::notification(
                    method,
                    Some(json!({ "_meta": { META_SUBSCRIPTION_ID: l.id } })),
                )
            })
            .collect()
    }

    /// Closes every stream (the proxy is shutting down): the graceful `complete` answers to
    /// send (MCP 2026-07-28 "Subscriptions: Graceful Closure").
    pub fn close_all(&self) -> Vec<Value> {
        std::mem::take(&mut *self.open.lock().unwrap())
            .into_iter()
            .map(|l| {
                jsonrpc::response(
                    l.id.clone(),
                    json!({ "resultType": "complete", "_meta": { META_SUBSCRIPTION_ID: l.id } }),
                )
            })
            .collect()
    }
}

/// The `DiscoverResult` (MCP 2026-07-28 schema): every version we speak (modern first, then
/// the legacy ones reachable through `initialize`), our `capabilities`, `instructions`, the
/// caching hints and our `serverInfo`.
pub fn discover_result(capabilities: Value, instructions: &str) -> Value {
    let mut result = json!({
        "supportedVersions": era::supported_versions(),
        "capabilities": capabilities,
        "instructions": instructions,
    });
    era::stamp_result(
        "server/discover",
        result.as_object_mut().expect("an object"),
    );
    result
}

/// Whether a server notification `method` may reach a client that speaks only the modern era
/// (no legacy session): request-scoped progress (MCP 2026-07-28 "Transports: stdio, Receiving
/// Messages"); list changes go through [`Listeners::fan_out`], log messages through
/// [`Listeners::wants_log`].
pub fn passes_without_session(method: &str) -> bool {
    method == "notifications/progress"
}

/// The error for a method the modern era removed (`ping`, `logging/setLevel`, …): -32601.
pub fn removed_method(method: &str) -> Option<Value> {
    era::REMOVED_IN_MODERN.contains(&method).then(|| {
        json!({
            "code": -32601,
            "message": format!("Method not found: `{method}` is not part of MCP 2026-07-28"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_acknowledged_with_what_we_honour() {
        let l = Listeners::default();
        let params = json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": ["file:///x"]}});
        let ack = l
            .open(&json!(7), Some(&params), |k| k == "toolsListChanged")
            .unwrap();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true})
        );
        assert_eq!(ack["params"]["_meta"][META_SUBSCRIPTION_ID], 7);
        let sent = l.fan_out("notifications/tools/list_changed");
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0]["params"]["_meta"][META_SUBSCRIPTION_ID], 7);
        assert!(l.fan_out("notifications/prompts/list_changed").is_empty());
    }

    #[test]
    fn streams_end_by_cancellation_or_shutdown() {
        let l = Listeners::default();
        let f = json!({"notifications": {"toolsListChanged": true}});
        l.open(&json!("a"), Some(&f), |_| true).unwrap();
        l.open(&json!("b"), Some(&f), |_| true).unwrap();
        assert!(
            l.open(&json!("b"), Some(&f), |_| true).is_err(),
            "same id twice"
        );
        assert!(l.cancel(&json!("a")));
        assert!(!l.cancel(&json!("a")));
        assert_eq!(l.fan_out("notifications/tools/list_changed").len(), 1);
        let closing = l.close_all();
        assert_eq!(closing.len(), 1);
        assert_eq!(closing[0]["id"], "b");
        assert_eq!(closing[0]["result"]["resultType"], "complete");
        assert!(l.fan_out("notifications/tools/list_changed").is_empty());
    }

    #[test]
    fn log_messages_only_while_a_request_asks_for_them() {
        let l = Listeners::default();
        let msg = |level: &str| json!({"level": level, "data": "x"});
        assert!(!l.wants_log(Some(&msg("error"))));
        assert!(l.log_interest(None).is_none());
        let guard = l.log_interest(Some("warning")).unwrap();
        assert!(l.wants_log(Some(&msg("error"))));
        assert!(!l.wants_log(Some(&msg("info"))));
        assert!(!l.wants_log(None));
        drop(guard);
        assert!(!l.wants_log(Some(&msg("error"))));
    }

    #[test]
    fn malformed_filters_are_invalid_params() {
        let l = Listeners::default();
        assert_eq!(
            l.open(&json!(1), None, |_| true).unwrap_err()["code"],
            -32602
        );
        let bad = json!({"notifications": {"toolsListChanged": "yes"}});
        assert_eq!(
            l.open(&json!(1), Some(&bad), |_| true).unwrap_err()["code"],
            -32602
        );
    }

    #[test]
    fn discover_lists_every_version_and_the_cache_hints() {
        let r = discover_result(json!({"tools": {"listChanged": true}}), "hi");
        assert_eq!(r["supportedVersions"][0], "2026-07-28");
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["ttlMs"], 0);
        assert_eq!(r["cacheScope"], "private");
        assert_eq!(r["_meta"][era::META_SERVER_INFO]["name"], "mcp-envelope");
    }

    #[test]
    fn removed_methods_are_not_found() {
        assert_eq!(removed_method("ping").unwrap()["code"], -32601);
        assert!(removed_method("tools/list").is_none());
        assert!(passes_without_session("notifications/progress"));
        assert!(!passes_without_session("notifications/message"));
        assert!(!passes_without_session("notifications/tools/list_changed"));
    }
}
