//! A `tools/call` request's params checked before anything else (MCP 2025-11-25 "Tools:
//! Calling Tools": `name` a string, `arguments` an object when given; JSON-RPC 2.0 -32602
//! otherwise).

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

/// The params of a `tools/call` and its `name`; -32602 when malformed.
pub(super) fn call_params(
    params: Option<Value>,
) -> Result<(Map<String, Value>, String), Box<Malformed>> {
    let invalid = |msg: &str, params| {
        Box::new(Malformed {
            error: jsonrpc::error_object(ErrorCode::InvalidParams, msg, None),
            params,
        })
    };
    let Some(Value::Object(params)) = params else {
        let msg = "`tools/call` needs params with a `name`";
        return Err(invalid(msg, Map::new()));
    };
    let Some(Value::String(name)) = small_map::get(&params, "name").cloned() else {
        return Err(invalid("`name` must be a string", params));
    };
    match small_map::get(&params, "arguments") {
        None | Some(Value::Object(_)) => Ok((params, name)),
        Some(_) => Err(invalid("`arguments` must be an object", params)),
    }
}
