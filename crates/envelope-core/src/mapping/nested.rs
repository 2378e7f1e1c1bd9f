//! `tools/call` answers that are not plain tool results, mapped honestly (never as a retryable
//! `server_error`), and envelopes behind an envelope.
//!
//! | downstream answer | our envelope |
//! |---|---|
//! | a result with `resultType: "input_required"` (a server of the 2026-07-28 era asking for more input) | error `input_required`, not retryable |
//! | a task-creation answer (`{"task": {"taskId", "status", …}}`, MCP 2025-11-25 "Tasks") | error `unsupported`, not retryable, naming the task id and status |
//! | `structuredContent` that is exactly the six-key envelope (another mcp-envelope, a gateway) | its `status`, error type and `retryable` kept; its content re-filled within our budget ([`refill`]); its `omitted` added to ours |
//!
//! The URL-elicitation-required error (JSON-RPC -32042, MCP 2025-11-25 "Elicitation: URL
//! mode") is not enveloped at all: the session answers the client with that JSON-RPC error,
//! `data` included, so the client can show the URL and retry ([`is_url_elicitation_required`]).
//!
//! Pure; no I/O.

use serde_json::Value;

use super::media::{describe_media, media_block, passed_media, MediaMode};
use super::rows::ResultMembers;
use super::{Mapped, MappingContext};
use crate::budget::{LongRows, Meter};
use crate::envelope::{render_row, Envelope, Status, LINE_SEPARATOR, ROW_SEPARATOR};
use crate::message_cut::cut_message_within;

/// JSON-RPC error code of the URL-elicitation-required error (MCP 2025-11-25).
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// Whether a JSON-RPC error object is the URL-elicitation-required error.
pub fn is_url_elicitation_required(error: &Value) -> bool {
    error.get("code").and_then(Value::as_i64) == Some(URL_ELICITATION_REQUIRED)
}

/// The envelope of a result that needs one of the rules in the module table; `None` for a plain
/// tool result.
pub fn special_result(result: &Value, ctx: &MappingContext<'_>) -> Option<Mapped> {
    special_members(&ResultMembers::of(result.as_object()?), ctx)
}

/// [`special_result`] of a result object's members.
pub(crate) fn special_members(obj: &ResultMembers<'_>, ctx: &MappingContext<'_>) -> Option<Mapped> {
    special_members_from(obj, ctx, 0).map(|(mapped, _)| mapped)
}

/// [`special_members`] from row `first_row` of a nested envelope on (a page of it; a later
/// page passes no media), with how many rows it kept (0 for the other special results).
pub(crate) fn special_members_from(
    obj: &ResultMembers<'_>,
    ctx: &MappingContext<'_>,
    first_row: u64,
) -> Option<(Mapped, u64)> {
    let server = ctx.server;
    if is_input_required(obj) {
        return Some(none_kept(error(
            ctx,
            "input_required",
            &format!(
                "server '{server}' needs more input (an input_required result) that could not be relayed to the client"
            ),
        )));
    }
    if let Some(task) = task_of(obj) {
        let field = |k: &str| {
            task.get(k).map_or_else(
                || "?".to_owned(),
                |v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
            )
        };
        return Some(none_kept(error(
            ctx,
            "unsupported",
            &format!(
                "server '{server}' answered with a task (taskId {}, status {}) instead of a result; task-augmented tool calls are not proxied",
                field("taskId"),
                field("status")
            ),
        )));
    }
    let inner = obj.structured.and_then(as_envelope)?;
    let blocks = obj.content.and_then(Value::as_array).map_or(&[][..], |b| b);
    Some(refill_from(&inner, blocks, ctx, first_row))
}

fn none_kept(mapped: Mapped) -> (Mapped, u64) {
    (mapped, 0)
}

/// Whether the result is an `input_required` result (MCP 2026-07-28), not a tool's answer.
fn is_input_required(obj: &ResultMembers<'_>) -> bool {
    obj.result_type.and_then(Value::as_str) == Some("input_required")
}

/// The result's `task` (with a `taskId`), when the server answered with a task instead.
fn task_of<'a>(obj: &ResultMembers<'a>) -> Option<&'a Value> {
    obj.task.filter(|t| t.get("taskId").is_some())
}

