//! JSON-RPC 2.0 wire messages: classification, builders, error objects, ids.
//!
//! Sources: the JSON-RPC 2.0 specification (request, notification, response, error object, error
//! codes) and the MCP specification's stdio transport ("Transports: stdio": one JSON-RPC message
//! per line, UTF-8, no embedded newlines). MCP restricts request ids to strings and integers
//! ("Basic: Requests").
//!
//! Error codes come from `jsonrpc_core::ErrorCode`. Ids are kept as raw [`serde_json::Value`]s
//! so that any string or integer (negative ones and very long strings included) is echoed
//! exactly as received; `jsonrpc_core::Id` cannot hold negative integers.
//!
//! Pure: no I/O. Line framing is [`super::codec`] (its names are re-exported here).

use jsonrpc_core::ErrorCode;
use serde_json::{Map, Value};

pub use super::codec::{write_lines, Frame, LineReader, TOO_LONG_HEAD_BYTES};
use super::members::{Members, TopLevel};

/// A classified JSON-RPC 2.0 message (one element of a batch, or a whole line).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request: has a valid `id` and a `method`.
    Request {
        /// The id exactly as received (a string or an integer).
        id: Value,
        /// The method name.
        method: String,
        /// `params` (an object or array) when present.
        params: Option<Value>,
    },
    /// A notification: a `method` and no `id`.
    Notification {
        /// The method name.
        method: String,
        /// `params` when present.
        params: Option<Value>,
    },
    /// A response: an `id` and exactly one of `result` / `error`.
    Response {
        /// The id exactly as received.
        id: Value,
        /// `Ok(result)` or `Err(error object)`.
        outcome: Result<Value, Value>,
    },
    /// Well-formed JSON that is not a valid JSON-RPC 2.0 message: answered with -32600.
    Invalid {
        /// The id when one could be read (else `null`).
        id: Value,
        /// What is wrong, in plain words.
        reason: String,
    },
}

/// A whole line from a peer.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A single message.
    Single(Message),
    /// A JSON array (a JSON-RPC 2.0 batch); each element classified. Empty batches are
    /// `Single(Invalid)` per the JSON-RPC 2.0 specification.
    Batch(Vec<Message>),
    /// Not JSON at all: answered with -32700 and id `null`.
    ParseError(String),
}

/// Whether `id` is a valid MCP request id: a string or an integer ("Basic: Requests") of any
/// size, written as JSON Schema's `integer` allows (`-0`, a 30-digit integer, `1.0`, `1e2`;
/// kept and echoed as written: [`envelope_core::numbers`]).
pub fn is_valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => envelope_core::numbers::is_integral(n),
        _ => false,
    }
}

/// `id` as a `u64` when it is a non-negative integer in value: `3`, and `3.0` or `3e0` as a
/// peer may write it back (JSON Schema's `integer` allows them). Our own request ids are
/// `u64`s; an answer spelling one as `3.0` was left unmatched and its call waited out its
/// timeout (found by a fresh-user tester).
pub fn u64_id(id: &Value) -> Option<u64> {
    let n = id.as_number()?;
    n.as_u64().or_else(|| {
        let f = n.as_f64()?;
        // Exact below 2^53; our ids never come near it.
        (f.fract() == 0.0 && (0.0..9_007_199_254_740_992.0).contains(&f)).then_some(f as u64)
    })
}

/// The -32602 error for a request of `method` whose `params` are by position (an array), or
/// `None` when they are absent or an object. JSON-RPC 2.0 ("Parameter Structures") lets a
/// method take either; every MCP request takes an object (MCP 2025-11-25 and 2026-07-28
/// schema: each request's `params` is an object type), so an array cannot be what any of them
/// means, and a method that reads no params (`ping`, `tools/list`) must not answer as if it
/// were fine.
pub fn positional_params_error(method: &str, params: Option<&Value>) -> Option<Value> {
    params.filter(|p| p.is_array()).map(|_| {
        let message = format!("`{method}` takes its params as an object, not an array");
        error_object(ErrorCode::InvalidParams, message, None)
    })
}

