//! Transcript → numbered trajectory lines: one group per `tools/call` (the call, everything that
//! happened during it, its result), with a group-atomic character budget.
//!
//! Source of the rules: the project's issue 4 and seed 004 (the `function_call` /
//! `function_result` line shapes, `error(...)` results, approval request/response lines,
//! crash-proof stringification of values that are not plain JSON text, chronological order).
//!
//! This module does no I/O and never panics on any input.
//!
//! # Order
//! Groups are placed by when their call **started**: records are sorted by `started_at` (the
//! RFC 3339 text, which sorts chronologically in the fixed format the proxy writes), then by
//! `seq`; records equal on both keep their file order. File order alone is wrong because a
//! record is written when its call *ends*.
//!
//! # Line shapes
//! Every line is `<n>. [<role>] <body>[ [call_id=<id>]]\n`, `<n>` counting from 1 across all
//! groups. The ` [call_id=<id>]` suffix is on every line of a group and is left out when the
//! record's `call_id` is empty. `<tool>` below is the tool name the client used
//! ([`CallRecord::tool`]). A group is, in order:
//!
//! | line | shape (literal example) |
//! |---|---|
//! | call | `1. [assistant] function_call git_log({"max_count":50,"repo_path":"/r"}) [call_id=4]` |
//! | call without arguments (`null`) | `1. [assistant] function_call ping() [call_id=4]` |
//! | then one line per recorded event, in recorded order (see below) | |
//! | result, status ok | `2. [tool] function_result: datetime=2026-11-30T03:48:18+01:00 [call_id=3]` |
//! | result, status truncated | `2. [tool] function_result: a=1 (+2 omitted) [call_id=3]` |
//! | result, status error | `2. [tool] function_result: error(timeout: no response from server 'git' within 10s) [call_id=4]` |
//!
//! Arguments are compact JSON with keys in their recorded order. The result body is the
//! envelope's `content`; on the error path it already reads `<type>: <message>`, so proxy-side
//! failures (timeout, server exited, unavailable, no such tool) render like any other error.
//!
//! Event lines (the `events` of a record):
//!
//! | event | shape (literal example) |
//! |---|---|
//! | `elicitation/create` request | `[tool] elicitation_request for git_commit: "Confirm commit?"` |
//! | its response, accepted | `[user] elicitation_response for git_commit: accept {"ok":true}` (content left out when absent) |
//! | declined / cancelled | `[user] elicitation_response for git_commit: decline` / `... cancel` |
//! | `sampling/createMessage` request | `[tool] sampling_request for summarize: "Summarize the log"` (first message's content) |
//! | its response | `[assistant] sampling_response for summarize: accept "Three commits." (model=claude-x)` |
//! | `roots/list` request | `[tool] roots_request for git_log` |
//! | its response | `[user] roots_response for git_log: ["file:///r","file:///s"]` |
//! | any JSON-RPC error answer | `[user] elicitation_response for git_commit: error(-32603: no client)` (same `error(<code>: <message>)` for every kind) |
//! | `notifications/progress` | `[tool] progress for git_log: 3/10 scanning` (`/<total>` and ` <message>` only when present) |
//! | other request / notification | `[tool] request ping for git_log: {"a":1}` / `[tool] notification notifications/message for git_log: {...}` |
//! | response to another request | `[user] response ping for git_log: {}`; with no matching request: `[user] response for git_log: {}` |
//! | an event that is not `{"direction", "message": {...}}` | `[tool] event for git_log: <compact JSON>` |
//!
//! The role of requests and notifications follows their direction (`[tool]` server to client,
//! `[user]` client to server); responses are matched to their request by `id` among the
//! group's earlier requests. Free text from events (the elicitation message, sampling texts,
//! a progress message) is JSON-quoted (except the progress message) and cut to
//! [`EVENT_TEXT_MAX`] characters.
//!
//! # Values that are not plain text
//! Before any JSON value (arguments, event payloads) is printed:
//! * a media block `{"type":"image"|"audio","data":<base64>,"mimeType"?}` becomes the string
//!   `<image/png, 1234 bytes>` (the decoded size from the base64 length and padding; the
//!   block's `type` when there is no `mimeType`);
//! * a `blob` member (a blob resource) becomes `<application/pdf, 1234 bytes>` in place;
//! * a string longer than [`ARG_STRING_MAX`] characters becomes `<image/png, N bytes>` when it
//!   is a `data:<mime>;base64,` URL, `<base64, N bytes>` when it consists only of base64
//!   characters (either alphabet, line breaks allowed) and has upper- and lower-case letters
//!   and digits (a heuristic), and otherwise its first [`ARG_STRING_MAX`] characters followed by
//!   `… [N characters cut]`.
//!
//! # One item, one line
//! After a line is built, its text (everything after `<n>. `) is escaped so that it stays one
//! line and shows nothing invisible: a newline becomes the two characters `\n`, a carriage
//! return `\r`, any other control character (C0, DEL, C1) and the invisible or
//! direction-changing format characters (zero-width space/joiners, LRM/RLM, ALM, the bidi
//! embeddings, overrides and isolates, U+2028/U+2029, word joiner and invisible operators,
//! soft hyphen, BOM, interlinear annotation marks, tag characters) become `\u{<hex>}`, e.g.
//! `\u{200f}`. Every other character, U+FFFD included, is passed through. Backslashes are not
//! doubled, so the escaping is for reading, not reversible: a literal backslash-`n` in the text
//! looks the same as an escaped newline.
//!
//! # Budget
//! With [`RenderOptions::budget`] = `Some(N)`, whole groups are kept, oldest first, while the
//! running length of the output stays within `N` characters (Unicode scalar values; the number
//! prefixes and newlines count), or `N` tokens of [`RenderOptions::tokens`] when set. Every group
//! ends with a newline and the next starts with its number, a point at which the tokenizers
//! always cut (see [`crate::budget::safe_cut`]), so the tokens of the output are the sum of its
//! groups' tokens. The first group that does not fit stops the rendering (a later,
//! smaller group is never taken instead), and a final line
//! `(3 more calls omitted for budget)` (`(1 more call omitted for budget)` for one) says how
//! many groups were left out; that line has no number and is not counted in the budget.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::budget::{Measure, Tokenizer};
use crate::envelope::Status;
use crate::message_cut::{cut_chars, cut_marker, head_and_rest};
use crate::outcome::media::{base64_decoded_len, media_block};
use crate::transcript::CallRecord;