/// The rows a nested envelope in `obj` holds here (its content's rows, and its described
/// media with `media = "describe"`), and the rows its own proxy left out (its `omitted`),
/// which no page of ours can show; `None` when `obj` is not a successful nested envelope.
pub(crate) fn nested_rows(obj: &ResultMembers<'_>, ctx: &MappingContext<'_>) -> Option<(u64, u64)> {
    if is_input_required(obj) || task_of(obj).is_some() {
        return None;
    }
    let inner = obj.structured.and_then(as_envelope)?;
    if inner.status == Status::Error {
        return None;
    }
    let blocks = obj.content.and_then(Value::as_array).map_or(&[][..], |b| b);
    let described = match ctx.media {
        MediaMode::Describe => blocks.iter().filter(|b| media_block(b).is_some()).count(),
        MediaMode::Passthrough => 0,
    };
    Some((
        rows_within(&inner.content, ctx).len() as u64 + described as u64,
        inner.omitted,
    ))
}

fn error(ctx: &MappingContext<'_>, error_type: &str, message: &str) -> Mapped {
    let message = cut_message_within([message], &ctx.budget);
    Mapped {
        envelope: Envelope::error(ctx.call_id, ctx.tool, error_type, &message),
        media: Vec::new(),
        meta: None,
    }
}

/// `value` as an envelope when it is exactly one: an object with the six keys and no other, of
/// the right types.
pub fn as_envelope(value: &Value) -> Option<Envelope> {
    let obj = value.as_object()?;
    if obj.len() != 6 {
        return None;
    }
    serde_json::from_value(value.clone()).ok()
}

/// The rows of an envelope's success content, each with the separator that preceded it: split
/// at every line break and every `; ` (the separators the envelope renders rows with). A row
/// that itself contained `; ` becomes two rows; joined back they give the same text.
pub fn split_rows(content: &str) -> Vec<(&'static str, &str)> {
    let mut rows = Vec::new();
    if content.is_empty() {
        return rows;
    }
    let mut separator = "";
    let mut rest = content;
    loop {
        let line = rest.find(LINE_SEPARATOR).map(|i| (i, LINE_SEPARATOR));
        let row = rest.find(ROW_SEPARATOR).map(|i| (i, ROW_SEPARATOR));
        let next = match (line, row) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        match next {
            Some((i, sep)) => {
                rows.push((separator, &rest[..i]));
                separator = sep;
                rest = &rest[i + sep.len()..];
            }
            None => {
                rows.push((separator, rest));
                return rows;
            }
        }
    }
}

/// [`split_rows`] with each row that does not fit our budget on its own cut into pieces that
/// do ([`crate::budget::Budget::split`]), the pieces after the first joined to it with no
/// separator, when the tool's `long_rows` is `"split"` (the default), as a long line of a
/// plain result is cut ([`crate::text_rows`]). An inner row longer than our budget left the
/// envelope empty, and no page could show it (found by a fresh-user tester).
fn rows_within<'a>(content: &'a str, ctx: &MappingContext<'_>) -> Vec<(&'a str, &'a str)> {
    let rows = split_rows(content);
    if ctx.text_rules().long_rows != LongRows::Split {
        return rows;
    }
    let mut pieces = Vec::with_capacity(rows.len());
    for (separator, row) in rows {
        match ctx.budget.split(row).as_slice() {
            [] | [_] => pieces.push((separator, row)),
            [first, rest @ ..] => {
                pieces.push((separator, *first));
                pieces.extend(rest.iter().map(|piece| ("", *piece)));
            }
        }
    }
    pieces
}

/// An inner envelope under our budget (seed 000's rules applied again): on the error path its
/// error type and `retryable` are kept and its message is cut to our budget; on the success
/// path its rows ([`split_rows`], plus described media with `media = "describe"`) are filled
/// greedily within our budget, and `omitted` is ours plus its own. `call_id` and `tool` are
/// ours. Media blocks after its text block pass through as usual.
pub fn refill(inner: &Envelope, blocks: &[Value], ctx: &MappingContext<'_>) -> Mapped {
    refill_from(inner, blocks, ctx, 0).0
}

