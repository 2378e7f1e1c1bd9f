//! Backpressure from a client that does not read its stdout.
//!
//! Every line queued for the client is counted until it has been written to stdout, and so is
//! every large answer read from a server until its mapped answer has been queued (a [`Hold`]):
//! a server's reader can read many answers in one turn of the runtime, before any of them is
//! mapped, so counting only queued lines let a burst of answers pass the mark unseen. While
//! more than [`HIGH_WATER_BYTES`] are counted, the proxy reads neither its stdin (no new
//! requests) nor its servers' stdout (their answers stay in the pipes, and the servers wait on
//! their writes), until the count is down to [`LOW_WATER_BYTES`]; so the memory a stalled
//! client can make the proxy hold is bounded by these limits, not by the number of calls it
//! sent. After such a backlog has been written, freed memory is given back to the system
//! ([`crate::runtime::trim_heap`]).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use tokio::sync::Notify;

/// Bytes waiting for stdout above which reading stops.
pub const HIGH_WATER_BYTES: usize = 8 << 20;
/// Bytes waiting for stdout at or below which reading resumes.
pub const LOW_WATER_BYTES: usize = 2 << 20;

/// The count of bytes queued for the client and not yet written.
#[derive(Debug, Default)]
pub struct OutputGate {
    queued: AtomicUsize,
    /// Set when the count went over the high-water mark; cleared (and the heap trimmed) when
    /// everything has been written.
    backlog: AtomicBool,
    room: Notify,
}

impl OutputGate {
    /// A new gate, shared by the session and its servers.
    pub fn new() -> Arc<OutputGate> {
        Arc::new(OutputGate::default())
    }

    /// `bytes` are about to be queued for the client.
    pub fn queue(&self, bytes: usize) {
        let now = self.queued.fetch_add(bytes, Ordering::AcqRel) + bytes;
        if now > HIGH_WATER_BYTES {
            self.backlog.store(true, Ordering::Release);
        }
    }

    /// `bytes` were written to the client (or will never be).
    pub fn written(&self, bytes: usize) {
        let before = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
                Some(q.saturating_sub(bytes))
            })
            .expect("the closure always returns Some");
        let now = before.saturating_sub(bytes);
        if now <= LOW_WATER_BYTES {
            self.room.notify_waiters();
        }
        if now == 0 && self.backlog.swap(false, Ordering::AcqRel) {
            crate::runtime::trim_heap();
        }
    }

    /// Whether reading must pause now.
    pub fn is_full(&self) -> bool {
        self.queued.load(Ordering::Acquire) > HIGH_WATER_BYTES
    }

    /// Returns at once unless more than [`HIGH_WATER_BYTES`] wait; then waits until at most
    /// [`LOW_WATER_BYTES`] do.
    pub async fn room(&self) {
        if !self.is_full() {
            return;
        }
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.queued.load(Ordering::Acquire) <= LOW_WATER_BYTES {
                return;
            }
            notified.await;
        }
    }
}

/// The most one [`Hold`] counts: one very large answer being mapped must not by itself stop
/// every reader (its own memory is bounded by `max_message_bytes`); a burst of answers still
/// adds up to the mark.
pub const HOLD_MAX_BYTES: usize = 1 << 20;

impl OutputGate {
    /// Counts `bytes` (an answer read from a server), at most [`HOLD_MAX_BYTES`], until the
    /// returned [`Hold`] is dropped.
    pub fn hold(self: &Arc<Self>, bytes: usize) -> Hold {
        let bytes = bytes.min(HOLD_MAX_BYTES);
        self.queue(bytes);
        Hold {
            gate: self.clone(),
            bytes,
        }
    }
}

/// Bytes counted in an [`OutputGate`] while their owner lives: an answer read from a server,
/// from the moment its line was read until the answer mapped from it has been queued for the
/// client (or the call was given up). Dropping it uncounts the bytes.
#[derive(Debug)]
pub struct Hold {
    gate: Arc<OutputGate>,
    bytes: usize,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.gate.written(self.bytes);
    }
}

/// An `AsyncWrite` that reports every byte written through it to an [`OutputGate`].
pub struct CountingWriter<W> {
    inner: W,
    gate: Arc<OutputGate>,
}

impl<W> CountingWriter<W> {
    /// Wraps `inner`.
    pub fn new(inner: W, gate: Arc<OutputGate>) -> Self {
        CountingWriter { inner, gate }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for CountingWriter<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = poll {
            self.gate.written(n);
        }
        poll
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn room_waits_from_high_water_down_to_low_water() {
        let gate = OutputGate::new();
        gate.queue(HIGH_WATER_BYTES);
        tokio::time::timeout(Duration::from_millis(10), gate.room())
            .await
            .expect("at the mark there is room");
        gate.queue(1);
        let waiter = tokio::spawn({
            let gate = gate.clone();
            async move { gate.room().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "over the high-water mark");
        gate.written(HIGH_WATER_BYTES - LOW_WATER_BYTES);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "one byte over the low-water mark");
        gate.written(1);
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("woken at the low-water mark")
            .unwrap();
        gate.written(usize::MAX);
        assert!(!gate.is_full());
    }

    #[test]
    fn a_hold_counts_its_bytes_until_dropped() {
        let gate = OutputGate::new();
        let big = gate.hold(usize::MAX);
        assert!(
            !gate.is_full(),
            "one large answer alone does not stop reading"
        );
        drop(big);
        let answers: Vec<Hold> = (0..=HIGH_WATER_BYTES / 100_000)
            .map(|_| gate.hold(100_000))
            .collect();
        assert!(
            gate.is_full(),
            "answers being mapped count like queued lines"
        );
        gate.queue(10);
        drop(answers);
        assert!(!gate.is_full());
        gate.written(10);
        assert_eq!(gate.queued.load(Ordering::Acquire), 0);
    }
}