/// The -32602 error for a request whose `params._meta` has the wrong shape, or `None`. MCP
/// 2025-11-25 and 2026-07-28 schema (`RequestParams._meta`): `_meta` is an object, and its
/// `progressToken` (`ProgressToken`) a string or an integer. Checked here, once for every
/// request, because a server that chokes on a malformed `_meta` never answers, and the call
/// would wait for its timeout.
pub fn meta_error(params: Option<&Value>) -> Option<Value> {
    let meta = params?.get("_meta")?;
    let message = match meta.as_object() {
        None => "`_meta` must be an object".to_owned(),
        Some(meta) => match meta.get("progressToken") {
            Some(Value::String(_)) => return None,
            Some(Value::Number(n)) if envelope_core::numbers::is_integer(n) => return None,
            Some(_) => "`_meta.progressToken` must be a string or an integer".to_owned(),
            _ => return None,
        },
    };
    Some(error_object(ErrorCode::InvalidParams, message, None))
}

/// Parses and classifies one line. Pure; never panics. The top-level members are read
/// without building a map of them ([`super::members`]); the outcome is the same.
pub fn classify(line: &[u8]) -> Incoming {
    let mut members = Members::default();
    match super::members::parse_line(line, &mut members) {
        Err(err) => Incoming::ParseError(err.to_string()),
        Ok(TopLevel::Array(items)) if items.is_empty() => Incoming::Single(Message::Invalid {
            id: Value::Null,
            reason: "empty batch".into(),
        }),
        Ok(TopLevel::Array(items)) => {
            Incoming::Batch(items.into_iter().map(classify_value).collect())
        }
        Ok(TopLevel::Object) => Incoming::Single(classify_members(members)),
        Ok(TopLevel::Other) => Incoming::Single(not_an_object()),
    }
}

/// Classifies one already-parsed JSON value as a JSON-RPC 2.0 message.
pub fn classify_value(value: Value) -> Message {
    match value {
        Value::Object(obj) => classify_members(Members::of_map(obj)),
        _ => not_an_object(),
    }
}

/// The reason a message that is no JSON object is refused.
const NOT_AN_OBJECT: &str = "a JSON-RPC message must be a JSON object";

fn not_an_object() -> Message {
    invalid(Value::Null, NOT_AN_OBJECT)
}

/// Why `value` is not one valid JSON-RPC 2.0 message, with the id to answer with (its own
/// when valid, else `null`); `None` when it is one. The rules of [`classify_value`], read
/// from the borrowed value without copying it (the HTTP transport checks a body it keeps).
pub fn invalid_message(value: &Value) -> Option<(Value, &'static str)> {
    let Value::Object(obj) = value else {
        return Some((Value::Null, NOT_AN_OBJECT));
    };
    let get = |key| envelope_core::small_map::get(obj, key);
    let members = [
        get("jsonrpc"),
        get("id"),
        get("method"),
        get("params"),
        get("result"),
        get("error"),
    ];
    invalid_members(members)
}

/// The rules of a message object, on its members `[jsonrpc, id, method, params, result,
/// error]` (JSON-RPC 2.0 sections 4, 4.1 and 5): why they make no valid message, with the id
/// to answer with; `None` for a request, a notification or a response.
fn invalid_members(members: [Option<&Value>; 6]) -> Option<(Value, &'static str)> {
    let [jsonrpc, id, method, params, result, error] = members;
    let id_for_error = || {
        id.filter(|i| is_valid_id(i))
            .cloned()
            .unwrap_or(Value::Null)
    };
    if jsonrpc.and_then(Value::as_str) != Some("2.0") {
        return Some((id_for_error(), "`jsonrpc` must be \"2.0\""));
    }
    if let Some(method) = method {
        if !method.is_string() {
            return Some((id_for_error(), "`method` must be a string"));
        }
        if params.is_some_and(|p| !(p.is_object() || p.is_array())) {
            return Some((id_for_error(), "`params` must be an object or an array"));
        }
        return match id {
            Some(id) if !is_valid_id(id) => {
                Some((Value::Null, "`id` must be a string or an integer"))
            }
            _ => None,
        };
    }
    if id.is_none() {
        return Some((Value::Null, "a message needs a `method` or an `id`"));
    }
    match (result, error) {
        (Some(_), None) => None,
        (None, Some(error)) if error.is_object() => None,
        _ => Some((
            id_for_error(),
            "a response needs exactly one of `result` and an `error` object",
        )),
    }
}