/// [`refill`] from row `first_row` on (a page: the rows before it are left out, and no media
/// passes), with how many rows it kept. `omitted` counts the rows after the page plus the
/// inner envelope's own `omitted`.
pub fn refill_from(
    inner: &Envelope,
    blocks: &[Value],
    ctx: &MappingContext<'_>,
    first_row: u64,
) -> (Mapped, u64) {
    let budget = ctx.budget.unreachable_chars();
    let media = match first_row {
        0 => passed_media(blocks, ctx.media),
        _ => Vec::new(),
    };
    if inner.status == Status::Error {
        let (error_type, message) = inner
            .content
            .split_once(": ")
            .unwrap_or(("unknown", &inner.content));
        let message = cut_message_within([message], &ctx.budget);
        let mut envelope = Envelope::error(ctx.call_id, ctx.tool, error_type, &message);
        envelope.retryable = inner.retryable;
        let mapped = Mapped {
            envelope,
            media: Vec::new(),
            meta: None,
        };
        return (mapped, 0);
    }
    let described: Vec<String> = match ctx.media {
        MediaMode::Describe => blocks
            .iter()
            .filter_map(|b| describe_media(b, budget))
            .map(|row| render_row(&row))
            .collect(),
        MediaMode::Passthrough => Vec::new(),
    };
    let rows = rows_within(&inner.content, ctx)
        .into_iter()
        .chain(described.iter().map(|d| (ROW_SEPARATOR, d.as_str())))
        .skip(usize::try_from(first_row).unwrap_or(usize::MAX));
    let mut kept: u64 = 0;
    let mut content = String::new();
    let mut meter = Meter::new(&ctx.budget);
    let mut omitted = inner.omitted;
    let mut first = true;
    let mut rows = rows.peekable();
    while let Some((separator, row)) = rows.next() {
        let separator = if first { "" } else { separator };
        let row_chars = row.chars().count();
        let fits = meter
            .bound(separator)
            .is_some_and(|b| row_chars <= b.chars && row.len() <= b.bytes)
            && meter.admit(&content, separator, row, row_chars);
        if !fits {
            // Saturating: `omitted` starts from the inner envelope's, which a hostile or broken
            // server may set to any `u64` (u64::MAX overflowed here: a panic in a debug build,
            // a wrapped count in a release one).
            omitted = omitted.saturating_add(1 + rows.count() as u64);
            break;
        }
        content.push_str(separator);
        content.push_str(row);
        meter.commit(content.len());
        first = false;
        kept += 1;
    }
    let cut = meter.verify(&mut content) as u64;
    omitted = omitted.saturating_add(cut);
    kept = kept.saturating_sub(cut);
    let envelope = Envelope {
        call_id: ctx.call_id.to_owned(),
        tool: ctx.tool.to_owned(),
        status: if omitted > 0 {
            Status::Truncated
        } else {
            Status::Ok
        },
        content,
        omitted,
        retryable: false,
    };
    let mapped = Mapped {
        envelope,
        media,
        meta: None,
    };
    (mapped, kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(budget: usize) -> MappingContext<'static> {
        MappingContext {
            call_id: "9",
            tool: "outer_tool",
            server: "inner",
            budget: crate::budget::Budget::chars(budget),
            media: MediaMode::Passthrough,
            text: crate::mapping::TextShape::default(),
        }
    }

    fn inner(status: &str, content: &str, omitted: u64, retryable: bool) -> Value {
        json!({"call_id": "1", "tool": "t", "status": status, "content": content, "omitted": omitted, "retryable": retryable})
    }

    fn result_with(sc: Value) -> Value {
        json!({"content": [{"type": "text", "text": sc.to_string()}], "structuredContent": sc})
    }

    #[test]
    fn rows_split_back_to_the_same_text() {
        let text = "a=1,b=2; a=9,b=8\nline two\nline three; x=1";
        let rows = split_rows(text);
        let joined: String = rows.iter().flat_map(|(s, r)| [*s, *r]).collect();
        assert_eq!(joined, text);
        assert_eq!(rows.len(), 5);
        assert!(split_rows("").is_empty());
    }

    #[test]
    fn inner_lines_are_refilled_within_our_budget() {
        let lines: Vec<String> = (0..50).map(|i| format!("line {i}")).collect();
        let sc = inner("ok", &lines.join("\n"), 0, false);
        let mapped = special_result(&result_with(sc), &ctx(20)).unwrap();
        let env = mapped.envelope;
        assert_eq!(env.content, "line 0\nline 1\nline 2");
        assert_eq!(env.status, Status::Truncated);
        assert_eq!(env.omitted, 47);
        assert_eq!(
            (env.call_id.as_str(), env.tool.as_str()),
            ("9", "outer_tool")
        );
        // Everything fits: the same text, its own omitted kept.
        let sc = inner("truncated", "a=1; a=2", 5, false);
        let env = special_result(&result_with(sc), &ctx(100))
            .unwrap()
            .envelope;
        assert_eq!(
            (env.content.as_str(), env.omitted, env.status),
            ("a=1; a=2", 5, Status::Truncated)
        );
    }

    /// An inner row longer than our budget is cut into pieces, as a plain result's long line
    /// is (`long_rows = "split"`, the default), and its pieces page on: the answer was empty
    /// content with `omitted: 3`, and paging said the row was too long. With `"keep"` the row
    /// is still left out whole.
    #[test]
    fn an_inner_row_longer_than_the_budget_is_cut_into_pieces() {
        let content = format!("{}\nline2\nline3", "abcdefghij".repeat(5));
        let result = result_with(inner("ok", &content, 0, false));
        let members = ResultMembers::of(result.as_object().unwrap());
        let env = special_result(&result, &ctx(10)).unwrap().envelope;
        assert_eq!((env.content.as_str(), env.omitted), ("abcdefghij", 6));
        assert_eq!(nested_rows(&members, &ctx(10)), Some((7, 0)));
        let inner_env = as_envelope(&result["structuredContent"]).unwrap();
        let (page, kept) = refill_from(&inner_env, &[], &ctx(10), 4);
        assert_eq!((page.envelope.content.as_str(), kept), ("abcdefghij", 1));
        assert_eq!(page.envelope.omitted, 2);
        let (page, _) = refill_from(&inner_env, &[], &ctx(10), 5);
        assert_eq!(page.envelope.content, "line2");
        let mut keep = ctx(10);
        keep.text.long_rows = LongRows::Keep;
        let env = special_result(&result, &keep).unwrap().envelope;
        assert_eq!((env.content.as_str(), env.omitted), ("", 3));
    }

    /// An inner `omitted` as large as a `u64` goes is kept, not wrapped (or, in a debug build, a
    /// panic and a lost request; found by a fresh-user tester), and counting the rows saturates.
    #[test]
    fn an_inner_omitted_at_the_top_of_u64_is_kept_not_wrapped() {
        let lines: Vec<String> = (0..50).map(|i| format!("row{i}")).collect();
        for omitted in [u64::MAX, u64::MAX - 15] {
            let sc = inner("truncated", &lines.join("; "), omitted, false);
            let result = result_with(sc);
            let env = special_result(&result, &ctx(20)).unwrap().envelope;
            assert_eq!(env.status, Status::Truncated);
            assert_eq!(env.omitted, u64::MAX, "{omitted}");
            assert_eq!(
                crate::mapping::count_result_rows(&result, &ctx(20)),
                u64::MAX
            );
        }
    }

    #[test]
    fn inner_errors_keep_type_and_retryable() {
        let sc = inner("error", "rate_limit: slow down please", 0, true);
        let env = special_result(&result_with(sc.clone()), &ctx(100))
            .unwrap()
            .envelope;
        assert_eq!(env.status, Status::Error);
        assert!(env.retryable);
        assert_eq!(env.content, "rate_limit: slow down please");
        // A message longer than our budget is cut, with the usual marker.
        let env = special_result(&result_with(sc), &ctx(9)).unwrap().envelope;
        assert!(
            env.content.starts_with("rate_limit: ") && env.content.contains("characters cut]"),
            "{}",
            env.content
        );
        assert!(env.retryable);
        let sc = inner("error", "not_found: no tool named 'x'", 0, false);
        let env = special_result(&result_with(sc), &ctx(100))
            .unwrap()
            .envelope;
        assert_eq!(env.content, "not_found: no tool named 'x'");
        assert!(!env.retryable);
    }

    #[test]
    fn only_exact_envelopes_count() {
        let mut sc = inner("ok", "x", 0, false);
        sc["extra"] = json!(1);
        assert!(special_result(&result_with(sc), &ctx(100)).is_none());
        let mut sc = inner("ok", "x", 0, false);
        sc["omitted"] = json!("1");
        assert!(special_result(&result_with(sc), &ctx(100)).is_none());
        assert!(special_result(&json!({"content": []}), &ctx(100)).is_none());
    }

    #[test]
    fn tasks_and_input_required_are_honest_errors() {
        let task = json!({"task": {"taskId": "t-1", "status": "working", "createdAt": "x", "lastUpdatedAt": "x"}});
        let env = special_result(&task, &ctx(500)).unwrap().envelope;
        assert!(
            env.content.starts_with(
                "unsupported: server 'inner' answered with a task (taskId t-1, status working)"
            ),
            "{}",
            env.content
        );
        assert!(!env.retryable);
        let ir = json!({"resultType": "input_required", "inputRequests": {}});
        let env = special_result(&ir, &ctx(500)).unwrap().envelope;
        assert!(
            env.content
                .starts_with("input_required: server 'inner' needs more input"),
            "{}",
            env.content
        );
        assert!(!env.retryable);
        assert!(is_url_elicitation_required(
            &json!({"code": -32042, "message": "m", "data": {}})
        ));
        assert!(!is_url_elicitation_required(&json!({"code": -32602})));
    }
}
