//! The paging store: the results of truncated tool calls, kept so that the page tool can answer
//! the rows that were left out, in order, with no gaps and no duplicates.
//!
//! Each entry is one truncated call of one client session, keyed by [`PageKey`] (session and
//! `call_id`, so a client can never read another session's results). The 2026-07-28 clients of
//! `serve --http` share one session: there every `call_id` is 128 random bits drawn by the HTTP
//! layer, known only to the client that made the call. It holds the call's
//! `CallToolResult` as JSON text (so its size is known exactly), what is needed to map it
//! again (tool, server, budget) and a [`Cursor`]: where the next page starts.
//!
//! Bounds: the entries' sizes ([`StoredCall::bytes`]) add up to at most the store's
//! `max_bytes`; a new entry evicts the least recently used ones until it fits, and an entry
//! larger than `max_bytes` is not kept. An entry not used for `ttl` is dropped. An entry whose
//! last row was delivered is dropped.
//!
//! Pure: time is passed in. Source: issue 15 of the project.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::budget::Budget;
use crate::config::MediaMode;
use crate::outcome::TextShape;

/// Built-in store size: 32 MiB of stored results.
pub const DEFAULT_MAX_BYTES: usize = 32 * 1024 * 1024;
/// Built-in time-to-live of an entry since its last use: 10 minutes.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);
/// What an entry costs beyond its strings, in bytes (key, maps, bookkeeping), so that many
/// tiny entries are bounded too.
pub const ENTRY_OVERHEAD_BYTES: usize = 256;

/// Which stored result: a client session and the `call_id` of the truncated call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageKey {
    /// The session that made the call (unique within the process).
    pub session: u64,
    /// The envelope's `call_id` of the truncated call.
    pub call_id: String,
}

/// A truncated call's result and what mapping it again needs.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCall {
    /// The `CallToolResult` as JSON text.
    pub result_json: String,
    /// The tool name the client called.
    pub tool: String,
    /// The server's config name.
    pub server: String,
    /// The server's own name of the tool.
    pub server_tool: String,
    /// The tool's budget.
    pub budget: Budget,
    /// The tool's media mode.
    pub media: MediaMode,
    /// The tool's `text_rows` and `long_rows`.
    pub text: TextShape,
}

impl StoredCall {
    /// What the entry counts against the store's size, in bytes.
    pub fn bytes(&self) -> usize {
        self.result_json.len()
            + self.tool.len()
            + self.server.len()
            + self.server_tool.len()
            + ENTRY_OVERHEAD_BYTES
    }
}

/// Where the next page of a stored result starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor {
    /// Not located yet: this many rows, the last ones of the result, are still to come (the
    /// first answer's `omitted`).
    Remaining(u64),
    /// At this row (0-based) of the result's rows.
    At(u64),
}

/// Why an entry was not kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotKept {
    /// The entry alone is larger than the store.
    #[error("the result ({bytes} bytes) is larger than the paging store ({max_bytes} bytes)")]
    TooLarge {
        /// The entry's size.
        bytes: usize,
        /// The store's size.
        max_bytes: usize,
    },
}

#[derive(Debug)]
struct Slot {
    call: Arc<StoredCall>,
    cursor: Cursor,
    bytes: usize,
    tick: u64,
    used: Instant,
}

/// The bounded store (see the module documentation).
#[derive(Debug)]
pub struct PageStore {
    max_bytes: usize,
    ttl: Duration,
    used_bytes: usize,
    next_tick: u64,
    slots: HashMap<PageKey, Slot>,
    /// Least recently used first.
    by_use: BTreeMap<u64, PageKey>,
}

impl PageStore {
    /// An empty store of at most `max_bytes` whose entries live `ttl` after their last use.
    pub fn new(max_bytes: usize, ttl: Duration) -> PageStore {
        PageStore {
            max_bytes,
            ttl,
            used_bytes: 0,
            next_tick: 0,
            slots: HashMap::new(),
            by_use: BTreeMap::new(),
        }
    }

    /// The store's size in bytes.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Bytes held now (at most `max_bytes`).
    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the store holds nothing.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Keeps `call`, of which the last `remaining` rows are still to be delivered, replacing an
    /// entry of the same key, evicting least recently used entries until it fits.
    pub fn insert(
        &mut self,
        key: PageKey,
        call: StoredCall,
        remaining: u64,
        now: Instant,
    ) -> Result<(), NotKept> {
        self.expire(now);
        self.remove(&key);
        let bytes = call.bytes();
        if bytes > self.max_bytes {
            return Err(NotKept::TooLarge {
                bytes,
                max_bytes: self.max_bytes,
            });
        }
        while self.used_bytes + bytes > self.max_bytes {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            self.remove(&oldest);
        }
        let tick = self.tick();
        self.by_use.insert(tick, key.clone());
        self.used_bytes += bytes;
        self.slots.insert(
            key,
            Slot {
                call: Arc::new(call),
                cursor: Cursor::Remaining(remaining),
                bytes,
                tick,
                used: now,
            },
        );
        Ok(())
    }

    /// The entry of `key` and its cursor, marked as used now; `None` when there is none (never
    /// kept, evicted, expired, or fully delivered).
    pub fn get(&mut self, key: &PageKey, now: Instant) -> Option<(Arc<StoredCall>, Cursor)> {
        self.expire(now);
        let tick = self.tick();
        let slot = self.slots.get_mut(key)?;
        self.by_use.remove(&slot.tick);
        self.by_use.insert(tick, key.clone());
        slot.tick = tick;
        slot.used = now;
        Some((slot.call.clone(), slot.cursor))
    }

