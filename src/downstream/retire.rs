//! A server instance retired by a config reload ([`crate::reload`]): its launch changed (a new
//! instance replaces it) or it was removed. Like the whole proxy on SIGTERM, it drains: the
//! requests already sent to it (calls, resource reads, ...) run on to their answers, each within
//! its own timeout; requests not sent yet go to the new instance, or are told the server was
//! removed; then its process stops. Requests still running after
//! [`Retirement::drain_limit`] (only those without a timeout of their own can be) end with an
//! error naming the reload: retryable after a restart (a retry reaches the new instance), not
//! after a removal (there is nothing to retry). When the proxy itself shuts down meanwhile, the
//! drain ends and the usual shutdown applies.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tracing::info;

use super::supervisor::Started;
use super::{CallError, Connection, Downstream};
use crate::rpc::Reply;

/// How often a draining instance looks whether its requests have ended.
const DRAIN_POLL: Duration = Duration::from_millis(50);

/// How an instance is retired.
#[derive(Debug)]
pub struct Retirement {
    /// The instance that replaces it (a restart); `None` when the server was removed.
    pub successor: Option<Downstream>,
    /// The longest its requests in flight may keep it running: the longest tool timeout one
    /// may have, plus a margin.
    pub drain_limit: Duration,
    /// Becomes `true` when the proxy shuts down: the drain ends at once.
    pub cut: watch::Receiver<bool>,
}

/// Requests on one connection sent through [`Downstream::request`] and not answered yet (the
/// proxy's own requests, such as a `subscriptions/listen` stream or a `tools/list` refresh, are
/// not counted: they do not hold a retired instance up).
#[derive(Debug, Default)]
pub(super) struct InFlight(AtomicUsize);

/// Counts one request while it lives.
pub(super) struct InFlightGuard<'a>(&'a InFlight);

impl InFlight {
    /// Counts a request until the guard is dropped.
    pub(super) fn enter(&self) -> InFlightGuard<'_> {
        self.0.fetch_add(1, Ordering::AcqRel);
        InFlightGuard(self)
    }

    pub(super) fn count(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Downstream {
    /// Retires this instance (see the module doc); the caller throws its stop switch next. A
    /// restart's successor starts with this instance's tool list, so the server's tools stay
    /// offered (and calls to them wait for the new instance) while it starts.
    pub fn retire(&self, retirement: Retirement) {
        if let Some(next) = &retirement.successor {
            let mut tools = next.inner.tools.write().unwrap();
            if tools.is_none() {
                *tools = self.tools();
            }
        }
        let name = self.name().to_owned();
        if self.inner.retired.set(retirement).is_ok() {
            info!(server = %name, "retired by a config reload");
        }
    }

    /// Whether `other` is this very instance (not another one of the same server).
    pub fn is_same_instance(&self, other: &Downstream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether a config reload retired this instance.
    pub fn is_retired(&self) -> bool {
        self.inner.retired.get().is_some()
    }

    /// The instance requests for this one go to: itself, or (retired by restarts) its newest
    /// successor; `Err` with the reason when the server was removed.
    pub(super) fn current(&self) -> Result<Downstream, String> {
        let mut at = self.clone();
        while let Some(r) = at.inner.retired.get() {
            let next = match &r.successor {
                Some(next) => next.clone(),
                None => return Err(REMOVED.into()),
            };
            at = next;
        }
        Ok(at)
    }
}

/// Why a removed server does not take a request.
const REMOVED: &str = "it was removed by a config reload";

/// Once the stop switch of `ds` is thrown: when it is retired, waits until its requests in
/// flight have ended (or it ended by itself, or the proxy shuts down, or the drain limit
/// passed: then the requests left get the reload's error). Returns whether the server ended by
/// itself meanwhile (there is nothing left to stop).
pub(super) async fn drain(ds: &Downstream, running: &mut Started) -> bool {
    let Some(r) = ds.inner.retired.get() else {
        return false;
    };
    let conn = running.conn().clone();
    info!(server = %ds.name(), in_flight = conn.in_flight.count(), "draining before it stops");
    let idle = async {
        while conn.in_flight.count() > 0 {
            tokio::time::sleep(DRAIN_POLL).await;
        }
    };
    let mut cut = r.cut.clone();
    let cut = async move {
        if cut.wait_for(|c| *c).await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        _ = idle => false,
        _ = running.ended() => true,
        _ = cut => false,
        _ = tokio::time::sleep(r.drain_limit) => {
            fail_left(&conn, r);
            false
        }
    }
}

/// Ends the requests still running on a retired instance after its drain limit.
fn fail_left(conn: &Connection, r: &Retirement) {
    let secs = r.drain_limit.as_secs();
    match r.successor {
        Some(_) => conn.peer().close(&format!(
            "it was restarted by a config reload and the request was still running {secs} s later; call again: the new instance takes it"
        )),
        None => conn.peer().close_with(|| {
            Reply::Failed(CallError::Unavailable(format!(
                "{REMOVED} while the request was running (still running {secs} s later)"
            )))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_while_their_guards_live() {
        let n = InFlight::default();
        let a = n.enter();
        let b = n.enter();
        assert_eq!(n.count(), 2);
        drop(a);
        assert_eq!(n.count(), 1);
        drop(b);
        assert_eq!(n.count(), 0);
    }
}
