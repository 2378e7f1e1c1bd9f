//! Result mapping: what a downstream `tools/call` produced ([`Outcome`]) and how it becomes an
//! envelope ([`map_outcome`]), plus the `CallToolResult` the proxy answers with
//! ([`call_tool_result`]).
//!
//! One response, by stage: [`Outcome`] (as received) → rows ([`rows`]) or a typed error
//! ([`errors`]) → the envelope in a [`Mapped`] → the `CallToolResult` view ([`call_tool_result`],
//! [`Mapped::response_json`]). Files: `rows.rs` (success path), `errors.rs` (error path and
//! [`ErrorType`]), `http_status.rs` (a remote server's HTTP error status), `media.rs` (media
//! blocks: [`MediaMode`], the one media description and the one base64 length), `lazy.rs` (the
//! large-result path that parses only the rows a budget can hold), `nested.rs` (results that are
//! not plain tool results, envelopes behind an envelope).
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
//! With `long_rows = "split"` (the default) a row longer than the budget on its own, a line, a
//! block or an object row, is then cut into pieces that each fit ([`crate::text_rows`]).
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
//! copy strings only up to `char_budget + 1` characters when long rows are kept whole
//! (`long_rows = "keep"`): such a row already exceeds the budget, so [`fill_rows`] leaves it
//! out and its text never appears. With `long_rows = "split"` they are copied whole, since
//! every piece of a row longer than the budget can be shown, and each object row is rendered up
//! to the budget once more to tell whether it must be cut
//! ([`crate::text_rows::SplitLongObjects`]).
//!
//! This module does no I/O.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::budget::{Budget, LongRows, TextRows};
use crate::envelope::Envelope;
use crate::text_rows::TextRules;

mod answer;
pub mod errors;
pub mod fast;
mod http_status;
mod lazy;
pub mod media;
pub mod nested;
pub mod rows;
#[cfg(test)]
mod tests;

