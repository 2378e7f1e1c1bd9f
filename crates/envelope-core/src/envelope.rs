//! The terse tool-result envelope: the core every other module builds on.
//!
//! Source of the rules: the seed document `seeds/000_31a2e9a1d643ad9e.txt` ("Build a Terse,
//! Honest Tool-Result Envelope"), with the value-rendering contract of issue 2 for rows that are
//! not flat. The shared vectors (`vectors/envelope.jsonl`) are the reference answers.
//!
//! # The envelope
//! Always exactly six keys, serialized in this order:
//!
//! | key | type | meaning |
//! |---|---|---|
//! | `call_id` | string | echoed from the request (`""` when absent) |
//! | `tool` | string | echoed from the request (`""` when absent) |
//! | `status` | `"ok"` \| `"truncated"` \| `"error"` | what happened |
//! | `content` | string | the rendered rows, or `"<type>: <message>"` on the error path |
//! | `omitted` | integer ≥ 0 | rows left out to fit `char_budget` (always 0 on the error path) |
//! | `retryable` | bool | true only for the error types in [`RETRYABLE_ERROR_TYPES`] |
//!
//! # Lengths
//! Every length here is counted in Unicode scalar values (Rust `char`s, what Python's `len`
//! counts), never bytes: `é` is 1, `😀` is 1, `e` followed by a combining acute accent is 2.
//!
//! This module does no I/O.

use std::borrow::Cow;
use std::io;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::budget::{Budget, Meter, RenderBound};

/// The error types for which a retry could plausibly succeed (exact, case-sensitive match).
/// Source: seed 000, "Error path".
pub const RETRYABLE_ERROR_TYPES: [&str; 4] =
    ["timeout", "rate_limit", "server_error", "overloaded"];

/// The error type used when an error object carries no `type` (seed 000 contract of issue 2).
pub const UNKNOWN_ERROR_TYPE: &str = "unknown";

/// Whether a retry of a call that failed with `error_type` could plausibly succeed.
pub fn is_retryable(error_type: &str) -> bool {
    RETRYABLE_ERROR_TYPES.contains(&error_type)
}

/// The envelope's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every row fits within the budget.
    Ok,
    /// At least one row was left out (`omitted > 0`).
    Truncated,
    /// The call failed; `content` is `"<type>: <message>"`.
    Error,
}

impl Status {
    /// The wire spelling: `"ok"`, `"truncated"` or `"error"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Truncated => "truncated",
            Status::Error => "error",
        }
    }
}

/// The six-key envelope. Field order is the serialization order required by the spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// Echoed from the request.
    pub call_id: String,
    /// Echoed from the request.
    pub tool: String,
    /// `ok`, `truncated` or `error`.
    pub status: Status,
    /// Rendered rows (success path) or `"<type>: <message>"` (error path).
    pub content: String,
    /// Number of rows left out for budget; 0 on the error path.
    pub omitted: u64,
    /// Whether a retry could plausibly succeed; false on the success path.
    pub retryable: bool,
}

impl Envelope {
    /// The error-path envelope: `status = "error"`, `content = "<type>: <message>"`,
    /// `omitted = 0`, `retryable` from [`is_retryable`]. The budget does not apply here.
    pub fn error(call_id: &str, tool: &str, error_type: &str, message: &str) -> Envelope {
        Envelope {
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            status: Status::Error,
            content: format!("{error_type}: {message}"),
            omitted: 0,
            retryable: is_retryable(error_type),
        }
    }

    /// The envelope as one line of compact JSON, keys in spec order.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an envelope always serializes")
    }

    /// The envelope as a JSON value (an object with the six keys in spec order).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("an envelope always serializes")
    }

    /// A JSON Schema (draft 2020-12, the dialect MCP 2025-11-25 "Tools" assumes for a schema
    /// without `$schema`) describing every envelope: the six keys, their types, `status`'s three
    /// values, nothing else allowed. Advertised as each tool's `outputSchema` (MCP
    /// specification 2025-06-18, "Tools: Output Schema"), so it is kept compact (330 bytes
    /// of JSON): no titles or descriptions repeated in every tool of a `tools/list` answer (the
    /// proxy's `instructions` explain the envelope once), and no keyword another one implies:
    /// `status` has its `enum` of three strings and no `"type": "string"` beside it (JSON
    /// Schema 2020-12 Validation, 6.1.2: `enum` alone admits exactly those values).
    pub fn json_schema() -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "call_id": {"type": "string"},
                "tool": {"type": "string"},
                "status": {"enum": ["ok", "truncated", "error"]},
                "content": {"type": "string"},
                "omitted": {"type": "integer", "minimum": 0},
                "retryable": {"type": "boolean"}
            },
            "required": ["call_id", "tool", "status", "content", "omitted", "retryable"],
            "additionalProperties": false
        })
    }
}