/// Classifies a message object by its members ([`invalid_members`]).
fn classify_members(members: Members) -> Message {
    let Members {
        jsonrpc,
        id,
        method,
        params,
        result,
        error,
    } = members;
    let borrowed = [&jsonrpc, &id, &method, &params, &result, &error].map(Option::as_ref);
    if let Some((id, reason)) = invalid_members(borrowed) {
        return invalid(id, reason);
    }
    // Valid: a request or notification has a string `method`, a response an `id` and exactly
    // one of `result` and an `error` object.
    match (method, id, result, error) {
        (Some(Value::String(method)), None, ..) => Message::Notification { method, params },
        (Some(Value::String(method)), Some(id), ..) => Message::Request { id, method, params },
        (_, Some(id), Some(result), _) => Message::Response {
            id,
            outcome: Ok(result),
        },
        (_, Some(id), _, Some(error)) => Message::Response {
            id,
            outcome: Err(error),
        },
        _ => not_an_object(),
    }
}

fn invalid(id: Value, reason: &str) -> Message {
    Message::Invalid {
        id,
        reason: reason.to_owned(),
    }
}

/// A JSON-RPC error object `{"code", "message", "data"?}` built with `jsonrpc_core`'s codes.
pub fn error_object(code: ErrorCode, message: impl Into<String>, data: Option<Value>) -> Value {
    let err = jsonrpc_core::Error {
        code,
        message: message.into(),
        data,
    };
    serde_json::to_value(err).expect("an error object always serializes")
}

/// A success response `{"jsonrpc":"2.0","id":…,"result":…}` as a JSON value.
pub fn response(id: Value, result: Value) -> Value {
    let mut obj = Map::with_capacity(3);
    obj.insert("jsonrpc".into(), Value::from("2.0"));
    obj.insert("id".into(), id);
    obj.insert("result".into(), result);
    Value::Object(obj)
}

/// An error response `{"jsonrpc":"2.0","id":…,"error":{…}}` as a JSON value.
pub fn error_response(id: Value, error: Value) -> Value {
    let mut obj = Map::with_capacity(3);
    obj.insert("jsonrpc".into(), Value::from("2.0"));
    obj.insert("id".into(), id);
    obj.insert("error".into(), error);
    Value::Object(obj)
}

/// A request `{"jsonrpc":"2.0","id":…,"method":…,"params"?:…}`.
pub fn request(id: Value, method: &str, params: Option<Value>) -> Value {
    let mut obj = Map::with_capacity(4);
    obj.insert("jsonrpc".into(), Value::from("2.0"));
    obj.insert("id".into(), id);
    obj.insert("method".into(), Value::from(method));
    if let Some(p) = params {
        obj.insert("params".into(), p);
    }
    Value::Object(obj)
}

/// The line (with its `\n`) of the request `{"jsonrpc":"2.0","id":…,"method":…,"params"?:…}`,
/// serialized from borrowed parts (no intermediate [`Value`]); `id` is any serializable id (a
/// `u64` of ours is written without a `serde_json::Number`, which holds its text).
pub fn request_line<I: serde::Serialize + ?Sized>(
    id: &I,
    method: &str,
    params: Option<&Value>,
) -> Vec<u8> {
    request_line_of(id, method, params, params)
}

/// Like [`request_line`], with `params` written from any serializable view of them (the
/// params of a modern server's request, stamped as they are written); `exact` is the request's
/// own params, whose marked `arguments` text is spliced in (`exact_args.rs`).
pub fn request_line_of<I: serde::Serialize + ?Sized, P: serde::Serialize + ?Sized>(
    id: &I,
    method: &str,
    params: Option<&P>,
    exact: Option<&Value>,
) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Request<'a, I: ?Sized, P: ?Sized> {
        jsonrpc: &'static str,
        id: &'a I,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a P>,
    }
    let mut line = serde_json::to_vec(&Request {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
    .expect("a request always serializes");
    super::exact_args::splice(&mut line, exact);
    line.push(b'\n');
    line
}

/// A notification `{"jsonrpc":"2.0","method":…,"params"?:…}`.
pub fn notification(method: &str, params: Option<Value>) -> Value {
    let mut obj = Map::with_capacity(3);
    obj.insert("jsonrpc".into(), Value::from("2.0"));
    obj.insert("method".into(), Value::from(method));
    if let Some(p) = params {
        obj.insert("params".into(), p);
    }
    Value::Object(obj)
}

/// Serializes a message as one line (with the trailing `\n`).
pub fn to_line(message: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).expect("a JSON value always serializes");
    line.push(b'\n');
    line
}

