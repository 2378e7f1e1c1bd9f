//! The paging store: the results of truncated tool calls, kept so that the page tool can answer
//! the rows that were left out, in order, with no gaps and no duplicates.
//!
//! Each entry is one truncated call of one client session, keyed by [`PageKey`] (session and
//! the JSON text of the call's JSON-RPC id, so a client can never read another session's
//! results, and the results of ids `5` and `"5"`, which share the envelope's `call_id` `5`,
//! are kept apart). The 2026-07-28 clients of
//! `serve --http` share one session: there every `call_id` is 128 random bits drawn by the HTTP
//! layer, known only to the client that made the call. It holds the call's
//! `CallToolResult` as JSON text, only the members a page reads
//! ([`crate::outcome::rows::paged_result_json`]: a `content` that `structuredContent` makes
//! unread, such as the SDKs' JSON copy of it, is left out), what is needed to map it again
//! (tool, server, budget) and a [`Cursor`]: where the next page starts.
//!
//! Bounds: the entries' sizes ([`entry_bytes`]: the bytes of the strings an entry holds plus
//! [`ENTRY_OVERHEAD_BYTES`] of fixed bookkeeping) add up to at most the store's `max_bytes`; a
//! new entry evicts the least recently used ones until it fits, and an entry larger than
//! `max_bytes` is not kept ([`NotKept`]). An entry not used for `ttl` is dropped. An entry
//! whose last row was delivered is dropped.
//!
//! Pure: time is passed in. Source: issue 15 of the project.

use std::collections::{BTreeMap, HashMap};
use std::mem::size_of;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::budget::Budget;
use crate::config::MediaMode;
use crate::envelope::Envelope;
use crate::outcome::TextShape;

/// Built-in store size: 32 MiB of stored results.
pub const DEFAULT_MAX_BYTES: usize = 32 * 1024 * 1024;
/// Built-in time-to-live of an entry since its last use: 10 minutes.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);
/// What an entry holds beyond its strings, in bytes: its key twice (the map's, the use
/// order's), its slot, its use tick and its shared [`StoredCall`] with the two reference
/// counts: 280 on a 64-bit target. Allocator headers and the maps' spare room are not counted.
/// So many tiny entries are bounded too.
pub const ENTRY_OVERHEAD_BYTES: usize = 2 * size_of::<PageKey>()
    + size_of::<Slot>()
    + size_of::<u64>()
    + size_of::<StoredCall>()
    + 2 * size_of::<usize>();

/// What an entry of `key` holding `call` counts against the store's size, in bytes: the UTF-8
/// bytes of the strings it holds (`call`'s result JSON, tool, server and server's tool name;
/// the key's id text, held twice) plus [`ENTRY_OVERHEAD_BYTES`].
pub fn entry_bytes(key: &PageKey, call: &StoredCall) -> usize {
    2 * key.id.len() + call.bytes() + ENTRY_OVERHEAD_BYTES
}

/// Which stored result: a client session and the JSON-RPC id of the truncated call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageKey {
    /// The session that made the call (unique within the process).
    pub session: u64,
    /// The JSON text of the call's JSON-RPC id, as the tables of requests in flight key it
    /// (`crate::proxy::id_key`): `5` and `"5"` are two requests (JSON-RPC 2.0 "Request
    /// object": an id is a string, a number or null) whose envelopes share the `call_id` `5`
    /// (echoed from the request as a string: the envelope spec, seed 000). A string id's text
    /// starts with `"`, no other id's does.
    pub id: String,
}

