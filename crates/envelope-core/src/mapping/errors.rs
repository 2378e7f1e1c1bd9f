//! The error path: [`ErrorType`] (the envelope's error vocabulary) and how JSON-RPC errors,
//! `isError` results and proxy-side failures become an error envelope whose message is cut to
//! the tool's budget by the one truncation rule ([`crate::message_cut`]).
//!
//! Source of the rules: the project's issue 3 mapping contract; JSON-RPC 2.0 section 5.1 (error
//! codes); MCP specification 2025-11-25, "Tools: Error Handling".

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use super::{Mapped, MappingContext, Outcome};
use crate::envelope::{is_retryable, Envelope};

/// The error types of the envelope's error path (issue 3), retryable ones first.
///
/// | type | from |
/// |---|---|
/// | `timeout` | [`Outcome::Timeout`]; JSON-RPC error -32001 |
/// | `rate_limit` | [`Outcome::HttpStatus`] 429; `isError` result with `structuredContent.error.type == "rate_limit"`; JSON-RPC error whose `data.type` or `data.error.type` is `"rate_limit"` |
/// | `server_error` | [`Outcome::ServerExited`], [`Outcome::InvalidResponse`], [`Outcome::ConnectionFailed`], any other [`Outcome::HttpStatus`]; JSON-RPC -32603, -32000 and any code not listed here; a result that is not a valid `CallToolResult` |
/// | `overloaded` | [`Outcome::HttpStatus`] 503; like `rate_limit`, with `"overloaded"` |
/// | `not_found` | [`Outcome::NoSuchTool`], [`Outcome::NotRecorded`]; JSON-RPC -32601, -32002 |
/// | `invalid_argument` | JSON-RPC -32602 (also of [`Outcome::Refused`], which takes its type from its code as an error from a server does); `isError` result whose text starts `MCP error -32602` |
/// | `unavailable` | [`Outcome::Unavailable`]; [`Outcome::HttpStatus`] 401 and 403; JSON-RPC -32600; [`Outcome::InputFailed`] |
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
    /// `unavailable`: the server is not running, or refuses the request as such (-32600).
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

/// A duration as the proxy's messages write it: whole seconds as `10s`, anything else in
/// milliseconds, with the fraction of a millisecond (up to six decimals, trailing zeros
/// dropped) when there is one: `1500ms`, `250ms`, `0.5ms`. A timeout of 0.0005 s read `0s`
/// when only whole milliseconds were kept.
pub fn duration_text(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", millis_text(d))
    }
}

/// A duration as `check` and the proxy's own errors write a setting: seconds without
/// trailing zeros from one second up (`60s`, `1.5s`), milliseconds below
/// ([`duration_text`]: `500ms`, `0.5ms`; a timeout of 0.0005 s read `0.0005s`).
pub fn seconds_text(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        return duration_text(d);
    }
    format!("{}s", d.as_secs_f64())
}

/// A duration in milliseconds without the unit: `250`, `1500`, `0.5`, `0.000001` (up to six
/// decimals, the nanoseconds; trailing zeros dropped).
pub fn millis_text(d: Duration) -> String {
    let nanos = d.as_nanos();
    let (whole, fraction) = (nanos / 1_000_000, nanos % 1_000_000);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:06}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

pub(crate) fn error_mapped<'s>(
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

pub(crate) fn map_rpc_error(error: &Value, ctx: &MappingContext<'_>) -> Mapped {
    let server = ctx.server;
    let Some(obj) = error.as_object() else {
        return invalid_rpc_error(error, ctx);
    };
    let Some(code) = obj.get("code").and_then(Value::as_i64) else {
        return invalid_rpc_error(error, ctx);
    };
    let head = format!("server '{server}' answered error {code}");
    rpc_error_mapped(obj, code, &head, ctx)
}

/// The error envelope of a call the proxy refused itself before any server saw it
/// ([`Outcome::Refused`]), with the JSON-RPC `error` object the client got: the error type of
/// its code as [`map_rpc_error`] gives it, and a message that names the proxy, not a server:
/// `invalid_argument: mcp-envelope refused the call before it reached a server (error -32602):
/// `arguments` must be an object`.
pub(crate) fn map_refused(error: &Value, ctx: &MappingContext<'_>) -> Mapped {
    let obj = error.as_object();
    let code = obj.and_then(|o| o.get("code")).and_then(Value::as_i64);
    let (Some(obj), Some(code)) = (obj, code) else {
        let text = error.to_string();
        let pieces = [REFUSED, ": ", text.as_str()];
        return error_mapped(ctx, ErrorType::InvalidArgument, pieces);
    };
    let head = format!("{REFUSED} (error {code})");
    rpc_error_mapped(obj, code, &head, ctx)
}

/// How the message of a refused call ([`map_refused`]) starts.
const REFUSED: &str = "mcp-envelope refused the call before it reached a server";

