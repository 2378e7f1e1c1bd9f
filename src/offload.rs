//! CPU-heavy work kept off the async runtime.
//!
//! The proxy runs its tasks on one thread (a current-thread tokio runtime: for small calls
//! that is cheaper than handing every message between worker threads; issue 6, BENCHMARKS.md).
//! Parsing or mapping a message of many megabytes takes tens of milliseconds, during which that
//! thread would answer nothing else; such work goes to tokio's blocking thread pool instead.

/// Messages at least this long (bytes) are parsed or mapped on the blocking pool.
pub const OFFLOAD_MIN_BYTES: usize = 1 << 20;

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
