//! The params of a client's `initialize` checked against `InitializeRequestParams` before a
//! session is opened or a server started. Pure: JSON in, the checked params or a JSON-RPC error
//! object out.
//!
//! Source: MCP 2025-11-25 schema, `InitializeRequest.params: InitializeRequestParams`, whose
//! `protocolVersion` (string), `capabilities` (`ClientCapabilities`, an object) and
//! `clientInfo` (`Implementation`, an object) are all required, as in every legacy revision
//! since 2024-11-05. Params that are absent, not an object, missing one of them or giving one
//! the wrong type are -32602 Invalid params (JSON-RPC 2.0 "Error object"), the message naming
//! the member and `data.missing` listing the missing ones. The members of `capabilities` and
//! `clientInfo` are not checked: the proxy forwards them as given.
//!
//! MCP 2026-07-28 has no `initialize` (its requests carry their version, capabilities and
//! client info in `params._meta`, checked by [`crate::era::classify_request`], and
//! `server/discover` takes no such params), so this check belongs to the legacy handshake only.

use jsonrpc_core::ErrorCode;
use serde_json::{json, Value};

use crate::envelope::json_kind as kind;
use crate::jsonrpc;

/// The members `InitializeRequestParams` requires, in schema order.
const REQUIRED: [&str; 3] = ["protocolVersion", "capabilities", "clientInfo"];

/// The checked params of an `initialize` request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InitParams<'a> {
    /// `protocolVersion`: the version the client asks for (negotiated by the caller).
    pub protocol_version: &'a str,
    /// `capabilities`: the client's `ClientCapabilities`, an object.
    pub capabilities: &'a Value,
    /// `clientInfo`: the client's `Implementation`, an object.
    pub client_info: &'a Value,
}

/// Checks `params` (the request's `params` member, `None` when absent) of an `initialize`.
///
/// Errors: a JSON-RPC error object with code -32602 whose message names what is wrong:
/// no `params`, `params` not an object, a missing member (all missing ones named, and listed in
/// `data.missing`), or `protocolVersion` not a string, `capabilities` or `clientInfo` not an
/// object, or a `_meta` that is not an object or whose `progressToken` is neither a string nor
/// an integer ([`jsonrpc::meta_error`]).
pub fn check(params: Option<&Value>) -> Result<InitParams<'_>, Value> {
    let members = match params {
        None => return Err(missing(&REQUIRED, "has no `params`")),
        Some(Value::Object(members)) => members,
        Some(other) => {
            return Err(invalid(format!(
                "`initialize` params must be an object (MCP InitializeRequestParams), found {}",
                kind(other)
            )))
        }
    };
    let absent: Vec<&str> = REQUIRED
        .into_iter()
        .filter(|m| !members.contains_key(*m))
        .collect();
    if !absent.is_empty() {
        return Err(missing(&absent, "params"));
    }
    let protocol_version = members["protocolVersion"]
        .as_str()
        .ok_or_else(|| invalid("`protocolVersion` must be a string".to_owned()))?;
    let object = |name: &str| {
        let value = &members[name];
        if value.is_object() {
            Ok(value)
        } else {
            Err(invalid(format!(
                "`{name}` must be an object, found {}",
                kind(value)
            )))
        }
    };
    let checked = InitParams {
        protocol_version,
        capabilities: object("capabilities")?,
        client_info: object("clientInfo")?,
    };
    // The `_meta` rule every other request is held to (MCP 2025-11-25 "Basic: `_meta`").
    match jsonrpc::meta_error(params) {
        Some(err) => Err(err),
        None => Ok(checked),
    }
}

/// -32602 naming the `absent` members; `what` says where they are missing (`params`, or
/// `has no \`params\``).
fn missing(absent: &[&str], what: &str) -> Value {
    let names: Vec<String> = absent.iter().map(|m| format!("`{m}`")).collect();
    let message = format!(
        "`initialize` {what}: missing {} (required by MCP 2025-11-25 InitializeRequestParams)",
        names.join(", ")
    );
    let data = json!({ "missing": absent });
    jsonrpc::error_object(ErrorCode::InvalidParams, message, Some(data))
}

