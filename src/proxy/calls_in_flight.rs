//! The `tools/call`s in flight across every session: which server each went to, which session
//! made it, its `progressToken`, and (when recording a transcript) the notifications and
//! server-to-client requests that belong to it.
//!
//! A server's request belongs to the call whose downstream request's response stream it came on
//! when the transport saw that (streamable HTTP: messages on a POST's SSE stream relate to that
//! POST's request, MCP 2025-11-25 "Transports: Streamable HTTP"); exact. stdio carries no such
//! link (MCP 2025-11-25 gives a server's request no field naming the client request it serves,
//! except `io.modelcontextprotocol/related-task` for task-augmented calls, which the proxy does
//! not make), so there it belongs to the oldest call in flight on that server: exact when one
//! session alone has calls there, a best guess when several have. A progress notification
//! belongs to the call whose `_meta.progressToken` it names (MCP 2025-11-25, "Utilities:
//! Progress").

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tracing::debug;

use super::DownstreamSlot;
use crate::fast_hash::HashMap;

/// One call in flight.
struct CallTrack {
    server: String,
    /// The session that made it (`None`: a call without a client, `mcp-envelope call`).
    session: Option<u64>,
    /// Its `_meta.progressToken` as JSON text.
    progress_token: Option<String>,
    /// The token its server reports progress under, as JSON text, when that is not
    /// `progress_token`: a resumed multi-round call's downstream request is its first round's,
    /// which set the first round's token.
    downstream_token: Option<String>,
    /// Where its downstream request went (the id it has there, once sent).
    slot: Option<DownstreamSlot>,
    events: Vec<Value>,
    /// The last error a request of its server to the client got during it (see
    /// [`InputError`]).
    input_error: Option<InputError>,
}

/// An error a server's request to the client (sampling, elicitation, roots) got during a call:
/// the request's method, the error object as sent to the server, and whether the client made
/// it (else the proxy did). A call that then fails with the same code failed for it
/// ([`crate::outcome::errors::input_failure`]).
#[derive(Debug, Clone)]
pub(super) struct InputError {
    pub method: String,
    pub error: Value,
    pub by_client: bool,
}

type Table = Arc<Mutex<HashMap<u64, CallTrack>>>;

/// The calls in flight by key: the start order of their `tools/call` requests (not the
/// transcript's `seq`, which the transcript writer numbers records with).
#[derive(Default)]
pub(super) struct CallsInFlight {
    calls: Table,
}

/// Keeps a call in [`CallsInFlight`] until dropped (answered, or its task aborted).
pub(super) struct CallGuard {
    key: u64,
    calls: Table,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.calls.lock().unwrap().remove(&self.key);
    }
}

impl CallsInFlight {
    /// Records call `key` to `server` from `session` until the guard is dropped; `slot` is
    /// where its downstream request's id will be.
    pub(super) fn enter(
        &self,
        key: u64,
        server: &str,
        session: Option<u64>,
        progress_token: Option<String>,
        slot: Option<DownstreamSlot>,
    ) -> CallGuard {
        self.calls.lock().unwrap().insert(
            key,
            CallTrack {
                server: server.to_owned(),
                session,
                progress_token,
                downstream_token: None,
                slot,
                events: Vec::new(),
                input_error: None,
            },
        );
        CallGuard {
            key,
            calls: self.calls.clone(),
        }
    }

    /// How many calls are in flight on `server` (a parked multi-round call is not: its
    /// request was answered with an `InputRequiredResult`).
    pub(super) fn count_on(&self, server: &str) -> usize {
        let calls = self.calls.lock().unwrap();
        calls.values().filter(|t| t.server == server).count()
    }

    /// The oldest call in flight on `server` (an event that names no call is recorded there).
    pub(super) fn oldest(&self, server: &str) -> Option<u64> {
        let calls = self.calls.lock().unwrap();
        calls
            .iter()
            .filter(|(_, t)| t.server == server)
            .map(|(key, _)| *key)
            .min()
    }

    /// The call a progress notification of `server` with `token` (JSON text) belongs to, and
    /// the call's own token when the server knows it by another (see
    /// [`CallsInFlight::continue_progress`]): the notification must carry the call's.
    pub(super) fn progress_owner(&self, server: &str, token: &str) -> Option<(u64, Option<Value>)> {
        let calls = self.calls.lock().unwrap();
        let (key, track) = calls.iter().find(|(_, t)| {
            t.server == server
                && t.downstream_token
                    .as_deref()
                    .or(t.progress_token.as_deref())
                    == Some(token)
        })?;
        let own = track.downstream_token.as_ref().and_then(|_| {
            let text = track.progress_token.as_deref()?;
            serde_json::from_str(text).ok()
        });
        Some((*key, own))
    }

    /// The call whose downstream request is `slot` now continues a request that set
    /// `downstream_token` (JSON text): its server's progress under that token is the call's.
    pub(super) fn continue_progress(
        &self,
        slot: &DownstreamSlot,
        downstream_token: Option<String>,
    ) {
        let mut calls = self.calls.lock().unwrap();
        let track = calls
            .values_mut()
            .find(|t| t.slot.as_ref().is_some_and(|s| s.same(slot)));
        if let Some(track) = track {
            track.downstream_token = downstream_token;
        }
    }

