//! The small-result path: a whole `tools/call` response line of the common shapes mapped
//! straight from its JSON text, without a `serde_json::Value` tree of it.
//!
//! Building the tree was half of a small call's instructions (callgrind, BENCHMARKS.md "The
//! session of 2026-12-03 05:40 UTC"): a `String` and a SipHash per key, an `IndexMap` per
//! object, and all of it dropped after the mapping. Here members are read as borrowed text
//! (`&RawValue`, keys and strings borrowed unless escaped); object rows are rendered from their
//! members' text in one pass ([`Row::Whole`]); text blocks give their rows from borrowed text.
//!
//! The shapes taken, each mapped exactly as [`super::map_outcome`] maps the parsed result (the
//! rules in the [module docs](super); `tests_props.rs` checks the two agree):
//! - a success (`isError` absent or not `true`), `resultType` absent or `"complete"`, no `task`;
//! - `content` an array of `text` blocks (or absent beside `structuredContent`);
//! - `structuredContent` absent or `null` (rows from the text blocks), or an array of objects,
//!   or an object (its one non-empty array of objects gives the rows, the other members a
//!   header row; else the object is one row), or `{"result": "<text>"}` (the Python SDK's and
//!   FastMCP's wrapping of a string).
//!
//! Anything else (media blocks, error results, nested envelopes, duplicate keys, other values
//! as rows) gives `None`, and the caller maps the result as before. Pure; no I/O.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::rows::{fill_from, kept_meta, text_rows, Rows};
use super::{Mapped, MappingContext};
use crate::budget::LongRows;
use crate::envelope::Row;

/// Lines longer than this (bytes) are left to the lazy path ([`super::map_raw_response`]),
/// which parses only the rows a budget can use; below it every row is rendered.
pub const FAST_MAX_BYTES: usize = 64 * 1024;

/// The envelope of a response line `{"jsonrpc":"2.0","id":…,"result":{…}}` of one of the
/// shapes in the module docs, equal to mapping its parsed `result` with
/// [`super::map_outcome`]; `None` for any other line (not JSON, another shape, longer than
/// [`FAST_MAX_BYTES`]).
pub fn map_small_response(line: &str, ctx: &MappingContext<'_>) -> Option<Mapped> {
    if line.len() > FAST_MAX_BYTES {
        return None;
    }
    let response: Response<'_> = serde_json::from_str(line).ok()?;
    if response.jsonrpc != "2.0" {
        return None;
    }
    let result = response.result;
    let complete = |t: &RawValue| t.get() == "\"complete\"";
    if result.task.is_some()
        || result.is_error.is_some_and(|e| e.get() == "true")
        || result.result_type.is_some_and(|t| !complete(t))
    {
        return None;
    }
    let meta = match result.meta {
        Some(meta) => kept_meta(&serde_json::from_str(meta.get()).ok()?),
        None => None,
    };
    let rules = ctx.text_rules();
    // Decoded texts (text blocks, a wrapped string) the rows borrow from.
    let mut texts: Vec<Cow<'_, str>> = Vec::new();
    let mut rendered: Vec<String> = Vec::new();
    let blocks = match result.content {
        Some(blocks) => blocks,
        None if result.structured.is_some() => Vec::new(),
        None => return None,
    };
    if blocks.iter().any(|b| b.kind != "text") {
        return None;
    }
    match result.structured {
        Some(sc) => match structured(sc, &mut rendered)? {
            Structured::Text(text) => texts.push(text),
            Structured::Rows => {}
        },
        None => {
            for block in blocks {
                texts.push(serde_json::from_str::<Text<'_>>(block.text?.get()).ok()?.0);
            }
        }
    }
    let rows: Rows<'_> = match texts.is_empty() {
        true => Box::new(
            rendered
                .iter()
                .map(|r| Row::Whole(Cow::Borrowed(r.as_str()))),
        ),
        false => Box::new(texts.iter().flat_map(move |t| text_rows(t, rules))),
    };
    let split = rules.long_rows == LongRows::Split;
    let filled = fill_from(rows, split, 0, &ctx.budget, &ctx.budget);
    Some(Mapped {
        envelope: filled.into_envelope(ctx.call_id, ctx.tool),
        media: Vec::new(),
        meta,
    })
}

/// A response line's members; any other member (`error`, `method`) or a repeated one fails the
/// parse.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Response<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    #[serde(borrow, rename = "id")]
    _id: &'a RawValue,
    #[serde(borrow)]
    result: ResultParts<'a>,
}

/// The `CallToolResult` members the mapping reads, as text (`content` as its blocks, read in
/// the same pass); others are skipped, as the full mapping skips them. `null` reads as absent
/// (as the mapping treats each of these). A `content` that is not an array of objects with a
/// string `type` fails the parse (the full mapping then tells what is wrong).
#[derive(Deserialize)]
struct ResultParts<'a> {
    #[serde(borrow, default)]
    content: Option<Vec<Block<'a>>>,
    #[serde(borrow, default, rename = "structuredContent")]
    structured: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "isError")]
    is_error: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "resultType")]
    result_type: Option<&'a RawValue>,
    #[serde(borrow, default)]
    task: Option<&'a RawValue>,
}

