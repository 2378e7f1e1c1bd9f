//! Logging passed through (MCP specification 2025-11-25, "Utilities: Logging").
//!
//! - `logging/setLevel` is sent to every ready server that declared `logging`; the answer is
//!   `{}` when at least one accepted it (the others are logged), else the first server's error;
//! - `notifications/message` from a server reaches the client with the server's config name as
//!   `logger` when the server gave none (a `logger` it gave is kept).

use serde_json::{json, Map, Value};
use tracing::warn;

use super::Upstream;

/// `logging/setLevel` to every server that offers logging.
pub async fn set_level(up: &Upstream<'_>, params: &Value) -> Result<Value, Value> {
    let mut first_error = None;
    let mut accepted = false;
    for ds in up.offering("logging") {
        match up.ask(ds, "logging/setLevel", params).await {
            Ok(_) => accepted = true,
            Err(e) => {
                warn!(server = %ds.name(), error = %e, "logging/setLevel refused");
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) if !accepted => Err(e),
        _ => Ok(json!({})),
    }
}

/// The params of a `notifications/message` with `logger` set to `server` when absent (or null).
/// Params that are not an object are passed as they are.
pub fn with_logger(params: Option<Value>, server: &str) -> Value {
    let mut params = params.unwrap_or_else(|| Value::Object(Map::new()));
    if let Some(obj) = params.as_object_mut() {
        if obj.get("logger").is_none_or(Value::is_null) {
            obj.insert("logger".into(), Value::from(server));
        }
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logger_is_the_server_name_only_when_missing() {
        assert_eq!(
            with_logger(Some(json!({"level": "info", "data": "x"})), "everything"),
            json!({"level": "info", "data": "x", "logger": "everything"})
        );
        assert_eq!(
            with_logger(
                Some(json!({"level": "info", "logger": "db", "data": 1})),
                "s"
            ),
            json!({"level": "info", "logger": "db", "data": 1})
        );
        assert_eq!(with_logger(None, "s"), json!({"logger": "s"}));
    }
}
