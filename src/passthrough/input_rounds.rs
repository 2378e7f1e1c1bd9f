//! A 2026-07-28 server's `InputRequiredResult` to a passthrough request of a 2025 client (MCP
//! 2026-07-28 "Basic: Patterns: Multi Round-Trip Requests"), bridged as a `tools/call`'s is
//! (`src/proxy/multi_round.rs`, table in [`crate::mrtr`]):
//!
//! - `prompts/get` and `resources/read` (the passthrough requests that revision lets a server
//!   answer `input_required`, [`mrtr::allows_input_required`]): each input request is put to the
//!   client as an ordinary server-to-client request (`elicitation/create`,
//!   `sampling/createMessage`, `roots/list`) through its session ([`ClientInput`]), and the
//!   request is sent again to the same server with the answers as `inputResponses` and the
//!   server's `requestState` ([`mrtr::retry_params`]), at most [`MAX_ROUNDS`] times. A client
//!   that did not declare the capability at `initialize` is not asked: the request fails with
//!   -32603 naming the input request and the capability ([`needs_input`]);
//! - any other request (`completion/complete`, `resources/subscribe`, ...): the server broke
//!   that rule, and a 2025 client cannot read the result, so it gets -32603 naming the server
//!   and the method instead ([`misplaced`]).
//!
//! A 2026-07-28 client gets the `InputRequiredResult` unchanged, and its retry (with the
//! server's `requestState`) is routed as the first request was: by prompt name to the same
//! server, by URI to the server that answered.

use std::future::Future;
use std::pin::Pin;

use jsonrpc_core::ErrorCode;
use serde_json::{json, Map, Value};

use super::Upstream;
use crate::downstream::Downstream;
use crate::jsonrpc;
use crate::mrtr::{self, InputRequest, MAX_ROUNDS};

/// The answer to one input request: the client's result, or the JSON-RPC error object it (or
/// the proxy, for a client that cannot be asked) gave instead.
pub type InputFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, Value>> + Send + 'a>>;

/// Who answers a 2026-07-28 server's input requests for a 2025 client: its session.
pub trait ClientInput: Send + Sync {
    /// Puts `request`, of server `server`, to the client (refused without asking, with a
    /// -32601 error object naming the capability, when the client did not declare it).
    fn answer<'a>(&'a self, server: &'a str, request: &'a InputRequest) -> InputFuture<'a>;
}

/// The answer a 2025 client gets to `method` with `params`, which `ds` answered `first` (see
/// the module documentation). Anything but an `InputRequiredResult` from a 2026-07-28 server
/// to a 2025 client is `first` itself.
pub async fn fulfil(
    up: &Upstream<'_>,
    ds: &Downstream,
    method: &str,
    params: &Value,
    first: Result<Value, Value>,
) -> Result<Value, Value> {
    if !up.legacy_client || ds.speaks_modern() != Some(true) {
        return first;
    }
    let original = params.as_object().cloned().unwrap_or_default();
    let mut answer = first;
    for _round in 0..=MAX_ROUNDS {
        let interim = match answer {
            Ok(result) if mrtr::is_input_required(&result) => result,
            other => return other,
        };
        let requests = mrtr::input_requests(&interim)
            .map_err(|why| needs_input(ds.name(), method, &why, None))?;
        let responses = match &up.client_input {
            Some(client) => {
                let ask = |request: InputRequest| async move {
                    let answer = client.answer(ds.name(), &request).await;
                    answer.map_err(|error| (request.method, error))
                };
                mrtr::collect_responses(requests, ask).await
            }
            None if requests.is_empty() => Ok(Map::new()),
            None => Err((requests[0].method.clone(), no_client())),
        };
        let responses = responses.map_err(|(asked, error)| {
            let why = error_message(&error);
            needs_input(ds.name(), method, &format!("`{asked}`: {why}"), Some(error))
        })?;
        let state = interim.get("requestState").and_then(Value::as_str);
        let retry = mrtr::retry_params(&original, responses, state);
        answer = up.ask(ds, method, &retry).await;
    }
    let why = format!("still asked for input after {MAX_ROUNDS} rounds");
    Err(needs_input(ds.name(), method, &why, None))
}

/// The -32603 error object for `method`, which `server` could not answer without input the
/// client did not give: `why` names what went wrong, `cause` is the error the client (or the
/// proxy, asking for it) gave, in `data.cause`.
pub fn needs_input(server: &str, method: &str, why: &str, cause: Option<Value>) -> Value {
    let mut data = json!({ "server": server });
    if let Some(cause) = cause {
        data["cause"] = cause;
    }
    jsonrpc::error_object(
        ErrorCode::InternalError,
        format!("server '{server}' needs input from the client to answer `{method}`: {why}"),
        Some(data),
    )
}

/// For a 2025 client, the -32603 error object in place of an `InputRequiredResult` that
/// `server` answered `method` with although MCP 2026-07-28 allows one only for
/// [`mrtr::INPUT_REQUIRED_METHODS`]; `None` for any other result, or when it may.
pub fn misplaced(server: &str, method: &str, result: &Value) -> Option<Value> {
    if !mrtr::is_input_required(result) || mrtr::allows_input_required(method) {
        return None;
    }
    let why = format!(
        "it answered with an InputRequiredResult, which MCP 2026-07-28 allows only for {}",
        mrtr::INPUT_REQUIRED_METHODS.join(", ")
    );
    Some(needs_input(server, method, &why, None))
}

/// The error when no client session can be asked (a request the proxy sends on its own).
fn no_client() -> Value {
    json!({"code": -32601, "message": "no client session can be asked"})
}

/// The `message` of a JSON-RPC error object (its whole text when it has none).
fn error_message(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(message) => message.to_owned(),
        None => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_misplaced_input_required_result_is_an_error() {
        let interim = json!({"resultType": "input_required", "requestState": "s"});
        let e = misplaced("m", "completion/complete", &interim).unwrap();
        assert_eq!(e["code"], -32603);
        let message = e["message"].as_str().unwrap();
        assert!(message.contains("server 'm'"), "{message}");
        assert!(message.contains("`completion/complete`"), "{message}");
        assert!(message.contains("resources/read"), "{message}");
        assert_eq!(e["data"]["server"], "m");
        assert!(misplaced("m", "resources/read", &interim).is_none());
        assert!(misplaced("m", "prompts/get", &interim).is_none());
        let complete = json!({"resultType": "complete", "completion": {"values": []}});
        assert!(misplaced("m", "completion/complete", &complete).is_none());
    }

    #[test]
    fn a_missing_input_names_the_request_and_keeps_the_cause() {
        let cause = mrtr::refused("elicitation/create", "no `elicitation`");
        let e = needs_input("m", "prompts/get", "`elicitation/create`: no", Some(cause));
        assert_eq!(e["code"], -32603);
        assert_eq!(e["data"]["cause"]["code"], -32601);
        let message = e["message"].as_str().unwrap();
        assert!(message.contains("`prompts/get`"), "{message}");
        assert!(message.contains("elicitation/create"), "{message}");
        assert_eq!(error_message(&json!({"code": 1})), r#"{"code":1}"#);
    }
}
