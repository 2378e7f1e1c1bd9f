//! A future that is polled again only after it woke its task ([`WokenOnly`]).
//!
//! `tokio::select!` polls every branch each time its task runs. The stdio reader selects over
//! the next line and the proxy's stop future (SIGTERM, SIGINT, stdout closed), so every line
//! read polled the two signal streams and a oneshot again, though none of them had fired:
//! about 800 instructions per small `tools/call` (callgrind, 2026-12-02). Wrapped in
//! [`WokenOnly`], the stop future is polled once, and after that only when one of its own
//! wakers fired; any other poll answers `Pending` at once. A future needs polling only after it
//! woke its task (the contract of [`Future::poll`]), so what it does is unchanged.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// `inner`, polled only when its own waker fired since its last poll (and on the first poll).
pub struct WokenOnly<F> {
    inner: F,
    signal: Arc<Signal>,
    /// The waker `inner` is polled with: it sets `signal` and wakes the outer task.
    waker: Waker,
}

/// Whether `inner` woke since its last poll, and the task to wake when it does.
struct Signal {
    woken: AtomicBool,
    outer: Mutex<Option<Waker>>,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        if let Some(outer) = self.outer.lock().unwrap().as_ref() {
            outer.wake_by_ref();
        }
    }
}

impl<F> WokenOnly<F> {
    /// Wraps `inner`; its first poll goes through.
    pub fn new(inner: F) -> WokenOnly<F> {
        let signal = Arc::new(Signal {
            woken: AtomicBool::new(true),
            outer: Mutex::new(None),
        });
        let waker = Waker::from(signal.clone());
        WokenOnly {
            inner,
            signal,
            waker,
        }
    }
}

impl<F: Future + Unpin> Future for WokenOnly<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        {
            // The task to wake is kept before `woken` is read: a wake in between finds it.
            let mut outer = this.signal.outer.lock().unwrap();
            if !outer.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *outer = Some(cx.waker().clone());
            }
        }
        if !this.signal.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        Pin::new(&mut this.inner).poll(&mut Context::from_waker(&this.waker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts its polls; ready once `open` is set, pending (keeping the waker) before.
    struct Counted {
        polls: Arc<AtomicUsize>,
        open: Arc<AtomicBool>,
        waker: Arc<Mutex<Option<Waker>>>,
    }

    impl Future for Counted {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            if self.open.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    #[test]
    fn the_inner_future_is_polled_first_and_then_only_after_it_woke() {
        let polls = Arc::new(AtomicUsize::new(0));
        let open = Arc::new(AtomicBool::new(false));
        let inner_waker = Arc::new(Mutex::new(None));
        let mut gated = WokenOnly::new(Counted {
            polls: polls.clone(),
            open: open.clone(),
            waker: inner_waker.clone(),
        });
        let outer_woken = Arc::new(Flag::default());
        let outer = Waker::from(outer_woken.clone());
        let mut cx = Context::from_waker(&outer);
        for _ in 0..5 {
            assert!(Pin::new(&mut gated).poll(&mut cx).is_pending());
        }
        assert_eq!(polls.load(Ordering::SeqCst), 1);
        assert!(!outer_woken.0.load(Ordering::SeqCst));
        // The inner future wakes: the outer task is woken and the next poll reaches it.
        open.store(true, Ordering::SeqCst);
        let waker: Waker = inner_waker.lock().unwrap().take().unwrap();
        waker.wake();
        assert!(outer_woken.0.load(Ordering::SeqCst));
        assert!(Pin::new(&mut gated).poll(&mut cx).is_ready());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[derive(Default)]
    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn a_wrapped_channel_resolves_when_sent_to() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
        let gated = WokenOnly::new(rx);
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            tx.send(7).unwrap();
        });
        assert_eq!(gated.await.unwrap(), 7);
    }
}
