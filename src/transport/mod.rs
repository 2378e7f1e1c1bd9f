//! Transports: how the lines of a JSON-RPC connection travel.
//!
//! A transport has three parts, used by different tasks: the [`Outbox`] (send: a queue of
//! framed lines a writer task drains; the peer holds it), its incoming side (receive: what the
//! other side sent, or a [`Fault`] for one of our requests; the reader task pulls it through
//! [`Receive`], or an HTTP transport pushes it into an [`http_client::Inbox`]), and its end
//! (close: stop a child process, end an HTTP session; the supervisor holds it).
//!
//! - [`stdio`]: the proxy's own stdin and stdout (reactor-driven when they are pipes); what a
//!   client that does not read makes wait is counted in [`backpressure`].
//! - [`child`]: a server's child process: spawn, its pipes, its exit and process group.
//! - [`http_client`]: a remote server over streamable HTTP (or the older HTTP+SSE transport);
//!   its credentials in `http_auth.rs`.
//!
//! Transports know lines and HTTP statuses, not MCP: the peer ([`crate::rpc`]) and the
//! supervisor ([`crate::downstream`]) sit above them.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use backpressure::OutputGate;

pub mod backpressure;
pub mod child;
mod http_auth;
pub mod http_client;
pub mod stdio;

/// How many lines may wait in an [`Outbox`] before `send` waits.
pub const OUTBOX_LINES: usize = 1024;

/// The sending half of a connection: lines (each ending in `\n`) queued for its writer.
/// Cheap to clone. An outbox towards the client can count what it queues in the client's
/// [`OutputGate`] (backpressure), so every writer to that client shares one count.
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Vec<u8>>,
    gate: Option<Arc<OutputGate>>,
}

/// The connection's writer is gone: the line was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the connection is closed")]
pub struct Closed;

impl Outbox {
    /// An outbox and the queue its writer drains ([`OUTBOX_LINES`] lines).
    pub fn channel() -> (Outbox, mpsc::Receiver<Vec<u8>>) {
        let (tx, rx) = mpsc::channel(OUTBOX_LINES);
        (Outbox { tx, gate: None }, rx)
    }

    /// An outbox over an existing queue whose writer reports what it wrote to `gate` (a
    /// [`backpressure::CountingWriter`]); `None` counts nothing.
    pub fn from_sender(tx: mpsc::Sender<Vec<u8>>, gate: Option<Arc<OutputGate>>) -> Outbox {
        Outbox { tx, gate }
    }

    /// Queues `line`, waiting while the queue is full.
    pub async fn send(&self, line: Vec<u8>) -> Result<(), Closed> {
        let len = self.count(line.len());
        self.tx.send(line).await.map_err(|_| self.uncount(len))
    }

    /// Queues `line` when the queue has room now; gives it back when the queue is full
    /// (`Err(Some(line))`, to be sent with [`Outbox::send`]); `Err(None)` when closed.
    pub fn try_queue(&self, line: Vec<u8>) -> Result<(), Option<Vec<u8>>> {
        let len = self.count(line.len());
        self.tx.try_send(line).map_err(|e| {
            self.uncount(len);
            match e {
                mpsc::error::TrySendError::Full(line) => Some(line),
                mpsc::error::TrySendError::Closed(_) => None,
            }
        })
    }

    /// Queues `line` unless the queue is full or closed.
    pub fn try_send(&self, line: Vec<u8>) -> Result<(), Closed> {
        let len = self.count(line.len());
        self.tx.try_send(line).map_err(|_| self.uncount(len))
    }

    fn count(&self, len: usize) -> usize {
        if let Some(gate) = &self.gate {
            gate.queue(len);
        }
        len
    }

    /// A line that was not queued will never be written.
    fn uncount(&self, len: usize) -> Closed {
        if let Some(gate) = &self.gate {
            gate.written(len);
        }
        Closed
    }
}

/// What a transport received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// One message: a line, a JSON body, an SSE event's data.
    Message(Vec<u8>),
    /// An answer that could not be carried, for request `id` when it could be told.
    Fault {
        /// The request it answered, if known.
        id: Option<Value>,
        /// Why it could not be carried.
        fault: Fault,
    },
}

/// The receiving half of a transport, pulled by one reader task.
pub trait Receive: Send {
    /// The next thing received; `Err(why)` once the other side has closed (for a server's
    /// stdout: `closed its stdout`).
    fn receive(&mut self) -> impl Future<Output = Result<Delivery, String>> + Send;
}

/// A queue of what was received, filled by a transport that pushes (HTTP); it ends when every
/// sender is gone.
impl Receive for mpsc::Receiver<Delivery> {
    async fn receive(&mut self) -> Result<Delivery, String> {
        self.recv()
            .await
            .ok_or_else(|| "the connection closed".to_owned())
    }
}

/// The end of a transport, held by the supervisor: closing ends the connection for good.
pub trait Close: Send {
    /// Ends the connection, giving the other side at most `grace` (seconds to a few seconds) to
    /// go quietly: a child process has its stdin closed, then SIGTERM, then SIGKILL; an HTTP
    /// session stops its SSE readers and is ended with `DELETE` (MCP 2025-11-25, basic/transports,
    /// "Session Management"). Never fails: what could not be done cleanly is logged at debug.
    fn close(&mut self, grace: Duration) -> impl Future<Output = ()> + Send;
}

/// Why a transport could not carry one request's answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// The connection could not be made or broke (refused, reset, closed early).
    #[error("{0}")]
    Connection(String),
    /// The answer was not usable as a message (wrong content type).
    #[error("{0}")]
    Invalid(String),
    /// The answer is longer than `max_message_bytes`: the bytes read when reading stopped
    /// (a lower bound of its length, not its length).
    #[error("the response is larger than max_message_bytes (reading stopped at {0} bytes)")]
    TooLong(usize),
    /// An HTTP error status (RFC 9110), with `Retry-After` as sent and what it means here.
    #[error("HTTP {status}: {detail}")]
    HttpStatus {
        /// The status code.
        status: u16,
        /// The `Retry-After` header, if any.
        retry_after: Option<String>,
        /// What it means, naming credentials by key or variable, never by value.
        detail: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_counted_outbox_counts_what_it_queues_until_it_is_written() {
        let gate = OutputGate::new();
        let (tx, mut rx) = mpsc::channel(4);
        let outbox = Outbox::from_sender(tx, Some(gate.clone()));
        let big = vec![b'x'; backpressure::HIGH_WATER_BYTES + 1];
        outbox.send(big.clone()).await.unwrap();
        assert!(gate.is_full());
        let line = rx.recv().await.unwrap();
        gate.written(line.len());
        assert!(!gate.is_full());
        drop(rx);
        // Lines that could not be queued are not counted.
        assert_eq!(outbox.try_send(big.clone()), Err(Closed));
        assert!(!gate.is_full());
        assert_eq!(outbox.send(big).await, Err(Closed));
        assert!(!gate.is_full());
    }

    #[test]
    fn a_too_long_answer_does_not_claim_the_count_read_as_its_size() {
        // A 3 MB body stopped at 1193984 bytes read: that count is not its size.
        let said = Fault::TooLong(1_193_984).to_string();
        assert_eq!(
            said,
            "the response is larger than max_message_bytes (reading stopped at 1193984 bytes)"
        );
    }
}
