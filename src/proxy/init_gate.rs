//! The client's `initialize` runs while stdin is still read: it waits for the servers' first
//! start (up to their `startup_timeout_sec`), and a `ping` sent meanwhile is answered at once
//! (MCP specification 2025-06-18, "Lifecycle": before the initialize response the client
//! should send nothing but pings; "Utilities: Ping": answer promptly). Any other message read
//! meanwhile is held and handled, in order, once `initialize` has been answered; reading stops
//! while [`MAX_HELD`] are held.

use std::collections::VecDeque;

use crate::jsonrpc::{Incoming, Message};

/// Most messages held while `initialize` runs; reading stdin pauses beyond it.
pub const MAX_HELD: usize = 1024;

/// An `initialize` in progress and the messages waiting for it.
#[derive(Debug, Default)]
pub struct InitGate {
    running: Option<tokio::task::JoinHandle<()>>,
    held: VecDeque<Incoming>,
}

impl InitGate {
    /// Whether `incoming` is an `initialize` request (the one message that opens the gate).
    pub fn is_initialize(incoming: &Incoming) -> bool {
        matches!(incoming, Incoming::Single(Message::Request { method, .. }) if method == "initialize")
    }

    /// Whether `incoming` may pass while `initialize` runs: a `ping` request.
    pub fn may_pass(incoming: &Incoming) -> bool {
        matches!(incoming, Incoming::Single(Message::Request { method, .. }) if method == "ping")
    }

    /// Records the task answering `initialize`.
    pub fn start(&mut self, task: tokio::task::JoinHandle<()>) {
        self.running = Some(task);
    }

    /// Whether `initialize` is still running.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Whether reading should pause ([`MAX_HELD`] messages held).
    pub fn is_full(&self) -> bool {
        self.held.len() >= MAX_HELD
    }

    /// Keeps `incoming` until `initialize` has been answered.
    pub fn hold(&mut self, incoming: Incoming) {
        self.held.push_back(incoming);
    }

    /// Resolves when the `initialize` task ends (never, when none runs); then the gate is open
    /// and the held messages are returned, oldest first.
    pub async fn finished(&mut self) -> VecDeque<Incoming> {
        match self.running.as_mut() {
            Some(task) => {
                let _ = task.await;
                self.running = None;
                std::mem::take(&mut self.held)
            }
            None => std::future::pending().await,
        }
    }
}
