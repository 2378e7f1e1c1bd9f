//! The transcript events of a call's input rounds (sampling, elicitation, roots): one shape in
//! every pairing of eras, `{"direction": "server_to_client", "message": <JSON-RPC request>}`
//! for what the server asked and `{"direction": "client_to_server", "message": <JSON-RPC
//! response or error response>}` for the client's answer, the response's `id` the request's.
//! An error the proxy answered itself (the client lacks the capability, no client, the client
//! did not answer in time or went away, its answer was unusable, a 2026-07-28 client's retry
//! gave no response for the request) is `{"direction": "proxy_to_server", ...}`: the client
//! never said it.
//!
//! - A legacy server's request keeps its own JSON-RPC id, whoever answers it (a legacy client's
//!   response, or a modern client's `inputResponses` entry after an `input_required` round).
//! - A modern server's input request (MCP 2026-07-28 "Basic: Patterns: Multi Round-Trip
//!   Requests") has no JSON-RPC id: put to a legacy client it is recorded with the id the proxy
//!   sent it under (`input-…`); passed through to a modern client, with its key in
//!   `inputRequests` as the id, and the client's `inputResponses` entry under the same key as
//!   the answer.
//!
//! A modern client's call that needs input spans several `tools/call` requests (the first
//! answered with an `InputRequiredResult`, the last with the envelope). Only the last is
//! recorded (an `input_required` answer is no envelope), so the events of every earlier round
//! are carried to it: the record of the call that completes holds the whole exchange in order,
//! as a legacy client's single call does. The earlier rounds take no `seq` (the transcript
//! writer numbers the records it is given, `TranscriptWriter::record`), so the exchange is one
//! record and one number, with no number left unused.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{Map, Value};

use super::multi_round::PARK_TTL;
use super::Core;
use crate::jsonrpc;
use crate::mrtr;
use crate::transcript;

/// Most rounds of modern servers whose events wait for the client's retry; the oldest is
/// dropped beyond it (its retry is then recorded without the earlier rounds' events).
const MAX_KEPT: usize = 1024;

/// The `server_to_client` event of a server's request for input (`id`, `method`, `params`).
pub(super) fn request_event(id: Value, method: &str, params: Option<Value>) -> Value {
    transcript::event("server_to_client", jsonrpc::request(id, method, params))
}

/// Who made the error a server's request for input was answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answerer {
    /// The client: its own error response.
    Client,
    /// The proxy: the request was refused or failed before or instead of a client's answer.
    Proxy,
}

/// The answer a server's request for input gets: the client's result, or an error object and
/// who made it.
pub(super) type InputAnswer = Result<Value, (Value, Answerer)>;

/// The event of the `answer` to request `id`: a response with the client's result, or an error
/// response with its error object, `client_to_server` when the client made it and
/// `proxy_to_server` when the proxy did.
pub(super) fn answer_event(id: Value, answer: &InputAnswer) -> Value {
    let (direction, response) = match answer {
        Ok(result) => ("client_to_server", jsonrpc::response(id, result.clone())),
        Err((error, by)) => {
            let direction = match by {
                Answerer::Client => "client_to_server",
                Answerer::Proxy => "proxy_to_server",
            };
            (direction, jsonrpc::error_response(id, error.clone()))
        }
    };
    transcript::event(direction, response)
}

/// The events of modern clients' calls that a modern server answered with its own
/// `InputRequiredResult`, by tool and the server's `requestState` ("" when it set none: the
/// field is optional, and then the next retry of the tool takes them, a guess when calls of
/// one tool overlap), until the client retries (at most [`PARK_TTL`], at most [`MAX_KEPT`] of
/// them).
#[derive(Default)]
pub(super) struct KeptRounds {
    by_state: Mutex<HashMap<String, (Instant, Vec<Value>)>>,
}

impl KeptRounds {
    fn key(tool: &str, state: &str) -> String {
        format!("{tool}\n{state}")
    }

    fn keep(&self, tool: &str, state: &str, events: Vec<Value>) {
        let mut kept = self.by_state.lock().unwrap();
        kept.retain(|_, (at, _)| at.elapsed() < PARK_TTL);
        if kept.len() >= MAX_KEPT {
            let oldest = kept.iter().min_by_key(|(_, (at, _))| *at);
            if let Some(key) = oldest.map(|(k, _)| k.clone()) {
                kept.remove(&key);
            }
        }
        kept.insert(Self::key(tool, state), (Instant::now(), events));
    }

    fn take(&self, tool: &str, state: &str) -> Vec<Value> {
        let mut kept = self.by_state.lock().unwrap();
        kept.remove(&Self::key(tool, state))
            .map(|(_, events)| events)
            .unwrap_or_default()
    }
}

impl Core {
    /// A modern server answered a modern client's call `key` of `tool` with its own
    /// `InputRequiredResult` `interim`: when recording, the call's events so far and the input
    /// requests (keys as ids) are kept under the server's `requestState` for the retry.
    pub(super) fn keep_round_events(&self, key: u64, tool: &str, interim: &Value) {
        if self.transcript.is_none() {
            return;
        }
        let state = interim.get("requestState").and_then(Value::as_str);
        let mut events = self.calls.take_events(key);
        for request in mrtr::input_requests(interim).unwrap_or_default() {
            let id = Value::from(request.key);
            events.push(request_event(id, &request.method, request.params));
        }
        self.multi_round
            .kept
            .keep(tool, state.unwrap_or(""), events);
    }

    /// A modern client's request `key` of `tool` to a modern server: when it is a retry (with
    /// the server's `state` or `responses`) and recording, the earlier rounds' events, then
    /// each response as the answer to the request of its key.
    pub(super) fn resume_round_events(
        &self,
        key: u64,
        tool: &str,
        state: Option<&str>,
        responses: &Map<String, Value>,
    ) {
        if self.transcript.is_none() || (state.is_none() && responses.is_empty()) {
            return;
        }
        let mut events = self.multi_round.kept.take(tool, state.unwrap_or(""));
        for (key, response) in responses {
            let id = Value::from(key.clone());
            events.push(answer_event(id, &Ok(response.clone())));
        }
        self.calls.carry_events(key, events);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_names_its_request_and_rounds_are_kept_by_tool_and_state() {
        let asked = request_event(json!(7), "roots/list", None);
        assert_eq!(asked["direction"], "server_to_client");
        assert_eq!(asked["message"]["method"], "roots/list");
        let theirs = answer_event(json!(7), &Err((json!({"code": -1}), Answerer::Client)));
        assert_eq!(theirs["direction"], "client_to_server");
        let refused = answer_event(json!(7), &Err((json!({"code": -32601}), Answerer::Proxy)));
        assert_eq!(refused["direction"], "proxy_to_server");
        assert_eq!(refused["message"]["id"], 7);
        assert_eq!(refused["message"]["error"]["code"], -32601);
        let kept = KeptRounds::default();
        kept.keep("t", "s1", vec![asked.clone()]);
        assert!(kept.take("other", "s1").is_empty(), "another tool's state");
        assert_eq!(kept.take("t", "s1"), vec![asked]);
        assert!(kept.take("t", "s1").is_empty(), "taken once");
    }
}