/// An error as the seed defines it: a type from the error vocabulary and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// The error type, e.g. `timeout`, `not_found`; [`UNKNOWN_ERROR_TYPE`] when none was given.
    pub error_type: String,
    /// A plain-words message; may be empty.
    pub message: String,
}

/// The seed's input: `{"call_id", "tool", "rows"?, "error"?}` in validated form.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// Echoed into the envelope; `""` when absent.
    pub call_id: String,
    /// Echoed into the envelope; `""` when absent.
    pub tool: String,
    /// Flat rows (objects); empty when absent.
    pub rows: Vec<Map<String, Value>>,
    /// Present only when the input's `error` was truthy.
    pub error: Option<ToolError>,
}

/// Why a JSON value is not a valid [`ToolResult`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResultShapeError {
    /// The input is not a JSON object.
    #[error("the result must be a JSON object, got {0}")]
    NotAnObject(&'static str),
    /// `rows` is present but not an array.
    #[error("`rows` must be a list of objects, got {0}")]
    RowsNotAList(&'static str),
    /// One row is not an object.
    #[error("`rows[{index}]` must be an object, got {kind}")]
    RowNotAnObject {
        /// Zero-based index of the offending row.
        index: usize,
        /// The JSON kind found instead.
        kind: &'static str,
    },
}

/// The JSON kind of a value, for error messages: `null`, `boolean`, `number`, `string`, `array`,
/// `object`.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Python truthiness, which the seed's "present and truthy" relies on: null, false, 0, "", {}
/// and [] are falsy.
pub fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Renders an echoed identifier (`call_id`, `tool`): a string raw, absent or null as `""`,
/// anything else as compact JSON.
fn echo_field(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

impl ToolResult {
    /// Validates a JSON value into a [`ToolResult`].
    ///
    /// Errors: the value is not an object, `rows` is not an array, or a row is not an object
    /// (naming its zero-based index). A falsy `error` (null, false, 0, "", {}, []) counts as
    /// absent; an object error without `type` gets [`UNKNOWN_ERROR_TYPE`], a missing `message` is
    /// empty; a string error `s` becomes `unknown: s`; any other truthy error is `unknown` with the
    /// value rendered as a row value.
    pub fn from_json(value: &Value) -> Result<ToolResult, ResultShapeError> {
        let obj = value
            .as_object()
            .ok_or(ResultShapeError::NotAnObject(json_kind(value)))?;
        let rows = match obj.get("rows") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    item.as_object()
                        .cloned()
                        .ok_or(ResultShapeError::RowNotAnObject {
                            index,
                            kind: json_kind(item),
                        })
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(ResultShapeError::RowsNotAList(json_kind(other))),
        };
        let error = obj
            .get("error")
            .filter(|e| is_truthy(e))
            .map(error_from_json);
        Ok(ToolResult {
            call_id: echo_field(obj.get("call_id")),
            tool: echo_field(obj.get("tool")),
            rows,
            error,
        })
    }
}

/// Reads a truthy `error` value as `(type, message)`; see [`ToolResult::from_json`].
fn error_from_json(value: &Value) -> ToolError {
    match value {
        Value::Object(map) => {
            let text = |key: &str| match map.get(key) {
                None | Some(Value::Null) => None,
                Some(v) => Some(render_value(v).into_owned()),
            };
            ToolError {
                error_type: text("type").unwrap_or_else(|| UNKNOWN_ERROR_TYPE.to_owned()),
                message: text("message").unwrap_or_default(),
            }
        }
        other => ToolError {
            error_type: UNKNOWN_ERROR_TYPE.to_owned(),
            message: render_value(other).into_owned(),
        },
    }
}

/// The seed's `summarize_tool_result(result, char_budget)`.
///
/// Error path (a truthy `error`): `status = "error"`, `content = "<type>: <message>"`,
/// `omitted = 0`, `retryable` per [`RETRYABLE_ERROR_TYPES`]; the budget does not apply.
/// Success path: the rows are filled greedily by [`fill_rows`] within `char_budget`
/// characters (Unicode scalar values).
pub fn summarize_tool_result(result: &ToolResult, char_budget: usize) -> Envelope {
    if let Some(err) = &result.error {
        return Envelope::error(&result.call_id, &result.tool, &err.error_type, &err.message);
    }
    let filled = fill_rows(
        result.rows.iter().map(|r| Row::Object(Cow::Borrowed(r))),
        char_budget,
    );
    filled.into_envelope(&result.call_id, &result.tool)
}

/// One row of the success path.
#[derive(Debug, Clone, PartialEq)]
pub enum Row<'a> {
    /// An object row: rendered as `k=v` pairs, keys sorted ascending by code point, joined
    /// with `,`.
    Object(Cow<'a, Map<String, Value>>),
    /// An object row given as its rendered text: the first piece of an object row longer than
    /// the budget, cut to fit it (`long_rows = "split"`, see
    /// [`crate::text_rows::SplitLongObjects`]). Joined to its neighbours as an
    /// [`Row::Object`] is.
    Rendered(Cow<'a, str>),
    /// A whole object row given as its rendered text, exactly what the [`Row::Object`] of the
    /// same members renders (the small-result path renders rows straight from the result's
    /// JSON text: [`crate::mapping::fast`]). Filled, joined and cut (`long_rows = "split"`) as
    /// that object row would be.
    Whole(Cow<'a, str>),
    /// A line of plain text (from a text content block): rendered as the line itself. Two
    /// consecutive line rows are joined with `\n` instead of `; ` (issue 3's mapping contract).
    Line(Cow<'a, str>),
    /// A blank-line-separated block of plain text (`text_rows = "blocks"`): rendered as
    /// itself; joined to a neighbouring text row with [`BLOCK_SEPARATOR`].
    Block(Cow<'a, str>),
    /// The continuation of the previous row, a line, a block or an object row cut off it to
    /// fit the budget (`long_rows = "split"`): joined to it with no separator at all, and to
    /// the next row as the row it continues would be (its [`RowKind`]).
    Continued(Cow<'a, str>, RowKind),
}

impl Row<'_> {
    /// Rows given as text (lines, blocks, rendered object pieces and continuations) give it;
    /// an [`Row::Object`] gives `None`.
    pub fn text(&self) -> Option<&str> {
        match self {
            Row::Object(_) => None,
            Row::Rendered(t)
            | Row::Whole(t)
            | Row::Line(t)
            | Row::Block(t)
            | Row::Continued(t, _) => Some(t),
        }
    }

    /// What the row is for the separators around it.
    pub fn kind(&self) -> RowKind {
        match self {
            Row::Object(_) | Row::Rendered(_) | Row::Whole(_) => RowKind::Object,
            Row::Line(_) => RowKind::Line,
            Row::Block(_) => RowKind::Block,
            Row::Continued(_, kind) => *kind,
        }
    }
}

/// What a row is, for the separators around it (see [`ROW_SEPARATOR`], [`LINE_SEPARATOR`],
/// [`BLOCK_SEPARATOR`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// An object row (or a piece of one).
    Object,
    /// A line of text (or a piece of one).
    Line,
    /// A block of text (or a piece of one).
    Block,
}

/// The separator written before `row` when the previous row was of kind `previous`.
fn separator_before(previous: Option<RowKind>, row: &Row<'_>) -> &'static str {
    match (previous, row.kind()) {
        (None, _) => "",
        (Some(_), _) if matches!(row, Row::Continued(..)) => "",
        (Some(RowKind::Line), RowKind::Line) => LINE_SEPARATOR,
        (Some(RowKind::Line | RowKind::Block), RowKind::Line | RowKind::Block) => BLOCK_SEPARATOR,
        (Some(_), _) => ROW_SEPARATOR,
    }
}

/// The separator between two object rows, or an object row and a line row (seed 000).
pub const ROW_SEPARATOR: &str = "; ";
/// The separator between two consecutive line rows (issue 3).
pub const LINE_SEPARATOR: &str = "\n";
/// The separator between two text rows when one of them is a block: a blank line.
pub const BLOCK_SEPARATOR: &str = "\n\n";

/// The outcome of a greedy fill: the content and how many rows were kept and left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filled {
    /// The rendered rows that fit, with their separators.
    pub content: String,
    /// Number of rows rendered into `content`.
    pub kept: u64,
    /// Number of rows left out.
    pub omitted: u64,
}

impl Filled {
    /// The success-path envelope: `truncated` when `omitted > 0`, else `ok`; never retryable.
    pub fn into_envelope(self, call_id: &str, tool: &str) -> Envelope {
        Envelope {
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            status: if self.omitted > 0 {
                Status::Truncated
            } else {
                Status::Ok
            },
            content: self.content,
            omitted: self.omitted,
            retryable: false,
        }
    }
}

/// Greedy fill (seed 000, "Success path"): add whole rows in order while the running length,
/// separators included, is at most `char_budget` characters; stop at the first row that does not
/// fit (never skipping it for a smaller later row). The rest are counted as omitted.
///
/// Rendering a row stops as soon as it exceeds what is left of the budget, so a huge row costs
/// time proportional to the budget, not to its size (beyond serializing nested values).
pub fn fill_rows<'a, I>(rows: I, char_budget: usize) -> Filled
where
    I: IntoIterator<Item = Row<'a>>,
{
    fill_rows_within(rows, &Budget::chars(char_budget))
}

/// The seed's greedy fill within any [`Budget`]: a row is added when the content with it
/// (separator included) still fits every limit of `budget`, counted exactly on that content
/// (token counts are not additive, so the candidate content is what is counted; see
/// [`crate::budget::Meter`]); the first row that does not fit stops the fill.
/// With [`Budget::chars`] this is [`fill_rows`].
pub fn fill_rows_within<'a, I>(rows: I, budget: &Budget) -> Filled
where
    I: IntoIterator<Item = Row<'a>>,
{
    let mut rows = rows.into_iter();
    let mut content = String::new();
    let mut meter = Meter::new(budget);
    let mut kept = 0u64;
    let mut previous: Option<RowKind> = None;
    // Room for a short row up front: growing from empty took three reallocations per row of a
    // small result (callgrind, 2026-12-02).
    let mut scratch = Vec::with_capacity(128);
    while let Some(row) = rows.next() {
        let separator = separator_before(previous, &row);
        let rendered = meter
            .bound(separator)
            .and_then(|bound| render_row_within(&row, bound, &mut scratch));
        // The scratch buffer holds only whole UTF-8 text written by `render_row_within`
        // (checked once, for the budget and for the content).
        let fits = rendered.and_then(|row_chars| {
            let text = std::str::from_utf8(&scratch).expect("rows render as UTF-8");
            meter
                .admit(&content, separator, text, row_chars)
                .then_some(text)
        });
        let Some(text) = fits else {
            // The rest are only counted: in O(1) when the iterator knows its length.
            let rest = match rows.size_hint() {
                (low, Some(high)) if low == high => low,
                _ => rows.count(),
            };
            let omitted = 1 + rest as u64;
            let dropped = meter.verify(&mut content) as u64;
            return Filled {
                content,
                kept: kept - dropped,
                omitted: omitted + dropped,
            };
        };
        content.push_str(separator);
        content.push_str(text);
        meter.commit(content.len());
        kept += 1;
        previous = Some(row.kind());
    }
    let dropped = meter.verify(&mut content) as u64;
    Filled {
        content,
        kept: kept - dropped,
        omitted: dropped,
    }
}

/// Renders one row as the seed specifies, without a budget (used by tests and by callers that
/// need the full text).
pub fn render_row(row: &Row<'_>) -> String {
    let mut buf = Vec::new();
    let unlimited = RenderBound {
        chars: usize::MAX,
        bytes: usize::MAX,
    };
    render_row_within(row, unlimited, &mut buf).expect("an unlimited render always fits");
    String::from_utf8(buf).expect("rows render as UTF-8")
}

/// Renders a row value: a string raw (no quotes), a number as serde_json writes it, `true` /
/// `false`, `null`, an array or object as compact JSON (issue 2's value-rendering contract).
pub fn render_value(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s.as_str()),
        other => Cow::Owned(other.to_string()),
    }
}

/// Number of Unicode scalar values in UTF-8 bytes: the bytes that are not continuation bytes.
fn utf8_char_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

/// A writer that refuses to grow past a [`RenderBound`] (characters and bytes).
struct CharLimited<'b> {
    buf: &'b mut Vec<u8>,
    chars: usize,
    limit: RenderBound,
}

impl CharLimited<'_> {
    fn push(&mut self, bytes: &[u8]) -> io::Result<()> {
        let n = utf8_char_count(bytes);
        if self.chars + n > self.limit.chars || self.buf.len() + bytes.len() > self.limit.bytes {
            return Err(io::Error::other("over budget"));
        }
        self.chars += n;
        self.buf.extend_from_slice(bytes);
        Ok(())
    }
}

