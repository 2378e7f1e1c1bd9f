//! The `progressToken`s of a session's requests that its client cancelled: a server may send
//! progress a little after it was told of the cancellation, and that progress is for a request
//! that is over for the client. "Progress notifications MUST only reference tokens that were
//! provided in an active request" (MCP 2025-11-25, "Utilities: Progress"), so the session drops
//! it. A token is forgotten when a new request of the session sets it again, and the oldest
//! are forgotten past [`MAX_CANCELLED_TOKENS`]. Pure; no I/O.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{Map, Value};

/// Most cancelled tokens a session remembers.
pub(super) const MAX_CANCELLED_TOKENS: usize = 64;

/// The cancelled requests' tokens (each as its JSON text), oldest first.
#[derive(Debug, Default)]
pub(super) struct CancelledTokens {
    tokens: Mutex<VecDeque<String>>,
}

impl CancelledTokens {
    /// Notes that the request whose `progressToken` was `token` (JSON text) was cancelled.
    pub(super) fn cancelled(&self, token: String) {
        let mut tokens = self.tokens.lock().unwrap();
        if tokens.len() == MAX_CANCELLED_TOKENS {
            tokens.pop_front();
        }
        tokens.push_back(token);
    }

    /// Notes a new request with `params`: its `progressToken`, if it reuses a cancelled one,
    /// is live again. Costs one emptiness check while no request was cancelled.
    pub(super) fn request_started(&self, params: Option<&Value>) {
        let mut tokens = self.tokens.lock().unwrap();
        if tokens.is_empty() {
            return;
        }
        if let Some(token) = progress_token_of_request(params) {
            tokens.retain(|t| *t != token);
        }
    }

    /// Whether a `notifications/progress` with `params` is for a cancelled request.
    pub(super) fn is_cancelled(&self, params: Option<&Value>) -> bool {
        let tokens = self.tokens.lock().unwrap();
        !tokens.is_empty() && notified_progress_token(params).is_some_and(|t| tokens.contains(&t))
    }
}

/// The JSON text of a request's `_meta.progressToken` (MCP 2025-11-25 "Utilities:
/// Progress"), read from its `params` object without hashing the member names (this runs for
/// every request); `None` when it sets none.
pub(super) fn request_progress_token(params: &Map<String, Value>) -> Option<String> {
    let meta = crate::small_map::get(params, "_meta")?;
    Some(crate::small_map::member(meta, "progressToken")?.to_string())
}

/// [`request_progress_token`] of a request's `params` value, if it is an object.
pub(super) fn progress_token_of_request(params: Option<&Value>) -> Option<String> {
    request_progress_token(params?.as_object()?)
}

/// The JSON text of a `notifications/progress`' `progressToken`.
fn notified_progress_token(params: Option<&Value>) -> Option<String> {
    Some(crate::small_map::member(params?, "progressToken")?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_of_a_cancelled_request_is_dropped_until_its_token_is_reused() {
        let cancelled = CancelledTokens::default();
        let progress = |token: Value| json!({"progressToken": token, "progress": 1});
        assert!(!cancelled.is_cancelled(Some(&progress(json!("a")))));
        let request = json!({"name": "t", "_meta": {"progressToken": "a"}});
        cancelled.cancelled(progress_token_of_request(Some(&request)).unwrap());
        assert!(cancelled.is_cancelled(Some(&progress(json!("a")))));
        assert!(!cancelled.is_cancelled(Some(&progress(json!("b")))));
        assert!(!cancelled.is_cancelled(Some(&progress(json!(7)))));
        assert!(!cancelled.is_cancelled(None));
        cancelled.request_started(Some(&json!({"_meta": {"progressToken": "a"}})));
        assert!(!cancelled.is_cancelled(Some(&progress(json!("a")))));
    }

    #[test]
    fn a_number_token_is_not_the_same_string_and_the_oldest_are_forgotten() {
        let cancelled = CancelledTokens::default();
        cancelled.cancelled(json!(5).to_string());
        assert!(cancelled.is_cancelled(Some(&json!({"progressToken": 5}))));
        assert!(!cancelled.is_cancelled(Some(&json!({"progressToken": "5"}))));
        for n in 0..MAX_CANCELLED_TOKENS {
            cancelled.cancelled(json!(format!("t{n}")).to_string());
        }
        assert!(!cancelled.is_cancelled(Some(&json!({"progressToken": 5}))));
        assert!(cancelled.is_cancelled(Some(&json!({"progressToken": "t63"}))));
    }
}