pub use answer::call_tool_result;
use errors::error_mapped;
pub use errors::ErrorType;
pub use errors::{duration_text, millis_text, seconds_text};
pub use lazy::{map_raw_response, map_raw_result};
pub use media::{
    audio_as_text, audio_content_allowed, base64_decoded_len, describe_media, passed_media,
    MediaMode,
};
pub use rows::{count_result_rows, map_result_from, paged_result_json, rows_not_held};

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
    /// No response within the tool's timeout (build it with [`Outcome::timeout`]).
    Timeout {
        /// The timeout that elapsed, in whole milliseconds (rounded down).
        timeout_ms: u64,
        /// The same timeout in nanoseconds, present only when it is not a whole number of
        /// milliseconds (`tool_timeout_sec = 0.0005`), so that the message names it exactly;
        /// absent from transcripts otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ns: Option<u64>,
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
    /// The call's JSON-RPC error repeats the error that a request of its server to the client
    /// (sampling, elicitation, roots) got during the call: a refusal because the client did not
    /// declare the capability the request needs (-32601), or the client's own error answer
    /// (see [`errors::input_failure`]). Not the server's fault: `unavailable`, not retryable.
    InputFailed {
        /// The server's request method (`sampling/createMessage`, `elicitation/create`,
        /// `roots/list`).
        method: String,
        /// The error object that request got, as sent to the server (boxed, as `error`: a
        /// `Value` is 80 bytes, and every outcome is as large as its largest variant).
        input_error: Box<Value>,
        /// The call's `error` member as received.
        error: Box<Value>,
    },
    /// No tool of that name (answered by the proxy itself).
    NoSuchTool {
        /// The servers that could offer the name but are not serving now (no allowlist rules
        /// it out), each as `'<server>' (<why>)`, so the model learns the tool may appear
        /// once they are back. Empty (and left out of a transcript record) when none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        servers_down: Vec<String>,
        /// When more than one server gives the name (a collision, so that it is exposed under
        /// none of them: [`crate::catalog::Catalog::shared`]), the names its tools were given
        /// instead, which the message suggests. Empty (and left out of a transcript record)
        /// otherwise.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        exposed_as: Vec<String>,
        /// The tools of that name that a server listed but the proxy dropped from its catalog
        /// because their definitions break the rules ([`crate::tool_validation`]), each with
        /// its server and why, so that the model learns the tool exists and that calling it
        /// again cannot help. Empty (and left out of a transcript record, as in every record
        /// written before it existed) otherwise.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        dropped: Vec<crate::tool_validation::DroppedTool>,
    },
    /// A remote server answered the call's HTTP request with an error status (401, 403, 429,
    /// 503, ...); see `http_status.rs` for the mapping.
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
    /// The call's request ended before it was answered (recorded by the proxy itself): the
    /// client cancelled it (`notifications/cancelled`, MCP 2025-11-25 "Utilities:
    /// Cancellation"; a 2026-07-28 client of `serve --http` closing the response stream), so
    /// the client got no answer. `{"kind":"cancelled"}`; maps to an error envelope of type
    /// [`CANCELLED`] that nobody was sent. Transcripts written before it existed hold none.
    Cancelled,
    /// A page of the proxy's page tool: the rows of the earlier call `of_call_id` (same
    /// session, same transcript) from row `first_row` on. Replay finds that call's record.
    Page {
        /// The `call_id` of the truncated call paged.
        of_call_id: String,
        /// The page's first row (0-based, among that result's rows).
        first_row: u64,
    },
    /// A call the proxy refused itself with a JSON-RPC error before any server saw it
    /// (malformed params: `arguments` that are no object, a `name` that is no string; a
    /// `requestState` it never issued): the client got that error, not an envelope.
    /// `{"kind":"refused","error":{…}}`; maps to the error type of its code (-32602:
    /// `invalid_argument`) with a message naming the proxy, not a server. Transcripts written
    /// before it existed record such a call as [`Outcome::RpcError`].
    Refused {
        /// The JSON-RPC `error` object the client got.
        error: Value,
    },
    /// The page tool's error answer (bad arguments, no rows kept for the `call_id`).
    PageError {
        /// The envelope's error type (`invalid_argument`, `not_found`).
        error_type: String,
        /// The message.
        message: String,
    },
}