impl PageKey {
    /// The envelope's `call_id` of the call: a string id as itself, any other id its text.
    pub fn call_id(&self) -> String {
        serde_json::from_str::<String>(&self.id).unwrap_or_else(|_| self.id.clone())
    }
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
    /// The bytes of the strings it holds (their lengths: [`PageStore::insert`] shrinks the
    /// result's text to fit).
    pub fn bytes(&self) -> usize {
        self.result_json.len() + self.tool.len() + self.server.len() + self.server_tool.len()
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
    #[error("the result needs about {bytes} bytes of the paging store, which holds {max_bytes} ([paging] max_bytes)")]
    TooLarge {
        /// The entry's size ([`entry_bytes`]).
        bytes: usize,
        /// The store's size.
        max_bytes: usize,
    },
    /// The session already has a truncated result of a request with the same JSON-RPC id
    /// whose rows are still being paged (JSON-RPC 2.0 asks only that the ids of requests in
    /// flight differ: a client may use an id again once it is answered). The first keeps its
    /// rows; replacing them would hand its pages another result's rows.
    #[error("call_id '{call_id}' already names an earlier truncated result of this session, whose rows the page tool still returns")]
    CallIdInUse {
        /// The `call_id` both results have.
        call_id: String,
    },
}

/// The text block (`{"type": "text", "text": …}`) that follows the envelope's in the answer of
/// a truncated call whose rows could not be kept (`why`), so the model knows at once that the
/// page tool `tool_name` cannot return the `omitted` rows of `envelope`'s `call_id`.
pub fn not_kept_notice(tool_name: &str, envelope: &Envelope, why: &NotKept) -> Value {
    let text = format!(
        "The {} row(s) left out of call_id '{}' are not kept, so {tool_name} cannot return them: {why}. Call the tool again with narrower arguments to see them.",
        envelope.omitted, envelope.call_id
    );
    json!({"type": "text", "text": text})
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

    /// Keeps `call`, of which the last `remaining` rows are still to be delivered, evicting
    /// least recently used entries until it fits. Errors: [`NotKept::TooLarge`], and
    /// [`NotKept::CallIdInUse`] when an entry of the same key is still held (its rows stay).
    pub fn insert(
        &mut self,
        key: PageKey,
        call: StoredCall,
        remaining: u64,
        now: Instant,
    ) -> Result<(), NotKept> {
        self.expire(now);
        if self.slots.contains_key(&key) {
            return Err(NotKept::CallIdInUse {
                call_id: key.call_id(),
            });
        }
        let mut call = call;
        call.result_json.shrink_to_fit();
        let bytes = entry_bytes(&key, &call);
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

    /// Whether an entry of `key` is held now (after dropping those past their time-to-live);
    /// its use is not marked.
    pub fn holds(&mut self, key: &PageKey, now: Instant) -> bool {
        self.expire(now);
        self.slots.contains_key(key)
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
            id: id.to_owned(),
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

    /// An entry of [`call`]`(1000)` under a one-character id text (a number id's).
    const ENTRY: usize = 1000 + 2 + 2 + ENTRY_OVERHEAD_BYTES;

    /// A result as the MCP SDKs send a tool's 70-character string: the text and, structured,
    /// `{"result": text}`. Its entry holds the structured copy alone, and counts it with its
    /// names and the fixed overhead: kept under a `max_bytes` of exactly that, which the old
    /// count (the whole result plus 256) exceeded.
    #[test]
    fn an_entry_counts_the_bytes_it_holds() {
        let text = "x".repeat(70);
        let result = serde_json::json!({"content": [{"type": "text", "text": text}],
            "structuredContent": {"result": text}});
        let held = crate::outcome::paged_result_json(&result, MediaMode::Passthrough);
        assert_eq!(held.len(), 70 + 35);
        let entry = StoredCall {
            result_json: held,
            ..call(0)
        };
        let (k, now) = (key(1, "7"), Instant::now());
        let bytes = entry_bytes(&k, &entry);
        assert_eq!(bytes, 105 + 2 + 2 + ENTRY_OVERHEAD_BYTES);
        #[cfg(target_pointer_width = "64")]
        assert_eq!(ENTRY_OVERHEAD_BYTES, 280, "the figure the README states");
        let old_count = result.to_string().len() + 2 + 256;
        assert!(old_count > bytes, "{old_count} <= {bytes}");
        let mut store = PageStore::new(bytes, DEFAULT_TTL);
        store.insert(k.clone(), entry.clone(), 1, now).unwrap();
        assert_eq!(store.used_bytes(), bytes);
        let mut store = PageStore::new(bytes - 1, DEFAULT_TTL);
        let err = store.insert(k, entry, 1, now).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("the result needs about {bytes} bytes of the paging store, which holds {} ([paging] max_bytes)", bytes - 1)
        );
    }

    /// An id used again (JSON-RPC allows it once the first request is answered) while the
    /// first result is still paged: the second truncated result used to replace the first
    /// silently, so the first's next page showed the second's rows. Now the second is not kept,
    /// saying why, and the first pages on.
    #[test]
    fn an_id_still_paged_keeps_its_rows_and_a_second_result_is_not_kept() {
        let mut store = PageStore::new(1 << 20, DEFAULT_TTL);
        let now = Instant::now();
        for id in ["5", r#""5""#] {
            store.insert(key(1, id), call(100), 3, now).unwrap();
            let second = store.insert(key(1, id), call(200), 9, now).unwrap_err();
            assert!(
                second
                    .to_string()
                    .contains("call_id '5' already names an earlier truncated result"),
                "{second}"
            );
            let (kept, cursor) = store.get(&key(1, id), now).unwrap();
            assert_eq!(kept.result_json.len(), call(100).result_json.len());
            assert_eq!(cursor, Cursor::Remaining(3));
            assert!(
                store.insert(key(2, id), call(200), 9, now).is_ok(),
                "another session"
            );
        }
    }

    /// Ids `5` and `"5"` share call_id "5" but are two requests: both results are kept, apart.
    #[test]
    fn a_number_id_and_a_string_id_of_one_text_are_kept_apart() {
        let mut store = PageStore::new(1 << 20, DEFAULT_TTL);
        let now = Instant::now();
        store.insert(key(1, "5"), call(100), 3, now).unwrap();
        store.insert(key(1, r#""5""#), call(200), 9, now).unwrap();
        let (number, _) = store.get(&key(1, "5"), now).unwrap();
        let (string, cursor) = store.get(&key(1, r#""5""#), now).unwrap();
        assert_eq!(
            (number.result_json.len(), string.result_json.len(), cursor),
            (100, 200, Cursor::Remaining(9))
        );
        assert_eq!(
            (key(1, "5").call_id(), key(1, r#""5""#).call_id()),
            ("5".into(), "5".into())
        );
        assert!(store.holds(&key(1, "5"), now) && !store.holds(&key(1, "6"), now));
    }

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
        // Three-character id texts: two bytes more than ENTRY's, twice.
        let max = 100 * (ENTRY + 4);
        let mut store = PageStore::new(max, DEFAULT_TTL);
        for i in 0..1000 {
            store
                .insert(key(1, &format!("{i:03}")), call(1000), 5, now)
                .unwrap();
            assert!(store.used_bytes() <= max);
        }
        assert_eq!(store.len(), 100);
        assert!(store.get(&key(1, "999"), now).is_some());
        assert!(store.get(&key(1, "000"), now).is_none());
    }
}
