//! A server's reader under backpressure: answers read but not yet mapped count in the client's
//! output gate, so a burst of answers stops the reader at the gate's mark.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::peer::{read_loop, Handler, Peer};
use crate::transport::backpressure::{OutputGate, HIGH_WATER_BYTES};
use crate::transport::{Delivery, Outbox, Receive};

/// Bytes of each answer's text: a large answer, kept unparsed.
const ANSWER_BYTES: usize = 100_000;

/// A server whose answers to requests 1..=`last` are all in the pipe at once; counts how many
/// the reader has taken, then stays open.
struct Burst {
    taken: Arc<AtomicU64>,
    last: u64,
}

impl Receive for Burst {
    async fn receive(&mut self) -> Result<Delivery, String> {
        let id = self.taken.load(Ordering::SeqCst) + 1;
        if id > self.last {
            return std::future::pending().await;
        }
        self.taken.store(id, Ordering::SeqCst);
        let text = "x".repeat(ANSWER_BYTES);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
        );
        Ok(Delivery::Message(line.into_bytes()))
    }
}

struct Nothing;

impl Handler for Nothing {
    fn notification(&self, _: String, _: Option<Value>) -> Option<oneshot::Receiver<()>> {
        None
    }
    fn request(&self, _: Value, _: String, _: Option<Value>) {}
}

/// Waits until `taken` has not moved for 100 ms (the reader is blocked or done).
async fn settled(taken: &AtomicU64) -> u64 {
    let mut last = taken.load(Ordering::SeqCst);
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = taken.load(Ordering::SeqCst);
        if now == last {
            return now;
        }
        last = now;
    }
}

#[tokio::test]
async fn answers_waiting_to_be_mapped_stop_the_reader_at_the_mark() {
    const CALLS: u64 = 300;
    let (outbox, _sent) = Outbox::channel();
    let peer = Arc::new(Peer::new("burst", outbox));
    // Each call keeps its answer (as a mapping task would until its envelope is queued).
    let (kept_tx, mut kept) = mpsc::unbounded_channel();
    for _ in 0..CALLS {
        let (peer, kept_tx) = (peer.clone(), kept_tx.clone());
        tokio::spawn(async move {
            let mut noop = |_| {};
            let answer = peer
                .request("tools/call", None, Duration::from_secs(60), &mut noop)
                .await;
            let _ = kept_tx.send(answer);
        });
    }
    while !(1..=CALLS).all(|id| peer.is_pending(&json!(id))) {
        tokio::task::yield_now().await;
    }
    let gate = OutputGate::new();
    let taken = Arc::new(AtomicU64::new(0));
    let reader = {
        let (peer, gate, taken) = (peer.clone(), gate.clone(), taken.clone());
        tokio::spawn(async move {
            let mut burst = Burst { taken, last: CALLS };
            read_loop(&peer, &Nothing, &mut burst, Some(&gate)).await
        })
    };
    let stalled_at = settled(&taken).await;
    let mark = (HIGH_WATER_BYTES / ANSWER_BYTES) as u64 + 1;
    assert!(
        stalled_at <= mark,
        "read {stalled_at} answers while none was mapped (the mark is {mark})"
    );
    assert!(gate.is_full());
    // The answers are mapped and written: reading goes on to the end.
    let mut mapped = 0;
    while mapped < CALLS {
        let answer = tokio::time::timeout(Duration::from_secs(10), kept.recv())
            .await
            .expect("every call is answered once earlier answers are gone")
            .unwrap();
        assert!(answer.is_ok());
        drop(answer);
        mapped += 1;
    }
    assert_eq!(taken.load(Ordering::SeqCst), CALLS);
    assert!(!gate.is_full());
    reader.abort();
}
