//! Transports: how the lines of a JSON-RPC connection travel.
//!
//! A transport has three parts, used by different tasks: the [`Outbox`] (send: a queue of
//! framed lines a writer task drains; the peer holds it), its incoming side (receive: what the
//! other side sent, or a [`Fault`] for one of our requests; the reader task pulls it through
//! [`Receive`], or an HTTP transport pushes it into an [`http_client::Inbox`]), and its end
//! (close: stop a child process, end an HTTP session; the supervisor holds it).
//!
//! - [`stdio`]: the proxy's own stdin and stdout (reactor-driven when they are pipes).
//! - [`child`]: a server's child process: spawn, its pipes, its exit and process group.
//! - [`http_client`]: a remote server over streamable HTTP (or the older HTTP+SSE transport);
//!   its credentials in `http_auth.rs`.
//!
//! Transports know lines and HTTP statuses, not MCP: the peer ([`crate::rpc`]) and the
//! supervisor ([`crate::downstream`]) sit above them.

use std::future::Future;

use serde_json::Value;
use tokio::sync::mpsc;

pub mod child;
mod http_auth;
pub mod http_client;
pub mod stdio;

/// How many lines may wait in an [`Outbox`] before `send` waits.
pub const OUTBOX_LINES: usize = 1024;

/// The sending half of a connection: lines (each ending in `\n`) queued for its writer.
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Vec<u8>>,
}

/// The connection's writer is gone: the line was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the connection is closed")]
pub struct Closed;

impl Outbox {
    /// An outbox and the queue its writer drains ([`OUTBOX_LINES`] lines).
    pub fn channel() -> (Outbox, mpsc::Receiver<Vec<u8>>) {
        let (tx, rx) = mpsc::channel(OUTBOX_LINES);
        (Outbox { tx }, rx)
    }

    /// An outbox over an existing queue.
    pub fn from_sender(tx: mpsc::Sender<Vec<u8>>) -> Outbox {
        Outbox { tx }
    }

    /// Queues `line`, waiting while the queue is full.
    pub async fn send(&self, line: Vec<u8>) -> Result<(), Closed> {
        self.tx.send(line).await.map_err(|_| Closed)
    }

    /// Queues `line` unless the queue is full or closed.
    pub fn try_send(&self, line: Vec<u8>) -> Result<(), Closed> {
        self.tx.try_send(line).map_err(|_| Closed)
    }
}

/// What a transport received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
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
    fn receive(&mut self) -> impl Future<Output = Result<Received, String>> + Send;
}

/// A queue of what was received, filled by a transport that pushes (HTTP); it ends when every
/// sender is gone.
impl Receive for mpsc::Receiver<Received> {
    async fn receive(&mut self) -> Result<Received, String> {
        self.recv()
            .await
            .ok_or_else(|| "the connection closed".to_owned())
    }
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
    /// The answer is longer than `max_message_bytes` (its length in bytes).
    #[error("the response is {0} bytes, more than max_message_bytes")]
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
