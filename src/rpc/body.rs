//! A response's `result`, parsed or kept as the raw line ([`ResultBody`]): a large plain
//! success response is delivered unparsed, to be parsed only as far as the budget needs (the
//! one-pass large-result path).

use std::sync::Arc;

use serde_json::Value;

use super::CallError;
use crate::transport::backpressure::{Hold, OutputGate};
use crate::wire::head::response_head;
use crate::wire::jsonrpc::{self, Message};

/// Lines at least this long that look like plain successful responses (see
/// [`response_head`]) are delivered unparsed ([`ResultBody::Raw`]).
pub const RAW_RESULT_MIN_BYTES: usize = 64 * 1024;

/// A response's `result`: parsed, or (for a large line) the whole line, not yet parsed past
/// its `result` key, to be parsed only as far as the budget needs.
#[derive(Debug, Clone, PartialEq)]
pub enum ResultBody {
    /// The parsed `result`.
    Value(Value),
    /// The unparsed response.
    Raw(RawResponse),
}

impl ResultBody {
    /// The parsed `result` or error object; parses a raw response in full (off the async
    /// runtime when it is large). `Err(CallError::Invalid)` when a raw line turns out not to be
    /// valid JSON or not a valid response.
    pub async fn into_result(self) -> Result<Result<Value, Value>, CallError> {
        match self {
            ResultBody::Value(v) => Ok(Ok(v)),
            ResultBody::Raw(raw) => {
                let len = raw.len();
                crate::runtime::cpu_bound(len, move || raw.parse()).await
            }
        }
    }
}

/// A large response line whose head (the members before `result`) says it is a plain success
/// response; the rest has not been parsed or validated. While it lives, its bytes may be
/// counted in the client's output gate ([`RawResponse::hold_in`]), so a server's reader stops
/// at the gate's mark while answers wait to be mapped (a clone is not counted; equality is the
/// line's).
#[derive(Debug)]
pub struct RawResponse {
    line: String,
    hold: Option<Hold>,
}

impl Clone for RawResponse {
    fn clone(&self) -> Self {
        RawResponse {
            line: self.line.clone(),
            hold: None,
        }
    }
}

impl PartialEq for RawResponse {
    fn eq(&self, other: &Self) -> bool {
        self.line == other.line
    }
}

impl RawResponse {
    /// Counts the line's bytes in `gate` until this response is dropped (or its line given up).
    pub fn hold_in(&mut self, gate: &Arc<OutputGate>) {
        self.hold = Some(gate.hold(self.line.len()));
    }

    /// The whole line's text.
    pub fn as_str(&self) -> &str {
        &self.line
    }

    /// Length of the line in bytes.
    pub fn len(&self) -> usize {
        self.line.len()
    }

    /// The whole line, given up.
    pub fn into_line(self) -> String {
        self.line
    }

    /// Parses the whole line: the `result` (`Ok`) or the error object (`Err`) of the response;
    /// `CallError::Invalid` when it is not valid JSON or not a response.
    pub fn parse(&self) -> Result<Result<Value, Value>, CallError> {
        let value: Value = serde_json::from_str(&self.line)
            .map_err(|e| CallError::Invalid(format!("the response is not valid JSON: {e}")))?;
        match jsonrpc::classify_value(value) {
            Message::Response { outcome, .. } => Ok(outcome),
            Message::Invalid { reason, .. } => Err(CallError::Invalid(format!(
                "the response is not a valid JSON-RPC response: {reason}"
            ))),
            _ => Err(CallError::Invalid(
                "the answer is not a JSON-RPC response".into(),
            )),
        }
    }
}

