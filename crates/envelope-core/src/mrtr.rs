//! Multi-round-trip requests across the protocol eras (MCP 2026-07-28 "Basic: Patterns: Multi
//! Round-Trip Requests"): the pure rules; the session drives them.
//!
//! | client | server | what happens when the server needs input during a `tools/call` |
//! |---|---|---|
//! | modern | modern | its `InputRequiredResult` reaches the client unchanged; the retry (with the server's own `requestState`) is forwarded intact |
//! | modern | legacy | the server's `sampling/createMessage`, `elicitation/create` or `roots/list` becomes an `InputRequiredResult` whose `requestState` is a random key of ours ([`state_from`]); the downstream call stays parked (its timeout paused) until the client retries with that key and its `inputResponses` |
//! | legacy | modern | each input request is sent to the client as an ordinary server-to-client request, and the call is retried downstream with the answers ([`retry_params`]) |
//!
//! A client is never asked for a capability it did not declare ([`capability_for`]): the
//! server's request is refused instead (-32601).

use serde_json::{json, Map, Value};

/// Every `requestState` we hand out starts with this; any other state belongs to a server.
pub const STATE_PREFIX: &str = "mcp-envelope/";

/// Most `input_required` rounds a legacy client's call goes through with a modern server
/// before the call fails (the SDKs use the same limit).
pub const MAX_ROUNDS: usize = 10;

/// The client requests a 2026-07-28 server may answer with an `InputRequiredResult`: MCP
/// 2026-07-28 "Basic: Patterns: Multi Round-Trip Requests: Supported Requests" (and the
/// schema's `CallToolResultResponse`, `GetPromptResultResponse`, `ReadResourceResultResponse`);
/// "Servers MUST NOT send `InputRequiredResult` responses on any other client requests".
pub const INPUT_REQUIRED_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// Whether a server may answer client request `method` with an `InputRequiredResult` (see
/// [`INPUT_REQUIRED_METHODS`]).
pub fn allows_input_required(method: &str) -> bool {
    INPUT_REQUIRED_METHODS.contains(&method)
}

/// The client capability a server-to-client request needs: `sampling`, `elicitation` or
/// `roots`; `None` for any other method.
pub fn capability_for(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// Whether `capabilities` (a `ClientCapabilities` object) declares `name`.
pub fn declares(capabilities: &Value, name: &str) -> bool {
    capabilities.get(name).is_some_and(|c| !c.is_null())
}

/// The -32601 error object a server gets for a request the client cannot be asked (it did not
/// declare the capability, or the method is no input request).
pub fn refused(method: &str, why: &str) -> Value {
    json!({ "code": -32601, "message": format!("`{method}` cannot be sent to the client: {why}") })
}

/// Whether a result is an `InputRequiredResult` (`resultType: "input_required"`).
pub fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// The `result` of a whole JSON-RPC response line when it is an `InputRequiredResult` (see
/// [`is_input_required`]); `None` for any other line, and for text that is not JSON. A line
/// without the text `resultType` and without a `\u` escape (the only way a JSON key can spell
/// those letters otherwise, RFC 8259 section 7) has no such member and is not parsed; else its
/// `result.resultType` is read in a pass that builds nothing (a modern server puts
/// `"resultType": "complete"` in every result), and only an `input_required` line, or one that
/// pass cannot read (a repeated member: the last one counts, as in a parsed tree), is parsed in
/// full.
pub fn input_required_of_line(line: &str) -> Option<Value> {
    if !line.contains("resultType") && !line.contains("\\u") {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Line<'a> {
        #[serde(borrow)]
        result: Option<Kind<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(borrow, rename = "resultType")]
        result_type: Option<std::borrow::Cow<'a, str>>,
    }
    if let Ok(line) = serde_json::from_str::<Line<'_>>(line) {
        let kind = line.result.and_then(|r| r.result_type);
        if kind.as_deref() != Some("input_required") {
            return None;
        }
    }
    let mut response: Value = serde_json::from_str(line).ok()?;
    let result = response.get_mut("result")?;
    is_input_required(result).then(|| result.take())
}