/// A content block's `type` and its `text` as written (decoded only when its rows are read).
#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
}

/// A JSON string, borrowed from the line unless it has escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}

struct TextVisitor<'a>(std::marker::PhantomData<&'a str>);

impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
    type Value = Text<'a>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'a>, E> {
        Ok(Text(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Text<'a>, E> {
        Ok(Text(Cow::Owned(v.to_owned())))
    }
}

/// An object's members in order, keys decoded, values as text; `None` for a repeated key.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Members<'de>, A::Error> {
        let mut members: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::new();
        while let Some(Text(key)) = access.next_key::<Text<'de>>()? {
            if members.iter().any(|(k, _)| *k == key) {
                return Err(serde::de::Error::custom("a repeated key"));
            }
            members.push((key, access.next_value()?));
        }
        Ok(Members(members))
    }
}

/// What `structuredContent` gives: object rows (rendered into the caller's list) or the text of
/// a wrapped string.
enum Structured<'a> {
    Rows,
    Text(Cow<'a, str>),
}

/// The rows of `structuredContent` (the JSON rule, and the SDKs' `{"result": "<text>"}`), each
/// object row rendered into `rendered`; `None` for a shape left to the full mapping.
fn structured<'a>(sc: &'a RawValue, rendered: &mut Vec<String>) -> Option<Structured<'a>> {
    let text = sc.get();
    if text.starts_with('[') {
        // Items that are not objects (or repeat a key) fail the parse: left to the full
        // mapping.
        for Members(members) in serde_json::from_str::<Vec<Members<'a>>>(text).ok()? {
            rendered.push(render_members(members)?);
        }
        return Some(Structured::Rows);
    }
    if !text.starts_with('{') {
        return None;
    }
    let Members(members) = serde_json::from_str(text).ok()?;
    // Six members may be an envelope behind an envelope (`super::nested`).
    if members.len() == 6 {
        return None;
    }
    if let [(key, value)] = members.as_slice() {
        if key == "result" && value.get().starts_with('"') {
            return Some(Structured::Text(
                serde_json::from_str::<Text<'a>>(value.get()).ok()?.0,
            ));
        }
        if key == "result" && value.get().starts_with('[') {
            return None;
        }
    }
    let mut arrays = Vec::new();
    for (i, (_, value)) in members.iter().enumerate() {
        if let Some(items) = objects(value)? {
            arrays.push((i, items));
        }
    }
    match arrays.pop() {
        Some((at, items)) if arrays.is_empty() => {
            let header: Vec<_> = members
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != at)
                .map(|(_, m)| m.clone())
                .collect();
            if !header.is_empty() {
                rendered.push(render_members(header)?);
            }
            for item in items {
                rendered.push(object_row(item)?);
            }
        }
        _ => rendered.push(render_members(members)?),
    }
    Some(Structured::Rows)
}

/// The items of `value` when it is a non-empty array of objects (`Some(None)` when it is
/// anything else); `None` when it is not valid.
fn objects(value: &RawValue) -> Option<Option<Vec<&RawValue>>> {
    if !value.get().starts_with('[') {
        return Some(None);
    }
    let items = serde_json::from_str::<Vec<&RawValue>>(value.get()).ok()?;
    let all = !items.is_empty() && items.iter().all(|i| i.get().starts_with('{'));
    Some(all.then_some(items))
}

/// An object item's row, rendered; `None` when the item is not an object (its row is built
/// by the full mapping) or repeats a key.
fn object_row(item: &RawValue) -> Option<String> {
    if !item.get().starts_with('{') {
        return None;
    }
    let Members(members) = serde_json::from_str(item.get()).ok()?;
    render_members(members)
}

/// `key=value` pairs sorted by key, joined by `,`: what [`crate::envelope::Row::Object`]
/// renders for the same members. A string value is written decoded, an integer as written,
/// `true`, `false` and `null` as themselves; any other value as serde_json writes its `Value`.
fn render_members(mut members: Vec<(Cow<'_, str>, &RawValue)>) -> Option<String> {
    members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::new();
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(key);
        out.push('=');
        let text = value.get();
        match text.as_bytes()[0] {
            b'"' => out.push_str(&serde_json::from_str::<Text<'_>>(text).ok()?.0),
            b't' | b'f' | b'n' => out.push_str(text),
            _ if is_plain_integer(text) => out.push_str(text),
            _ => out.push_str(&serde_json::from_str::<Value>(text).ok()?.to_string()),
        }
    }
    Some(out)
}

/// `0` or digits not starting with `0`: written by serde_json exactly as read.
fn is_plain_integer(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.iter().all(u8::is_ascii_digit)
        && (bytes[0] != b'0' || bytes.len() == 1)
}
