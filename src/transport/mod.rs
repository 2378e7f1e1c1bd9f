//! Transports: how the lines of a JSON-RPC connection travel.
//!
//! A transport has three parts: the [`Outbox`] (send: a queue of framed lines a writer task
//! drains), its incoming side (receive: the lines the other side sent, or a [`Fault`] for one
//! of our requests), and its end (close: stop a child process, end an HTTP session).
//!
//! - [`stdio`]: the proxy's own stdin and stdout (reactor-driven when they are pipes).
//! - [`child`]: a server's child process: spawn, its pipes, its exit and process group.
//! - [`http_client`]: a remote server over streamable HTTP (or the older HTTP+SSE transport);
//!   its credentials in `http_auth.rs`.
//!
//! Transports know lines and HTTP statuses, not MCP: the peer ([`crate::rpc`]) and the
//! supervisor ([`crate::downstream`]) sit above them.

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
