//! The live 2025-era sessions of the HTTP server, by `Mcp-Session-Id`: how long an idle one
//! lives and how many may be live at once. Pure bookkeeping over [`Live`] values and the
//! `Instant`s the caller passes in; closing what it hands back is the caller's work.
//!
//! - A session is *busy* while it has a request in flight or its GET stream open; otherwise it
//!   is *idle* since the last time it was used (named by a request) or seen busy. One idle for
//!   the idle limit is ended by [`Sessions::sweep`]; its id is forgotten, so later requests
//!   naming it get 404 and the client opens a new session (MCP 2025-11-25 "Transports:
//!   Session Management": after the server ends a session it answers that id with 404 Not
//!   Found; a client seeing 404 sends a new `initialize`).
//! - At most `max` sessions are live. A new one beyond that replaces the idle session used
//!   longest ago; when every session is busy it is refused ([`Full`]), which the server answers
//!   with 503 and `Retry-After`: the limit is the server's capacity, not the caller's request
//!   rate (429 is for a client that sent too many requests, RFC 6585 §4; 503 is a server
//!   temporarily unable to serve, RFC 9110 §15.6.4), and clients retry a 503 later.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the table needs to know of a session.
pub trait Live {
    /// Whether a request is in flight or the GET stream is open.
    fn is_busy(&self) -> bool;
    /// Whether the session has ended on its own.
    fn is_closed(&self) -> bool;
}

/// How long sessions live and how many at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionLimits {
    /// An idle session is ended after this long.
    pub idle: Duration,
    /// The most sessions live at once (at least 1).
    pub max: usize,
}

impl SessionLimits {
    /// How often [`Sessions::sweep`] should run: a tenth of the idle limit, between 50 ms and
    /// 30 s (a session may end up to this much earlier or later than its idle limit).
    pub fn sweep_every(&self) -> Duration {
        (self.idle / 10).clamp(Duration::from_millis(50), Duration::from_secs(30))
    }
}

/// Every session is busy and the table is full.
#[derive(Debug, PartialEq)]
pub struct Full {
    /// The limit reached.
    pub max: usize,
}

struct Entry<C> {
    session: Arc<C>,
    last_active: Instant,
}

/// The live sessions by id.
pub struct Sessions<C> {
    live: HashMap<String, Entry<C>>,
    limits: SessionLimits,
}

