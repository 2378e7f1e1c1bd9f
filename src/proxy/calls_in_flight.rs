//! The `tools/call`s in flight across every session: which server each went to, which session
//! made it, its `progressToken`, and (when recording a transcript) the notifications and
//! server-to-client requests that belong to it.
//!
//! stdio carries no link between a server's request and the call that caused it, so a request
//! belongs to the oldest call in flight on that server (a documented heuristic); a progress
//! notification belongs to the call whose `_meta.progressToken` it names (MCP 2025-11-25,
//! "Utilities: Progress").

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// One call in flight.
struct CallTrack {
    server: String,
    /// The session that made it (`None`: a call without a client, `mcp-envelope call`).
    session: Option<u64>,
    /// Its `_meta.progressToken` as JSON text.
    progress_token: Option<String>,
    events: Vec<Value>,
}

type Table = Arc<Mutex<HashMap<u64, CallTrack>>>;

/// The calls in flight by start order (`seq`).
#[derive(Default)]
pub(super) struct CallsInFlight {
    calls: Table,
}

/// Keeps a call in [`CallsInFlight`] until dropped (answered, or its task aborted).
pub(super) struct CallGuard {
    seq: u64,
    calls: Table,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.calls.lock().unwrap().remove(&self.seq);
    }
}

impl CallsInFlight {
    /// Records call `seq` to `server` from `session` until the guard is dropped.
    pub(super) fn enter(
        &self,
        seq: u64,
        server: &str,
        session: Option<u64>,
        progress_token: Option<String>,
    ) -> CallGuard {
        self.calls.lock().unwrap().insert(
            seq,
            CallTrack {
                server: server.to_owned(),
                session,
                progress_token,
                events: Vec::new(),
            },
        );
        CallGuard {
            seq,
            calls: self.calls.clone(),
        }
    }

    /// The call an event of `server` belongs to: the one with `progress_token` when given,
    /// else the oldest on `server`.
    pub(super) fn owner(&self, server: &str, progress_token: Option<&str>) -> Option<u64> {
        let calls = self.calls.lock().unwrap();
        match progress_token {
            Some(token) => calls
                .iter()
                .find(|(_, t)| t.progress_token.as_deref() == Some(token))
                .map(|(seq, _)| *seq),
            None => calls
                .iter()
                .filter(|(_, t)| t.server == server)
                .map(|(seq, _)| *seq)
                .min(),
        }
    }

    /// The session that made call `seq`.
    pub(super) fn session_of(&self, seq: u64) -> Option<u64> {
        self.calls.lock().unwrap().get(&seq)?.session
    }

    /// Adds `event` to call `seq`'s transcript events.
    pub(super) fn push_event(&self, seq: u64, event: Value) {
        if let Some(t) = self.calls.lock().unwrap().get_mut(&seq) {
            t.events.push(event);
        }
    }

    /// Takes call `seq`'s transcript events (for its record).
    pub(super) fn take_events(&self, seq: u64) -> Vec<Value> {
        self.calls
            .lock()
            .unwrap()
            .get_mut(&seq)
            .map(|t| std::mem::take(&mut t.events))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_belong_to_the_call_with_the_token_else_the_oldest_on_the_server() {
        let calls = CallsInFlight::default();
        let a = calls.enter(3, "s", Some(1), None);
        let _b = calls.enter(5, "s", Some(2), Some("\"tok\"".into()));
        let _c = calls.enter(1, "other", None, None);
        assert_eq!(calls.owner("s", None), Some(3));
        assert_eq!(calls.owner("s", Some("\"tok\"")), Some(5));
        assert_eq!(calls.owner("x", None), None);
        assert_eq!(calls.session_of(5), Some(2));
        drop(a);
        assert_eq!(
            calls.owner("s", None),
            Some(5),
            "a dropped guard leaves the table"
        );
        calls.push_event(5, Value::from(1));
        assert_eq!(calls.take_events(5), vec![Value::from(1)]);
        assert!(calls.take_events(5).is_empty());
    }
}
