//! What a downstream `tools/call` produced ([`Outcome`]) and how it becomes an envelope
//! ([`map_outcome`]), plus the `CallToolResult` the proxy answers with ([`call_tool_result`]).
//!
//! Source of the rules: the project's issue 3 mapping contract. Shapes of `CallToolResult` and
//! its content blocks (`text`, `image`, `audio`, `resource_link`, `resource`): MCP specification
//! 2025-06-18, "Tools".
//!
//! # Success path
//! Rows come from `structuredContent` if present (and not null), else from the content blocks in
//! order, and are filled by [`fill_rows`] within the tool's character budget:
//!
//! * a JSON value: an array gives one row per item (objects as themselves, any other item as
//!   `{"value": item}`); an object with exactly one field that is a non-empty array whose items
//!   are all objects gives first a row of its other fields (if any), then one row per item; any
//!   other object is one row; any other value is one row `{"value": V}`;
//! * a `text` block whose trimmed text starts with `{` or `[` and whose whole text parses as a
//!   JSON object or array follows the JSON rule;
//! * any other `text` block gives one [`Row::Line`] per line (split on `\n`, one trailing `\r`
//!   dropped, the empty string after a final newline dropped; an empty text gives no rows);
//! * `image` / `audio` blocks (and `resource` blocks carrying a `blob`) are passed through
//!   untouched into [`Mapped::media`] and are not rows; with [`MediaMode::Describe`] each is
//!   replaced by a row `{"type", "mimeType", "bytes"}` (a blob resource adds its `uri`), `bytes`
//!   being the decoded size computed from the base64 length and padding;
//! * `resource_link` gives a row `{"type":"resource_link","uri","name"}` (plus `mimeType` when
//!   given); an embedded text `resource` gives a row `{"uri"}` then its text as a text block;
//! * anything else (unknown block types, malformed blocks, blocks that are not objects) gives one
//!   row with the block as an object (`{"value": block}` when it is not an object), so nothing
//!   is silently lost.
//!
//! When `structuredContent` is present the `text`, `resource_link` and `resource` (text)
//! blocks are not read (the specification has them carry the same data serialized); media
//! blocks are still passed through, or described after the structured rows.
//!
//! # Error path
//! See [`ErrorType`] for the vocabulary and which outcome maps to which type. Messages longer
//! than the budget are cut by the rule documented on [`crate::message_cut::cut_message`].
//!
//! # Cost
//! Rows borrow from the outcome's `Value` and are produced lazily, so a huge result costs time
//! proportional to its size (one scan, to count omitted rows) but allocates only what the budget
//! lets through. Rows the proxy has to build (`{"value": V}`, a header row, a description)
//! copy strings only up to `char_budget + 1` characters: such a row already exceeds the budget,
//! so [`fill_rows`] leaves it out and its text never appears.
//!
//! This module does no I/O.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::budget::{Budget, LongRows, TextRows};
pub use crate::config::MediaMode;
use crate::envelope::{fill_rows_within, is_retryable, json_kind, Envelope, Row, Status};
use crate::message_cut::prefix_end;
use crate::text_rows::{plain_text_rows, TextRules};

mod remote;

/// What came back from a downstream `tools/call`, exactly as received (serialized into
/// transcripts, so replay can recompute the envelope).
///
/// Serialized internally tagged by `kind` in snake_case, e.g.
/// `{"kind":"timeout","timeout_ms":10000}`, `{"kind":"no_such_tool"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The JSON-RPC `result` (a `CallToolResult`, unvalidated).
    Result {
        /// The `result` member as received.
        result: Value,
    },
    /// The JSON-RPC `error` object as received (`{"code", "message", "data"?}`, unvalidated).
    RpcError {
        /// The `error` member as received.
        error: Value,
    },
    /// No response within the tool's timeout.
    Timeout {
        /// The timeout that elapsed, in milliseconds.
        timeout_ms: u64,
    },
    /// The server exited or closed its pipe during the call.
    ServerExited {
        /// What happened, in plain words (exit status, signal, "stdout closed").
        detail: String,
    },
    /// A response that is not valid JSON-RPC (or too long).
    InvalidResponse {
        /// What was wrong with it, in plain words.
        detail: String,
    },
    /// The server is not running (failed to start, gave up restarting).
    Unavailable {
        /// Why, in plain words.
        reason: String,
    },
    /// No tool of that name (answered by the proxy itself).
    NoSuchTool,
    /// A remote server answered the call's HTTP request with an error status (401, 403, 429,
    /// 503, ...); see [`remote::map_http_status`] for the mapping.
    HttpStatus {
        /// The HTTP status code.
        status: u16,
        /// The `Retry-After` header as sent (seconds or an HTTP date), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<String>,
        /// What it means, in plain words; credentials are named by key or environment
        /// variable, never by value.
        detail: String,
    },
    /// The connection to a remote server failed during the call (refused, reset, closed).
    ConnectionFailed {
        /// What happened, in plain words.
        detail: String,
    },
    /// A cassette (`serve --cassette`) has no recorded answer for the call; `detail` names
    /// the closest recorded call (answered by the proxy itself; maps to `not_found`).
    NotRecorded {
        /// Why, in plain words.
        detail: String,
    },
    /// A page of the proxy's page tool: the rows of the earlier call `of_call_id` (same
    /// session, same transcript) from row `first_row` on. Replay finds that call's record.
    Page {
        /// The `call_id` of the truncated call paged.
        of_call_id: String,
        /// The page's first row (0-based, among that result's rows).
        first_row: u64,
    },
    /// The page tool's error answer (bad arguments, no rows kept for the `call_id`).
    PageError {
        /// The envelope's error type (`invalid_argument`, `not_found`).
        error_type: String,
        /// The message.
        message: String,
    },
}

/// Everything [`map_outcome`] needs besides the outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappingContext<'a> {
    /// The envelope's `call_id` (the request's JSON-RPC id as a string).
    pub call_id: &'a str,
    /// The tool name the client used; the envelope's `tool`.
    pub tool: &'a str,
    /// The downstream server's name in the config; `""` for [`Outcome::NoSuchTool`].
    pub server: &'a str,
    /// The tool's budget for `content`: characters, tokens or both.
    pub budget: Budget,
    /// How media blocks are handled.
    pub media: MediaMode,
    /// How plain text becomes rows (`text_rows`) and what happens to rows longer than the
    /// budget (`long_rows`).
    pub text: TextShape,
}

/// The `text_rows` and `long_rows` settings of a tool (see [`crate::text_rows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextShape {
    /// Lines or blocks.
    pub text_rows: TextRows,
    /// Split or keep rows longer than the budget.
    pub long_rows: LongRows,
}

impl MappingContext<'_> {
    fn text_rules(&self) -> TextRules {
        TextRules {
            text_rows: self.text.text_rows,
            long_rows: self.text.long_rows,
            budget: self.budget,
        }
    }
}

/// The result of [`map_outcome`]: the envelope and the media blocks passed through.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    /// The six-key envelope.
    pub envelope: Envelope,
    /// `image` / `audio` blocks and blob `resource` blocks passed through untouched, in the
    /// order received; empty on the error path and with [`MediaMode::Describe`].
    pub media: Vec<Value>,
    /// The downstream result's `_meta`, kept on our CallToolResult (MCP 2025-11-25 "Basic:
    /// `_meta`"); `None` when it had none.
    pub meta: Option<Value>,
}

impl Mapped {
    /// The `CallToolResult` as a JSON value (see [`call_tool_result`]).
    pub fn into_call_tool_result(self) -> Value {
        call_tool_result(&self)
    }
}

/// The error types of the envelope's error path (issue 3), retryable ones first.
///
/// | type | from |
/// |---|---|
/// | `timeout` | [`Outcome::Timeout`]; JSON-RPC error -32001 |
/// | `rate_limit` | [`Outcome::HttpStatus`] 429; `isError` result with `structuredContent.error.type == "rate_limit"`; JSON-RPC error whose `data.type` or `data.error.type` is `"rate_limit"` |
/// | `server_error` | [`Outcome::ServerExited`], [`Outcome::InvalidResponse`], [`Outcome::ConnectionFailed`], any other [`Outcome::HttpStatus`]; JSON-RPC -32603, -32000 and any code not listed here; a result that is not a valid `CallToolResult` |
/// | `overloaded` | [`Outcome::HttpStatus`] 503; like `rate_limit`, with `"overloaded"` |
/// | `not_found` | [`Outcome::NoSuchTool`], [`Outcome::NotRecorded`]; JSON-RPC -32601, -32002 |
/// | `invalid_argument` | JSON-RPC -32602; `isError` result whose text starts `MCP error -32602` |
/// | `unavailable` | [`Outcome::Unavailable`]; [`Outcome::HttpStatus`] 401 and 403 |
/// | `tool_error` | any other `isError: true` result |
///
/// Retryable (see [`is_retryable`]): `timeout`, `rate_limit`, `server_error`, `overloaded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorType {
    /// `timeout`: no answer in time (retryable).
    Timeout,
    /// `rate_limit`: the tool said it is rate limited (retryable).
    RateLimit,
    /// `server_error`: the server failed or answered nonsense (retryable).
    ServerError,
    /// `overloaded`: the tool said it is overloaded (retryable).
    Overloaded,
    /// `not_found`: no such tool or method.
    NotFound,
    /// `invalid_argument`: the arguments were rejected.
    InvalidArgument,
    /// `unavailable`: the server is not running.
    Unavailable,
    /// `tool_error`: the tool ran and reported a failure (`isError: true`).
    ToolError,
}

impl ErrorType {
    /// Every error type, in declaration order (retryable first).
    pub const ALL: [ErrorType; 8] = [
        ErrorType::Timeout,
        ErrorType::RateLimit,
        ErrorType::ServerError,
        ErrorType::Overloaded,
        ErrorType::NotFound,
        ErrorType::InvalidArgument,
        ErrorType::Unavailable,
        ErrorType::ToolError,
    ];