    /// The call a server's request on `server` belongs to (see the module doc): the one whose
    /// downstream request is `cause` (the id the transport linked it to), else the oldest on
    /// `server`.
    pub(super) fn caller(&self, server: &str, cause: Option<u64>) -> Option<u64> {
        let calls = self.calls.lock().unwrap();
        let on_server: Vec<(&u64, &CallTrack)> =
            calls.iter().filter(|(_, t)| t.server == server).collect();
        if let Some(cause) = cause {
            let exact = on_server
                .iter()
                .find(|(_, t)| t.slot.as_ref().and_then(slot_id) == Some(cause));
            if let Some((key, _)) = exact {
                return Some(**key);
            }
        }
        let (key, oldest) = on_server.iter().min_by_key(|(key, _)| **key)?;
        if on_server.iter().any(|(_, t)| t.session != oldest.session) {
            debug!(%server, "a server request without a link to its call: the oldest call's session is a guess");
        }
        Some(**key)
    }

    /// The session that made call `key`.
    pub(super) fn session_of(&self, key: u64) -> Option<u64> {
        self.calls.lock().unwrap().get(&key)?.session
    }

    /// Adds `event` to call `key`'s transcript events.
    pub(super) fn push_event(&self, key: u64, event: Value) {
        if let Some(t) = self.calls.lock().unwrap().get_mut(&key) {
            t.events.push(event);
        }
    }

    /// Puts `earlier` (the events of a multi-round call's earlier rounds, see
    /// `round_events.rs`) before call `key`'s own transcript events.
    pub(super) fn carry_events(&self, key: u64, earlier: Vec<Value>) {
        if earlier.is_empty() {
            return;
        }
        if let Some(t) = self.calls.lock().unwrap().get_mut(&key) {
            t.events.splice(0..0, earlier);
        }
    }

    /// Notes the error that a request of call `key`'s server to the client got.
    pub(super) fn note_input_error(&self, key: u64, input_error: InputError) {
        if let Some(t) = self.calls.lock().unwrap().get_mut(&key) {
            t.input_error = Some(input_error);
        }
    }

    /// The last error a request of call `key`'s server to the client got, if any.
    pub(super) fn input_error(&self, key: u64) -> Option<InputError> {
        self.calls.lock().unwrap().get(&key)?.input_error.clone()
    }

    /// Takes call `key`'s transcript events (for its record).
    pub(super) fn take_events(&self, key: u64) -> Vec<Value> {
        self.calls
            .lock()
            .unwrap()
            .get_mut(&key)
            .map(|t| std::mem::take(&mut t.events))
            .unwrap_or_default()
    }
}

/// The id a downstream request has at its server, once sent.
pub(super) fn slot_id(slot: &DownstreamSlot) -> Option<u64> {
    slot.last_id()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_belong_to_the_call_with_the_token_else_the_oldest_on_the_server() {
        let calls = CallsInFlight::default();
        let a = calls.enter(3, "s", Some(1), None, None);
        let _b = calls.enter(5, "s", Some(2), Some("\"tok\"".into()), None);
        let _c = calls.enter(1, "other", None, None, None);
        assert_eq!(calls.oldest("s"), Some(3));
        assert_eq!(calls.progress_owner("s", "\"tok\""), Some((5, None)));
        assert_eq!(
            calls.progress_owner("other", "\"tok\""),
            None,
            "another server's"
        );
        assert_eq!(calls.oldest("x"), None);
        assert_eq!(calls.session_of(5), Some(2));
        drop(a);
        assert_eq!(
            calls.oldest("s"),
            Some(5),
            "a dropped guard leaves the table"
        );
        calls.push_event(5, Value::from(1));
        calls.carry_events(5, vec![Value::from(0)]);
        assert_eq!(calls.take_events(5), vec![Value::from(0), Value::from(1)]);
        assert!(calls.take_events(5).is_empty());
    }

    #[test]
    fn a_resumed_call_takes_its_first_rounds_progress_under_its_own_token() {
        let calls = CallsInFlight::default();
        let slot = DownstreamSlot::default();
        let _retry = calls.enter(9, "s", Some(1), Some("\"t2\"".into()), Some(slot.clone()));
        assert_eq!(calls.progress_owner("s", "\"t1\""), None);
        calls.continue_progress(&slot, Some("\"t1\"".into()));
        assert_eq!(
            calls.progress_owner("s", "\"t1\""),
            Some((9, Some(Value::from("t2"))))
        );
        assert_eq!(
            calls.progress_owner("s", "\"t2\""),
            None,
            "the server never saw t2"
        );
        let other = DownstreamSlot::default();
        calls.continue_progress(&other, Some("\"t3\"".into()));
        assert_eq!(
            calls.progress_owner("s", "\"t3\""),
            None,
            "no call has that slot"
        );
    }

    #[test]
    fn a_linked_request_belongs_to_the_call_that_sent_it_else_the_oldest() {
        let (outbox, _rx) = crate::transport::Outbox::channel();
        let conn = Arc::new(crate::downstream::Connection::new(
            "s",
            outbox,
            Default::default(),
        ));
        let sent = |id| {
            let slot = DownstreamSlot::default();
            slot.set(&conn, id);
            slot
        };
        let calls = CallsInFlight::default();
        let _a = calls.enter(3, "s", Some(1), None, Some(sent(40)));
        let _b = calls.enter(5, "s", Some(2), None, Some(sent(41)));
        let _c = calls.enter(7, "other", Some(2), None, Some(sent(41)));
        assert_eq!(calls.caller("s", Some(41)), Some(5), "exact");
        assert_eq!(
            calls.caller("s", Some(99)),
            Some(3),
            "no such call: the oldest"
        );
        assert_eq!(calls.caller("s", None), Some(3), "stdio: the oldest");
        assert_eq!(calls.caller("other", None), Some(7));
        assert_eq!(calls.caller("none", Some(41)), None);
    }
}