/// A `requestState` of ours made from 128 random bits: [`STATE_PREFIX`] and the bits in hex
/// (32 lowercase hex digits). Unguessable when the bits are (the main crate draws them from the
/// operating system's generator), meaningful only as a key of our table.
pub fn state_from(random: [u8; 16]) -> String {
    format!("{STATE_PREFIX}{}", hex(&random))
}

/// `bytes` as lowercase hexadecimal digits, two per byte, written into one string (no string
/// per byte).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(2 * bytes.len());
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Whether a `requestState` is one of ours (see [`STATE_PREFIX`]).
pub fn is_ours(state: &str) -> bool {
    state.starts_with(STATE_PREFIX)
}

/// The retry fields of a client request: its `requestState` (when a string) and its
/// `inputResponses` (an empty map when absent). `Err` is a -32602 error object for fields of
/// the wrong type.
pub fn retry_fields(
    params: &Map<String, Value>,
) -> Result<(Option<String>, Map<String, Value>), Value> {
    let state = match crate::small_map::get(params, "requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(crate::era::invalid_params(
                "`requestState` must be a string",
            ))
        }
    };
    let responses = match crate::small_map::get(params, "inputResponses") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(r)) => r.clone(),
        Some(_) => {
            return Err(crate::era::invalid_params(
                "`inputResponses` must be an object",
            ))
        }
    };
    Ok((state, responses))
}

/// One input request: its key in `inputRequests`, its method and params.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    /// The key (ours when we made it, the server's otherwise).
    pub key: String,
    /// `sampling/createMessage`, `elicitation/create` or `roots/list`.
    pub method: String,
    /// Its params.
    pub params: Option<Value>,
}

/// The `InputRequiredResult` asking the client for `requests`, with our `state`.
pub fn input_required_result(requests: &[InputRequest], state: &str) -> Value {
    let mut map = Map::new();
    for r in requests {
        let mut request = json!({ "method": r.method });
        if let Some(p) = &r.params {
            request["params"] = p.clone();
        }
        map.insert(r.key.clone(), request);
    }
    json!({ "resultType": "input_required", "inputRequests": map, "requestState": state })
}

/// The input requests of a server's `InputRequiredResult`, in key order. `Err` names what is
/// malformed (an entry that is not `{method, params?}` of the three input methods).
pub fn input_requests(result: &Value) -> Result<Vec<InputRequest>, String> {
    let Some(requests) = result.get("inputRequests") else {
        return Ok(Vec::new());
    };
    let Some(requests) = requests.as_object() else {
        return Err("`inputRequests` is not an object".into());
    };
    let mut out = Vec::new();
    for (key, request) in requests {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        if capability_for(method).is_none() {
            return Err(format!("input request `{key}` has method {method:?}, not sampling/createMessage, elicitation/create or roots/list"));
        }
        out.push(InputRequest {
            key: key.clone(),
            method: method.to_owned(),
            params: request.get("params").cloned(),
        });
    }
    Ok(out)
}

