//! A `tools/call` request's params checked before anything else (MCP 2025-11-25 "Tools:
//! Calling Tools": `name` a string, `arguments` an object when given; JSON-RPC 2.0 -32602
//! otherwise), and a task augmentation dropped: the proxy declares no `tasks` capability, and
//! "receivers that do not declare the task capability for a request type MUST process
//! requests of that type normally, ignoring any task-augmentation metadata" (MCP 2025-11-25
//! "Tasks: Behavior Requirements"). Forwarded, it made a task-capable server answer a
//! `CreateTaskResult`, which the envelope read as a malformed result.

use jsonrpc_core::ErrorCode;
use serde_json::{Map, Value};

use crate::{jsonrpc, small_map};

/// Malformed `tools/call` params: the -32602 error object for the client and the params as
/// given (empty when not an object), for the call's record.
pub(super) struct Malformed {
    /// The JSON-RPC error object for the client (code -32602).
    pub error: Value,
    /// The params as given (empty when not an object).
    pub params: Map<String, Value>,
}

impl Malformed {
    /// The refusal `error` of a call with `params` as sent (an empty map when they are no
    /// object: positional params).
    pub(super) fn of(error: Value, params: Option<Value>) -> Malformed {
        let params = match params {
            Some(Value::Object(params)) => params,
            _ => Map::new(),
        };
        Malformed { error, params }
    }
}

/// The params of a `tools/call` (without a `task` member) and its `name`; -32602 when
/// malformed.
pub(super) fn call_params(
    params: Option<Value>,
) -> Result<(Map<String, Value>, String), Box<Malformed>> {
    let invalid = |msg: &str, params| {
        Box::new(Malformed {
            error: jsonrpc::error_object(ErrorCode::InvalidParams, msg, None),
            params,
        })
    };
    let Some(Value::Object(mut params)) = params else {
        let msg = "`tools/call` needs params with a `name`";
        return Err(invalid(msg, Map::new()));
    };
    let Some(Value::String(name)) = small_map::get(&params, "name").cloned() else {
        return Err(invalid("`name` must be a string", params));
    };
    match small_map::get(&params, "arguments") {
        None | Some(Value::Object(_)) => {
            small_map::remove(&mut params, "task");
            Ok((params, name))
        }
        Some(_) => Err(invalid("`arguments` must be an object", params)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_task_augmentation_is_dropped_and_the_call_runs_normally() {
        let given = json!({"name": "slow", "arguments": {"n": 1}, "task": {"ttl": 60000},
                           "_meta": {"progressToken": 7}});
        let Ok((params, name)) = call_params(Some(given)) else {
            panic!("well-formed params refused");
        };
        assert_eq!(name, "slow");
        assert_eq!(
            Value::Object(params),
            json!({"name": "slow", "arguments": {"n": 1}, "_meta": {"progressToken": 7}})
        );
    }

    #[test]
    fn malformed_params_are_refused_with_invalid_params() {
        for given in [
            json!([1]),
            json!({"name": 3}),
            json!({"name": "x", "arguments": [1]}),
        ] {
            let Err(refusal) = call_params(Some(given)) else {
                panic!("malformed params accepted");
            };
            assert_eq!(refusal.error["code"], -32602);
        }
    }
}