/// Best-effort id of an over-long line from its head: finds a top-level-looking `"id":` followed
/// by an integer or a string. Used only to answer an over-long message with an error.
pub fn id_from_head(head: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(head);
    let mut rest: &str = &text;
    while let Some(pos) = rest.find("\"id\"") {
        let after = rest[pos + 4..].trim_start();
        if let Some(value) = after.strip_prefix(':') {
            let mut stream =
                serde_json::Deserializer::from_str(value.trim_start()).into_iter::<Value>();
            if let Some(Ok(v)) = stream.next() {
                if is_valid_id(&v) {
                    return Some(v);
                }
            }
        }
        rest = &rest[pos + 4..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The borrowed check gives what classifying the value gives, for valid and invalid
    /// messages of every kind.
    #[test]
    fn invalid_message_agrees_with_classify_value() {
        let cases = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "m"}),
            json!({"jsonrpc": "2.0", "id": "a", "method": "m", "params": [1]}),
            json!({"jsonrpc": "2.0", "method": "m", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": null}),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "x"}}),
            json!({"jsonrpc": "2.0", "id": 1, "error": 5}),
            json!({"jsonrpc": "2.0", "id": 1, "result": 1, "error": {}}),
            json!({"jsonrpc": "2.0", "id": 1}),
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "m"}),
            json!({"jsonrpc": "2.0", "id": null, "method": "m"}),
            json!({"jsonrpc": "2.0", "id": 7, "method": 5}),
            json!({"jsonrpc": "2.0", "id": 7, "method": "m", "params": 3}),
            json!({"jsonrpc": "1.0", "id": 7, "method": "m"}),
            json!({"id": [1], "method": "m"}),
            json!({"jsonrpc": "2.0"}),
            json!({"jsonrpc": "2.0", "result": 1}),
            json!([1]),
            json!("text"),
        ];
        for value in cases {
            let want = match classify_value(value.clone()) {
                Message::Invalid { id, reason } => Some((id, reason)),
                _ => None,
            };
            let got = invalid_message(&value).map(|(id, r)| (id, r.to_owned()));
            assert_eq!(got, want, "{value}");
        }
    }

    #[test]
    fn a_malformed_meta_is_invalid_params_naming_it() {
        use serde_json::json;
        for (params, names) in [
            (
                json!({"_meta": {"progressToken": {"obj": 1}}}),
                "_meta.progressToken",
            ),
            (
                json!({"_meta": {"progressToken": 1.5}}),
                "_meta.progressToken",
            ),
            (
                json!({"_meta": {"progressToken": null}}),
                "_meta.progressToken",
            ),
            (json!({"_meta": "str"}), "_meta"),
            (json!({"_meta": null}), "_meta"),
        ] {
            let err = meta_error(Some(&params)).expect("rejected");
            assert_eq!(err["code"], -32602, "{params}");
            assert!(err["message"].as_str().unwrap().contains(names), "{err}");
        }
        for fine in [
            json!({"name": "t"}),
            json!({"_meta": {}}),
            json!({"_meta": {"progressToken": "a", "x": [1]}}),
            json!({"_meta": {"progressToken": -7}}),
            json!({"_meta": {"progressToken": u64::MAX}}),
        ] {
            assert_eq!(meta_error(Some(&fine)), None, "{fine}");
        }
        assert_eq!(meta_error(None), None);
    }

    #[test]
    fn request_line_is_the_request_value_serialized() {
        for params in [
            None,
            Some(serde_json::json!({"name": "t", "arguments": {"a": [1, "é"]}})),
        ] {
            for id in [Value::from(7), Value::from("x\"y"), Value::from(-1)] {
                assert_eq!(
                    request_line(&id, "tools/call", params.as_ref()),
                    to_line(&request(id.clone(), "tools/call", params.clone()))
                );
            }
        }
    }
    use serde_json::json;

    #[test]
    fn params_by_position_are_invalid_params() {
        let err = positional_params_error("ping", Some(&json!([]))).unwrap();
        assert_eq!(err["code"], -32602);
        assert_eq!(
            err["message"],
            "`ping` takes its params as an object, not an array"
        );
        assert!(positional_params_error("tools/list", Some(&json!([{"cursor": "0"}]))).is_some());
        assert_eq!(positional_params_error("ping", None), None);
        assert_eq!(positional_params_error("ping", Some(&json!({}))), None);
    }

    #[test]
    fn classifies_requests_notifications_responses() {
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":-5,"method":"ping"}"#),
            Incoming::Single(Message::Request {
                id: json!(-5),
                method: "ping".into(),
                params: None
            })
        );
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Incoming::Single(Message::Notification { .. })
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Incoming::Single(Message::Response { outcome: Ok(_), .. })
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"m"}}"#),
            Incoming::Single(Message::Response {
                outcome: Err(_),
                ..
            })
        ));
    }

    #[test]
    fn invalid_shapes() {
        for (line, id) in [
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#, json!(null)),
            (r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#, json!(null)),
            (r#"{"jsonrpc":"1.0","id":3,"method":"x"}"#, json!(3)),
            (r#"{"id":3,"method":"x"}"#, json!(3)),
            (r#"{"jsonrpc":"2.0","id":3,"method":7}"#, json!(3)),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"x","params":5}"#,
                json!(3),
            ),
            (r#"{"jsonrpc":"2.0"}"#, json!(null)),
            (
                r#"{"jsonrpc":"2.0","id":3,"result":1,"error":{}}"#,
                json!(3),
            ),
            ("42", json!(null)),
            ("[]", json!(null)),
        ] {
            match classify(line.as_bytes()) {
                Incoming::Single(Message::Invalid { id: got, .. }) => assert_eq!(got, id, "{line}"),
                other => panic!("{line}: {other:?}"),
            }
        }
        assert!(matches!(classify(b"{nope"), Incoming::ParseError(_)));
    }

    #[test]
    fn batch_elements_are_classified() {
        match classify(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}, 5]"#) {
            Incoming::Batch(items) => {
                assert!(matches!(items[0], Message::Request { .. }));
                assert!(matches!(items[1], Message::Invalid { .. }));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn long_string_ids_echo_exactly() {
        let id = "x".repeat(10_000);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string();
        match classify(line.as_bytes()) {
            Incoming::Single(Message::Request { id: got, .. }) => assert_eq!(got, json!(id)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn integer_ids_of_any_size_are_kept_as_written() {
        for id in [
            "-0",
            "123456789012345678901234567890",
            "-99999999999999999999",
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            match classify(line.as_bytes()) {
                Incoming::Single(Message::Request { id: got, .. }) => {
                    let answer = to_line(&response(got, json!({})));
                    let want = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
                    assert_eq!(String::from_utf8(answer).unwrap().trim_end(), want);
                }
                other => panic!("{id}: {other:?}"),
            }
        }
        // serde_json writes an exponent with its sign.
        for (id, written) in [("1.0", "1.0"), ("1e3", "1e+3")] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let Incoming::Single(Message::Request { id: got, .. }) = classify(line.as_bytes())
            else {
                panic!("{id} refused");
            };
            assert_eq!(got.to_string(), written);
        }
        for id in ["1.5", "1E400"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            assert!(
                matches!(
                    classify(line.as_bytes()),
                    Incoming::Single(Message::Invalid { .. })
                ),
                "{id}"
            );
        }
    }

    #[test]
    fn an_id_written_as_an_integral_float_is_the_same_u64() {
        for (id, want) in [
            (json!(3), Some(3)),
            (serde_json::from_str("3.0").unwrap(), Some(3)),
            (serde_json::from_str("3e0").unwrap(), Some(3)),
            (json!(3.5), None),
            (json!(-1), None),
            (json!("3"), None),
            (serde_json::from_str("1e400").unwrap(), None),
        ] {
            assert_eq!(u64_id(&id), want, "{id}");
        }
    }

    #[test]
    fn error_objects_use_standard_codes() {
        let e = error_object(ErrorCode::MethodNotFound, "Method not found", None);
        assert_eq!(e, json!({"code": -32601, "message": "Method not found"}));
        let r = error_response(
            json!(null),
            error_object(ErrorCode::ParseError, "bad", None),
        );
        assert_eq!(r["error"]["code"], -32700);
    }
}
