//! Logging levels per session (MCP 2025-11-25, "Utilities: Logging").
//!
//! A server has one logging level for the one connection the proxy holds, but each client
//! sets its own with `logging/setLevel`. So the proxy keeps each session's level, sets every
//! server to the most verbose level any session asked for, and passes a server's
//! `notifications/message` to a session only at or above that session's own level. A session
//! that never set a level gets every message (as a server would send them to it). When a
//! session ends, the servers are set to the most verbose level of the sessions left.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::session::Session;
use super::Core;
use crate::passthrough::Upstream;
use envelope_core::era::{log_level_passes, log_level_rank};

/// The level (an MCP log level name) each session (by [`Session::id`]) set.
#[derive(Debug, Default)]
pub(super) struct LogLevels {
    by_session: Mutex<HashMap<u64, String>>,
}

impl LogLevels {
    /// Records `session`'s `level` (a valid level name); the level to set the servers to.
    pub(super) fn set(&self, session: u64, level: &str) -> String {
        let mut levels = self.by_session.lock().unwrap();
        levels.insert(session, level.to_owned());
        most_verbose(&levels).expect("one level was just set")
    }

    /// Forgets `session`'s level: the level the servers should be set to now, when it changed
    /// (`None` when it did not, or no session has a level left).
    pub(super) fn remove(&self, session: u64) -> Option<String> {
        let mut levels = self.by_session.lock().unwrap();
        let before = most_verbose(&levels);
        levels.remove(&session)?;
        let after = most_verbose(&levels);
        (after != before).then_some(after).flatten()
    }

    /// Whether a message at `level` reaches `session` (always, when it set no level).
    pub(super) fn wants(&self, session: u64, level: Option<&str>) -> bool {
        let levels = self.by_session.lock().unwrap();
        match (levels.get(&session), level) {
            (None, _) => true,
            (Some(wanted), Some(level)) => log_level_passes(level, wanted),
            // A message without a valid level cannot be placed: let it through.
            (Some(_), None) => true,
        }
    }
}

/// The most verbose (lowest-ranked) level among `levels`.
fn most_verbose(levels: &HashMap<u64, String>) -> Option<String> {
    levels
        .values()
        .min_by_key(|l| log_level_rank(l).unwrap_or(u8::MAX))
        .cloned()
}

impl Session {
    /// `logging/setLevel` for this session (see the module doc); `None` for any other method.
    /// A `level` that is not one of the eight MCP levels is refused with -32602.
    pub(super) async fn set_log_level(
        &self,
        up: &Upstream<'_>,
        method: &str,
        params: &Option<Value>,
    ) -> Option<Result<Value, Value>> {
        if method != "logging/setLevel" {
            return None;
        }
        // A level that is not one of the eight is refused here, the same for every server.
        let level = params.as_ref().and_then(|p| p.get("level"));
        let Some(level) = level
            .and_then(Value::as_str)
            .filter(|l| log_level_rank(l).is_some())
        else {
            return Some(Err(not_a_level(level)));
        };
        let mut params = params.clone().unwrap_or_else(|| json!({}));
        params["level"] = Value::from(self.core.log_levels.set(self.id(), level));
        let answer = self.core.passthrough.handle(up, method, Some(params)).await;
        if answer.as_ref().is_some_and(Result::is_err) {
            self.core.log_levels.remove(self.id());
        }
        answer
    }

    /// Whether a server's `notifications/message` is for this session (at or above the level
    /// it set). Other notifications always are.
    pub(super) fn wants_log_message(&self, method: &str, params: Option<&Value>) -> bool {
        if method != "notifications/message" {
            return true;
        }
        let level = params.and_then(|p| p.get("level")).and_then(Value::as_str);
        self.core.log_levels.wants(self.id(), level)
    }
}

/// The -32602 error for a `logging/setLevel` whose `level` (`None`: missing) is not one of
/// the eight level names (MCP 2025-11-25 "Utilities: Logging", `LoggingLevel`).
fn not_a_level(level: Option<&Value>) -> Value {
    let problem = match level {
        Some(l) => format!("`level` {l} is not a log level"),
        None => "`level` is missing".to_owned(),
    };
    let message =
        format!("{problem}: use debug, info, notice, warning, error, critical, alert or emergency");
    crate::wire::jsonrpc::error_object(jsonrpc_core::ErrorCode::InvalidParams, message, None)
}

impl Core {
    /// Forgets session `id`'s level; when that makes the servers' level less verbose, they
    /// are told (in the background: the session is gone, nobody waits).
    pub(super) fn release_log_level(self: &Arc<Self>, id: u64) {
        let Some(level) = self.log_levels.remove(id) else {
            return;
        };
        self.tell_servers("logging/setLevel", vec![json!({ "level": level })]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_get_the_most_verbose_level_and_each_session_its_own() {
        let l = LogLevels::default();
        assert!(l.wants(1, Some("debug")), "no level set: everything");
        assert_eq!(l.set(1, "error"), "error");
        assert_eq!(l.set(2, "info"), "info");
        assert!(!l.wants(1, Some("warning")) && l.wants(1, Some("critical")));
        assert!(l.wants(2, Some("warning")) && !l.wants(2, Some("debug")));
        assert!(l.wants(3, Some("debug")));
        assert_eq!(l.remove(1), None, "info is still the most verbose");
        assert_eq!(l.set(1, "debug"), "debug");
        assert_eq!(l.remove(1), Some("info".to_owned()));
        assert_eq!(l.remove(2), None, "no level left");
        assert_eq!(l.remove(2), None);
    }
}