/// Strings in arguments and event payloads longer than this many characters (Unicode scalar
/// values) are cut or described (issue 4).
pub const ARG_STRING_MAX: usize = 500;

/// Free text from events (elicitation message, sampling texts, progress message) is cut to this
/// many characters (Unicode scalar values), followed by `… [N characters cut]` (issue 4).
pub const EVENT_TEXT_MAX: usize = 200;

/// Options for [`render`] (issue 4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// The most characters (Unicode scalar values, newlines and number prefixes included) the
    /// kept groups may take; `None` keeps everything. The closing
    /// `(N more calls omitted for budget)` line is not counted. See the module docs.
    pub budget: Option<usize>,
    /// Count `budget` in tokens of this tokenizer instead of characters.
    pub tokens: Option<Tokenizer>,
}

/// Renders records as the numbered trajectory text (issue 4, seed 004): one group per record,
/// in order of `(started_at, seq)`, every line ending with `'\n'`; shapes, escaping and the
/// budget rule are in the module docs. No records give the empty string. Never panics.
pub fn render(records: &[CallRecord], opts: &RenderOptions) -> String {
    let mut order: Vec<&CallRecord> = records.iter().collect();
    order.sort_by(|a, b| a.started_at.cmp(&b.started_at).then(a.seq.cmp(&b.seq)));

    let mut out = String::new();
    let mut used = 0usize;
    let mut next = 1usize;
    for (i, record) in order.iter().enumerate() {
        let items = group_items(record);
        let mut text = String::new();
        for (k, item) in items.iter().enumerate() {
            let _ = writeln!(text, "{}. {}", next + k, item);
        }
        if let Some(budget) = opts.budget {
            let len = match opts.tokens {
                Some(t) => Measure::Tokens(t).count(&text),
                None => Measure::Chars.count(&text),
            };
            if used.saturating_add(len) > budget {
                let left = order.len() - i;
                let noun = if left == 1 { "call" } else { "calls" };
                let _ = writeln!(out, "({left} more {noun} omitted for budget)");
                break;
            }
            used += len;
        }
        next += items.len();
        out.push_str(&text);
    }
    out
}

/// The lines of one group, without numbers or newlines, already escaped.
fn group_items(r: &CallRecord) -> Vec<String> {
    let suffix = if r.call_id.is_empty() {
        String::new()
    } else {
        format!(" [call_id={}]", r.call_id)
    };
    let tool = r.tool.as_str();
    let mut items = Vec::with_capacity(2 + r.events.len());

    let args = match &r.arguments {
        Value::Null => String::new(),
        v => sanitize(v).to_string(),
    };
    items.push(format!("[assistant] function_call {tool}({args})"));

    let mut requests: Vec<(Value, String)> = Vec::new();
    for ev in &r.events {
        items.push(event_item(ev, tool, &mut requests));
    }

    let env = &r.envelope;
    let result = match env.status {
        Status::Error => format!("error({})", env.content),
        Status::Truncated => format!("{} (+{} omitted)", env.content, env.omitted),
        Status::Ok if env.omitted > 0 => format!("{} (+{} omitted)", env.content, env.omitted),
        Status::Ok => env.content.clone(),
    };
    items.push(format!("[tool] function_result: {result}"));

    items
        .into_iter()
        .map(|mut item| {
            item.push_str(&suffix);
            escape_line(&item)
        })
        .collect()
}