    /// The wire spelling, snake_case: `timeout`, `rate_limit`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::Timeout => "timeout",
            ErrorType::RateLimit => "rate_limit",
            ErrorType::ServerError => "server_error",
            ErrorType::Overloaded => "overloaded",
            ErrorType::NotFound => "not_found",
            ErrorType::InvalidArgument => "invalid_argument",
            ErrorType::Unavailable => "unavailable",
            ErrorType::ToolError => "tool_error",
        }
    }

    /// The type with this exact (case-sensitive) wire spelling.
    pub fn parse(s: &str) -> Option<ErrorType> {
        ErrorType::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Whether a retry could plausibly succeed ([`is_retryable`] of [`ErrorType::as_str`]).
    pub fn is_retryable(self) -> bool {
        is_retryable(self.as_str())
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Maps an outcome to its envelope and passed-through media (issue 3 mapping contract; see the
/// module documentation for every rule). Never panics, whatever the `Value`s hold.
pub fn map_outcome(outcome: &Outcome, ctx: &MappingContext<'_>) -> Mapped {
    let server = ctx.server;
    let err = |t: ErrorType, pieces: &[&str]| error_mapped(ctx, t, pieces.iter().copied());
    match outcome {
        Outcome::Result { result } => map_result(result, ctx),
        Outcome::RpcError { error } => map_rpc_error(error, ctx),
        Outcome::Timeout { timeout_ms } => err(
            ErrorType::Timeout,
            &[
                &format!("no response from server '{server}' within "),
                &format_duration_ms(*timeout_ms),
            ],
        ),
        Outcome::ServerExited { detail } => err(
            ErrorType::ServerError,
            &[
                &format!("server '{server}' exited during the call: "),
                detail,
            ],
        ),
        Outcome::InvalidResponse { detail } => err(
            ErrorType::ServerError,
            &[
                &format!("server '{server}' sent an invalid response: "),
                detail,
            ],
        ),
        Outcome::Unavailable { reason } => err(
            ErrorType::Unavailable,
            &[&format!("server '{server}' is unavailable: "), reason],
        ),
        Outcome::NoSuchTool => err(
            ErrorType::NotFound,
            &[&format!("no tool named '{}'", ctx.tool)],
        ),
        Outcome::HttpStatus {
            status,
            retry_after,
            detail,
        } => remote::map_http_status(ctx, *status, retry_after.as_deref(), detail),
        Outcome::ConnectionFailed { detail } => err(
            ErrorType::ServerError,
            &[
                &format!("the connection to server '{server}' failed during the call: "),
                detail,
            ],
        ),
        Outcome::NotRecorded { detail } => err(ErrorType::NotFound, &[detail]),
        Outcome::Page { of_call_id, .. } => err(
            ErrorType::NotFound,
            &[&format!(
                "the result of call '{of_call_id}' is not in this transcript"
            )],
        ),
        Outcome::PageError {
            error_type,
            message,
        } => Mapped {
            envelope: Envelope::error(ctx.call_id, ctx.tool, error_type, message),
            media: Vec::new(),
            meta: None,
        },
    }
}

/// The `CallToolResult` the proxy answers with (MCP specification 2025-06-18, "Tools"):
/// `{"content": [{"type":"text","text":"<envelope as compact JSON>"}, ...media],
/// "structuredContent": <envelope>, "isError": <status == "error">}`.
pub fn call_tool_result(mapped: &Mapped) -> Value {
    serde_json::to_value(CallToolResultView(mapped)).expect("a CallToolResult always serializes")
}

impl Mapped {
    /// Serializes `{"jsonrpc":"2.0","id":<id>,"result":<CallToolResult>}` (see
    /// [`call_tool_result`]) straight to compact JSON text, without building a
    /// [`serde_json::Value`] tree first: the per-call answer path (issue 6).
    pub fn response_json(&self, id: &Value) -> Vec<u8> {
        #[derive(Serialize)]
        struct Response<'a> {
            jsonrpc: &'static str,
            id: &'a Value,
            result: CallToolResultView<'a>,
        }
        serde_json::to_vec(&Response {
            jsonrpc: "2.0",
            id,
            result: CallToolResultView(self),
        })
        .expect("a response always serializes")
    }
}

/// Borrowed view of a [`Mapped`] that serializes as our `CallToolResult` (see
/// [`call_tool_result`]).
struct CallToolResultView<'a>(&'a Mapped);

impl Serialize for CallToolResultView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeSeq, SerializeStruct};
        struct Content<'a>(&'a Mapped);
        impl Serialize for Content<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                #[derive(Serialize)]
                struct TextBlock {
                    r#type: &'static str,
                    text: String,
                }
                let mut seq = serializer.serialize_seq(Some(1 + self.0.media.len()))?;
                seq.serialize_element(&TextBlock {
                    r#type: "text",
                    text: self.0.envelope.to_json(),
                })?;
                for block in &self.0.media {
                    seq.serialize_element(block)?;
                }
                seq.end()
            }
        }
        let envelope = &self.0.envelope;
        let mut result = serializer.serialize_struct("CallToolResult", 4)?;
        result.serialize_field("content", &Content(self.0))?;
        result.serialize_field("structuredContent", envelope)?;
        result.serialize_field("isError", &(envelope.status == Status::Error))?;
        if let Some(meta) = &self.0.meta {
            result.serialize_field("_meta", meta)?;
        }
        result.end()
    }
}

/// `10000` → `10s`, `1500` → `1500ms`.
fn format_duration_ms(ms: u64) -> String {
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

fn error_mapped<'s>(
    ctx: &MappingContext<'_>,
    error_type: ErrorType,
    pieces: impl IntoIterator<Item = &'s str>,
) -> Mapped {
    let message = crate::message_cut::cut_message_within(pieces, &ctx.budget);
    Mapped {
        envelope: Envelope::error(ctx.call_id, ctx.tool, error_type.as_str(), &message),
        media: Vec::new(),
        meta: None,
    }
}

// ---------------------------------------------------------------------------------------------
// Raw (unparsed) results

/// [`map_outcome`] of `Outcome::Result { result }` where `raw` is `result`'s JSON text, without
/// parsing all of it: when `structuredContent` holds a row array (or an object whose one
/// non-empty array of objects gives the rows), only its first `char_budget / 2 + 2` items are
/// parsed and the rest only counted. [`fill_rows`] can keep no more rows than that (each row
/// after the first costs at least the two-character separator), so the envelope is the same.
/// Anything else is parsed in full.
///
/// `raw` must be valid JSON.
pub fn map_raw_result(raw: &str, ctx: &MappingContext<'_>) -> Mapped {
    let limit = lazy_row_limit(&ctx.budget);
    match lazy_result(raw, limit).and_then(|(sub, skipped)| lazy_mapped(&sub, skipped, limit, ctx))
    {
        Some(mapped) => mapped,
        None => {
            let result: Value = serde_json::from_str(raw).expect("a raw result is valid JSON");
            map_result(&result, ctx)
        }
    }
}

/// How many row items the lazy path parses: one more than a fill can keep when that is
/// provable ([`Budget::max_object_rows`]); for a token budget alone, two more than its tokens
/// (a row costs at least one token in practice; [`lazy_mapped`] checks it did).
fn lazy_row_limit(budget: &Budget) -> usize {
    match (budget.max_object_rows(), budget.tokens) {
        (Some(rows), _) => rows + 1,
        (None, Some(t)) => t.limit.saturating_add(2),
        (None, None) => usize::MAX,
    }
}

/// Maps the cut `substitute` of a result of which `skipped` row items were only counted;
/// `None` when the fill kept every parsed item (`limit` of them), so that it might have kept
/// some of the skipped ones too: the result is then parsed in full.
fn lazy_mapped(
    substitute: &Value,
    skipped: u64,
    limit: usize,
    ctx: &MappingContext<'_>,
) -> Option<Mapped> {
    let (mut mapped, kept) = map_result_from(substitute, ctx, 0);
    if skipped > 0 && kept >= limit as u64 {
        return None;
    }
    mapped.envelope.omitted += skipped;
    Some(mapped)
}

/// [`map_raw_result`] for a whole JSON-RPC response line `{"jsonrpc":"2.0","id":…,"result":…}`
/// (members in any order) that has not been parsed or validated yet: one pass over the line
/// validates it and maps its `result` lazily. `None` when the line is not valid JSON, is not
/// a plain success response (an `error` or `method` member, a `jsonrpc` other than `"2.0"`, an
/// unknown or repeated member), or its result needs parsing in full; the caller then parses
/// the line in full and maps it as usual.
pub fn map_raw_response(line: &str, ctx: &MappingContext<'_>) -> Option<Mapped> {
    let mut de = serde_json::Deserializer::from_str(line);
    let limit = lazy_row_limit(&ctx.budget);
    let (substitute, skipped) = ResponseSeed(limit).deserialize(&mut de).ok()?;
    de.end().ok()?;
    lazy_mapped(&substitute, skipped, limit, ctx)
}

/// A response object whose `result` goes through [`ResultSeed`].
struct ResponseSeed(usize);

impl<'de> DeserializeSeed<'de> for ResponseSeed {
    type Value = (Value, u64);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ResponseSeed {
    type Value = (Value, u64);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC response")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let (mut version, mut id, mut result) = (false, false, None);
        while let Some(key) = access.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "jsonrpc" if !version => {
                    version = true;
                    if access.next_value::<Cow<'de, str>>()? != "2.0" {
                        return Err(give_up());
                    }
                }
                "id" if !id => {
                    id = true;
                    access.next_value::<serde::de::IgnoredAny>()?;
                }
                "result" if result.is_none() => {
                    result = Some(access.next_value_seed(ResultSeed(self.0))?);
                }
                _ => return Err(give_up()),
            }
        }
        match result {
            Some(result) if version && id => Ok(result),
            _ => Err(give_up()),
        }
    }
}