impl io::Write for CharLimited<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.push(bytes)?;
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Renders `row` into `buf` (cleared first) if it stays within `limit`; returns its length
/// in characters, or `None` when it does not fit (rendering stops there).
pub(crate) fn render_row_within(
    row: &Row<'_>,
    limit: RenderBound,
    buf: &mut Vec<u8>,
) -> Option<usize> {
    buf.clear();
    let mut out = CharLimited {
        buf,
        chars: 0,
        limit,
    };
    let ok = match row {
        Row::Rendered(text)
        | Row::Whole(text)
        | Row::Line(text)
        | Row::Block(text)
        | Row::Continued(text, _) => out.push(text.as_bytes()).is_ok(),
        Row::Object(map) => render_object_row(map, &mut out).is_ok(),
    };
    ok.then_some(out.chars)
}

/// `key=value` pairs sorted by key, joined by `,`. The members are sorted with their values
/// (keys are unique), so no value is looked up by its key again (a lookup hashes the key).
fn render_object_row(map: &Map<String, Value>, out: &mut CharLimited<'_>) -> io::Result<()> {
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (i, (key, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b",")?;
        }
        out.push(key.as_bytes())?;
        out.push(b"=")?;
        match value {
            Value::String(s) => out.push(s.as_bytes())?,
            other => serde_json::to_writer(&mut *out, other).map_err(io::Error::other)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
