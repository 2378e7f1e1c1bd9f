//! Where a client request went downstream, so that the client's `notifications/cancelled`
//! reaches every server still working on it (MCP specification 2025-11-25, "Utilities:
//! Cancellation": the proxy, a client of each server, cancels the requests it sent there under
//! the ids they have there).
//!
//! A `tools/call` has one downstream request at a time (a retry of a multi-round call replaces
//! it: [`DownstreamSlot::set`]). A passthrough request may be sent to several servers at once
//! (a list, a URI no server lists: [`super::fan_out`]), or page after page: each request is
//! added when sent ([`DownstreamSlot::add`]) and dropped once answered or given up
//! ([`DownstreamSlot::answered`]; a request that timed out was cancelled by the peer already),
//! so that a cancellation reaches each server that was asked and has not answered, each under
//! its own id ([`DownstreamSlot::cancel`]).

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::downstream::Connection;

/// A downstream request: the connection it was sent on and its id there.
pub type Sent = (Arc<Connection>, u64);

/// The downstream requests of one client request not answered yet, oldest first (see the
/// module documentation). Cloning shares them.
#[derive(Clone, Default)]
pub struct DownstreamSlot(Arc<Mutex<Vec<Sent>>>);

impl DownstreamSlot {
    /// The request now goes to `conn` as `id`, in place of every one sent before.
    pub fn set(&self, conn: &Arc<Connection>, id: u64) {
        *self.0.lock().unwrap() = vec![(conn.clone(), id)];
    }

    /// One more request sent for it, to `conn` as `id`.
    pub fn add(&self, conn: &Arc<Connection>, id: u64) {
        self.0.lock().unwrap().push((conn.clone(), id));
    }

    /// The request sent to `conn` as `id` has been answered (or given up): not cancelled.
    pub fn answered(&self, conn: &Arc<Connection>, id: u64) {
        let mut sent = self.0.lock().unwrap();
        sent.retain(|(c, i)| !(Arc::ptr_eq(c, conn) && *i == id));
    }

    /// The id of the latest request not answered yet.
    pub fn last_id(&self) -> Option<u64> {
        self.0.lock().unwrap().last().map(|(_, id)| *id)
    }

    /// Takes over the requests of `other` (a multi-round call's retry continues its first
    /// round's request), in place of its own.
    pub fn copy_from(&self, other: &DownstreamSlot) {
        let theirs = other.0.lock().unwrap().clone();
        *self.0.lock().unwrap() = theirs;
    }

    /// Whether `other` is this slot (shares its requests).
    pub fn same(&self, other: &DownstreamSlot) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Sends each request not answered yet a `notifications/cancelled` with its own
    /// `requestId` and `reason` (a string, or absent), and forgets them; how many were sent.
    pub fn cancel(&self, reason: Option<Value>) -> usize {
        let sent = std::mem::take(&mut *self.0.lock().unwrap());
        for (conn, id) in &sent {
            let mut params = json!({ "requestId": id });
            if let Some(reason) = &reason {
                params["reason"] = reason.clone();
            }
            conn.notify("notifications/cancelled", Some(params));
        }
        sent.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Lines = tokio::sync::mpsc::Receiver<Vec<u8>>;

    fn connection(name: &str) -> (Arc<Connection>, Lines) {
        let (outbox, rx) = crate::transport::Outbox::channel();
        let conn = Connection::new(name, outbox, Default::default());
        (Arc::new(conn), rx)
    }

    /// The messages queued on a connection so far.
    fn queued(rx: &mut Lines) -> Vec<Value> {
        let mut out = Vec::new();
        while let Ok(line) = rx.try_recv() {
            out.push(serde_json::from_slice(&line).unwrap());
        }
        out
    }

    #[test]
    fn every_request_not_answered_is_cancelled_under_its_own_id() {
        let ((a, mut ra), (b, mut rb)) = (connection("a"), connection("b"));
        let slot = DownstreamSlot::default();
        slot.add(&a, 1);
        slot.add(&b, 7);
        slot.add(&a, 2);
        assert_eq!(slot.last_id(), Some(2));
        slot.answered(&a, 2);
        slot.answered(&b, 1); // not b's
        assert_eq!(slot.last_id(), Some(7));
        assert_eq!(slot.cancel(Some(json!("bye"))), 2, "a's 1 and b's 7");
        let cancelled = |id: u64| {
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "bye"}})
        };
        assert_eq!(queued(&mut ra), [cancelled(1)]);
        assert_eq!(queued(&mut rb), [cancelled(7)]);
        assert_eq!(slot.cancel(None), 0, "once");
        slot.add(&a, 3);
        slot.set(&b, 9);
        assert_eq!(slot.last_id(), Some(9), "set replaces");
        let other = DownstreamSlot::default();
        other.copy_from(&slot);
        assert!(!other.same(&slot) && other.clone().same(&other));
        assert_eq!(other.last_id(), Some(9));
    }
}