/// One event line (unescaped, without the call_id suffix). `requests` collects the group's
/// requests seen so far (`id`, method) to match responses.
fn event_item(ev: &Value, tool: &str, requests: &mut Vec<(Value, String)>) -> String {
    let direction = ev.get("direction").and_then(Value::as_str);
    let (role, msg) = match (direction, ev.get("message")) {
        (Some("server_to_client"), Some(Value::Object(m))) => ("tool", m),
        (Some("client_to_server"), Some(Value::Object(m))) => ("user", m),
        _ => return format!("[tool] event for {tool}: {}", sanitize(ev)),
    };

    if let Some(method) = msg.get("method") {
        let method = match method {
            Value::String(s) => cut_chars(s, EVENT_TEXT_MAX),
            other => sanitize(other).to_string(),
        };
        let params = msg.get("params");
        return match msg.get("id") {
            Some(id) => {
                requests.push((id.clone(), method.clone()));
                request_item(role, &method, params, tool)
            }
            None => notification_item(role, &method, params, tool),
        };
    }

    if msg.contains_key("result") || msg.contains_key("error") {
        let method = msg.get("id").and_then(|id| {
            requests
                .iter()
                .rev()
                .find(|(rid, _)| rid == id)
                .map(|(_, m)| m.clone())
        });
        return response_item(role, method.as_deref(), msg, tool);
    }

    format!(
        "[{role}] event for {tool}: {}",
        sanitize(&Value::Object(msg.clone()))
    )
}

fn request_item(role: &str, method: &str, params: Option<&Value>, tool: &str) -> String {
    match method {
        "elicitation/create" => {
            let text = params
                .and_then(|p| p.get("message"))
                .map(text_of)
                .unwrap_or_default();
            format!(
                "[{role}] elicitation_request for {tool}: {}",
                quote_cut(&text)
            )
        }
        "sampling/createMessage" => {
            let first = params
                .and_then(|p| p.get("messages"))
                .and_then(|m| m.get(0))
                .and_then(|m| m.get("content"));
            let text = match first {
                Some(c) => content_text(c),
                None => quote_cut(""),
            };
            format!("[{role}] sampling_request for {tool}: {text}")
        }
        "roots/list" => format!("[{role}] roots_request for {tool}"),
        _ => match params {
            Some(p) => format!("[{role}] request {method} for {tool}: {}", sanitize(p)),
            None => format!("[{role}] request {method} for {tool}"),
        },
    }
}

fn notification_item(role: &str, method: &str, params: Option<&Value>, tool: &str) -> String {
    if method == "notifications/progress" {
        let get = |k: &str| params.and_then(|p| p.get(k));
        let mut body = match get("progress") {
            Some(v) => scalar(v),
            None => "?".to_owned(),
        };
        if let Some(total) = get("total") {
            body.push('/');
            body.push_str(&scalar(total));
        }
        if let Some(message) = get("message") {
            body.push(' ');
            body.push_str(&cut_chars(&text_of(message), EVENT_TEXT_MAX));
        }
        return format!("[{role}] progress for {tool}: {body}");
    }
    match params {
        Some(p) => format!("[{role}] notification {method} for {tool}: {}", sanitize(p)),
        None => format!("[{role}] notification {method} for {tool}"),
    }
}

fn response_item(role: &str, method: Option<&str>, msg: &Map<String, Value>, tool: &str) -> String {
    let (label, role) = match method {
        Some("elicitation/create") => ("elicitation_response".to_owned(), "user"),
        Some("sampling/createMessage") => ("sampling_response".to_owned(), "assistant"),
        Some("roots/list") => ("roots_response".to_owned(), "user"),
        Some(m) => (format!("response {m}"), role),
        None => ("response".to_owned(), role),
    };
    let body = match (msg.get("error"), msg.get("result")) {
        (Some(error), _) => rpc_error(error),
        (None, Some(result)) => match method {
            Some("elicitation/create") => elicitation_decision(result),
            Some("sampling/createMessage") => sampling_decision(result),
            Some("roots/list") => roots_list(result),
            _ => sanitize(result).to_string(),
        },
        (None, None) => String::new(),
    };
    format!("[{role}] {label} for {tool}: {body}")
}

/// `error(<code>: <message>)` for a JSON-RPC error object; `error(<compact JSON>)` otherwise.
fn rpc_error(error: &Value) -> String {
    match (error.get("code"), error.get("message")) {
        (Some(code), Some(message)) => {
            format!(
                "error({}: {})",
                scalar(code),
                cut_chars(&text_of(message), ARG_STRING_MAX)
            )
        }
        _ => format!("error({})", sanitize(error)),
    }
}

fn elicitation_decision(result: &Value) -> String {
    match result.get("action") {
        Some(Value::String(action)) => {
            let action = cut_chars(action, EVENT_TEXT_MAX);
            match result.get("content") {
                Some(c) if action == "accept" => format!("accept {}", sanitize(c)),
                _ => action,
            }
        }
        _ => sanitize(result).to_string(),
    }
}

fn sampling_decision(result: &Value) -> String {
    let mut body = "accept".to_owned();
    if let Some(content) = result.get("content") {
        body.push(' ');
        body.push_str(&content_text(content));
    }
    if let Some(model) = result.get("model") {
        let _ = write!(
            body,
            " (model={})",
            cut_chars(&text_of(model), EVENT_TEXT_MAX)
        );
    }
    body
}

fn roots_list(result: &Value) -> String {
    match result.get("roots") {
        Some(Value::Array(roots)) => {
            let uris: Vec<Value> = roots
                .iter()
                .map(|r| match r.get("uri") {
                    Some(u) => u.clone(),
                    None => r.clone(),
                })
                .collect();
            sanitize(&Value::Array(uris)).to_string()
        }
        _ => sanitize(result).to_string(),
    }
}

