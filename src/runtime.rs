//! How the proxy treats its one runtime thread and its memory: CPU-heavy work on very large
//! messages moves to the blocking pool ([`cpu_bound`]), and the memory freed after a large
//! message is given back to the system ([`release_memory_after_large_message`], [`trim_heap`]).
//!
//! The proxy runs its tasks on one thread (a current-thread tokio runtime: for small calls
//! that is cheaper than handing every message between worker threads; see BENCHMARKS.md).
//! Parsing or mapping a message of many megabytes takes tens of milliseconds, during which that
//! thread would answer nothing else; such work goes to tokio's blocking thread pool instead.
//! The log lines of that thread are written in bursts ([`log_lines`]), in the default format
//! made cheaper ([`log_format`]). A future that many `select!`s poll but that rarely fires is
//! polled only after it woke ([`woken_only`]).

use std::sync::atomic::{AtomicBool, Ordering};

pub mod log_format;
pub mod log_lines;
pub mod woken_only;

/// Messages at least this long (bytes) are parsed or mapped on the blocking pool.
pub const OFFLOAD_MIN_BYTES: usize = 1 << 20;

/// A message at least this long (bytes) asks for freed memory to be given back to the system
/// once the call it answered is done ([`release_memory_after_large_message`]).
pub const LARGE_MESSAGE_BYTES: usize = 1 << 20;

/// Set when a message of [`LARGE_MESSAGE_BYTES`] or more was read from any server.
static LARGE_MESSAGE_SEEN: AtomicBool = AtomicBool::new(false);

/// Runs `work` inline when `bytes` (the size of the message it handles) is below
/// [`OFFLOAD_MIN_BYTES`], else on tokio's blocking pool, so other requests go on being served
/// meanwhile. Must be called inside a tokio runtime. A panic in `work` is resumed here.
pub async fn cpu_bound<T, F>(bytes: usize, work: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    if bytes < OFFLOAD_MIN_BYTES {
        return work();
    }
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Notes that a message of `bytes` bytes was read: from [`LARGE_MESSAGE_BYTES`] on, the next
/// [`release_memory_after_large_message`] trims the heap.
pub fn note_message_size(bytes: usize) {
    if bytes >= LARGE_MESSAGE_BYTES {
        LARGE_MESSAGE_SEEN.store(true, Ordering::Release);
    }
}

/// Gives freed heap memory back to the system if a large message was read since the last call.
///
/// A big result is parsed into many small allocations; once they are freed the allocator keeps
/// the pages (glibc trims only the top of the main heap automatically), so the proxy's RSS
/// would stay at its peak. `malloc_trim(0)` returns the free pages of every arena. Called by the
/// session when a request is answered; costs nothing when no large message was seen.
pub fn release_memory_after_large_message() {
    if LARGE_MESSAGE_SEEN.swap(false, Ordering::AcqRel) {
        trim_heap();
    }
}

/// Gives the allocator's free pages back to the system (`malloc_trim(0)` with glibc; nothing
/// elsewhere).
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