/// A line of at least `min_bytes` (normally [`RAW_RESULT_MIN_BYTES`]; 0 while a request wants
/// its answer unparsed whatever its size) that starts like a plain successful JSON-RPC
/// response: its id and the line, unparsed past the head. Any other line is given back, to be
/// classified as usual.
pub fn fast_response(line: Vec<u8>, min_bytes: usize) -> Result<(Value, RawResponse), Vec<u8>> {
    if line.len() < min_bytes {
        return Err(line);
    }
    let line = match String::from_utf8(line) {
        Ok(l) => l,
        Err(e) => return Err(e.into_bytes()),
    };
    match response_head(&line) {
        Some(id) => Ok((id, RawResponse { line, hold: None })),
        None => Err(line.into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fast_response_only_for_large_plain_responses() {
        let pad = "x".repeat(RAW_RESULT_MIN_BYTES);
        let line = |s: String| s.into_bytes();
        let ok = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{pad}"}}]}}}}"#
        );
        let (id, raw) = fast_response(line(ok.clone()), RAW_RESULT_MIN_BYTES).unwrap();
        assert_eq!(id, json!(7));
        assert_eq!(
            raw.parse().unwrap().unwrap(),
            serde_json::from_str::<Value>(&ok).unwrap()["result"]
        );
        let (id, _) = fast_response(
            line(format!(
                r#" {{ "id" : "a" , "jsonrpc":"2.0", "result":"{pad}"}}"#
            )),
            RAW_RESULT_MIN_BYTES,
        )
        .unwrap();
        assert_eq!(id, json!("a"));
        // The TypeScript SDK's order: result first.
        for (text, want) in [
            (
                format!(r#"{{"result":"{pad}","jsonrpc":"2.0","id":7}}"#),
                json!(7),
            ),
            (
                format!(r#"{{"result":"{pad}" , "id" : "a b" , "jsonrpc" : "2.0" }} "#),
                json!("a b"),
            ),
            (
                format!(
                    r#"{{"result":{{"p":"{pad}","x":{{"jsonrpc":"2.0","id":1}}}},"jsonrpc":"2.0","id":-3}}"#
                ),
                json!(-3),
            ),
        ] {
            let (id, raw) = fast_response(line(text.clone()), RAW_RESULT_MIN_BYTES).unwrap();
            assert_eq!(id, want, "{text}");
            assert!(raw.parse().unwrap().is_ok());
        }
        let rejected = [
            format!(r#"{{"jsonrpc":"2.0","id":7,"error":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"m","result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","jsonrpc":"2.0","id":7,"result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"id":8,"result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"1.0","id":7,"result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":null,"result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","i\"d":7,"result":"{pad}"}}"#),
            format!(r#"[{{"jsonrpc":"2.0","id":7,"result":"{pad}"}}]"#),
            format!(r#"{{"result":"{pad}","id":7}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0"}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0","id":7,"x":1}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0","id":"a\"b"}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0","id":null}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0","id":1.5}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0","jsonrpc":"2.0"}}"#),
            format!(r#"{{"x":1,"result":"{pad}","jsonrpc":"2.0","id":7}}"#),
            r#"{"jsonrpc":"2.0","id":7,"result":1}"#.to_owned(),
        ];
        for text in rejected {
            assert_eq!(
                fast_response(line(text.clone()), RAW_RESULT_MIN_BYTES).unwrap_err(),
                text.into_bytes()
            );
        }
    }

    #[test]
    fn raw_responses_that_are_not_valid_json_are_invalid_answers() {
        let pad = "x".repeat(RAW_RESULT_MIN_BYTES);
        for text in [
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":["{pad}", tru]}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":"{pad}"}} x"#),
        ] {
            let (_, raw) = fast_response(text.into_bytes(), RAW_RESULT_MIN_BYTES).unwrap();
            assert!(
                matches!(raw.parse(), Err(CallError::Invalid(ref d)) if d.contains("not valid JSON")),
                "{:?}",
                raw.parse()
            );
        }
        let both = format!(r#"{{"jsonrpc":"2.0","id":7,"result":"{pad}","error":{{}}}}"#);
        let (_, raw) = fast_response(both.into_bytes(), RAW_RESULT_MIN_BYTES).unwrap();
        assert!(matches!(raw.parse(), Err(CallError::Invalid(_))));
    }
}
