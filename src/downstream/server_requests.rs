//! Requests a server sends to the client (`sampling/createMessage`, `elicitation/create`,
//! `roots/list`, `ping`) while they wait for the client's answer: at most
//! [`MAX_OUTSTANDING_SERVER_REQUESTS`] per server at once (more are refused at once), and each
//! one can be withdrawn by the server's own `notifications/cancelled`, after which it is never
//! answered (MCP specification 2025-06-18, "Utilities: Cancellation": the receiver of a
//! cancellation SHOULD NOT send a response).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use tokio::task::AbortHandle;

/// Most server-to-client requests of one server that may wait for the client at once.
pub const MAX_OUTSTANDING_SERVER_REQUESTS: usize = 64;

/// The server-to-client requests of one connection still waiting for the client, by the
/// server's request id (its JSON text).
#[derive(Debug, Default)]
pub struct ServerRequests {
    waiting: Mutex<HashMap<String, Option<AbortHandle>>>,
    /// Requests that came on the response stream of one of our requests (HTTP), by the
    /// server's id: our request's id. Taken when the request is handled.
    causes: Mutex<HashMap<String, u64>>,
}

impl ServerRequests {
    /// Links server request `id` to our request `by` (an id we gave, on this connection) on
    /// whose response stream it arrived. At most [`MAX_OUTSTANDING_SERVER_REQUESTS`] links
    /// are kept (more are not links, only best guesses later).
    pub fn link(&self, id: &Value, by: &Value) {
        let Some(by) = by.as_u64() else {
            return;
        };
        let mut causes = self.causes.lock().unwrap();
        if causes.len() < MAX_OUTSTANDING_SERVER_REQUESTS {
            causes.insert(id.to_string(), by);
        }
    }

    /// Takes the link of server request `id`: our request that caused it, if known.
    pub fn take_cause(&self, id: &Value) -> Option<u64> {
        self.causes.lock().unwrap().remove(&id.to_string())
    }

    /// Registers request `id`; `false` when [`MAX_OUTSTANDING_SERVER_REQUESTS`] are already
    /// waiting or one with the same id is (the request is then refused).
    pub fn begin(&self, id: &Value) -> bool {
        let mut waiting = self.waiting.lock().unwrap();
        let key = id.to_string();
        if waiting.len() >= MAX_OUTSTANDING_SERVER_REQUESTS || waiting.contains_key(&key) {
            return false;
        }
        waiting.insert(key, None);
        true
    }

    /// Attaches the task that answers `id` (aborted on cancellation). If the request already
    /// ended, nothing happens.
    pub fn attach(&self, id: &Value, task: AbortHandle) {
        if let Some(slot) = self.waiting.lock().unwrap().get_mut(&id.to_string()) {
            *slot = Some(task);
        }
    }

    /// The request `id` was answered (or given up): its slot is free again.
    pub fn end(&self, id: &Value) {
        self.waiting.lock().unwrap().remove(&id.to_string());
    }

    /// The server cancelled request `id`: its task is stopped, so it is never answered.
    /// Returns whether it was waiting.
    pub fn cancel(&self, id: &Value) -> bool {
        match self.waiting.lock().unwrap().remove(&id.to_string()) {
            Some(task) => {
                if let Some(task) = task {
                    task.abort();
                }
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bounded_unique_and_freed() {
        let r = ServerRequests::default();
        for i in 0..MAX_OUTSTANDING_SERVER_REQUESTS {
            assert!(r.begin(&json!(i)));
        }
        assert!(!r.begin(&json!("one more")));
        r.end(&json!(0));
        assert!(r.begin(&json!("one more")));
        assert!(!r.begin(&json!("one more")), "the same id twice");
        assert!(r.cancel(&json!(1)));
        assert!(!r.cancel(&json!(1)));
        assert_eq!(
            r.waiting.lock().unwrap().len(),
            MAX_OUTSTANDING_SERVER_REQUESTS - 1
        );
    }

    #[test]
    fn a_linked_request_names_its_cause_once() {
        let r = ServerRequests::default();
        r.link(&json!("s-1"), &json!(12));
        r.link(&json!("s-2"), &json!("not ours"));
        assert_eq!(r.take_cause(&json!("s-1")), Some(12));
        assert_eq!(r.take_cause(&json!("s-1")), None);
        assert_eq!(r.take_cause(&json!("s-2")), None);
    }

    #[tokio::test]
    async fn cancel_stops_the_answering_task() {
        let r = ServerRequests::default();
        assert!(r.begin(&json!("a")));
        let task = tokio::spawn(std::future::pending::<()>());
        r.attach(&json!("a"), task.abort_handle());
        assert!(r.cancel(&json!("a")));
        assert!(task.await.unwrap_err().is_cancelled());
        assert!(r.waiting.lock().unwrap().is_empty());
    }
}
