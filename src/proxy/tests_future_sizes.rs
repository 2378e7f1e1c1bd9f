//! The boxed futures of the `tools/call` path stay small enough for glibc's fast paths.
//!
//! glibc serves a block of at most 1,032 bytes from its per-thread cache (seven of each size),
//! and a block of at most [`SMALL_BIN_MAX_BYTES`] from its small bins when the cache has none
//! (many calls in flight). A larger block goes through its large bins, which first merge the
//! fast bins (`malloc_consolidate`): about 2,000 more instructions per call (callgrind,
//! 2026-12-02 and 2026-12-03: at 64 calls in flight, the request task of 1,024 bytes cost
//! 2,170 instructions per call more than at 992). Every small `tools/call` allocates the
//! futures boxed on its path, so a future that grows past the limit costs every call; the
//! state a rare path holds across an await is what makes one grow (see `answer_request` in
//! `dispatch.rs`). A size is not a timing: these checks are exact for a given compiler.

use std::sync::Arc;

use serde_json::json;

use super::calls::CallRequest;
use super::Core;
use crate::config::Config;

/// Largest block glibc serves from a small bin on a 64-bit target: chunks below 1,024 bytes,
/// 8 of them its header, in 16-byte steps.
const SMALL_BIN_MAX_BYTES: usize = 1000;

#[tokio::test]
async fn the_call_path_future_is_small_bin_sized() {
    let config = Config::parse("", std::path::Path::new("t.toml"), &|_| None).unwrap();
    let core = Core::new(Arc::new(config), None);
    let id = json!(1);
    let future = core.call_tool_mapped(CallRequest {
        id: &id,
        params: None,
        slot: Default::default(),
        key: None,
        modern: None,
        session: None,
    });
    let size = std::mem::size_of_val(&future);
    eprintln!("SIZE {size}");
    assert!(
        size <= SMALL_BIN_MAX_BYTES,
        "call_tool_mapped's future is {size} bytes: box what it holds across an await"
    );
}