fn invalid(message: String) -> Value {
    jsonrpc::error_object(ErrorCode::InvalidParams, message, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Value {
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "c", "version": "1"},
            "_meta": {"x": 1}
        })
    }

    /// The error's code, message and `data.missing`.
    fn refused(params: Option<&Value>) -> (i64, String, Value) {
        let err = check(params).unwrap_err();
        let code = err["code"].as_i64().unwrap();
        let message = err["message"].as_str().unwrap().to_owned();
        (code, message, err["data"]["missing"].clone())
    }

    #[test]
    fn complete_params_pass_and_are_read() {
        let params = full();
        let checked = check(Some(&params)).unwrap();
        assert_eq!(checked.protocol_version, "2025-11-25");
        assert_eq!(checked.capabilities, &json!({"roots": {}}));
        assert_eq!(checked.client_info, &json!({"name": "c", "version": "1"}));
        // A version we do not speak passes here: negotiation answers it with ours.
        let mut params = full();
        params["protocolVersion"] = json!("2026-07-28");
        assert_eq!(check(Some(&params)).unwrap().protocol_version, "2026-07-28");
    }

    #[test]
    fn a_malformed_meta_is_invalid_params_like_on_any_other_request() {
        for meta in [json!(5), json!([]), json!({"progressToken": 1.5})] {
            let mut params = full();
            params["_meta"] = meta.clone();
            let (code, message, _) = refused(Some(&params));
            assert_eq!(code, -32602, "{meta}");
            assert!(message.contains("`_meta"), "{meta}: {message}");
        }
        let mut params = full();
        params["_meta"] = json!({"progressToken": "p"});
        assert!(check(Some(&params)).is_ok());
    }

    #[test]
    fn each_missing_member_is_named() {
        for member in REQUIRED {
            let mut params = full();
            params.as_object_mut().unwrap().remove(member);
            let (code, message, data) = refused(Some(&params));
            assert_eq!(code, -32602);
            assert!(
                message.contains(&format!("missing `{member}`")),
                "{member}: {message}"
            );
            assert_eq!(data, json!([member]));
        }
        let (code, message, data) = refused(Some(&json!({"capabilities": {}})));
        assert_eq!(code, -32602);
        assert!(
            message.contains("missing `protocolVersion`, `clientInfo`"),
            "{message}"
        );
        assert_eq!(data, json!(["protocolVersion", "clientInfo"]));
    }

    #[test]
    fn absent_params_name_all_three_and_other_shapes_are_refused() {
        let (code, message, data) = refused(None);
        assert_eq!(code, -32602);
        assert!(
            message
                .contains("no `params`: missing `protocolVersion`, `capabilities`, `clientInfo`"),
            "{message}"
        );
        assert_eq!(data, json!(REQUIRED));
        let cases = [
            (
                json!([1]),
                "params must be an object (MCP InitializeRequestParams), found array",
            ),
            (
                json!(null),
                "params must be an object (MCP InitializeRequestParams), found null",
            ),
            (
                json!("x"),
                "params must be an object (MCP InitializeRequestParams), found string",
            ),
        ];
        for (params, expected) in cases {
            let (code, message, _) = refused(Some(&params));
            assert_eq!(code, -32602);
            assert!(message.contains(expected), "{params}: {message}");
        }
    }

    #[test]
    fn members_of_the_wrong_type_are_refused() {
        for (member, value, expected) in [
            (
                "protocolVersion",
                json!(20251125),
                "`protocolVersion` must be a string",
            ),
            (
                "protocolVersion",
                json!(null),
                "`protocolVersion` must be a string",
            ),
            (
                "capabilities",
                json!(null),
                "`capabilities` must be an object, found null",
            ),
            (
                "capabilities",
                json!([]),
                "`capabilities` must be an object, found array",
            ),
            (
                "clientInfo",
                json!("me"),
                "`clientInfo` must be an object, found string",
            ),
        ] {
            let mut params = full();
            params[member] = value;
            let (code, message, _) = refused(Some(&params));
            assert_eq!(code, -32602);
            assert_eq!(message, expected);
        }
    }
}