/// The params of the retry of a request with `original` params: the same, with
/// `inputResponses` and the server's `requestState` (when it gave one) in place of any earlier
/// ones (MCP 2026-07-28 MRTR "Client Requirements").
pub fn retry_params(
    original: &Map<String, Value>,
    responses: Map<String, Value>,
    state: Option<&str>,
) -> Value {
    let mut params = original.clone();
    params.remove("requestState");
    params.remove("inputResponses");
    if !responses.is_empty() {
        params.insert("inputResponses".into(), Value::Object(responses));
    }
    if let Some(state) = state {
        params.insert("requestState".into(), Value::from(state));
    }
    Value::Object(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_required_line_is_found_however_its_key_is_written() {
        let found = |line: &str| input_required_of_line(line);
        let wanted = json!({"resultType": "input_required", "inputRequests": {}});
        assert_eq!(
            found(
                r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}"#
            ),
            Some(wanted)
        );
        // The last of a repeated member counts, as in a parsed tree.
        assert!(found(
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","resultType":"input_required"}}"#
        )
        .is_some());
        assert_eq!(
            found(r#"{"result":{"resultType":"input_required","resultType":"complete"},"id":1}"#),
            None
        );
        // A key spelled with escapes is the same key.
        assert!(
            found(r#"{"jsonrpc":"2.0","id":1,"result":{"result\u0054ype":"input_required"}}"#)
                .is_some()
        );
        for other in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"resultType input_required \u00e9"}]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required""#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"resultType"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":[1,2]}"#,
        ] {
            assert_eq!(found(other), None, "{other}");
        }
    }

    #[test]
    fn only_three_requests_may_be_answered_input_required() {
        for method in ["tools/call", "prompts/get", "resources/read"] {
            assert!(allows_input_required(method), "{method}");
        }
        for method in [
            "completion/complete",
            "resources/subscribe",
            "prompts/list",
            "ping",
        ] {
            assert!(!allows_input_required(method), "{method}");
        }
    }

    #[test]
    fn states_are_ours_and_carry_the_bits_in_hex() {
        let a = state_from([0xab; 16]);
        assert_eq!(a, format!("{STATE_PREFIX}{}", "ab".repeat(16)));
        assert!(is_ours(&a) && a.len() == STATE_PREFIX.len() + 32);
        assert_ne!(a, state_from([0; 16]));
        assert!(!is_ours("server-state"));
    }

    #[test]
    fn capabilities_gate_each_input_method() {
        let caps = json!({"elicitation": {}, "sampling": null});
        assert!(declares(
            &caps,
            capability_for("elicitation/create").unwrap()
        ));
        assert!(!declares(
            &caps,
            capability_for("sampling/createMessage").unwrap()
        ));
        assert!(!declares(&caps, capability_for("roots/list").unwrap()));
        assert_eq!(capability_for("ping"), None);
        assert_eq!(refused("roots/list", "no roots")["code"], -32601);
    }

    #[test]
    fn an_input_required_result_round_trips() {
        let asks = vec![InputRequest {
            key: "1".into(),
            method: "elicitation/create".into(),
            params: Some(json!({"message": "ok?"})),
        }];
        let r = input_required_result(&asks, "mcp-envelope/x");
        assert!(is_input_required(&r));
        assert_eq!(r["inputRequests"]["1"]["method"], "elicitation/create");
        assert_eq!(r["requestState"], "mcp-envelope/x");
        assert_eq!(input_requests(&r).unwrap(), asks);
        let bad = json!({"resultType": "input_required", "inputRequests": {"k": {"method": "tools/call"}}});
        assert!(input_requests(&bad).unwrap_err().contains("tools/call"));
        assert!(
            input_requests(&json!({"resultType": "input_required", "requestState": "s"}))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn retries_carry_the_responses_and_the_servers_state() {
        let original = json!({"name": "t", "arguments": {"a": 1}, "requestState": "old", "inputResponses": {"x": 1}});
        let mut responses = Map::new();
        responses.insert("k".into(), json!({"action": "accept"}));
        let r = retry_params(original.as_object().unwrap(), responses, Some("new"));
        assert_eq!(
            r,
            json!({"name": "t", "arguments": {"a": 1}, "requestState": "new", "inputResponses": {"k": {"action": "accept"}}})
        );
        let r = retry_params(original.as_object().unwrap(), Map::new(), None);
        assert_eq!(r, json!({"name": "t", "arguments": {"a": 1}}));
    }

    #[test]
    fn retry_fields_are_type_checked() {
        let ok = json!({"requestState": "s", "inputResponses": {"k": {}}});
        let (state, responses) = retry_fields(ok.as_object().unwrap()).unwrap();
        assert_eq!(state.as_deref(), Some("s"));
        assert_eq!(responses.len(), 1);
        for bad in [json!({"requestState": 1}), json!({"inputResponses": []})] {
            assert_eq!(
                retry_fields(bad.as_object().unwrap()).unwrap_err()["code"],
                -32602
            );
        }
    }
}
