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
//! `seq` (the order they were recorded in; in transcripts written before, the order they
//! started in); records equal on both keep their file order. File order alone is wrong because a
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
//! | instead of a result, a call the client cancelled ([`Outcome::Cancelled`]) | `2. [user] cancelled: no function_result (the client cancelled the call) [call_id=4]` |
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
//! | any JSON-RPC error answer of the client | `[user] elicitation_response for git_commit: error(-1: failed)` (same `error(<code>: <message>)` for every kind) |
//! | the proxy's own answer (`proxy_to_server`) | `[proxy] elicitation_response for git_commit: error(-32602: the client gave no response for input request `1`)` |
//! | `notifications/progress` | `[tool] progress for git_log: 3/10 scanning` (`/<total>` and ` <message>` only when present) |
//! | other request / notification | `[tool] request ping for git_log: {"a":1}` / `[tool] notification notifications/message for git_log: {...}` |
//! | response to another request | `[user] response ping for git_log: {}`; with no matching request: `[user] response for git_log: {}` |
//! | an event that is not `{"direction", "message": {...}}` | `[tool] event for git_log: <compact JSON>` |
//!
//! The role of requests and notifications follows their direction (`[tool]` server to client,
//! `[user]` client to server, `[proxy]` the proxy's own answer to a server); responses are matched to their request by `id` among the
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
//! many groups were left out. That line counts in the budget too (the budget is what the
//! summarizer receives, seed 004): groups are dropped from the end until the kept ones and
//! that line fit together.
//!
//! When not even the first group fits, it is shortened rather than left out (a summarizer
//! given nothing cannot say what the session was about): every line keeps its number, role
//! and label (`[assistant] function_call <tool>(`, `[tool] function_result: `, an event's text
//! up to its first `: `) and the rest of each line is cut to the same largest number of
//! characters `c` that makes the group fit, followed by `… [N characters cut]` (a line stays
//! whole when the marker would make it no shorter). When even `c = 0` does not fit, the only line is
//! `(the first call needs 85 characters even shortened, more than the budget of 10: 2 calls
//! omitted for budget)` (`tokens` with a token budget). See `trajectory/shorten.rs`.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::budget::{Measure, Tokenizer};
use crate::envelope::Status;
use crate::mapping::media::{base64_decoded_len, media_block};
use crate::mapping::Outcome;
use crate::message_cut::{cut_chars, cut_marker, head_and_rest};
use crate::record::CallRecord;

/// Strings in arguments and event payloads longer than this many characters (Unicode scalar
/// values) are cut or described (issue 4).
pub const ARG_STRING_MAX: usize = 500;

/// Free text from events (elicitation message, sampling texts, progress message) is cut to this
/// many characters (Unicode scalar values), followed by `… [N characters cut]` (issue 4).
pub const EVENT_TEXT_MAX: usize = 200;

/// The label of the line that ends a cancelled call's group in place of its result.
const CANCELLED_LABEL: &str = "[user] cancelled: ";
/// The text of that line.
const CANCELLED_TEXT: &str = "no function_result (the client cancelled the call)";

/// Options for [`render`] (issue 4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// The most characters (Unicode scalar values, newlines and number prefixes included) the
    /// output may take, the closing `(N more calls omitted for budget)` line included; `None`
    /// keeps everything. See the module docs.
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

    let measure = opts.tokens.map_or(Measure::Chars, Measure::Tokens);
    let Some(budget) = opts.budget else {
        let mut out = String::new();
        let mut next = 1usize;
        for record in &order {
            let group = Group::of(record);
            out.push_str(&group.numbered(next, None));
            next += group.items.len();
        }
        return out;
    };
    let (texts, first) = kept_groups(&order, budget, measure);
    let left = order.len() - texts.len();
    let mut out = texts.concat();
    match (texts.is_empty(), left) {
        (_, 0) => {}
        (true, _) => out = shorten::first_group(&first, budget, measure, left),
        (false, _) => out.push_str(&shorten::omitted_line(left)),
    }
    out
}