/// A result equivalent to `raw` for [`map_result`] within `budget`, and how many rows it leaves
/// out, built in one pass over `raw`; `None` when the shortcut does not apply (then `raw` is
/// parsed in full); `limit` row items are parsed.
fn lazy_result(raw: &str, limit: usize) -> Option<(Value, u64)> {
    let mut de = serde_json::Deserializer::from_str(raw);
    let out = ResultSeed(limit).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(out)
}

/// Why the shortcut gives up (the whole result is then parsed as usual).
fn give_up<E: serde::de::Error>() -> E {
    E::custom("parse in full")
}

/// The result object with `structuredContent`'s rows cut to the first `.0`.
struct ResultSeed(usize);

impl<'de> DeserializeSeed<'de> for ResultSeed {
    type Value = (Value, u64);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ResultSeed {
    type Value = (Value, u64);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut map = Map::new();
        let mut skipped = 0;
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(give_up());
            }
            let value = if key == "structuredContent" {
                let (value, n) = LazySeed::Rows(self.0).deserialize_into(&mut access)?;
                skipped = n;
                value
            } else {
                access.next_value::<Value>()?
            };
            map.insert(key, value);
        }
        if skipped > 0 && map.get("isError") == Some(&Value::Bool(true)) {
            return Err(give_up());
        }
        Ok((Value::Object(map), skipped))
    }
}

/// `structuredContent` (`Rows`) or one of its members (`Member`), with row arrays cut.
#[derive(Clone, Copy)]
enum LazySeed {
    Rows(usize),
    Member(usize),
}

/// What a [`LazySeed`] read: a cut array, or a value with how many rows it leaves out.
enum Lazy {
    Cut(CutArray),
    Value(Value, u64),
}

impl LazySeed {
    fn deserialize_into<'de, A: MapAccess<'de>>(
        self,
        access: &mut A,
    ) -> Result<(Value, u64), A::Error> {
        Ok(match access.next_value_seed(self)? {
            Lazy::Cut(cut) => (Value::Array(cut.items), cut.skipped),
            Lazy::Value(v, n) => (v, n),
        })
    }
}

impl<'de> DeserializeSeed<'de> for LazySeed {
    type Value = Lazy;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Lazy, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LazySeed {
    type Value = Lazy;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::Bool(v), 0))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::from(v), 0))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::from(v), 0))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::from(v), 0))
    }
    fn visit_str<E>(self, v: &str) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::String(v.to_owned()), 0))
    }
    fn visit_string<E>(self, v: String) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::String(v), 0))
    }
    fn visit_unit<E>(self) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::Null, 0))
    }
    fn visit_none<E>(self) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::Null, 0))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Lazy, A::Error> {
        let keep = match self {
            LazySeed::Rows(keep) | LazySeed::Member(keep) => keep,
        };
        CutSeed(keep).visit_seq(seq).map(Lazy::Cut)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Lazy, A::Error> {
        let keep = match self {
            LazySeed::Member(_) => {
                let value =
                    Value::deserialize(serde::de::value::MapAccessDeserializer::new(access))?;
                return Ok(Lazy::Value(value, 0));
            }
            LazySeed::Rows(keep) => keep,
        };
        // The object rule: rows come from its one non-empty array of objects, if exactly one.
        let mut members: Vec<(String, Lazy)> = Vec::new();
        while let Some(key) = access.next_key::<String>()? {
            if members.iter().any(|(k, _)| *k == key) {
                return Err(give_up());
            }
            let value = access.next_value_seed(LazySeed::Member(keep))?;
            members.push((key, value));
        }
        let qualifies = |v: &Lazy| matches!(v, Lazy::Cut(c) if c.all_objects && c.total > 0);
        let qualifying = members.iter().filter(|(_, v)| qualifies(v)).count();
        let mut map = Map::new();
        let mut skipped = 0;
        for (key, value) in members {
            let value = match value {
                Lazy::Cut(cut) if qualifying == 1 && cut.all_objects && cut.total > 0 => {
                    skipped = cut.skipped;
                    Value::Array(cut.items)
                }
                Lazy::Cut(cut) if cut.skipped == 0 => Value::Array(cut.items),
                // A cut array that gives no rows: the object needs it whole.
                Lazy::Cut(_) => return Err(give_up()),
                Lazy::Value(v, _) => v,
            };
            map.insert(key, value);
        }
        Ok(Lazy::Value(Value::Object(map), skipped))
    }
}

/// The first items of an array, parsed; the rest counted and checked for being objects.
struct CutArray {
    items: Vec<Value>,
    skipped: u64,
    total: u64,
    all_objects: bool,
}

struct CutSeed(usize);

impl<'de> DeserializeSeed<'de> for CutSeed {
    type Value = CutArray;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<CutArray, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for CutSeed {
    type Value = CutArray;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CutArray, A::Error> {
        let mut cut = CutArray {
            items: Vec::new(),
            skipped: 0,
            total: 0,
            all_objects: true,
        };
        while cut.items.len() < self.0 {
            let Some(item) = seq.next_element::<Value>()? else {
                return Ok(cut);
            };
            cut.all_objects &= item.is_object();
            cut.total += 1;
            cut.items.push(item);
        }
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            cut.all_objects &= item.get().starts_with('{');
            cut.total += 1;
            cut.skipped += 1;
        }
        Ok(cut)
    }
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC errors

fn map_rpc_error(error: &Value, ctx: &MappingContext<'_>) -> Mapped {
    let server = ctx.server;
    let Some(obj) = error.as_object() else {
        return invalid_rpc_error(error, ctx);
    };
    let Some(code) = obj.get("code").and_then(Value::as_i64) else {
        return invalid_rpc_error(error, ctx);
    };
    let data_type = obj.get("data").and_then(|data| {
        data.get("type")
            .and_then(Value::as_str)
            .or_else(|| data.get("error")?.get("type")?.as_str())
    });
    let error_type = match (data_type, code) {
        (Some("rate_limit"), _) => ErrorType::RateLimit,
        (Some("overloaded"), _) => ErrorType::Overloaded,
        (_, -32001) => ErrorType::Timeout,
        (_, -32601 | -32002) => ErrorType::NotFound,
        (_, -32602) => ErrorType::InvalidArgument,
        // -32603, -32000 and every other code.
        _ => ErrorType::ServerError,
    };
    let head = format!("server '{server}' answered error {code}");
    match obj.get("message") {
        Some(Value::String(m)) if !m.is_empty() => {
            error_mapped(ctx, error_type, [head.as_str(), ": ", m.as_str()])
        }
        Some(Value::Null | Value::String(_)) | None => {
            error_mapped(ctx, error_type, [head.as_str()])
        }
        Some(other) => {
            let m = other.to_string();
            error_mapped(ctx, error_type, [head.as_str(), ": ", m.as_str()])
        }
    }
}

fn invalid_rpc_error(error: &Value, ctx: &MappingContext<'_>) -> Mapped {
    let rendered = error.to_string();
    error_mapped(
        ctx,
        ErrorType::ServerError,
        [
            &format!(
                "server '{}' answered an error that is not a JSON-RPC error object: ",
                ctx.server
            ),
            rendered.as_str(),
        ],
    )
}

// ---------------------------------------------------------------------------------------------
// CallToolResult

/// A `CallToolResult` → envelope: results that are not plain tool results and envelopes
/// behind an envelope first ([`crate::passthrough::results`]), then the rules above; the
/// result's `_meta` is kept.
fn map_result(result: &Value, ctx: &MappingContext<'_>) -> Mapped {
    map_result_from(result, ctx, 0).0
}

/// How many rows a success result has under `ctx`'s text rules (0 for an error result).
pub fn count_result_rows(result: &Value, ctx: &MappingContext<'_>) -> u64 {
    let (mapped, kept) = map_plain_result(result, ctx, 0, &Budget::chars(0));
    match mapped.envelope.status {
        Status::Error => 0,
        _ => kept + mapped.envelope.omitted,
    }
}

/// The envelope of a result's rows from row `first_row` on (0: the whole result; a later page
/// leaves out the rows before it and passes no media), and how many rows it kept. Error
/// results, and the results [`crate::passthrough::results`] handles, map as usual whatever
/// `first_row` is.
pub fn map_result_from(result: &Value, ctx: &MappingContext<'_>, first_row: u64) -> (Mapped, u64) {
    let (mut mapped, kept) = match crate::passthrough::results::special_result(result, ctx) {
        Some(special) => (special, 0),
        None => map_plain_result(result, ctx, first_row, &ctx.budget),
    };
    mapped.meta = result.get("_meta").filter(|m| !m.is_null()).cloned();
    (mapped, kept)
}

/// The plain rules from row `first_row` on, filling within `fill` (rows are still cut by
/// `ctx`'s budget).
fn map_plain_result(
    result: &Value,
    ctx: &MappingContext<'_>,
    first_row: u64,
    fill: &Budget,
) -> (Mapped, u64) {
    let invalid = |what: String| {
        error_mapped(
            ctx,
            ErrorType::ServerError,
            [
                format!("invalid CallToolResult from server '{}': ", ctx.server).as_str(),
                &what,
            ],
        )
    };
    let Some(obj) = result.as_object() else {
        return (
            invalid(format!(
                "the result is {}, not an object",
                json_kind(result)
            )),
            0,
        );
    };
    let structured = obj.get("structuredContent").filter(|v| !v.is_null());
    let blocks: &[Value] = match (obj.get("content"), structured) {
        (Some(Value::Array(blocks)), _) => blocks,
        (_, Some(_)) => &[],
        (None, None) => return (invalid("`content` is missing".to_owned()), 0),
        (Some(other), None) => {
            return (
                invalid(format!("`content` is {}, not an array", json_kind(other))),
                0,
            )
        }
    };
    if obj.get("isError") == Some(&Value::Bool(true)) {
        return (map_tool_error(blocks, structured, ctx), 0);
    }

    let budget = ctx.budget.unreachable_chars();
    let mode = ctx.media;
    let rules = ctx.text_rules();
    let media = match first_row {
        0 => passed_media(blocks, mode),
        _ => Vec::new(),
    };
    let skip = usize::try_from(first_row).unwrap_or(usize::MAX);
    let filled = match structured {
        Some(sc) => {
            let described = blocks
                .iter()
                .filter(move |_| mode == MediaMode::Describe)
                .filter_map(move |b| describe_media(b, budget));
            let rows = value_rows(sc, budget).chain(described);
            fill_rows_within(rows.skip(skip), fill)
        }
        None => {
            let rows = blocks
                .iter()
                .flat_map(move |b| block_rows(b, mode, budget, rules));
            fill_rows_within(rows.skip(skip), fill)
        }
    };
    let kept = filled.kept;
    let mapped = Mapped {
        envelope: filled.into_envelope(ctx.call_id, ctx.tool),
        media,
        meta: None,
    };
    (mapped, kept)
}

fn map_tool_error(
    blocks: &[Value],
    structured: Option<&Value>,
    ctx: &MappingContext<'_>,
) -> Mapped {
    let sc_error = structured.and_then(|sc| sc.get("error"));
    let sc_message = sc_error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty());
    let sc_type = sc_error.and_then(|e| e.get("type")).and_then(Value::as_str);
    // Messages that are the tool's own words say whose they are.
    let said = format!("server '{}' reported: ", ctx.server);
    let said = said.as_str();
    let limited = match sc_type {
        Some("rate_limit") => Some((ErrorType::RateLimit, "is rate limited")),
        Some("overloaded") => Some((ErrorType::Overloaded, "is overloaded")),
        _ => None,
    };
    if let Some((error_type, words)) = limited {
        return match sc_message {
            Some(m) => error_mapped(ctx, error_type, [said, m]),
            None => error_mapped(
                ctx,
                error_type,
                [format!("server '{}' {words}", ctx.server).as_str()],
            ),
        };
    }

