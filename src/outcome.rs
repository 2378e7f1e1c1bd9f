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
//! than the budget are cut by the rule documented on [`cut_message`].
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

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::envelope::{fill_rows, is_retryable, json_kind, Envelope, Row, Status};

/// How `image` / `audio` blocks and blob resources are handled (issue 3).
// moves to config.rs
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaMode {
    /// Pass the blocks through untouched after the envelope's text block (not counted as rows).
    #[default]
    Passthrough,
    /// Replace each block by a row `{"type", "mimeType", "bytes"}` (decoded size in bytes).
    Describe,
}

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
    /// The tool's budget for `content`, in characters (Unicode scalar values).
    pub char_budget: usize,
    /// How media blocks are handled.
    pub media: MediaMode,
}

/// The result of [`map_outcome`]: the envelope and the media blocks passed through.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    /// The six-key envelope.
    pub envelope: Envelope,
    /// `image` / `audio` blocks and blob `resource` blocks passed through untouched, in the
    /// order received; empty on the error path and with [`MediaMode::Describe`].
    pub media: Vec<Value>,
}

impl Mapped {
    /// Like [`call_tool_result`], but moves the media blocks instead of copying them.
    pub fn into_call_tool_result(self) -> Value {
        build_call_tool_result(&self.envelope, self.media)
    }
}

/// The error types of the envelope's error path (issue 3), retryable ones first.
///
/// | type | from |
/// |---|---|
/// | `timeout` | [`Outcome::Timeout`]; JSON-RPC error -32001 |
/// | `rate_limit` | `isError` result with `structuredContent.error.type == "rate_limit"`; JSON-RPC error whose `data.type` or `data.error.type` is `"rate_limit"` |
/// | `server_error` | [`Outcome::ServerExited`], [`Outcome::InvalidResponse`]; JSON-RPC -32603, -32000 and any code not listed here; a result that is not a valid `CallToolResult` |
/// | `overloaded` | like `rate_limit`, with `"overloaded"` |
/// | `not_found` | [`Outcome::NoSuchTool`]; JSON-RPC -32601, -32002 |
/// | `invalid_argument` | JSON-RPC -32602; `isError` result whose text starts `MCP error -32602` |
/// | `unavailable` | [`Outcome::Unavailable`] |
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
    }
}

/// The `CallToolResult` the proxy answers with (MCP specification 2025-06-18, "Tools"):
/// `{"content": [{"type":"text","text":"<envelope as compact JSON>"}, ...media],
/// "structuredContent": <envelope>, "isError": <status == "error">}`.
pub fn call_tool_result(mapped: &Mapped) -> Value {
    build_call_tool_result(&mapped.envelope, mapped.media.clone())
}

