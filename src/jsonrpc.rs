//! JSON-RPC 2.0 wire messages and newline-delimited framing with a maximum line length.
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
//! Parsing is pure ([`classify`]); [`LineReader`] is the only I/O here, and it reads from any
//! `AsyncBufRead`.

use std::io;

use jsonrpc_core::ErrorCode;
use serde_json::{Map, Value};
use std::future::Future;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;

/// How much of an over-long line is kept (bytes), to find its id for the error answer.
pub const TOO_LONG_HEAD_BYTES: usize = 4096;

/// One frame read from a newline-delimited stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A whole line without its `\n` (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line longer than the maximum: it was read and discarded, keeping only its first
    /// [`TOO_LONG_HEAD_BYTES`] bytes. `len` is its full length in bytes.
    TooLong {
        /// Full length of the line in bytes (without the newline).
        len: usize,
        /// Its first bytes.
        head: Vec<u8>,
    },
}

/// Reads newline-delimited frames with a maximum line length, never holding more than
/// `max_line_bytes` (+ one read buffer) of a line in memory. Empty lines are skipped.
///
/// Cancel safety: all partial state lives in the reader, so dropping a pending
/// [`LineReader::next_frame`] future loses nothing.
pub struct LineReader<R> {
    inner: R,
    max_line_bytes: usize,
    /// The current line so far (or its head while discarding).
    buf: Vec<u8>,
    /// Bytes of the current line read so far, kept or discarded.
    line_len: usize,
    /// Whether the current line has gone over the maximum.
    discarding: bool,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Wraps `inner`; lines longer than `max_line_bytes` bytes become [`Frame::TooLong`].
    pub fn new(inner: R, max_line_bytes: usize) -> Self {
        LineReader {
            inner,
            max_line_bytes,
            buf: Vec::new(),
            line_len: 0,
            discarding: false,
        }
    }

    /// The next frame; `Ok(None)` at a clean end of stream. A last line without a trailing
    /// newline is returned as a frame. Errors are the underlying reader's.
    pub async fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                return Ok(self.finish_frame());
            }
            let newline = memchr::memchr(b'\n', available);
            let chunk = &available[..newline.unwrap_or(available.len())];
            let new_len = self.line_len + chunk.len();
            if !self.discarding && new_len > self.max_line_bytes {
                self.discarding = true;
                self.buf.truncate(TOO_LONG_HEAD_BYTES);
            }
            if self.discarding {
                let room = TOO_LONG_HEAD_BYTES.saturating_sub(self.buf.len());
                self.buf.extend_from_slice(&chunk[..room.min(chunk.len())]);
            } else {
                self.buf.extend_from_slice(chunk);
            }
            self.line_len = new_len;
            let consumed = chunk.len() + usize::from(newline.is_some());
            self.inner.consume(consumed);
            if newline.is_some() {
                if let Some(frame) = self.finish_frame() {
                    return Ok(Some(frame));
                }
            }
        }
    }

    /// Ends the current line: `None` for an empty line.
    fn finish_frame(&mut self) -> Option<Frame> {
        let len = std::mem::take(&mut self.line_len);
        if std::mem::take(&mut self.discarding) {
            return Some(Frame::TooLong {
                len,
                head: std::mem::take(&mut self.buf),
            });
        }
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        (!line.is_empty()).then_some(Frame::Line(line))
    }
}

/// Writes queued lines (each with its `\n`) to `output` in queue order, batching whatever is
/// queued and flushing once per batch, so a burst costs one flush. Ends, after a final flush
/// and shutdown of `output`, when every sender is gone or `close` resolves; a write error ends
/// it at once and is returned.
pub async fn write_lines<W, C>(
    output: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    close: C,
) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
    C: Future<Output = ()>,
{
    let mut out = BufWriter::with_capacity(256 * 1024, output);
    tokio::pin!(close);
    loop {
        let line = tokio::select! {
            biased;
            _ = &mut close => break,
            line = rx.recv() => match line { Some(l) => l, None => break },
        };
        out.write_all(&line).await?;
        while let Ok(line) = rx.try_recv() {
            out.write_all(&line).await?;
        }
        out.flush().await?;
    }
    out.flush().await?;
    out.shutdown().await
}

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