    let texts = || {
        blocks.iter().filter_map(|b| match b.get("type") {
            Some(Value::String(t)) if t == "text" => b.get("text")?.as_str(),
            _ => None,
        })
    };
    let error_type = match texts().next() {
        Some(first) if first.trim_start().starts_with("MCP error -32602") => {
            ErrorType::InvalidArgument
        }
        _ => ErrorType::ToolError,
    };
    if texts().next().is_some() {
        let joined = texts()
            .enumerate()
            .flat_map(|(i, t)| [if i == 0 { said } else { "\n" }, t]);
        return error_mapped(ctx, error_type, joined);
    }
    match sc_message {
        Some(m) => error_mapped(ctx, error_type, [said, m]),
        None => error_mapped(
            ctx,
            error_type,
            [format!(
                "tool '{}' on server '{}' reported an error without a message",
                ctx.tool, ctx.server
            )
            .as_str()],
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Rows

type Rows<'a> = Box<dyn Iterator<Item = Row<'a>> + 'a>;

fn no_rows<'a>() -> Rows<'a> {
    Box::new(std::iter::empty())
}

fn one_row<'a>(row: Row<'a>) -> Rows<'a> {
    Box::new(std::iter::once(row))
}

fn owned_row<'a>(map: Map<String, Value>) -> Row<'a> {
    Row::Object(Cow::Owned(map))
}

/// A copy of `value` in which every string longer than `budget + 1` characters is cut to
/// `budget + 1` characters. Used for rows the proxy builds from borrowed data: a cut string
/// makes its row longer than the budget both before and after the cut, so the row is left out
/// either way and the cut text never appears.
fn bounded_clone(value: &Value, budget: usize) -> Value {
    let limit = budget.saturating_add(1);
    match value {
        Value::String(s) => Value::String(s[..prefix_end(s, limit).0].to_owned()),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| bounded_clone(v, budget)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), bounded_clone(v, budget)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn wrapped_value<'a>(value: Value) -> Row<'a> {
    let mut map = Map::new();
    map.insert("value".to_owned(), value);
    owned_row(map)
}

/// Non-empty, and every item an object.
fn is_array_of_objects(value: &Value) -> bool {
    matches!(value, Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object))
}

/// The JSON rule over a borrowed value.
fn value_rows<'a>(value: &'a Value, budget: usize) -> Rows<'a> {
    match value {
        Value::Array(items) => Box::new(items.iter().map(move |item| match item {
            Value::Object(map) => Row::Object(Cow::Borrowed(map)),
            other => wrapped_value(bounded_clone(other, budget)),
        })),
        Value::Object(map) => {
            let mut arrays = map.iter().filter(|(_, v)| is_array_of_objects(v));
            match (arrays.next(), arrays.next()) {
                (Some((key, Value::Array(items))), None) => {
                    let header: Map<String, Value> = map
                        .iter()
                        .filter(|(k, _)| *k != key)
                        .map(|(k, v)| (k.clone(), bounded_clone(v, budget)))
                        .collect();
                    let header = (!header.is_empty()).then(|| owned_row(header));
                    Box::new(
                        header
                            .into_iter()
                            .chain(items.iter().map(move |item| match item {
                                Value::Object(m) => Row::Object(Cow::Borrowed(m)),
                                other => wrapped_value(bounded_clone(other, budget)),
                            })),
                    )
                }
                _ => one_row(Row::Object(Cow::Borrowed(map))),
            }
        }
        other => one_row(wrapped_value(bounded_clone(other, budget))),
    }
}

/// The JSON rule over an owned value (parsed from a text block): moves, never copies.
fn owned_value_rows<'a>(value: Value) -> Rows<'a> {
    match value {
        Value::Array(items) => Box::new(items.into_iter().map(owned_item_row)),
        Value::Object(mut map) => {
            let key = {
                let mut arrays = map.iter().filter(|(_, v)| is_array_of_objects(v));
                match (arrays.next(), arrays.next()) {
                    (Some((key, _)), None) => Some(key.clone()),
                    _ => None,
                }
            };
            match key.and_then(|k| map.shift_remove(&k)) {
                Some(Value::Array(items)) => {
                    let header = (!map.is_empty()).then(|| owned_row(map));
                    Box::new(
                        header
                            .into_iter()
                            .chain(items.into_iter().map(owned_item_row)),
                    )
                }
                _ => one_row(owned_row(map)),
            }
        }
        other => one_row(wrapped_value(other)),
    }
}

fn owned_item_row<'a>(item: Value) -> Row<'a> {
    match item {
        Value::Object(map) => owned_row(map),
        other => wrapped_value(other),
    }
}

/// A text block's rows: the JSON rule when the whole text is a JSON object or array, else
/// its plain-text rows ([`plain_text_rows`]: lines or blocks, long ones split).
fn text_rows(text: &str, rules: TextRules) -> Rows<'_> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        if let Ok(value @ (Value::Object(_) | Value::Array(_))) =
            serde_json::from_str::<Value>(text)
        {
            return owned_value_rows(value);
        }
    }
    plain_text_rows(text, rules)
}

/// The base64 `data` of an `image` / `audio` block or the `blob` of a `resource` block; `None`
/// for every other block.
/// The media blocks of `blocks` that pass through untouched: all of them with
/// [`MediaMode::Passthrough`], none with [`MediaMode::Describe`].
pub(crate) fn passed_media(blocks: &[Value], mode: MediaMode) -> Vec<Value> {
    match mode {
        MediaMode::Passthrough => blocks
            .iter()
            .filter(|b| media_data(b).is_some())
            .cloned()
            .collect(),
        MediaMode::Describe => Vec::new(),
    }
}

pub(crate) fn media_data(block: &Value) -> Option<&str> {
    match block.get("type")?.as_str()? {
        "image" | "audio" => block.get("data")?.as_str(),
        "resource" => block.get("resource")?.get("blob")?.as_str(),
        _ => None,
    }
}

/// The decoded size in bytes of base64 `data`, from its length and padding (no decoding):
/// `len * 3 / 4` with `len` the length without trailing whitespace and `=` padding.
pub fn base64_decoded_len(data: &str) -> u64 {
    let data = data.trim_end_matches(|c: char| c.is_ascii_whitespace());
    let data = data.strip_suffix('=').unwrap_or(data);
    let data = data.strip_suffix('=').unwrap_or(data);
    (data.len() as u64) * 3 / 4
}

/// The description row of a media block: `{"type", "mimeType"?, "bytes"}`, plus `uri` for a
/// blob resource (whose `mimeType` is read from the inner resource). `None` for other blocks.
pub(crate) fn describe_media<'a>(block: &Value, budget: usize) -> Option<Row<'a>> {
    let data = media_data(block)?;
    let mut row = Map::new();
    let kind = block.get("type")?;
    row.insert("type".to_owned(), kind.clone());
    let holder = if kind.as_str() == Some("resource") {
        let resource = block.get("resource")?;
        if let Some(uri) = resource.get("uri") {
            row.insert("uri".to_owned(), bounded_clone(uri, budget));
        }
        resource
    } else {
        block
    };
    if let Some(mime) = holder.get("mimeType") {
        row.insert("mimeType".to_owned(), bounded_clone(mime, budget));
    }
    row.insert("bytes".to_owned(), Value::from(base64_decoded_len(data)));
    Some(owned_row(row))
}