fn build_call_tool_result(envelope: &Envelope, media: Vec<Value>) -> Value {
    let mut content = Vec::with_capacity(1 + media.len());
    content.push(json!({"type": "text", "text": envelope.to_json()}));
    content.extend(media);
    json!({
        "content": content,
        "structuredContent": envelope.to_value(),
        "isError": envelope.status == Status::Error,
    })
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
    let message = cut_message(pieces, ctx.char_budget);
    Mapped {
        envelope: Envelope::error(ctx.call_id, ctx.tool, error_type.as_str(), &message),
        media: Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Error messages

/// The marker that replaces the cut part of a message: `… [N characters cut]`
/// (`… [1 character cut]` for one).
fn cut_marker(cut: usize) -> String {
    if cut == 1 {
        "… [1 character cut]".to_owned()
    } else {
        format!("… [{cut} characters cut]")
    }
}

/// Joins `pieces` into an error message of at most `char_budget` characters (Unicode scalar
/// values).
///
/// Rule: a message of `n <= char_budget` characters is kept whole. A longer one keeps its first
/// `k` characters followed by [`cut_marker`]`(n - k)`, with `k` the largest value for which
/// `k + len(marker) <= char_budget`. When even `k = 0` does not fit (a budget smaller than the
/// marker, about 20 characters), the message is the marker alone, which then exceeds the budget:
/// saying that something was cut matters more than the budget. The budget covers the message
/// only, not the `"<type>: "` prefix of the envelope's `content`.
///
/// Only the first `char_budget` characters are ever copied, so a huge text costs one scan.
pub fn cut_message<'s>(pieces: impl IntoIterator<Item = &'s str>, char_budget: usize) -> String {
    let mut head = String::new();
    let mut head_chars = 0usize;
    let mut total = 0usize;
    for piece in pieces {
        let room = char_budget - head_chars;
        let (end, taken) = prefix_end(piece, room);
        head.push_str(&piece[..end]);
        head_chars += taken;
        total += taken;
        if end < piece.len() {
            total += piece[end..].chars().count();
        }
    }
    if total <= char_budget {
        return head;
    }
    // Largest k with k + len(marker(total - k)) <= budget; the marker grows by one character
    // per extra digit, so this loop runs a handful of times.
    let min_marker = cut_marker(1).chars().count();
    let mut kept = char_budget.saturating_sub(min_marker);
    while kept > 0 && kept + cut_marker(total - kept).chars().count() > char_budget {
        kept -= 1;
    }
    let (end, _) = prefix_end(&head, kept);
    head.truncate(end);
    head.push_str(&cut_marker(total - kept));
    head
}

/// The byte index just after the first `max_chars` characters of `s` (or `s.len()`), and how
/// many characters that is.
fn prefix_end(s: &str, max_chars: usize) -> (usize, usize) {
    if s.len() <= max_chars {
        return (s.len(), s.chars().count());
    }
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => (i, max_chars),
        None => (s.len(), s.chars().count()),
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

fn map_result(result: &Value, ctx: &MappingContext<'_>) -> Mapped {
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
        return invalid(format!(
            "the result is {}, not an object",
            json_kind(result)
        ));
    };
    let structured = obj.get("structuredContent").filter(|v| !v.is_null());
    let blocks: &[Value] = match (obj.get("content"), structured) {
        (Some(Value::Array(blocks)), _) => blocks,
        (_, Some(_)) => &[],
        (None, None) => return invalid("`content` is missing".to_owned()),
        (Some(other), None) => {
            return invalid(format!("`content` is {}, not an array", json_kind(other)))
        }
    };
    if obj.get("isError") == Some(&Value::Bool(true)) {
        return map_tool_error(blocks, structured, ctx);
    }

    let budget = ctx.char_budget;
    let mode = ctx.media;
    let media = match mode {
        MediaMode::Passthrough => blocks
            .iter()
            .filter(|b| media_data(b).is_some())
            .cloned()
            .collect(),
        MediaMode::Describe => Vec::new(),
    };
    let filled = match structured {
        Some(sc) => {
            let described = blocks
                .iter()
                .filter(move |_| mode == MediaMode::Describe)
                .filter_map(move |b| describe_media(b, budget));
            fill_rows(value_rows(sc, budget).chain(described), budget)
        }
        None => fill_rows(
            blocks.iter().flat_map(move |b| block_rows(b, mode, budget)),
            budget,
        ),
    };
    Mapped {
        envelope: filled.into_envelope(ctx.call_id, ctx.tool),
        media,
    }
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
    let limited = match sc_type {
        Some("rate_limit") => Some((ErrorType::RateLimit, "is rate limited")),
        Some("overloaded") => Some((ErrorType::Overloaded, "is overloaded")),
        _ => None,
    };
    if let Some((error_type, words)) = limited {
        return match sc_message {
            Some(m) => error_mapped(ctx, error_type, [m]),
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
            .flat_map(|(i, t)| [if i == 0 { "" } else { "\n" }, t]);
        return error_mapped(ctx, error_type, joined);
    }
    match sc_message {
        Some(m) => error_mapped(ctx, error_type, [m]),
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

/// A text block's rows: the JSON rule when the whole text is a JSON object or array, else one
/// line row per line.
fn text_rows(text: &str) -> Rows<'_> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        if let Ok(value @ (Value::Object(_) | Value::Array(_))) =
            serde_json::from_str::<Value>(text)
        {
            return owned_value_rows(value);
        }
    }
    if text.is_empty() {
        return no_rows();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    Box::new(
        body.split('\n')
            .map(|line| Row::Line(Cow::Borrowed(line.strip_suffix('\r').unwrap_or(line)))),
    )
}

/// The base64 `data` of an `image` / `audio` block or the `blob` of a `resource` block; `None`
/// for every other block.
fn media_data(block: &Value) -> Option<&str> {
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
fn describe_media<'a>(block: &Value, budget: usize) -> Option<Row<'a>> {
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
fn block_rows(block: &Value, mode: MediaMode, budget: usize) -> Rows<'_> {
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
            Some(Value::String(text)) => text_rows(text),
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
                    Box::new(uri.into_iter().chain(text_rows(text)))
                }
                _ => as_is(),
            },
            _ => as_is(),
        },
        _ => as_is(),
    }
}