    /// Moves the cursor of `key` from `from` to row `next`, with `remaining` rows after it
    /// (0 drops the entry). `false`, changing nothing, when the entry is gone or its cursor is
    /// no longer `from` (another page was taken meanwhile: compute the page again).
    pub fn advance(&mut self, key: &PageKey, from: Cursor, next: u64, remaining: u64) -> bool {
        match self.slots.get_mut(key) {
            Some(slot) if slot.cursor == from => {
                if remaining == 0 {
                    self.remove(key);
                } else {
                    slot.cursor = Cursor::At(next);
                }
                true
            }
            _ => false,
        }
    }

    fn tick(&mut self) -> u64 {
        self.next_tick += 1;
        self.next_tick
    }

    fn remove(&mut self, key: &PageKey) {
        if let Some(slot) = self.slots.remove(key) {
            self.by_use.remove(&slot.tick);
            self.used_bytes -= slot.bytes;
        }
    }

    /// Drops the entries unused for longer than the time-to-live.
    fn expire(&mut self, now: Instant) {
        let ttl = self.ttl;
        let old: Vec<PageKey> = self
            .slots
            .iter()
            .filter(|(_, s)| now.saturating_duration_since(s.used) > ttl)
            .map(|(k, _)| k.clone())
            .collect();
        for key in old {
            self.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(session: u64, id: &str) -> PageKey {
        PageKey {
            session,
            call_id: id.to_owned(),
        }
    }

    fn call(size: usize) -> StoredCall {
        StoredCall {
            result_json: "x".repeat(size),
            tool: "t".into(),
            server: "s".into(),
            server_tool: String::new(),
            budget: Budget::chars(10),
            media: MediaMode::Passthrough,
            text: TextShape::default(),
        }
    }

    const ENTRY: usize = 1000 + 2 + ENTRY_OVERHEAD_BYTES;

    #[test]
    fn sessions_are_apart() {
        let now = Instant::now();
        let mut store = PageStore::new(1 << 20, DEFAULT_TTL);
        store.insert(key(1, "7"), call(10), 3, now).unwrap();
        assert!(store.get(&key(2, "7"), now).is_none());
        let (_, cursor) = store.get(&key(1, "7"), now).unwrap();
        assert_eq!(cursor, Cursor::Remaining(3));
    }

    #[test]
    fn least_recently_used_is_evicted_and_the_size_is_bounded() {
        let now = Instant::now();
        let mut store = PageStore::new(3 * ENTRY, DEFAULT_TTL);
        for id in ["a", "b", "c"] {
            store.insert(key(1, id), call(1000), 5, now).unwrap();
        }
        assert_eq!(store.used_bytes(), 3 * ENTRY);
        // Using "a" makes "b" the least recently used.
        store.get(&key(1, "a"), now).unwrap();
        store.insert(key(1, "d"), call(1000), 5, now).unwrap();
        assert!(store.get(&key(1, "b"), now).is_none());
        for id in ["a", "c", "d"] {
            assert!(store.get(&key(1, id), now).is_some(), "{id}");
        }
        assert_eq!(store.used_bytes(), 3 * ENTRY);
        // Too large for the store: not kept, nothing evicted.
        let err = store.insert(key(1, "big"), call(10 * ENTRY), 5, now);
        assert!(matches!(err, Err(NotKept::TooLarge { .. })));
        assert_eq!(store.len(), 3);
    }

    #[test]
    fn entries_expire_after_the_ttl_since_last_use() {
        let t0 = Instant::now();
        let mut store = PageStore::new(1 << 20, Duration::from_secs(60));
        store.insert(key(1, "a"), call(1), 2, t0).unwrap();
        assert!(store
            .get(&key(1, "a"), t0 + Duration::from_secs(50))
            .is_some());
        assert!(store
            .get(&key(1, "a"), t0 + Duration::from_secs(100))
            .is_some());
        assert!(store
            .get(&key(1, "a"), t0 + Duration::from_secs(161))
            .is_none());
        assert_eq!(store.used_bytes(), 0);
    }

    #[test]
    fn advance_is_compare_and_set_and_the_last_page_drops_the_entry() {
        let now = Instant::now();
        let mut store = PageStore::new(1 << 20, DEFAULT_TTL);
        store.insert(key(1, "a"), call(1), 9, now).unwrap();
        assert!(store.advance(&key(1, "a"), Cursor::Remaining(9), 4, 6));
        assert!(!store.advance(&key(1, "a"), Cursor::Remaining(9), 4, 6));
        assert_eq!(store.get(&key(1, "a"), now).unwrap().1, Cursor::At(4));
        assert!(store.advance(&key(1, "a"), Cursor::At(4), 10, 0));
        assert!(store.get(&key(1, "a"), now).is_none());
        assert!(store.is_empty());
    }

    #[test]
    fn a_thousand_truncated_calls_stay_within_the_bound() {
        let now = Instant::now();
        let max = 100 * ENTRY;
        let mut store = PageStore::new(max, DEFAULT_TTL);
        for i in 0..1000 {
            store
                .insert(key(1, &i.to_string()), call(1000), 5, now)
                .unwrap();
            assert!(store.used_bytes() <= max);
        }
        assert_eq!(store.len(), 100);
        assert!(store.get(&key(1, "999"), now).is_some());
        assert!(store.get(&key(1, "0"), now).is_none());
    }
}