/// The rows of one content block (media blocks give none in passthrough mode).
fn block_rows(block: &Value, mode: MediaMode, budget: usize, rules: TextRules) -> Rows<'_> {
    let Value::Object(map) = block else {
        return one_row(wrapped_value(bounded_clone(block, budget)));
    };
    let as_is = || one_row(Row::Object(Cow::Borrowed(map)));
    if media_data(block).is_some() {
        return match mode {
            MediaMode::Passthrough => no_rows(),
            MediaMode::Describe => describe_media(block, budget).map_or_else(no_rows, one_row),
        };
    }
    match map.get("type").and_then(Value::as_str) {
        Some("text") => match map.get("text") {
            Some(Value::String(text)) => text_rows(text, rules),
            _ => as_is(),
        },
        Some("resource_link") => {
            let mut row = Map::new();
            row.insert("type".to_owned(), Value::from("resource_link"));
            for key in ["uri", "name", "mimeType"] {
                if let Some(v) = map.get(key) {
                    row.insert(key.to_owned(), bounded_clone(v, budget));
                }
            }
            one_row(owned_row(row))
        }
        Some("resource") => match map.get("resource") {
            Some(resource @ Value::Object(_)) => match resource.get("text") {
                Some(Value::String(text)) => {
                    let uri = resource.get("uri").map(|uri| {
                        let mut row = Map::new();
                        row.insert("uri".to_owned(), bounded_clone(uri, budget));
                        owned_row(row)
                    });
                    Box::new(uri.into_iter().chain(text_rows(text, rules)))
                }
                _ => as_is(),
            },
            _ => as_is(),
        },
        _ => as_is(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const SERVER: &str = "git";

    fn ctx(budget: usize, media: MediaMode) -> MappingContext<'static> {
        MappingContext {
            call_id: "c7",
            tool: "git_log",
            server: SERVER,
            budget: crate::budget::Budget::chars(budget),
            text: crate::outcome::TextShape {
                long_rows: crate::budget::LongRows::Keep,
                ..Default::default()
            },
            media,
        }
    }

    fn map(outcome: Outcome, budget: usize) -> Mapped {
        map_outcome(&outcome, &ctx(budget, MediaMode::Passthrough))
    }

    fn map_result_with(result: Value, budget: usize, media: MediaMode) -> Mapped {
        map_outcome(&Outcome::Result { result }, &ctx(budget, media))
    }

    fn ok(result: Value, budget: usize) -> Envelope {
        map_result_with(result, budget, MediaMode::Passthrough).envelope
    }

    fn text(t: &str) -> Value {
        json!({"type": "text", "text": t})
    }

    fn assert_error(env: &Envelope, error_type: ErrorType, content: &str) {
        assert_eq!(env.status, Status::Error);
        assert_eq!(env.content, content);
        assert_eq!(env.omitted, 0);
        assert_eq!(env.retryable, error_type.is_retryable());
        assert!(env.content.starts_with(&format!("{error_type}: ")));
    }

    // ---- success path ----------------------------------------------------------------------

    #[test]
    fn time_server_structured_content_is_one_row() {
        let sc = json!({"timezone": "Europe/Warsaw", "datetime": "2026-11-30T03:48:18+01:00", "day_of_week": "Monday", "is_dst": false});
        let result = json!({
            "content": [text(&sc.to_string())],
            "structuredContent": sc,
            "isError": false
        });
        let env = ok(result, 2000);
        assert_eq!(
            env.content,
            "datetime=2026-11-30T03:48:18+01:00,day_of_week=Monday,is_dst=false,timezone=Europe/Warsaw"
        );
        assert_eq!(env.status, Status::Ok);
        assert_eq!(env.omitted, 0);
        assert_eq!(env.call_id, "c7");
        assert_eq!(env.tool, "git_log");
        assert!(!env.retryable);
    }

    #[test]
    fn git_log_text_is_truncated_with_rows_omitted() {
        let log = "commit 3f2a9c1d\nAuthor: Ada <ada@example.org>\nDate:   Mon Nov 30 03:48:18 2026 +0100\n\n    Fix the parser\n\ncommit 1b7e0aa2\nAuthor: Bob <bob@example.org>\n";
        let env = ok(json!({"content": [text(log)]}), 45);
        assert_eq!(
            env.content,
            "commit 3f2a9c1d\nAuthor: Ada <ada@example.org>"
        );
        assert_eq!(env.status, Status::Truncated);
        assert_eq!(env.omitted, 6);
        let env = ok(json!({"content": [text(log)]}), 2000);
        assert_eq!(env.content, log.strip_suffix('\n').unwrap());
        assert_eq!(env.status, Status::Ok);
    }

    #[test]
    fn single_array_field_gives_header_row_then_items() {
        let sc = json!({"items": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}], "total": 3});
        let env = ok(
            json!({"content": [], "structuredContent": sc.clone()}),
            2000,
        );
        assert_eq!(
            env.content,
            "total=3; id=1,name=a; id=2,name=b; id=3,name=c"
        );
        // Same from a text block holding the JSON.
        let env = ok(json!({"content": [text(&sc.to_string())]}), 2000);
        assert_eq!(
            env.content,
            "total=3; id=1,name=a; id=2,name=b; id=3,name=c"
        );
        // No other fields: no header row.
        let env = ok(
            json!({"content": [], "structuredContent": {"items": [{"a": 1}]}}),
            100,
        );
        assert_eq!(env.content, "a=1");
        // Budget: header plus one item.
        let env = ok(json!({"content": [], "structuredContent": sc}), 20);
        assert_eq!(env.content, "total=3; id=1,name=a");
        assert_eq!(env.omitted, 2);
    }

    #[test]
    fn two_arrays_of_objects_or_empty_or_mixed_arrays_make_one_row() {
        let env = ok(
            json!({"content": [], "structuredContent": {"a": [{"x": 1}], "b": [{"y": 2}]}}),
            100,
        );
        assert_eq!(env.content, r#"a=[{"x":1}],b=[{"y":2}]"#);
        let env = ok(
            json!({"content": [], "structuredContent": {"a": [], "n": 1}}),
            100,
        );
        assert_eq!(env.content, "a=[],n=1");
        let env = ok(
            json!({"content": [], "structuredContent": {"a": [{"x": 1}, 2]}}),
            100,
        );
        assert_eq!(env.content, r#"a=[{"x":1},2]"#);
        // One array of objects next to an array of scalars: the scalar array is a header field.
        let env = ok(
            json!({"content": [], "structuredContent": {"tags": [1, 2], "rows": [{"x": 1}]}}),
            100,
        );
        assert_eq!(env.content, "tags=[1,2]; x=1");
    }

    #[test]
    fn array_of_objects_and_mixed_array() {
        let env = ok(
            json!({"content": [], "structuredContent": [{"b": 2, "a": 1}, {"a": 3}]}),
            100,
        );
        assert_eq!(env.content, "a=1,b=2; a=3");
        let env = ok(
            json!({"content": [text(r#"[{"a": 1}, 5, "s", [1, 2], null]"#)]}),
            100,
        );
        assert_eq!(
            env.content,
            "a=1; value=5; value=s; value=[1,2]; value=null"
        );
        let env = ok(json!({"content": [text("[]")]}), 100);
        assert_eq!(env.content, "");
        assert_eq!(env.status, Status::Ok);
    }

    #[test]
    fn scalar_structured_content_is_a_value_row() {
        for (sc, expected) in [
            (json!(42), "value=42"),
            (json!("hi"), "value=hi"),
            (json!(true), "value=true"),
            (json!(-1.5), "value=-1.5"),
        ] {
            assert_eq!(
                ok(json!({"content": [], "structuredContent": sc}), 100).content,
                expected
            );
        }
        // null counts as absent: rows come from content.
        let env = ok(
            json!({"content": [text("x")], "structuredContent": null}),
            100,
        );
        assert_eq!(env.content, "x");
    }

    #[test]
    fn text_json_only_when_it_looks_like_and_parses_as_object_or_array() {
        assert_eq!(
            ok(json!({"content": [text(" {\"a\": 1}\n")]}), 100).content,
            "a=1"
        );
        // Starts like JSON but does not parse: lines.
        assert_eq!(
            ok(json!({"content": [text("{not json\n}")]}), 100).content,
            "{not json\n}"
        );
        // A bare JSON scalar in text stays text.
        assert_eq!(ok(json!({"content": [text("42")]}), 100).content, "42");
        assert_eq!(
            ok(json!({"content": [text("\"q\"")]}), 100).content,
            "\"q\""
        );
    }

    #[test]
    fn crlf_lines_trailing_newline_and_blank_lines() {
        let env = ok(json!({"content": [text("one\r\ntwo\r\n")]}), 100);
        assert_eq!(env.content, "one\ntwo");
        let env = ok(json!({"content": [text("a\n\nb\n")]}), 100);
        assert_eq!(env.content, "a\n\nb");
        // Budget counts the blank line and its separators: "a\n\n" is 3.
        let env = ok(json!({"content": [text("a\n\nb\n")]}), 3);
        assert_eq!(env.content, "a\n");
        assert_eq!(env.omitted, 1);
        // Only the last \r of a line is dropped, and only before \n.
        let env = ok(json!({"content": [text("x\r\r\ny\r")]}), 100);
        assert_eq!(env.content, "x\r\ny");
        // Empty text: no rows.
        let env = ok(json!({"content": [text("")]}), 100);
        assert_eq!((env.content.as_str(), env.omitted), ("", 0));
        // Two text blocks: their lines join with \n; an object row in between uses "; ".
        let env = ok(
            json!({"content": [text("a"), text("b"), text("{\"k\":1}"), text("c")]}),
            100,
        );
        assert_eq!(env.content, "a\nb; k=1; c");
    }

    #[test]
    fn lengths_are_unicode_scalar_values() {
        let env = ok(json!({"content": [text("żółć\n😀😀")]}), 7);
        assert_eq!(env.content, "żółć\n😀😀");
        let env = ok(json!({"content": [text("żółć\n😀😀")]}), 6);
        assert_eq!(env.content, "żółć");
        assert_eq!(env.omitted, 1);
    }

    // ---- media ---------------------------------------------------------------------------------

    #[test]
    fn base64_decoded_sizes() {
        assert_eq!(base64_decoded_len(""), 0);
        assert_eq!(base64_decoded_len("TWFu"), 3); // "Man", padding 0
        assert_eq!(base64_decoded_len("TWE="), 2); // "Ma", padding 1
        assert_eq!(base64_decoded_len("TQ=="), 1); // "M", padding 2
        assert_eq!(base64_decoded_len("TWFuTQ=="), 4);
        assert_eq!(base64_decoded_len("TWFuTQ"), 4); // unpadded
        assert_eq!(base64_decoded_len("TWFuTWE=\n"), 5);
    }

    fn image(data: &str) -> Value {
        json!({"type": "image", "data": data, "mimeType": "image/png"})
    }

    #[test]
    fn image_and_audio_pass_through_untouched_and_are_not_rows() {
        let audio = json!({"type": "audio", "data": "TWE=", "mimeType": "audio/wav", "annotations": {"priority": 1}});
        let result =
            json!({"content": [text("caption"), image("TWFu"), audio.clone(), text("end")]});
        let mapped = map_result_with(result, 100, MediaMode::Passthrough);
        assert_eq!(mapped.envelope.content, "caption\nend");
        assert_eq!(mapped.envelope.status, Status::Ok);
        assert_eq!(mapped.media, vec![image("TWFu"), audio]);
    }

    #[test]
    fn media_described_with_decoded_size() {
        let result = json!({"content": [image("TWFu"), image("TWE="), {"type": "audio", "data": "TQ==", "mimeType": "audio/wav"}]});
        let mapped = map_result_with(result, 500, MediaMode::Describe);
        assert!(mapped.media.is_empty());
        assert_eq!(
            mapped.envelope.content,
            "bytes=3,mimeType=image/png,type=image; bytes=2,mimeType=image/png,type=image; bytes=1,mimeType=audio/wav,type=audio"
        );
    }

    #[test]
    fn media_with_structured_content() {
        let result =
            json!({"content": [text("{\"a\":1}"), image("TWFu")], "structuredContent": {"a": 1}});
        let mapped = map_result_with(result.clone(), 500, MediaMode::Passthrough);
        assert_eq!(mapped.envelope.content, "a=1");
        assert_eq!(mapped.media, vec![image("TWFu")]);
        let mapped = map_result_with(result, 500, MediaMode::Describe);
        assert_eq!(
            mapped.envelope.content,
            "a=1; bytes=3,mimeType=image/png,type=image"
        );
        assert!(mapped.media.is_empty());
    }

    #[test]
    fn resource_link_row() {
        let result = json!({"content": [
            {"type": "resource_link", "uri": "file:///repo/README.md", "name": "README.md", "mimeType": "text/markdown", "description": "x"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"}
        ]});
        assert_eq!(
            ok(result, 500).content,
            "mimeType=text/markdown,name=README.md,type=resource_link,uri=file:///repo/README.md; name=a,type=resource_link,uri=file:///a"
        );
    }

    #[test]
    fn embedded_text_resource_gives_uri_row_then_text_rows() {
        let result = json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "line 1\nline 2\n"}},
            {"type": "resource", "resource": {"uri": "file:///d.json", "text": "{\"k\": \"v\"}"}}
        ]});
        assert_eq!(
            ok(result, 500).content,
            "uri=file:///notes.txt; line 1\nline 2; uri=file:///d.json; k=v"
        );
    }

    #[test]
    fn blob_resource_is_media() {
        let blob = json!({"type": "resource", "resource": {"uri": "file:///logo.png", "mimeType": "image/png", "blob": "TWE="}});
        let result = json!({"content": [text("see"), blob.clone()]});
        let mapped = map_result_with(result.clone(), 500, MediaMode::Passthrough);
        assert_eq!(mapped.envelope.content, "see");
        assert_eq!(mapped.media, vec![blob]);
        let mapped = map_result_with(result, 500, MediaMode::Describe);
        assert_eq!(
            mapped.envelope.content,
            "see; bytes=2,mimeType=image/png,type=resource,uri=file:///logo.png"
        );
        assert!(mapped.media.is_empty());
    }

    #[test]
    fn unknown_and_malformed_blocks_become_object_rows() {
        let result = json!({"content": [
            {"type": "hologram", "x": 1},
            {"type": "text"},
            {"type": "image", "mimeType": "image/png"},
            "bare",
            {"type": "resource", "resource": {"uri": "u"}}
        ]});
        let mapped = map_result_with(result, 500, MediaMode::Passthrough);
        assert!(mapped.media.is_empty());
        assert_eq!(
            mapped.envelope.content,
            r#"type=hologram,x=1; type=text; mimeType=image/png,type=image; value=bare; resource={"uri":"u"},type=resource"#
        );
    }

    #[test]
    fn invalid_call_tool_results_are_server_errors() {
        let env = ok(json!("hello"), 500);
        assert_error(
            &env,
            ErrorType::ServerError,
            "server_error: invalid CallToolResult from server 'git': the result is string, not an object",
        );
        let env = ok(json!({"isError": false}), 500);
        assert_error(
            &env,
            ErrorType::ServerError,
            "server_error: invalid CallToolResult from server 'git': `content` is missing",
        );
        let env = ok(json!({"content": "text"}), 500);
        assert_error(
            &env,
            ErrorType::ServerError,
            "server_error: invalid CallToolResult from server 'git': `content` is string, not an array",
        );
        // ... unless structuredContent exists.
        let env = ok(
            json!({"content": "text", "structuredContent": {"a": 1}}),
            500,
        );
        assert_eq!(env.content, "a=1");
        let env = ok(json!({"structuredContent": {"a": 1}}), 500);
        assert_eq!(env.content, "a=1");
    }

    #[test]
    fn huge_borrowed_scalars_are_left_out_without_being_copied_whole() {
        let big = "x".repeat(100_000);
        let env = ok(
            json!({"content": [], "structuredContent": [1, big.clone(), 2]}),
            50,
        );
        assert_eq!(env.content, "value=1");
        assert_eq!(env.omitted, 2);
        // A string of exactly the room left still fits: the bounded copy keeps budget + 1.
        let env = ok(
            json!({"content": [], "structuredContent": ["y".repeat(44)]}),
            50,
        );
        assert_eq!(env.content, format!("value={}", "y".repeat(44)));
        let env = ok(
            json!({"content": [], "structuredContent": {"note": big, "rows": [{"a": 1}]}}),
            50,
        );
        assert_eq!(env.content, "");
        assert_eq!(env.omitted, 2);
    }

    // ---- error path ------------------------------------------------------------------------

    #[test]
    fn proxy_side_errors() {
        assert_error(
            &map(Outcome::Timeout { timeout_ms: 10_000 }, 500).envelope,
            ErrorType::Timeout,
            "timeout: no response from server 'git' within 10s",
        );
        assert_error(
            &map(Outcome::Timeout { timeout_ms: 1500 }, 500).envelope,
            ErrorType::Timeout,
            "timeout: no response from server 'git' within 1500ms",
        );
        assert_error(
            &map(
                Outcome::ServerExited {
                    detail: "exit status 1".into(),
                },
                500,
            )
            .envelope,
            ErrorType::ServerError,
            "server_error: server 'git' exited during the call: exit status 1",
        );
        assert_error(
            &map(
                Outcome::InvalidResponse {
                    detail: "line is not JSON".into(),
                },
                500,
            )
            .envelope,
            ErrorType::ServerError,
            "server_error: server 'git' sent an invalid response: line is not JSON",
        );
        assert_error(
            &map(
                Outcome::Unavailable {
                    reason: "gave up after 5 restarts".into(),
                },
                500,
            )
            .envelope,
            ErrorType::Unavailable,
            "unavailable: server 'git' is unavailable: gave up after 5 restarts",
        );
        let mapped = map_outcome(
            &Outcome::NoSuchTool,
            &MappingContext {
                call_id: "9",
                tool: "x",
                server: "",
                budget: crate::budget::Budget::chars(500),
                text: crate::outcome::TextShape {
                    long_rows: crate::budget::LongRows::Keep,
                    ..Default::default()
                },
                media: MediaMode::Passthrough,
            },
        );
        assert_error(
            &mapped.envelope,
            ErrorType::NotFound,
            "not_found: no tool named 'x'",
        );
        assert_eq!(mapped.envelope.call_id, "9");
        assert!(mapped.media.is_empty());
    }

    fn rpc(error: Value) -> Envelope {
        let c = MappingContext {
            server: "time",
            ..ctx(500, MediaMode::Passthrough)
        };
        map_outcome(&Outcome::RpcError { error }, &c).envelope
    }

    #[test]
    fn json_rpc_error_codes() {
        let cases = [
            (-32001, ErrorType::Timeout),
            (-32603, ErrorType::ServerError),
            (-32000, ErrorType::ServerError),
            (-32601, ErrorType::NotFound),
            (-32002, ErrorType::NotFound),
            (-32602, ErrorType::InvalidArgument),
            (-32700, ErrorType::ServerError),
            (42, ErrorType::ServerError),
        ];
        for (code, t) in cases {
            let env = rpc(json!({"code": code, "message": "Unknown tool: foo"}));
            assert_error(
                &env,
                t,
                &format!("{t}: server 'time' answered error {code}: Unknown tool: foo"),
            );
        }
        assert_error(
            &rpc(json!({"code": -32603})),
            ErrorType::ServerError,
            "server_error: server 'time' answered error -32603",
        );
        assert_error(
            &rpc(json!("boom")),
            ErrorType::ServerError,
            "server_error: server 'time' answered an error that is not a JSON-RPC error object: \"boom\"",
        );
        assert_error(
            &rpc(json!({"message": "no code"})),
            ErrorType::ServerError,
            "server_error: server 'time' answered an error that is not a JSON-RPC error object: {\"message\":\"no code\"}",
        );
    }

    #[test]
    fn rate_limit_and_overloaded_via_json_rpc_data() {
        assert_error(
            &rpc(
                json!({"code": -32000, "message": "slow down", "data": {"type": "rate_limit", "retry_after": 3}}),
            ),
            ErrorType::RateLimit,
            "rate_limit: server 'time' answered error -32000: slow down",
        );
        assert_error(
            &rpc(
                json!({"code": -32603, "message": "busy", "data": {"error": {"type": "overloaded"}}}),
            ),
            ErrorType::Overloaded,
            "overloaded: server 'time' answered error -32603: busy",
        );
        // Other data types do not change the code's mapping.
        assert_error(
            &rpc(json!({"code": -32602, "message": "bad", "data": {"type": "validation"}})),
            ErrorType::InvalidArgument,
            "invalid_argument: server 'time' answered error -32602: bad",
        );
    }

    #[test]
    fn rate_limit_and_overloaded_via_structured_content() {
        let env = ok(
            json!({"content": [text("Too many requests")], "structuredContent": {"error": {"type": "rate_limit", "message": "10 requests per minute exceeded"}}, "isError": true}),
            500,
        );
        assert_error(
            &env,
            ErrorType::RateLimit,
            "rate_limit: server 'git' reported: 10 requests per minute exceeded",
        );
        let env = ok(
            json!({"content": [], "structuredContent": {"error": {"type": "overloaded"}}, "isError": true}),
            500,
        );
        assert_error(
            &env,
            ErrorType::Overloaded,
            "overloaded: server 'git' is overloaded",
        );
        // Without isError it is data.
        let env = ok(
            json!({"content": [], "structuredContent": {"error": {"type": "rate_limit"}}}),
            500,
        );
        assert_eq!(env.content, r#"error={"type":"rate_limit"}"#);
    }

    #[test]
    fn is_error_results_are_tool_errors_with_their_text() {
        let env = ok(
            json!({"content": [text("fatal: not a git repository"), image("TWFu"), text("(or any parent)")], "isError": true}),
            500,
        );
        assert_error(
            &env,
            ErrorType::ToolError,
            "tool_error: server 'git' reported: fatal: not a git repository\n(or any parent)",
        );
        let mapped = map_result_with(
            json!({"content": [text("x"), image("TWFu")], "isError": true}),
            500,
            MediaMode::Passthrough,
        );
        assert!(mapped.media.is_empty());
        let env = ok(json!({"content": [], "isError": true}), 500);
        assert_error(
            &env,
            ErrorType::ToolError,
            "tool_error: tool 'git_log' on server 'git' reported an error without a message",
        );
        let env = ok(
            json!({"content": [], "structuredContent": {"error": {"type": "quota", "message": "quota exhausted"}}, "isError": true}),
            500,
        );
        assert_error(
            &env,
            ErrorType::ToolError,
            "tool_error: server 'git' reported: quota exhausted",
        );
    }

    #[test]
    fn mcp_error_32602_text_is_invalid_argument() {
        let env = ok(
            json!({"content": [text("MCP error -32602: Invalid arguments for tool get_current_time: timezone required")], "isError": true}),
            500,
        );
        assert_error(
            &env,
            ErrorType::InvalidArgument,
            "invalid_argument: server 'git' reported: MCP error -32602: Invalid arguments for tool get_current_time: timezone required",
        );
        // Not an error result: just text.
        let env = ok(json!({"content": [text("MCP error -32602: x")]}), 500);
        assert_eq!(env.status, Status::Ok);
    }

    #[test]
    fn error_types_vocabulary() {
        let names: Vec<&str> = ErrorType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(
            names,
            [
                "timeout",
                "rate_limit",
                "server_error",
                "overloaded",
                "not_found",
                "invalid_argument",
                "unavailable",
                "tool_error"
            ]
        );
        for t in ErrorType::ALL {
            assert_eq!(ErrorType::parse(t.as_str()), Some(t));
        }
        assert_eq!(ErrorType::parse("Timeout"), None);
        let retryable: Vec<bool> = ErrorType::ALL.iter().map(|t| t.is_retryable()).collect();
        assert_eq!(
            retryable,
            [true, true, true, true, false, false, false, false]
        );
    }

    // ---- cutting long messages -------------------------------------------------------------

    #[test]
    fn long_error_message_is_cut_with_marker() {
        let text_1234 = "e".repeat(1234);
        let env = ok(json!({"content": [text(&text_1234)], "isError": true}), 100);
        let message = env.content.strip_prefix("tool_error: ").unwrap();
        assert_eq!(message.chars().count(), 100);
        // "server 'git' reported: " (23) + text: a four-digit count makes a 23-character
        // marker, so 77 characters are kept (the 23 of the prefix and 54 of the text).
        assert_eq!(
            message,
            format!(
                "server 'git' reported: {}… [1180 characters cut]",
                "e".repeat(54)
            )
        );
    }

    #[test]
    fn long_rpc_error_messages_are_cut_naming_the_server() {
        // Through the RPC path, naming the server.
        let env = rpc(json!({"code": -32603, "message": "ł".repeat(1000)}));
        let message = env.content.strip_prefix("server_error: ").unwrap();
        assert_eq!(message.chars().count(), 500);
        assert!(message.starts_with("server 'time' answered error -32603: łł"));
        assert!(message.ends_with("characters cut]"));
    }

    // ---- answering -------------------------------------------------------------------------

    #[test]
    fn call_tool_result_shape() {
        let mapped = map_result_with(
            json!({"content": [text("hello"), image("TWFu"), image("TQ==")]}),
            100,
            MediaMode::Passthrough,
        );
        let answer = call_tool_result(&mapped);
        let envelope = mapped.envelope.to_value();
        assert_eq!(
            answer,
            json!({
                "content": [
                    {"type": "text", "text": mapped.envelope.to_json()},
                    image("TWFu"),
                    image("TQ==")
                ],
                "structuredContent": envelope,
                "isError": false
            })
        );
        assert_eq!(
            answer["content"][0]["text"],
            r#"{"call_id":"c7","tool":"git_log","status":"ok","content":"hello","omitted":0,"retryable":false}"#
        );
        assert_eq!(mapped.clone().into_call_tool_result(), answer);
        let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["content", "structuredContent", "isError"]);

        let mapped = map(Outcome::Timeout { timeout_ms: 2000 }, 100);
        let answer = call_tool_result(&mapped);
        assert_eq!(answer["isError"], true);
        assert_eq!(answer["content"].as_array().unwrap().len(), 1);
        assert_eq!(answer["structuredContent"], mapped.envelope.to_value());
    }

    #[test]
    fn outcome_serde_round_trip() {
        let all = [
            (
                Outcome::Result {
                    result: json!({"content": [text("x")]}),
                },
                json!({"kind": "result", "result": {"content": [{"type": "text", "text": "x"}]}}),
            ),
            (
                Outcome::RpcError {
                    error: json!({"code": -32602, "message": "m"}),
                },
                json!({"kind": "rpc_error", "error": {"code": -32602, "message": "m"}}),
            ),
            (
                Outcome::Timeout { timeout_ms: 10_000 },
                json!({"kind": "timeout", "timeout_ms": 10000}),
            ),
            (
                Outcome::ServerExited { detail: "d".into() },
                json!({"kind": "server_exited", "detail": "d"}),
            ),
            (
                Outcome::InvalidResponse { detail: "d".into() },
                json!({"kind": "invalid_response", "detail": "d"}),
            ),
            (
                Outcome::Unavailable { reason: "r".into() },
                json!({"kind": "unavailable", "reason": "r"}),
            ),
            (Outcome::NoSuchTool, json!({"kind": "no_such_tool"})),
        ];
        for (outcome, wire) in all {
            assert_eq!(serde_json::to_value(&outcome).unwrap(), wire);
            let back: Outcome = serde_json::from_value(wire).unwrap();
            assert_eq!(back, outcome);
            let text = serde_json::to_string(&outcome).unwrap();
            assert_eq!(serde_json::from_str::<Outcome>(&text).unwrap(), outcome);
        }
        assert_eq!(
            serde_json::to_value(MediaMode::Describe).unwrap(),
            json!("describe")
        );
        assert_eq!(MediaMode::default(), MediaMode::Passthrough);
    }

    // ---- properties ------------------------------------------------------------------------

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z{}\\[\\]\":,=\\n\\r é😀]{0,12}".prop_map(Value::String),
            prop::sample::select(vec![
                "text",
                "image",
                "audio",
                "resource",
                "resource_link",
                "TWE=",
                "{\"a\":[{\"b\":1}]}",
                "[1,{\"c\":2}]",
                "MCP error -32602: x",
                "rate_limit",
                "overloaded",
            ])
            .prop_map(Value::from),
        ];
        let keys = prop::sample::select(vec![
            "type",
            "text",
            "data",
            "mimeType",
            "resource",
            "uri",
            "name",
            "blob",
            "content",
            "structuredContent",
            "isError",
            "error",
            "message",
            "code",
            "items",
            "k",
        ]);
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| {
                    Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                }),
            ]
        })
    }

    fn arb_outcome() -> impl Strategy<Value = Outcome> {
        prop_oneof![
            arb_json().prop_map(|result| Outcome::Result { result }),
            (
                prop::collection::vec(arb_json(), 0..5),
                prop::option::of(arb_json()),
                prop::option::of(arb_json())
            )
                .prop_map(|(content, sc, is_error)| {
                    let mut r = Map::new();
                    r.insert("content".into(), Value::Array(content));
                    if let Some(sc) = sc {
                        r.insert("structuredContent".into(), sc);
                    }
                    if let Some(e) = is_error {
                        r.insert("isError".into(), e.is_truthy_bool());
                    }
                    Outcome::Result {
                        result: Value::Object(r),
                    }
                }),
            arb_json().prop_map(|error| Outcome::RpcError { error }),
            any::<u64>().prop_map(|timeout_ms| Outcome::Timeout { timeout_ms }),
            ".{0,40}".prop_map(|detail| Outcome::ServerExited { detail }),
            ".{0,40}".prop_map(|detail| Outcome::InvalidResponse { detail }),
            ".{0,40}".prop_map(|reason| Outcome::Unavailable { reason }),
            Just(Outcome::NoSuchTool),
        ]
    }

    trait TruthyBool {
        fn is_truthy_bool(&self) -> Value;
    }
    impl TruthyBool for Value {
        /// Half the time a real bool, otherwise the value itself (isError of any shape).
        fn is_truthy_bool(&self) -> Value {
            match self {
                Value::Null => Value::Bool(true),
                Value::Bool(_) => self.clone(),
                Value::Number(_) => Value::Bool(false),
                other => other.clone(),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn text_content_never_exceeds_budget(
            lines in prop::collection::vec("[a-z é😀\\r{\\[]{0,10}", 0..12),
            trailing in any::<bool>(),
            budget in 0usize..80,
        ) {
            let mut t = lines.join("\n");
            if trailing { t.push('\n'); }
            let env = ok(json!({"content": [text(&t)]}), budget);
            prop_assert_ne!(env.status, Status::Error);
            prop_assert!(env.content.chars().count() <= budget);
            prop_assert_eq!(env.status == Status::Truncated, env.omitted > 0);
        }

        #[test]
        fn any_outcome_maps_without_panicking(
            outcome in arb_outcome(),
            budget in 0usize..120,
            describe in any::<bool>(),
        ) {
            let media = if describe { MediaMode::Describe } else { MediaMode::Passthrough };
            let mapped = map_outcome(&outcome, &ctx(budget, media));
            let env = &mapped.envelope;
            match env.status {
                Status::Error => {
                    let (t, message) = env.content.split_once(": ").unwrap();
                    let t = ErrorType::parse(t).unwrap();
                    prop_assert_eq!(env.retryable, t.is_retryable());
                    prop_assert_eq!(env.omitted, 0);
                    if budget >= 40 {
                        prop_assert!(message.chars().count() <= budget);
                    }
                    prop_assert!(mapped.media.is_empty());
                }
                _ => {
                    prop_assert!(env.content.chars().count() <= budget);
                    prop_assert!(!env.retryable);
                    if describe { prop_assert!(mapped.media.is_empty()); }
                }
            }
            let answer = call_tool_result(&mapped);
            prop_assert_eq!(&answer["structuredContent"], &env.to_value());
            prop_assert_eq!(answer["isError"].as_bool(), Some(env.status == Status::Error));
            let round: Outcome = serde_json::from_str(&serde_json::to_string(&outcome).unwrap()).unwrap();
            prop_assert_eq!(round, outcome);
        }
    }

    // ---- raw results -----------------------------------------------------------------------

    fn raw_ctx(budget: usize, media: MediaMode) -> (String, MappingContext<'static>) {
        (
            String::new(),
            MappingContext {
                call_id: "c1",
                tool: "t",
                server: "s",
                budget: crate::budget::Budget::chars(budget),
                text: crate::outcome::TextShape {
                    long_rows: crate::budget::LongRows::Keep,
                    ..Default::default()
                },
                media,
            },
        )
    }

    /// `map_raw_result` of `text` equals `map_outcome` of the fully parsed result.
    fn assert_raw_same(text: &str, budget: usize, media: MediaMode) {
        let (_, ctx) = raw_ctx(budget, media);
        let result: Value = serde_json::from_str(text).unwrap();
        let full = map_outcome(&Outcome::Result { result }, &ctx);
        let lazy = map_raw_result(text, &ctx);
        assert_eq!(lazy, full, "budget {budget}: {text}");
        // The same result inside a whole response line, members in either order: mapped in
        // one pass, or given up on (then the caller parses in full) but never different.
        for line in [
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{text}}}"#),
            format!(r#"{{"result":{text},"id":"x","jsonrpc":"2.0"}}"#),
        ] {
            if let Some(lazy) = map_raw_response(&line, &ctx) {
                assert_eq!(lazy, full, "budget {budget}: {line}");
            }
        }
    }

    #[test]
    fn raw_responses_that_are_not_plain_success_responses_are_given_up_on() {
        let (_, ctx) = raw_ctx(100, MediaMode::Passthrough);
        let ok = r#"{"structuredContent":{"rows":[{"a":1},{"a":2}]}}"#;
        let good = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok}}}"#);
        assert_eq!(
            map_raw_response(&good, &ctx).unwrap().envelope.status,
            Status::Ok
        );
        for line in [
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok},"error":{{}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok},"result":{ok}}}"#),
            format!(r#"{{"jsonrpc":"1.0","id":1,"result":{ok}}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":{ok}}}"#),
            r#"{"jsonrpc":"2.0","id":1}"#.to_string(),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok}}} x"#),
            r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"rows":[{"a":1},tru]}}}"#
                .to_string(),
        ] {
            assert!(map_raw_response(&line, &ctx).is_none(), "{line}");
        }
    }

    fn small_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-1000i64..1000).prop_map(Value::from),
            "[a-z;{} ]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(2, 12, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec(("[a-c]", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn row_object() -> impl Strategy<Value = Value> {
        prop::collection::vec(("[a-d]", small_value()), 0..3)
            .prop_map(|kv| Value::Object(kv.into_iter().collect()))
    }

    fn row_array() -> impl Strategy<Value = Value> {
        prop_oneof![
            3 => prop::collection::vec(row_object(), 0..40),
            1 => prop::collection::vec(small_value(), 0..40),
        ]
        .prop_map(Value::from)
    }

    fn structured() -> impl Strategy<Value = Value> {
        prop_oneof![
            3 => row_array(),
            3 => prop::collection::vec(
                ("[a-e]", prop_oneof![2 => row_array(), 1 => small_value()]),
                0..4
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            1 => small_value(),
        ]
    }

    fn raw_result_value() -> impl Strategy<Value = Value> {
        let block = prop_oneof![
            "[a-z\n{}\\[\\]]{0,10}".prop_map(|t| json!({"type": "text", "text": t})),
            Just(json!({"type": "image", "mimeType": "image/png", "data": "TWFu"})),
            Just(json!({"type": "resource_link", "uri": "u", "name": "n"})),
            small_value(),
        ];
        (
            prop::option::of(structured()),
            prop::option::of(prop::collection::vec(block, 0..4)),
            prop::option::of(prop_oneof![
                Just(json!(true)),
                Just(json!(false)),
                Just(json!(1))
            ]),
            any::<bool>(),
        )
            .prop_map(|(sc, content, is_error, null_sc)| {
                let mut m = Map::new();
                if let Some(c) = content {
                    m.insert("content".into(), Value::from(c));
                }
                match sc {
                    Some(sc) => {
                        m.insert("structuredContent".into(), sc);
                    }
                    None if null_sc => {
                        m.insert("structuredContent".into(), Value::Null);
                    }
                    None => {}
                }
                if let Some(e) = is_error {
                    m.insert("isError".into(), e);
                }
                Value::Object(m)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn raw_mapping_equals_full_mapping(
            result in raw_result_value(),
            budget in 0usize..80,
            describe in any::<bool>(),
            pretty in any::<bool>(),
        ) {
            let media = if describe { MediaMode::Describe } else { MediaMode::Passthrough };
            let text = if pretty {
                serde_json::to_string_pretty(&result).unwrap()
            } else {
                serde_json::to_string(&result).unwrap()
            };
            assert_raw_same(&text, budget, media);
        }
    }

    #[test]
    fn raw_mapping_edge_cases() {
        let rows: Vec<Value> = (0..500).map(|i| json!({"i": i})).collect();
        let cases = [
            json!({"structuredContent": {"rows": rows}}).to_string(),
            json!({"structuredContent": {"rows": rows, "n": 500, "more": [1, 2]}}).to_string(),
            json!({"structuredContent": {"a": rows, "b": rows}}).to_string(),
            json!({"structuredContent": rows, "content": [image("TWFu")]}).to_string(),
            json!({"structuredContent": rows, "isError": true}).to_string(),
            json!({"structuredContent": {"rows": []}}).to_string(),
            json!({"structuredContent": {"rows": [{"a": 1}, 2]}}).to_string(),
            json!({"structuredContent": {"error": {"type": "rate_limit"}}, "isError": true})
                .to_string(),
            // Duplicate and escaped keys: parsed in full, last duplicate wins.
            r#"{"structuredContent": {"rows": [{"a":1}]}, "structuredContent": [1, 2, 3]}"#.into(),
            r#"{"structuredContent": {"rows": [{"a":1},{"b":2}], "rows": [{"c":3}]}}"#.into(),
            r#"{"structured\u0043ontent": [{"a":1},{"b":2},{"c":3}], "content": []}"#.into(),
            r#"{"structuredContent": {"r\u006fws": [{"a":1},{"b":2}]}}"#.into(),
            r#" { "structuredContent" : [ {"a" : 1} , 7 , { } ] , "isError" : false } "#.into(),
            "[1, 2]".into(),
            "null".into(),
            r#"{"content": "x"}"#.into(),
            r#"{"structuredContent": null}"#.into(),
        ];
        for text in &cases {
            for budget in [0, 1, 2, 3, 5, 10, 20, 100, 5000] {
                for media in [MediaMode::Passthrough, MediaMode::Describe] {
                    assert_raw_same(text, budget, media);
                }
            }
        }
    }
}