/// Sampling content: a text block's text (quoted, cut), a media block described, an array of
/// blocks joined by spaces, anything else as sanitized compact JSON.
fn content_text(content: &Value) -> String {
    match content {
        Value::Array(blocks) => blocks.iter().map(block_text).collect::<Vec<_>>().join(" "),
        other => block_text(other),
    }
}

fn block_text(block: &Value) -> String {
    match (block.get("type").and_then(Value::as_str), block.get("text")) {
        (Some("text"), Some(text)) => quote_cut(&text_of(text)),
        _ => match sanitize(block) {
            Value::String(s) => s,
            v => v.to_string(),
        },
    }
}

/// A string's own text; any other value as compact JSON.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => sanitize(other).to_string(),
    }
}

/// A number (or other scalar) as JSON text; a string as its text, cut.
fn scalar(v: &Value) -> String {
    cut_chars(&text_of(v), EVENT_TEXT_MAX)
}

/// JSON-quotes `s` cut to [`EVENT_TEXT_MAX`] characters; the cut marker follows the quotes.
fn quote_cut(s: &str) -> String {
    let (head, rest) = head_and_rest(s, EVENT_TEXT_MAX);
    let quoted = Value::String(head.to_owned()).to_string();
    if rest == 0 {
        quoted
    } else {
        quoted + &cut_marker(rest)
    }
}

/// A copy of `v` with media, blobs and long strings described or cut (see the module docs).
fn sanitize(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(sanitize_str(s)),
        Value::Array(items) => Value::Array(items.iter().map(sanitize).collect()),
        Value::Object(map) => {
            if let Some(description) = describe_media(v) {
                return Value::String(description);
            }
            let mime = map.get("mimeType").and_then(Value::as_str);
            map.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(blob) if k == "blob" => {
                            Value::String(describe(mime.unwrap_or("blob"), blob))
                        }
                        other => sanitize(other),
                    };
                    (k.clone(), v)
                })
                .collect::<Map<String, Value>>()
                .into()
        }
        other => other.clone(),
    }
}

/// `<mime, N bytes>` for an `image` / `audio` block with base64 `data` (the one media
/// description, [`media_block`]; blob resources are described by their `blob` key instead, so
/// their `uri` stays visible).
fn describe_media(block: &Value) -> Option<String> {
    let media = media_block(block).filter(|m| m.kind != "resource")?;
    let mime = media
        .mime_type
        .and_then(Value::as_str)
        .unwrap_or(media.kind);
    Some(describe(mime, media.data))
}

fn describe(mime: &str, base64: &str) -> String {
    format!(
        "<{}, {} bytes>",
        cut_chars(mime, 100),
        base64_decoded_len(base64)
    )
}

fn sanitize_str(s: &str) -> String {
    let (_, rest) = head_and_rest(s, ARG_STRING_MAX);
    if rest == 0 {
        return s.to_owned();
    }
    if let Some(after) = s.strip_prefix("data:") {
        if let Some((mime, payload)) = after.split_once(";base64,") {
            if looks_base64(payload) {
                return describe(mime, payload);
            }
        }
    }
    if looks_base64(s) {
        return describe("base64", s);
    }
    cut_chars(s, ARG_STRING_MAX)
}

fn looks_base64(s: &str) -> bool {
    let (mut upper, mut lower, mut digit) = (false, false, false);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' => upper = true,
            b'a'..=b'z' => lower = true,
            b'0'..=b'9' => digit = true,
            b'+' | b'/' | b'=' | b'-' | b'_' | b'\n' | b'\r' => {}
            _ => return false,
        }
    }
    upper && lower && digit
}

/// Characters that are invisible or change text direction; escaped like control characters.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}'
        | '\u{061C}'
        | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0000}'..='\u{E007F}')
}

