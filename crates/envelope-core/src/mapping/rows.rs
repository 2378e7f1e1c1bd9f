//! The success path: a `CallToolResult`'s `structuredContent` or content blocks → rows, filled
//! greedily within the tool's budget (the rules are listed in the [module docs](super)).
//!
//! Rows borrow from the result and are produced lazily; rows the proxy has to build copy strings
//! only up to `budget + 1` characters ([`bounded_clone`]) when long rows are kept whole, in full
//! when they are cut into pieces (`long_rows = "split"`, [`SplitLongObjects`]).

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::errors::{error_mapped, map_tool_error, ErrorType};
use super::media::{describe_media, media_block, passed_media, MediaMode};
use super::{Mapped, MappingContext};
use crate::budget::{Budget, LongRows};
use crate::envelope::{fill_rows_within, json_kind, Row, Status};
use crate::message_cut::prefix_end;
use crate::small_map;
use crate::text_rows::{plain_text_rows, SplitLongObjects, TextRules};

/// A `CallToolResult` → envelope: results that are not plain tool results and envelopes
/// behind an envelope first ([`super::nested`]), then the rules above; the
/// result's `_meta` is kept.
pub(crate) fn map_result(result: &Value, ctx: &MappingContext<'_>) -> Mapped {
    map_result_from(result, ctx, 0).0
}

/// How many rows a success result has under `ctx`'s text rules (0 for an error result).
pub fn count_result_rows(result: &Value, ctx: &MappingContext<'_>) -> u64 {
    let members = result.as_object().map(ResultMembers::of);
    if let Some((held, not_held)) = members
        .as_ref()
        .and_then(|m| super::nested::nested_rows(m, ctx))
    {
        return held.saturating_add(not_held);
    }
    let (mapped, kept) = map_plain_result(result, members.as_ref(), ctx, 0, &Budget::chars(0));
    match mapped.envelope.status {
        Status::Error => 0,
        _ => kept.saturating_add(mapped.envelope.omitted),
    }
}

/// How many of a result's rows no page can show: the rows a nested envelope's own proxy left
/// out (its `omitted`); 0 for every other result.
pub fn rows_not_held(result: &Value, ctx: &MappingContext<'_>) -> u64 {
    let members = result.as_object().map(ResultMembers::of);
    members
        .as_ref()
        .and_then(|m| super::nested::nested_rows(m, ctx))
        .map_or(0, |(_, not_held)| not_held)
}

/// The envelope of a result's rows from row `first_row` on (0: the whole result; a later page
/// leaves out the rows before it and passes no media), and how many rows it kept. A nested
/// envelope's rows page the same way ([`super::nested::refill_from`]); error results and the
/// other results [`super::nested`] handles map as usual whatever `first_row` is.
pub fn map_result_from(result: &Value, ctx: &MappingContext<'_>, first_row: u64) -> (Mapped, u64) {
    let members = result.as_object().map(ResultMembers::of);
    let special = members
        .as_ref()
        .and_then(|m| super::nested::special_members_from(m, ctx, first_row));
    let (mut mapped, kept) = match special {
        Some(special) => special,
        None => map_plain_result(result, members.as_ref(), ctx, first_row, &ctx.budget),
    };
    mapped.meta = members.and_then(|m| kept_meta(m.meta?));
    (mapped, kept)
}