/// Whether `id` is a valid MCP request id: a string or an integer ("Basic: Requests").
pub fn is_valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// Parses and classifies one line. Pure; never panics.
pub fn classify(line: &[u8]) -> Incoming {
    match serde_json::from_slice::<Value>(line) {
        Err(err) => Incoming::ParseError(err.to_string()),
        Ok(Value::Array(items)) if items.is_empty() => Incoming::Single(Message::Invalid {
            id: Value::Null,
            reason: "empty batch".into(),
        }),
        Ok(Value::Array(items)) => Incoming::Batch(items.into_iter().map(classify_value).collect()),
        Ok(value) => Incoming::Single(classify_value(value)),
    }
}

/// Classifies one already-parsed JSON value as a JSON-RPC 2.0 message.
pub fn classify_value(value: Value) -> Message {
    let Value::Object(mut obj) = value else {
        return invalid(Value::Null, "a JSON-RPC message must be a JSON object");
    };
    let id = obj.remove("id");
    let id_for_error = id.clone().filter(is_valid_id).unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(id_for_error, "`jsonrpc` must be \"2.0\"");
    }
    if let Some(method) = obj.remove("method") {
        let Value::String(method) = method else {
            return invalid(id_for_error, "`method` must be a string");
        };
        let params = obj.remove("params");
        if let Some(p) = &params {
            if !(p.is_object() || p.is_array()) {
                return invalid(id_for_error, "`params` must be an object or an array");
            }
        }
        return match id {
            None => Message::Notification { method, params },
            Some(id) if is_valid_id(&id) => Message::Request { id, method, params },
            Some(_) => invalid(Value::Null, "`id` must be a string or an integer"),
        };
    }
    let Some(id) = id else {
        return invalid(Value::Null, "a message needs a `method` or an `id`");
    };
    match (obj.remove("result"), obj.remove("error")) {
        (Some(result), None) => Message::Response {
            id,
            outcome: Ok(result),
        },
        (None, Some(error)) if error.is_object() => Message::Response {
            id,
            outcome: Err(error),
        },
        _ => invalid(
            id_for_error,
            "a response needs exactly one of `result` and an `error` object",
        ),
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
/// serialized from borrowed parts (no intermediate [`Value`]).
pub fn request_line(id: &Value, method: &str, params: Option<&Value>) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Request<'a> {
        jsonrpc: &'static str,
        id: &'a Value,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a Value>,
    }
    let mut line = serde_json::to_vec(&Request {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
    .expect("a request always serializes");
    crate::exact_args::splice(&mut line, params);
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

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut reader = LineReader::new(tokio::io::BufReader::with_capacity(7, input), max);
        let mut out = Vec::new();
        while let Some(f) = reader.next_frame().await.unwrap() {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_strips_cr_and_skips_blank() {
        let got = frames(b"{\"a\":1}\r\n\n\nsecond line here\nlast", 100).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::Line(b"second line here".to_vec()),
                Frame::Line(b"last".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn over_long_line_is_reported_and_the_next_one_read() {
        let long = format!("{{\"id\":7,\"x\":\"{}\"}}", "y".repeat(50));
        let input = format!("{long}\nok\n");
        let got = frames(input.as_bytes(), 20).await;
        assert_eq!(got.len(), 2);
        match &got[0] {
            Frame::TooLong { len, head } => {
                assert_eq!(*len, long.len());
                assert_eq!(id_from_head(head), Some(json!(7)));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(got[1], Frame::Line(b"ok".to_vec()));
    }

    #[tokio::test]
    async fn line_of_exactly_max_is_accepted() {
        let got = frames(b"12345\n123456\n", 5).await;
        assert_eq!(got[0], Frame::Line(b"12345".to_vec()));
        assert!(matches!(got[1], Frame::TooLong { len: 6, .. }));
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
