//! What a server's `initialize` answer must be before the server counts as started (MCP
//! specification 2025-06-18, "Lifecycle: Initialization" and "Version Negotiation"): a JSON
//! object whose `protocolVersion` is a version the proxy speaks. A client that does not support
//! the version a server answers with should disconnect; the proxy treats it as a failed start.

use serde_json::Value;

use crate::session::SUPPORTED_PROTOCOL_VERSIONS;

/// `Err` with the reason when `result` (the `result` of an `initialize` response) is not an
/// object or names a protocol version outside [`SUPPORTED_PROTOCOL_VERSIONS`].
pub fn check_initialize_result(result: &Value) -> Result<(), String> {
    let Some(obj) = result.as_object() else {
        return Err("its initialize result is not a JSON object".into());
    };
    match obj.get("protocolVersion") {
        Some(Value::String(v)) if SUPPORTED_PROTOCOL_VERSIONS.contains(&v.as_str()) => Ok(()),
        Some(Value::String(v)) => Err(format!(
            "it answered initialize with protocolVersion {v:?}, which mcp-envelope does not speak ({})",
            SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        )),
        Some(_) => Err("its initialize result's protocolVersion is not a string".into()),
        None => Err("its initialize result has no protocolVersion".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_objects_with_a_supported_version_pass() {
        assert!(check_initialize_result(&json!({"protocolVersion": "2025-06-18"})).is_ok());
        for bad in [
            json!("not an object"),
            json!({"protocolVersion": "1999-01-01"}),
            json!({"protocolVersion": 20250618}),
            json!({}),
        ] {
            assert!(check_initialize_result(&bad).is_err(), "{bad}");
        }
    }
}