/// What a page of `result` reads of it, as compact JSON text: the paging store keeps this
/// instead of the whole result, and [`map_result_from`] maps any page of it (from row 1 on)
/// exactly as it maps the same page of `result` under media mode `media`. `structuredContent`
/// (when not `null`) and `_meta` are kept as they are; of `content`, the blocks that give rows
/// (all but media blocks in [`MediaMode::Passthrough`], which give none) when the rows come
/// from `content`, and only the media blocks with [`MediaMode::Describe`] (they are rows too)
/// when they come from `structuredContent`, which makes the text blocks unread (the MCP SDKs
/// put a JSON copy of it there). Media a first answer passed through are not passed again by a
/// page. A result that is not an object is kept whole.
pub fn paged_result_json(result: &Value, media: MediaMode) -> String {
    let Some(obj) = result.as_object() else {
        return result.to_string();
    };
    let members = ResultMembers::of(obj);
    let structured = members.structured.filter(|v| !v.is_null());
    let content = members.content.map(|c| match c {
        Value::Array(blocks) => {
            let read = |b: &&Value| match media_block(b) {
                Some(_) => media == MediaMode::Describe,
                None => structured.is_none(),
            };
            Value::Array(blocks.iter().filter(read).cloned().collect())
        }
        other => other.clone(),
    });
    let mut kept = Map::new();
    // An emptied `content` beside `structuredContent` is left out; without it, kept as it is.
    let unread = |c: &Value| structured.is_some() && c.as_array().is_some_and(Vec::is_empty);
    if let Some(content) = content.filter(|c| !unread(c)) {
        kept.insert("content".to_owned(), content);
    }
    for (key, value) in [("structuredContent", structured), ("_meta", members.meta)] {
        if let Some(value) = value {
            kept.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(kept).to_string()
}

/// The downstream result's `_meta` as our result carries it: without the downstream server's
/// `io.modelcontextprotocol/serverInfo`, which names the server that answers (MCP 2026-07-28
/// "Base Protocol: General fields, `_meta`, Per-response protocol fields"): the client's answer
/// comes from the proxy, which stamps its own for 2026-07-28 clients, and the 2025 revisions
/// reserve the `io.modelcontextprotocol/` prefix without defining the key (2025-11-25 "Basic:
/// `_meta`"). `None` for a `_meta` that held nothing else, and for one that is not an object
/// (`null`, a number, an array: the schema of every revision makes `_meta` an object, and a
/// strict client would refuse the whole result for it).
pub(crate) fn kept_meta(meta: &Value) -> Option<Value> {
    match meta {
        Value::Object(map) if map.contains_key(crate::era::META_SERVER_INFO) => {
            let mut map = map.clone();
            map.remove(crate::era::META_SERVER_INFO);
            (!map.is_empty()).then_some(Value::Object(map))
        }
        Value::Object(_) => Some(meta.clone()),
        _ => None,
    }
}

/// The members of a `CallToolResult` object that the mapping reads, found in one pass over
/// the object (looked up one by one, each name is hashed: six SipHashes per result). Keys of
/// a JSON object here are unique, so each is what `get` would give.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct ResultMembers<'a> {
    /// `content`.
    pub content: Option<&'a Value>,
    /// `structuredContent` (`null` included).
    pub structured: Option<&'a Value>,
    /// `isError`.
    pub is_error: Option<&'a Value>,
    /// `_meta`.
    pub meta: Option<&'a Value>,
    /// `resultType` (MCP 2026-07-28).
    pub result_type: Option<&'a Value>,
    /// `task` (a task-augmented answer).
    pub task: Option<&'a Value>,
}

impl<'a> ResultMembers<'a> {
    pub(crate) fn of(obj: &'a Map<String, Value>) -> ResultMembers<'a> {
        let mut members = ResultMembers::default();
        for (key, value) in obj {
            let slot = match key.as_str() {
                "content" => &mut members.content,
                "structuredContent" => &mut members.structured,
                "isError" => &mut members.is_error,
                "_meta" => &mut members.meta,
                "resultType" => &mut members.result_type,
                "task" => &mut members.task,
                _ => continue,
            };
            *slot = Some(value);
        }
        members
    }
}

/// The plain rules from row `first_row` on, filling within `fill` (rows are still cut by
/// `ctx`'s budget).
fn map_plain_result(
    result: &Value,
    members: Option<&ResultMembers<'_>>,
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
    let Some(obj) = members else {
        return (
            invalid(format!(
                "the result is {}, not an object",
                json_kind(result)
            )),
            0,
        );
    };
    let structured = obj.structured.filter(|v| !v.is_null());
    let blocks: &[Value] = match (obj.content, structured) {
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
    if obj.is_error == Some(&Value::Bool(true)) {
        return (map_tool_error(blocks, structured, ctx), 0);
    }

    let rules = ctx.text_rules();
    let split = rules.long_rows == LongRows::Split;
    // Rows the proxy builds copy strings up to the budget, so that a row too long for it stays
    // too long; when long rows are cut into pieces, every piece must be the value's own text.
    let budget = match split {
        true => usize::MAX,
        false => ctx.budget.unreachable_chars(),
    };
    let mode = ctx.media;
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
            let rows = structured_rows(sc, budget, rules).chain(described);
            fill_from(rows, split, skip, fill, &ctx.budget)
        }
        None => {
            let rows = blocks
                .iter()
                .flat_map(move |b| block_rows(b, mode, budget, rules));
            fill_from(rows, split, skip, fill, &ctx.budget)
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

/// The greedy fill of `rows` after the first `skip`, within `fill`, each object row longer
/// than `budget` cut into pieces first when `split` ([`SplitLongObjects`]).
pub(crate) fn fill_from<'a>(
    rows: impl Iterator<Item = Row<'a>>,
    split: bool,
    skip: usize,
    fill: &Budget,
    budget: &Budget,
) -> crate::envelope::Filled {
    match split {
        true => fill_rows_within(SplitLongObjects::new(rows, *budget).skip(skip), fill),
        false => fill_rows_within(rows.skip(skip), fill),
    }
}

pub(crate) type Rows<'a> = Box<dyn Iterator<Item = Row<'a>> + 'a>;

pub(crate) fn no_rows<'a>() -> Rows<'a> {
    Box::new(std::iter::empty())
}

pub(crate) fn one_row<'a>(row: Row<'a>) -> Rows<'a> {
    Box::new(std::iter::once(row))
}

pub(crate) fn owned_row<'a>(map: Map<String, Value>) -> Row<'a> {
    Row::Object(Cow::Owned(map))
}

/// A copy of `value` in which every string longer than `budget + 1` characters is cut to
/// `budget + 1` characters. Used for rows the proxy builds from borrowed data: a cut string
/// makes its row longer than the budget both before and after the cut, so the row is left out
/// either way and the cut text never appears.
pub(crate) fn bounded_clone(value: &Value, budget: usize) -> Value {
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

pub(crate) fn wrapped_value<'a>(value: Value) -> Row<'a> {
    let mut map = Map::new();
    map.insert("value".to_owned(), value);
    owned_row(map)
}

/// Non-empty, and every item an object.
fn is_array_of_objects(value: &Value) -> bool {
    matches!(value, Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object))
}

/// The rows of `structuredContent`: the JSON rule ([`value_rows`]), except for the wrapping
/// the Python MCP SDK and FastMCP give a tool's return value that is not an object,
/// `{"result": <value>}` (their structured output of a function returning `str`, a list, a
/// number): a string there gives the rows of a text block with that text ([`text_rows`]: lines
/// or blocks, a line longer than the budget split), and an array the rows of its items, a
/// string item those of its text as well (a `list[str]`: one row per line of each item). Without this a long string was one object row, which is
/// never cut: an empty answer, and a page that could never show it.
fn structured_rows(value: &Value, budget: usize, rules: TextRules) -> Rows<'_> {
    match sdk_wrapped(value) {
        Some(Value::String(text)) => text_rows(text, rules),
        Some(Value::Array(items)) => Box::new(items.iter().flat_map(move |item| match item {
            Value::String(text) => text_rows(text, rules),
            Value::Object(map) => one_row(Row::Object(Cow::Borrowed(map))),
            other => one_row(wrapped_value(bounded_clone(other, budget))),
        })),
        _ => value_rows(value, budget),
    }
}

/// The value of an object whose one member is `result` (see [`structured_rows`]).
fn sdk_wrapped(value: &Value) -> Option<&Value> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get("result"),
        _ => None,
    }
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
pub(crate) fn text_rows(text: &str, rules: TextRules) -> Rows<'_> {
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

/// The rows of one content block (media blocks give none in passthrough mode).
fn block_rows(block: &Value, mode: MediaMode, budget: usize, rules: TextRules) -> Rows<'_> {
    let Value::Object(map) = block else {
        return one_row(wrapped_value(bounded_clone(block, budget)));
    };
    let as_is = || one_row(Row::Object(Cow::Borrowed(map)));
    if media_block(block).is_some() {
        return match mode {
            MediaMode::Passthrough => no_rows(),
            MediaMode::Describe => describe_media(block, budget).map_or_else(no_rows, one_row),
        };
    }
    match small_map::get(map, "type").and_then(Value::as_str) {
        Some("text") => match small_map::get(map, "text") {
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