impl<C: Live> Sessions<C> {
    /// An empty table with these limits.
    pub fn new(limits: SessionLimits) -> Sessions<C> {
        Sessions {
            live: HashMap::new(),
            limits,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> SessionLimits {
        self.limits
    }

    /// Makes room for one more session: `Ok(Some(s))` when the idle session `s` was removed
    /// for it (close it), `Ok(None)` when there was room, [`Full`] when every session is busy.
    pub fn admit(&mut self) -> Result<Option<Arc<C>>, Full> {
        self.live.retain(|_, e| !e.session.is_closed());
        if self.live.len() < self.limits.max.max(1) {
            return Ok(None);
        }
        let oldest = self
            .live
            .iter()
            .filter(|(_, e)| !e.session.is_busy())
            .min_by_key(|(_, e)| e.last_active)
            .map(|(id, _)| id.clone());
        match oldest.and_then(|id| self.live.remove(&id)) {
            Some(entry) => Ok(Some(entry.session)),
            None => Err(Full {
                max: self.limits.max,
            }),
        }
    }

    /// Adds a session (after [`Sessions::admit`]).
    pub fn insert(&mut self, id: String, session: Arc<C>, now: Instant) {
        let entry = Entry {
            session,
            last_active: now,
        };
        self.live.insert(id, entry);
    }

    /// The live session `id`, marked used at `now`; a session that ended on its own is
    /// forgotten.
    pub fn get(&mut self, id: &str, now: Instant) -> Option<Arc<C>> {
        let entry = self.live.get_mut(id)?;
        if entry.session.is_closed() {
            self.live.remove(id);
            return None;
        }
        entry.last_active = now;
        Some(entry.session.clone())
    }

    /// Removes session `id`.
    pub fn remove(&mut self, id: &str) -> Option<Arc<C>> {
        self.live.remove(id).map(|e| e.session)
    }

    /// Removes every session, for closing.
    pub fn drain(&mut self) -> Vec<Arc<C>> {
        self.live.drain().map(|(_, e)| e.session).collect()
    }

    /// Forgets the sessions that ended, marks the busy ones used at `now`, and removes and
    /// returns those idle for the idle limit (close them).
    pub fn sweep(&mut self, now: Instant) -> Vec<Arc<C>> {
        let idle = self.limits.idle;
        let mut expired = Vec::new();
        self.live.retain(|_, entry| {
            if entry.session.is_closed() {
                return false;
            }
            if entry.session.is_busy() {
                entry.last_active = now;
                return true;
            }
            if now.saturating_duration_since(entry.last_active) >= idle {
                expired.push(entry.session.clone());
                return false;
            }
            true
        });
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Debug, Default)]
    struct Fake {
        busy: AtomicBool,
        closed: AtomicBool,
    }

    impl Live for Fake {
        fn is_busy(&self) -> bool {
            self.busy.load(Ordering::Relaxed)
        }
        fn is_closed(&self) -> bool {
            self.closed.load(Ordering::Relaxed)
        }
    }

    fn limits(idle_s: u64, max: usize) -> SessionLimits {
        SessionLimits {
            idle: Duration::from_secs(idle_s),
            max,
        }
    }

    fn add(table: &mut Sessions<Fake>, id: &str, at: Instant) -> Arc<Fake> {
        let fake = Arc::new(Fake::default());
        assert!(table.admit().unwrap().is_none());
        table.insert(id.into(), fake.clone(), at);
        fake
    }

    #[test]
    fn idle_sessions_expire_busy_and_used_ones_stay() {
        let t0 = Instant::now();
        let s = |n| t0 + Duration::from_secs(n);
        let mut table = Sessions::new(limits(10, 8));
        let idle = add(&mut table, "idle", t0);
        let busy = add(&mut table, "busy", t0);
        add(&mut table, "used", t0);
        busy.busy.store(true, Ordering::Relaxed);
        assert!(table.sweep(s(9)).is_empty());
        assert!(table.get("used", s(9)).is_some());
        let expired = table.sweep(s(10));
        assert_eq!(expired.len(), 1);
        assert!(Arc::ptr_eq(&expired[0], &idle));
        assert!(
            table.get("idle", s(10)).is_none(),
            "an expired id is forgotten"
        );
        // The busy one counts as used until it is seen idle; then it gets the whole limit.
        busy.busy.store(false, Ordering::Relaxed);
        assert!(table.sweep(s(18)).is_empty());
        assert_eq!(table.sweep(s(19)).len(), 1, "used at 9");
        let expired = table.sweep(s(20));
        assert_eq!(expired.len(), 1, "seen busy at 10");
        assert!(Arc::ptr_eq(&expired[0], &busy));
        assert!(table.live.is_empty());
    }

    #[test]
    fn ended_sessions_are_forgotten() {
        let t0 = Instant::now();
        let mut table = Sessions::new(limits(10, 8));
        let gone = add(&mut table, "gone", t0);
        gone.closed.store(true, Ordering::Relaxed);
        assert!(table.get("gone", t0).is_none());
        let other = add(&mut table, "other", t0);
        other.closed.store(true, Ordering::Relaxed);
        assert!(
            table.sweep(t0).is_empty(),
            "nothing to close: it ended on its own"
        );
        assert_eq!(table.live.len(), 0);
    }

    #[test]
    fn beyond_the_cap_the_oldest_idle_session_makes_room_else_it_is_full() {
        let t0 = Instant::now();
        let s = |n| t0 + Duration::from_secs(n);
        let mut table = Sessions::new(limits(1000, 3));
        let a = add(&mut table, "a", s(1));
        let b = add(&mut table, "b", s(2));
        let c = add(&mut table, "c", s(3));
        table.get("a", s(4));
        // a was used last; b is the oldest idle one.
        let evicted = table.admit().unwrap().expect("room made");
        assert!(Arc::ptr_eq(&evicted, &b));
        table.insert("d".into(), Arc::new(Fake::default()), s(5));
        for busy in [&a, &c] {
            busy.busy.store(true, Ordering::Relaxed);
        }
        let d = table.get("d", s(5)).unwrap();
        d.busy.store(true, Ordering::Relaxed);
        assert_eq!(table.admit().unwrap_err(), Full { max: 3 });
        c.closed.store(true, Ordering::Relaxed);
        assert!(
            matches!(table.admit(), Ok(None)),
            "an ended session frees its place"
        );
        assert_eq!(table.live.len(), 2);
    }

    #[test]
    fn sweeps_run_often_enough_for_short_and_long_limits() {
        assert_eq!(limits(1, 1).sweep_every(), Duration::from_millis(100));
        assert_eq!(limits(1800, 1).sweep_every(), Duration::from_secs(30));
        let tiny = SessionLimits {
            idle: Duration::from_millis(100),
            max: 1,
        };
        assert_eq!(tiny.sweep_every(), Duration::from_millis(50));
    }
}