/// The error envelope of the JSON-RPC error object `obj` with `code`: the type its code (or
/// `data.type`) gives, the message `head` followed by the error's own message.
fn rpc_error_mapped(
    obj: &serde_json::Map<String, Value>,
    code: i64,
    head: &str,
    ctx: &MappingContext<'_>,
) -> Mapped {
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
        // Invalid Request: the server refuses the request as such; the same request again
        // cannot succeed (JSON-RPC 2.0 section 5.1).
        (_, -32600) => ErrorType::Unavailable,
        // -32603, -32000 and every other code.
        _ => ErrorType::ServerError,
    };
    match obj.get("message") {
        Some(Value::String(m)) if !m.is_empty() => {
            error_mapped(ctx, error_type, [head, ": ", m.as_str()])
        }
        Some(Value::Null | Value::String(_)) | None => error_mapped(ctx, error_type, [head]),
        Some(other) => {
            let m = other.to_string();
            error_mapped(ctx, error_type, [head, ": ", m.as_str()])
        }
    }
}

/// The outcome of a call that failed with JSON-RPC error `error` after its server's request
/// `method` to the client got the error `input_error` (made by the client when `by_client`,
/// else by the proxy): [`Outcome::InputFailed`] when `error` has `input_error`'s code and that
/// error is the client's own answer (any code, e.g. -1), or a -32601 refusal of a request that
/// needs a client capability (`sampling`, `elicitation`, `roots`: the client did not declare
/// it, MCP 2025-11-25 "Client Features"). The server passed on what the client said: not the
/// server's fault (not a retryable `server_error`), the tool exists (not `not_found`), and the
/// same call to the same client rarely fares better. The proxy's other errors (no answer in
/// time, the client gone) keep the mapping of their code. `None`: the call's error is the
/// server's own (mapped by its code).
pub fn input_failure(
    method: &str,
    input_error: &Value,
    by_client: bool,
    error: &Value,
) -> Option<Outcome> {
    let code = |e: &Value| e.get("code").and_then(Value::as_i64);
    let input_code = code(input_error)?;
    let lacks_capability = input_code == -32601 && crate::mrtr::capability_for(method).is_some();
    (code(error) == Some(input_code) && (by_client || lacks_capability)).then(|| {
        Outcome::InputFailed {
            method: method.to_owned(),
            input_error: Box::new(input_error.clone()),
            error: Box::new(error.clone()),
        }
    })
}

/// [`input_failure`] for a call whose server reported the failure as a tool error
/// (`isError: true`) instead of a JSON-RPC error, as the SDKs do when a tool's own request to
/// the client fails (server-everything's `trigger-sampling-request` answers `MCP error -32601:
/// …` in a text block): [`Outcome::InputFailed`] when the result's text repeats the message of
/// the error the request got, on the same terms as [`input_failure`]. Its `error` is
/// `{"code": <the request's error code>, "message": <the result's text>, "data": {"result":
/// <the result as received>}}`, so a transcript keeps the result and replay maps the same
/// envelope. `None`: a result that is no tool error, or whose text does not name that error.
pub fn input_failure_in_result(
    method: &str,
    input_error: &Value,
    by_client: bool,
    result: &Value,
) -> Option<Outcome> {
    if result.get("isError") != Some(&Value::Bool(true)) {
        return None;
    }
    let message = input_error.get("message").and_then(Value::as_str)?;
    let text: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    let text = text.join("\n");
    if message.is_empty() || !text.contains(message) {
        return None;
    }
    let error = serde_json::json!({
        "code": input_error.get("code").cloned().unwrap_or(Value::Null),
        "message": text,
        "data": {"result": result},
    });
    input_failure(method, input_error, by_client, &error)
}

/// The envelope of [`Outcome::InputFailed`]: `unavailable` (not retryable), naming the
/// capability the client lacks, or the client's error, and the call's error.
pub(crate) fn map_input_failed(
    method: &str,
    input_error: &Value,
    error: &Value,
    ctx: &MappingContext<'_>,
) -> Mapped {
    let server = ctx.server;
    let text = |e: &Value, key: &str| match e.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let code = text(input_error, "code");
    let head = match crate::mrtr::capability_for(method).filter(|_| code == "-32601") {
        Some(capability) => format!(
            "the tool needs the client's `{capability}` capability, which this client did not declare (server '{server}' sent {method})"
        ),
        None => format!(
            "the client answered server '{server}''s {method} with error {code}: {}",
            text(input_error, "message")
        ),
    };
    let tail = format!(
        "; the call failed with error {}: {}",
        text(error, "code"),
        text(error, "message")
    );
    error_mapped(ctx, ErrorType::Unavailable, [head.as_str(), tail.as_str()])
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

pub(crate) fn map_tool_error(
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
