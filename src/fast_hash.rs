//! `HashMap` and `HashSet` hashed with foldhash (its fast variant, seeded per process) for the
//! tables every `tools/call` touches: a session's requests in flight (by the client's id as
//! JSON text), a peer's pending requests (by our integer id), the calls in flight (by start
//! order). std's SipHash cost about 200 instructions per lookup there, six to eight lookups per
//! call (callgrind, 2026-12-02); foldhash is already in the dependency tree (the core's catalog
//! maps and hashbrown's use it). Seeded per process, so the order of iteration is as arbitrary
//! as before.

/// std's `HashMap` with foldhash's per-process seeded hasher.
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// std's `HashSet` hashed like [`HashMap`].
pub type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
