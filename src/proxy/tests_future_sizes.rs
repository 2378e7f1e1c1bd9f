//! The boxed futures of the `tools/call` path stay small enough for glibc's per-thread cache.
//!
//! glibc serves a block of at most [`TCACHE_MAX_BYTES`] from its per-thread cache; a larger
//! one goes through its bins and first merges its fast bins (`malloc_consolidate`), about
//! 2,000 more instructions per call (callgrind, 2026-12-02 and 2026-12-03). Every small
//! `tools/call` allocates the futures boxed on its path once, so a future that grows past the
//! cache's limit costs every call; the state a rare path holds across an await is what makes
//! one grow (see `answer_request` in `dispatch.rs`). A size is not a timing: these checks are
//! exact and the same on every machine with this compiler.

use std::sync::Arc;

use serde_json::json;

use super::calls::CallRequest;
use super::Core;
use crate::config::Config;

/// Largest block glibc's per-thread cache (tcache) holds on a 64-bit target: 64 bins of
/// 16-byte steps, the last for 1,032 bytes of user data.
const TCACHE_MAX_BYTES: usize = 1032;

#[tokio::test]
async fn the_call_path_future_fits_the_allocators_cache() {
    let config = Config::parse("", std::path::Path::new("t.toml"), &|_| None).unwrap();
    let core = Core::new(Arc::new(config), None);
    let id = json!(1);
    let future = core.call_tool_mapped(CallRequest {
        id: &id,
        params: None,
        slot: Arc::default(),
        seq: None,
        modern: None,
        session: None,
    });
    let size = std::mem::size_of_val(&future);
    eprintln!("SIZE {size}");
    assert!(
        size <= TCACHE_MAX_BYTES,
        "call_tool_mapped's future is {size} bytes: box what it holds across an await"
    );
}