/// One line's text with newlines as `\n`, carriage returns as `\r` and other control or
/// invisible characters as `\u{hex}` (see the module docs).
fn escape_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || is_invisible(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MediaMode;
    use crate::envelope::Envelope;
    use crate::outcome::Outcome;
    use crate::transcript::event;
    use proptest::prelude::*;
    use serde_json::json;
    use std::time::{Duration, UNIX_EPOCH};

    fn env(call_id: &str, tool: &str, status: Status, content: &str, omitted: u64) -> Envelope {
        Envelope {
            call_id: call_id.into(),
            tool: tool.into(),
            status,
            content: content.into(),
            omitted,
            retryable: false,
        }
    }

    fn rec(
        start_ms: u64,
        seq: u64,
        call_id: &str,
        tool: &str,
        args: Value,
        envelope: Envelope,
        events: Vec<Value>,
    ) -> CallRecord {
        CallRecord::new(
            UNIX_EPOCH + Duration::from_millis(start_ms),
            seq,
            call_id,
            tool,
            "s",
            tool,
            args,
            &[],
            1000,
            Duration::from_secs(10),
            MediaMode::Passthrough,
            Outcome::Result {
                result: json!({"content": []}),
            },
            envelope,
            Duration::from_millis(5),
            events,
        )
    }

    fn ok(start_ms: u64, seq: u64, id: &str, tool: &str, args: Value, content: &str) -> CallRecord {
        rec(
            start_ms,
            seq,
            id,
            tool,
            args,
            env(id, tool, Status::Ok, content, 0),
            vec![],
        )
    }

    fn all() -> RenderOptions {
        RenderOptions::default()
    }

    fn budget(n: usize) -> RenderOptions {
        RenderOptions {
            budget: Some(n),
            tokens: None,
        }
    }

    fn s2c(m: Value) -> Value {
        event("server_to_client", m)
    }

    fn c2s(m: Value) -> Value {
        event("client_to_server", m)
    }

    fn seed_records() -> Vec<CallRecord> {
        let mut timeout = rec(
            2_000,
            1,
            "4",
            "git_log",
            json!({"max_count": 50, "repo_path": "/r"}),
            env(
                "4",
                "git_log",
                Status::Error,
                "timeout: no response from server 'git' within 10s",
                0,
            ),
            vec![],
        );
        timeout.outcome = Outcome::Timeout { timeout_ms: 10_000 };
        vec![
            ok(
                1_000,
                0,
                "3",
                "get_current_time",
                json!({"timezone": "Europe/Warsaw"}),
                "datetime=2026-11-30T03:48:18+01:00,timezone=Europe/Warsaw",
            ),
            timeout,
        ]
    }

    const SEED_GOLDEN: &str = "\
1. [assistant] function_call get_current_time({\"timezone\":\"Europe/Warsaw\"}) [call_id=3]
2. [tool] function_result: datetime=2026-11-30T03:48:18+01:00,timezone=Europe/Warsaw [call_id=3]
3. [assistant] function_call git_log({\"max_count\":50,\"repo_path\":\"/r\"}) [call_id=4]
4. [tool] function_result: error(timeout: no response from server 'git' within 10s) [call_id=4]
";

    #[test]
    fn golden_pure_text_rendering_is_stable() {
        let records = seed_records();
        assert_eq!(render(&records, &all()), SEED_GOLDEN);
        // Rendering twice gives the same bytes.
        assert_eq!(render(&records, &all()), render(&records, &all()));
    }

    #[test]
    fn empty_transcript_is_empty_string() {
        assert_eq!(render(&[], &all()), "");
        assert_eq!(render(&[], &budget(0)), "");
    }

    #[test]
    fn groups_are_placed_by_start_not_file_order() {
        // The second call started first but ended (and was written) last... and the reverse:
        // the file holds the later-started call first.
        let mut records = seed_records();
        records.reverse();
        assert_eq!(render(&records, &all()), SEED_GOLDEN);
        // Same started_at: seq decides.
        let a = ok(5, 7, "a", "t", json!({}), "x=1");
        let b = ok(5, 6, "b", "t", json!({}), "x=2");
        let out = render(&[a, b], &all());
        assert!(out.starts_with("1. [assistant] function_call t({}) [call_id=b]\n"));
    }

    #[test]
    fn arguments_keep_recorded_key_order() {
        let r = ok(0, 0, "1", "t", json!({"z": 1, "a": [true, null]}), "");
        assert_eq!(
            render(&[r], &all()),
            "1. [assistant] function_call t({\"z\":1,\"a\":[true,null]}) [call_id=1]\n\
             2. [tool] function_result:  [call_id=1]\n"
        );
        let r = ok(0, 0, "1", "ping", Value::Null, "pong");
        assert!(
            render(&[r], &all()).starts_with("1. [assistant] function_call ping() [call_id=1]\n")
        );
    }

    #[test]
    fn newlines_inside_a_result_stay_on_one_line() {
        let r = ok(
            0,
            0,
            "1",
            "cat",
            json!({}),
            "first\nsecond\r\nthird\tx\u{7}",
        );
        let out = render(&[r], &all());
        assert_eq!(out.lines().count(), 2);
        assert_eq!(
            out.lines().nth(1).unwrap(),
            "2. [tool] function_result: first\\nsecond\\r\\nthird\\u{9}x\\u{7} [call_id=1]"
        );
    }

    #[test]
    fn odd_characters_are_escaped_or_passed_safely() {
        let r = ok(
            0,
            0,
            "1",
            "t\u{202E}x",
            json!({"k": "a\u{200B}b\u{200F}c\u{FFFD}d\u{2028}e\u{85}"}),
            "é😀\u{FEFF}",
        );
        let out = render(&[r], &all());
        assert_eq!(
            out,
            "1. [assistant] function_call t\\u{202e}x({\"k\":\"a\\u{200b}b\\u{200f}c\u{FFFD}d\\u{2028}e\\u{85}\"}) [call_id=1]\n\
             2. [tool] function_result: é😀\\u{feff} [call_id=1]\n"
        );
    }

    #[test]
    fn truncated_result_shows_omitted_count() {
        let r = rec(
            0,
            0,
            "9",
            "ls",
            json!({}),
            env("9", "ls", Status::Truncated, "a=1; a=2", 3),
            vec![],
        );
        assert_eq!(
            render(&[r], &all()).lines().nth(1).unwrap(),
            "2. [tool] function_result: a=1; a=2 (+3 omitted) [call_id=9]"
        );
    }

    #[test]
    fn error_result_and_proxy_errors() {
        let mut r = rec(
            0,
            0,
            "2",
            "x",
            json!({}),
            env(
                "2",
                "x",
                Status::Error,
                "server_error: server 'git' exited (signal 9)",
                0,
            ),
            vec![],
        );
        r.outcome = Outcome::ServerExited {
            detail: "signal 9".into(),
        };
        assert_eq!(
            render(&[r], &all()).lines().nth(1).unwrap(),
            "2. [tool] function_result: error(server_error: server 'git' exited (signal 9)) [call_id=2]"
        );
    }

    #[test]
    fn empty_call_id_leaves_out_the_suffix() {
        let ev = s2c(
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}),
        );
        let r = rec(
            0,
            0,
            "",
            "t",
            json!({"a": 1}),
            env("", "t", Status::Ok, "a=1", 0),
            vec![ev],
        );
        assert_eq!(
            render(&[r], &all()),
            "1. [assistant] function_call t({\"a\":1})\n\
             2. [tool] progress for t: 1\n\
             3. [tool] function_result: a=1\n"
        );
    }

    fn elicitation(action_result: Value) -> CallRecord {
        rec(
            0,
            0,
            "4",
            "git_commit",
            json!({"message": "m"}),
            env("4", "git_commit", Status::Ok, "committed", 0),
            vec![
                s2c(
                    json!({"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"message":"Confirm commit?","requestedSchema":{"type":"object"}}}),
                ),
                c2s(json!({"jsonrpc":"2.0","id":0,"result":action_result})),
            ],
        )
    }

    #[test]
    fn elicitation_accept_decline_cancel() {
        let out = render(
            &[elicitation(
                json!({"action":"accept","content":{"ok":true}}),
            )],
            &all(),
        );
        assert_eq!(
            out,
            "1. [assistant] function_call git_commit({\"message\":\"m\"}) [call_id=4]\n\
             2. [tool] elicitation_request for git_commit: \"Confirm commit?\" [call_id=4]\n\
             3. [user] elicitation_response for git_commit: accept {\"ok\":true} [call_id=4]\n\
             4. [tool] function_result: committed [call_id=4]\n"
        );
        for action in ["decline", "cancel"] {
            let out = render(&[elicitation(json!({ "action": action }))], &all());
            assert_eq!(
                out.lines().nth(2).unwrap(),
                format!("3. [user] elicitation_response for git_commit: {action} [call_id=4]")
            );
        }
        let out = render(&[elicitation(json!({"action":"accept"}))], &all());
        assert_eq!(
            out.lines().nth(2).unwrap(),
            "3. [user] elicitation_response for git_commit: accept [call_id=4]"
        );
    }

    #[test]
    fn elicitation_error_answer() {
        let mut r = elicitation(json!({}));
        r.events[1] = c2s(
            json!({"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found"}}),
        );
        assert_eq!(
            render(&[r], &all()).lines().nth(2).unwrap(),
            "3. [user] elicitation_response for git_commit: error(-32601: Method not found) [call_id=4]"
        );
    }

    #[test]
    fn sampling_request_and_response() {
        let long = "w".repeat(150) + " " + &"v".repeat(100);
        let r = rec(
            0,
            0,
            "5",
            "summarize",
            json!({}),
            env("5", "summarize", Status::Ok, "done", 0),
            vec![
                s2c(
                    json!({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Summarize\nthe log"}}],"maxTokens":100}}),
                ),
                c2s(
                    json!({"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"Three commits."},"model":"claude-x","stopReason":"endTurn"}}),
                ),
                s2c(
                    json!({"jsonrpc":"2.0","id":"s2","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":long}}]}}),
                ),
                c2s(
                    json!({"jsonrpc":"2.0","id":"s2","error":{"code":-1,"message":"User rejected sampling request"}}),
                ),
            ],
        );
        let out = render(&[r], &all());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[1],
            "2. [tool] sampling_request for summarize: \"Summarize\\nthe log\" [call_id=5]"
        );
        assert_eq!(
            lines[2],
            "3. [assistant] sampling_response for summarize: accept \"Three commits.\" (model=claude-x) [call_id=5]"
        );
        assert_eq!(
            lines[3],
            format!(
                "4. [tool] sampling_request for summarize: \"{}\"… [51 characters cut] [call_id=5]",
                &long[..200]
            )
        );
        assert_eq!(
            lines[4],
            "5. [assistant] sampling_response for summarize: error(-1: User rejected sampling request) [call_id=5]"
        );
        assert_eq!(lines[5], "6. [tool] function_result: done [call_id=5]");
    }

    #[test]
    fn roots_and_progress_and_other_messages() {
        let r = rec(
            0,
            0,
            "6",
            "git_log",
            json!({}),
            env("6", "git_log", Status::Ok, "ok", 0),
            vec![
                s2c(
                    json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":3,"total":10,"message":"scanning"}}),
                ),
                s2c(json!({"jsonrpc":"2.0","id":7,"method":"roots/list"})),
                c2s(
                    json!({"jsonrpc":"2.0","id":7,"result":{"roots":[{"uri":"file:///r","name":"r"},{"uri":"file:///s"}]}}),
                ),
                s2c(
                    json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":0.5}}),
                ),
                s2c(json!({"jsonrpc":"2.0","id":8,"method":"ping"})),
                c2s(json!({"jsonrpc":"2.0","id":8,"result":{}})),
                c2s(json!({"jsonrpc":"2.0","id":99,"result":{"x":1}})),
                json!("not an event"),
            ],
        );
        assert_eq!(
            render(&[r], &all()),
            "1. [assistant] function_call git_log({}) [call_id=6]\n\
             2. [tool] progress for git_log: 3/10 scanning [call_id=6]\n\
             3. [tool] roots_request for git_log [call_id=6]\n\
             4. [user] roots_response for git_log: [\"file:///r\",\"file:///s\"] [call_id=6]\n\
             5. [tool] progress for git_log: 0.5 [call_id=6]\n\
             6. [tool] request ping for git_log [call_id=6]\n\
             7. [user] response ping for git_log: {} [call_id=6]\n\
             8. [user] response for git_log: {\"x\":1} [call_id=6]\n\
             9. [tool] event for git_log: \"not an event\" [call_id=6]\n\
             10. [tool] function_result: ok [call_id=6]\n"
        );
    }

    #[test]
    fn binary_content_is_described() {
        let b64 = "iVBORw0KGgoAAAANSUhEUgAA".repeat(50); // 1200 chars → 900 bytes
        let r = rec(
            0,
            0,
            "7",
            "upload",
            // The URL's stray `==` after complete groups is padding, not data: still 900 bytes.
            json!({"file": b64, "url": format!("data:image/png;base64,{b64}=="), "note": "n".repeat(510)}),
            env("7", "upload", Status::Ok, "ok", 0),
            vec![
                s2c(
                    json!({"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}}]}}),
                ),
                c2s(
                    json!({"jsonrpc":"2.0","id":1,"result":{"content":{"type":"audio","data":"AAAA"},"model":"m"}}),
                ),
                s2c(
                    json!({"jsonrpc":"2.0","id":2,"method":"x/y","params":{"resource":{"uri":"file:///a.pdf","mimeType":"application/pdf","blob":"AAAAAA=="}}}),
                ),
            ],
        );
        let out = render(&[r], &all());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            format!(
                "1. [assistant] function_call upload({{\"file\":\"<base64, 900 bytes>\",\"url\":\"<image/png, 900 bytes>\",\"note\":\"{}… [10 characters cut]\"}}) [call_id=7]",
                "n".repeat(500)
            )
        );
        assert_eq!(
            lines[1],
            "2. [tool] sampling_request for upload: <image/png, 8 bytes> [call_id=7]"
        );
        assert_eq!(
            lines[2],
            "3. [assistant] sampling_response for upload: accept <audio, 3 bytes> (model=m) [call_id=7]"
        );
        assert_eq!(
            lines[3],
            "4. [tool] request x/y for upload: {\"resource\":{\"uri\":\"file:///a.pdf\",\"mimeType\":\"application/pdf\",\"blob\":\"<application/pdf, 4 bytes>\"}} [call_id=7]"
        );
    }

    #[test]
    fn budget_exact_fit_keeps_everything() {
        let records = seed_records();
        let n = SEED_GOLDEN.chars().count();
        assert_eq!(render(&records, &budget(n)), SEED_GOLDEN);
        assert_eq!(render(&records, &budget(usize::MAX)), SEED_GOLDEN);
    }

    #[test]
    fn budget_one_short_drops_the_last_group() {
        let records = seed_records();
        let n = SEED_GOLDEN.chars().count();
        let first_group: String = SEED_GOLDEN
            .lines()
            .take(2)
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            render(&records, &budget(n - 1)),
            format!("{first_group}(1 more call omitted for budget)\n")
        );
        // Exactly the first group fits.
        assert_eq!(
            render(&records, &budget(first_group.chars().count())),
            format!("{first_group}(1 more call omitted for budget)\n")
        );
    }

    #[test]
    fn budget_first_group_not_fitting_omits_all() {
        let records = seed_records();
        assert_eq!(
            render(&records, &budget(10)),
            "(2 more calls omitted for budget)\n"
        );
        assert_eq!(
            render(&records, &budget(0)),
            "(2 more calls omitted for budget)\n"
        );
    }

    #[test]
    fn budget_never_skips_to_a_smaller_later_group() {
        let big = ok(0, 0, "1", "t", json!({}), &"x".repeat(100));
        let small1 = ok(1, 1, "2", "t", json!({}), "a");
        let huge = ok(2, 2, "3", "t", json!({}), &"y".repeat(1000));
        let small2 = ok(3, 3, "4", "t", json!({}), "b");
        let records = vec![big, small1, huge, small2];
        let out = render(&records, &budget(300));
        assert!(out.contains("[call_id=2]"));
        assert!(!out.contains("[call_id=4]"));
        assert!(out.ends_with("(2 more calls omitted for budget)\n"));
    }

    #[test]
    fn token_budget_counts_tokens_of_whole_groups() {
        let records = seed_records();
        let t = Tokenizer::O200kBase;
        let full = render(&records, &all());
        let n = t.count(&full);
        let opts = |n| RenderOptions {
            budget: Some(n),
            tokens: Some(t),
        };
        // The sum of the groups' tokens is the output's: exactly n keeps everything.
        assert_eq!(render(&records, &opts(n)), full);
        let short = render(&records, &opts(n - 1));
        assert!(
            short.ends_with("(1 more call omitted for budget)\n"),
            "{short}"
        );
        let kept = short.rsplit_once("(1 more").unwrap().0;
        assert!(t.count(kept) < n);
    }

    #[test]
    fn budget_counts_characters_and_number_prefixes() {
        // 'é' is one character, two bytes.
        let r = ok(0, 0, "", "t", json!({}), "é");
        let text = render(std::slice::from_ref(&r), &all());
        let chars = text.chars().count();
        assert!(text.len() > chars);
        assert_eq!(render(std::slice::from_ref(&r), &budget(chars)), text);
        assert_eq!(
            render(&[r], &budget(chars - 1)),
            "(1 more call omitted for budget)\n"
        );
        // Numbering continues across groups, and ten lines make the prefix wider.
        let records: Vec<CallRecord> = (0..6).map(|i| ok(i, i, "", "t", json!({}), "a")).collect();
        let out = render(&records, &all());
        assert!(
            out.contains("\n10. [tool] function_result: a\n11. [assistant] function_call t({})\n")
        );
        assert!(out.ends_with("12. [tool] function_result: a\n"));
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
            "[A-Za-z0-9+/]{490,620}={0,2}".prop_map(Value::from),
            prop_oneof![
                Just("image"),
                Just("audio"),
                Just("text"),
                Just("elicitation/create"),
                Just("sampling/createMessage"),
                Just("roots/list"),
                Just("notifications/progress")
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("type".to_owned()),
                            Just("data".to_owned()),
                            Just("blob".to_owned()),
                            Just("mimeType".to_owned()),
                            Just("method".to_owned()),
                            Just("id".to_owned()),
                            Just("params".to_owned()),
                            Just("result".to_owned()),
                            Just("error".to_owned()),
                            Just("message".to_owned()),
                            Just("messages".to_owned()),
                            Just("content".to_owned()),
                            Just("action".to_owned()),
                            Just("code".to_owned()),
                            Just("roots".to_owned()),
                            Just("progress".to_owned()),
                            any::<String>(),
                        ],
                        inner
                    ),
                    0..6
                )
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn arb_event() -> impl Strategy<Value = Value> {
        prop_oneof![
            arb_json(),
            (
                prop_oneof![
                    Just("server_to_client"),
                    Just("client_to_server"),
                    Just("x")
                ],
                arb_json()
            )
                .prop_map(|(d, m)| event(d, m)),
        ]
    }

    fn arb_record() -> impl Strategy<Value = CallRecord> {
        (
            (
                any::<String>(),
                any::<u64>(),
                any::<String>(),
                any::<String>(),
            ),
            arb_json(),
            (
                prop_oneof![
                    Just(Status::Ok),
                    Just(Status::Truncated),
                    Just(Status::Error)
                ],
                any::<String>(),
                any::<u64>(),
            ),
            prop::collection::vec(arb_event(), 0..5),
        )
            .prop_map(
                |((started_at, seq, call_id, tool), args, (status, content, omitted), events)| {
                    let mut r = rec(
                        0,
                        seq,
                        &call_id,
                        &tool,
                        args,
                        env(&call_id, &tool, status, &content, omitted),
                        events,
                    );
                    r.started_at = started_at;
                    r
                },
            )
    }

    fn numbered(line: &str) -> bool {
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && line[digits..].starts_with(". [")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn render_never_panics_and_keeps_one_item_per_line(
            records in prop::collection::vec(arb_record(), 0..5),
            b in prop::option::of(0usize..3000),
        ) {
            let out = render(&records, &all());
            prop_assert!(out.is_empty() || out.ends_with('\n'));
            let lines: Vec<&str> = out.split_terminator('\n').collect();
            for (i, line) in lines.iter().enumerate() {
                prop_assert!(numbered(line), "line {i}: {line:?}");
                let prefix = format!("{}. [", i + 1);
                prop_assert!(line.starts_with(&prefix), "line {}: {:?}", i, line);
            }
            let expected: usize = records.iter().map(|r| r.events.len() + 2).sum();
            prop_assert_eq!(lines.len(), expected);

            let out = render(&records, &RenderOptions { budget: b, tokens: None });
            let lines: Vec<&str> = out.split_terminator('\n').collect();
            let kept: Vec<&&str> = lines.iter().filter(|l| numbered(l)).collect();
            let kept_len: usize = kept.iter().map(|l| l.chars().count() + 1).sum();
            if let Some(b) = b {
                prop_assert!(kept_len <= b);
            }
            for line in &lines[kept.len()..] {
                prop_assert!(line.ends_with("omitted for budget)"), "{line:?}");
            }
            prop_assert!(lines.len() <= kept.len() + 1);
        }
    }
}