impl Outcome {
    /// The [`Outcome::Timeout`] of a call that had `timeout` to answer: whole milliseconds,
    /// plus the nanoseconds when that drops a fraction.
    pub fn timeout(timeout: std::time::Duration) -> Outcome {
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let whole_ms = timeout.subsec_nanos().is_multiple_of(1_000_000);
        let timeout_ns = (!whole_ms).then(|| u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
        Outcome::Timeout {
            timeout_ms,
            timeout_ns,
        }
    }
}

/// The error type of the envelope [`Outcome::Cancelled`] maps to (no client receives it: the
/// record keeps the usual shape, and `stats` counts the call under this type).
pub const CANCELLED: &str = "cancelled";

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
    pub(crate) fn text_rules(&self) -> TextRules {
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
    /// `_meta`") without the downstream server's `io.modelcontextprotocol/serverInfo` (the
    /// answering server's identity, which is not ours to pass on); `None` when nothing is left.
    pub meta: Option<Value>,
}

impl Mapped {
    /// The `CallToolResult` as a JSON value (see [`call_tool_result`]).
    pub fn into_call_tool_result(self) -> Value {
        call_tool_result(&self)
    }
}

/// Maps an outcome to its envelope and passed-through media (issue 3 mapping contract; see the
/// module documentation for every rule). Never panics, whatever the `Value`s hold.
pub fn map_outcome(outcome: &Outcome, ctx: &MappingContext<'_>) -> Mapped {
    let server = ctx.server;
    let err = |t: ErrorType, pieces: &[&str]| error_mapped(ctx, t, pieces.iter().copied());
    match outcome {
        Outcome::Result { result } => rows::map_result(result, ctx),
        Outcome::RpcError { error } => errors::map_rpc_error(error, ctx),
        Outcome::Refused { error } => errors::map_refused(error, ctx),
        Outcome::InputFailed {
            method,
            input_error,
            error,
        } => errors::map_input_failed(method, input_error, error, ctx),
        Outcome::Timeout {
            timeout_ms,
            timeout_ns,
        } => {
            let timeout = match timeout_ns {
                Some(ns) => std::time::Duration::from_nanos(*ns),
                None => std::time::Duration::from_millis(*timeout_ms),
            };
            let within = format!("no response from server '{server}' within ");
            err(ErrorType::Timeout, &[&within, &duration_text(timeout)])
        }
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
        Outcome::NoSuchTool {
            servers_down,
            exposed_as,
            dropped,
        } => err(
            ErrorType::NotFound,
            &[&no_such_tool(ctx.tool, servers_down, exposed_as, dropped)],
        ),
        Outcome::HttpStatus {
            status,
            retry_after,
            detail,
        } => http_status::map_http_status(ctx, *status, retry_after.as_deref(), detail),
        Outcome::ConnectionFailed { detail } => err(
            ErrorType::ServerError,
            &[
                &format!("the connection to server '{server}' failed during the call: "),
                detail,
            ],
        ),
        Outcome::NotRecorded { detail } => err(ErrorType::NotFound, &[detail]),
        Outcome::Cancelled => {
            let why = "the client cancelled the call before it was answered";
            own_error(ctx, CANCELLED, why)
        }
        Outcome::Page { of_call_id, .. } => err(
            ErrorType::NotFound,
            &[&format!(
                "the result of call '{of_call_id}' is not in this transcript"
            )],
        ),
        Outcome::PageError {
            error_type,
            message,
        } => own_error(ctx, error_type, message),
    }
}

/// An error envelope of `error_type` (a type of the proxy's own, such as `cancelled`, or one
/// a recorded page error carries) with `message` as it is.
fn own_error(ctx: &MappingContext<'_>, error_type: &str, message: &str) -> Mapped {
    Mapped {
        envelope: Envelope::error(ctx.call_id, ctx.tool, error_type, message),
        media: Vec::new(),
        meta: None,
    }
}

/// The message of [`Outcome::NoSuchTool`]: the name, the servers that list it but whose
/// definition of it was dropped and why, the names its tools have when several servers give
/// it, and the servers down that could offer it.
fn no_such_tool(
    tool: &str,
    servers_down: &[String],
    exposed_as: &[String],
    dropped: &[crate::tool_validation::DroppedTool],
) -> String {
    let mut message = format!("no tool named '{tool}'");
    if !dropped.is_empty() {
        let each: Vec<String> = dropped
            .iter()
            .map(|d| {
                let shown = crate::tool_validation::shown_unknown_name(&d.tool);
                let own = if shown == tool {
                    String::new()
                } else {
                    format!(" (as '{shown}')")
                };
                format!(
                    "server '{}' lists it{own}, but the proxy dropped it from its catalog \
                     because {}",
                    d.server, d.reason
                )
            })
            .collect();
        message.push_str(&format!(
            " is offered: {}. Retrying will not help: the tool's definition must be fixed \
             on the server",
            each.join("; ")
        ));
    }
    if let Some((last, first)) = exposed_as.split_last() {
        let quoted: Vec<String> = first.iter().map(|n| format!("'{n}'")).collect();
        let choices = if quoted.is_empty() {
            format!("'{last}'")
        } else {
            format!("{} or '{last}'", quoted.join(", "))
        };
        message.push_str(&format!(
            ": more than one server offers that name, so each one's tool is named after its \
             server; did you mean {choices}?"
        ));
    }
    if !servers_down.is_empty() {
        let lead = if !dropped.is_empty() {
            ". Also not serving"
        } else if exposed_as.is_empty() {
            " among the tools offered now; not serving"
        } else {
            " Also not serving"
        };
        message.push_str(&format!(
            "{lead}, so their tools are not offered until they are back: {}",
            servers_down.join(", ")
        ));
    }
    message
}