/// The numbered texts of the longest run of whole groups, oldest first, that fits `budget`
/// together with the line counting the groups left out (none when every group is kept), and
/// the first group (for [`shorten::first_group`] when no group is kept).
fn kept_groups(order: &[&CallRecord], budget: usize, measure: Measure) -> (Vec<String>, Group) {
    let mut first = None;
    let mut texts: Vec<String> = Vec::new();
    let mut kept = 0;
    let (mut used, mut next) = (0usize, 1usize);
    for (i, record) in order.iter().enumerate() {
        let group = Group::of(record);
        let text = group.numbered(next, None);
        next += group.items.len();
        used = used.saturating_add(measure.count(&text));
        first.get_or_insert(group);
        if used > budget {
            break;
        }
        texts.push(text);
        let left = order.len() - i - 1;
        let trailer = match left {
            0 => 0,
            _ => measure.count(&shorten::omitted_line(left)),
        };
        if used + trailer <= budget {
            kept = texts.len();
        }
    }
    texts.truncate(kept);
    let first = first.unwrap_or(Group {
        items: Vec::new(),
        suffix: String::new(),
    });
    (texts, first)
}

/// One call's lines before numbering and escaping: each a label (role and kind, kept whole
/// when a line is shortened) and the rest; and the ` [call_id=…]` suffix of every line.
struct Group {
    items: Vec<(String, String)>,
    suffix: String,
}

impl Group {
    fn of(r: &CallRecord) -> Group {
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
        items.push((
            format!("[assistant] function_call {tool}("),
            format!("{args})"),
        ));

        let mut requests: Vec<(Value, String)> = Vec::new();
        for ev in &r.events {
            let item = event_item(ev, tool, &mut requests);
            let label_end = item.find(": ").map_or(item.len(), |k| k + 2);
            let (label, rest) = item.split_at(label_end);
            items.push((label.to_owned(), rest.to_owned()));
        }

        if r.outcome == Outcome::Cancelled {
            // No result: the client gave up on the call.
            items.push((CANCELLED_LABEL.to_owned(), CANCELLED_TEXT.to_owned()));
            return Group { items, suffix };
        }
        let env = &r.envelope;
        let result = match env.status {
            Status::Error => format!("error({})", env.content),
            Status::Truncated => format!("{} (+{} omitted)", env.content, env.omitted),
            Status::Ok if env.omitted > 0 => format!("{} (+{} omitted)", env.content, env.omitted),
            Status::Ok => env.content.clone(),
        };
        items.push(("[tool] function_result: ".to_owned(), result));
        Group { items, suffix }
    }

    /// The group's numbered lines from `first` on, each escaped and ending with a newline;
    /// with `cap`, the part of each line after its label cut to `cap` characters.
    fn numbered(&self, first: usize, cap: Option<usize>) -> String {
        let mut text = String::new();
        for (k, (label, rest)) in self.items.iter().enumerate() {
            let rest = match cap {
                Some(c) => shorter(rest, c),
                None => rest.clone(),
            };
            let line = escape_line(&format!("{label}{rest}{}", self.suffix));
            let _ = writeln!(text, "{}. {line}", first + k);
        }
        text
    }
}

/// One event line (unescaped, without the call_id suffix). `requests` collects the group's
/// requests seen so far (`id`, method) to match responses.
fn event_item(ev: &Value, tool: &str, requests: &mut Vec<(Value, String)>) -> String {
    let direction = ev.get("direction").and_then(Value::as_str);
    let (role, msg) = match (direction, ev.get("message")) {
        (Some("server_to_client"), Some(Value::Object(m))) => ("tool", m),
        (Some("client_to_server"), Some(Value::Object(m))) => ("user", m),
        // The proxy's own answer to a server's request (a refusal, a timeout, no response in a
        // 2026-07-28 client's retry): nobody on the client's side said it.
        (Some("proxy_to_server"), Some(Value::Object(m))) => ("proxy", m),
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
    // The client's answers take the role of who answers there (the user, the client's model);
    // the proxy's own keep `proxy`.
    let answered = |by: &'static str| if role == "proxy" { role } else { by };
    let (label, role) = match method {
        Some("elicitation/create") => ("elicitation_response".to_owned(), answered("user")),
        Some("sampling/createMessage") => ("sampling_response".to_owned(), answered("assistant")),
        Some("roots/list") => ("roots_response".to_owned(), answered("user")),
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

/// `rest` cut to `cap` characters and the cut marker, when that is shorter than `rest` (a
/// line only a little longer than `cap` stays whole: the marker would make it longer).
fn shorter(rest: &str, cap: usize) -> String {
    let cut = cut_chars(rest, cap);
    if cut.chars().count() < rest.chars().count() {
        cut
    } else {
        rest.to_owned()
    }
}

/// One line's text with newlines as `\n`, carriage returns as `\r` and other control or
/// invisible characters (bidirectional controls, zero-width characters) as `\u{hex}` (see the
/// module docs): what a terminal report may print of a text it did not write.
pub fn escape_line(s: &str) -> String {
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

mod shorten;
#[cfg(test)]
mod tests;
