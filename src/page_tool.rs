//! The page tool: one extra tool the proxy offers (default name `envelope_next_page`) that
//! answers the rows a truncated result left out, as an envelope within the same budget rules
//! as the tool that made it, so a model can page through a result in order.
//!
//! Contract:
//! * Arguments: `call_id` (string, required): the `call_id` of a truncated envelope; `skip`
//!   (integer >= 0, default 0): rows to leave out before the page (for example a row too long
//!   to show), counted from the rows already answered. A `skip` larger than the rows still
//!   to come answers an `invalid_argument` error envelope naming how many rows remain, and
//!   moves nothing: no row is dropped unseen.
//! * A next row too long for any page (after the `skip`) answers an `invalid_argument` error
//!   naming it and the `skip` that passes it (the call's own plus one, since the error
//!   consumes nothing), so following the advice always moves on.
//! * Each call answers the next rows after those already answered for that `call_id` (the
//!   first answer's rows, then each page's), filled greedily within the original tool's
//!   budget; `omitted` counts the rows still after the page, and `status` is `ok` on the last
//!   page. The envelope's `call_id` is the page call's own id and `tool` the page tool's name.
//! * An unknown, expired, evicted or fully paged `call_id` answers a `not_found` error
//!   envelope; bad arguments an `invalid_argument` one. So does a `call_id` that names two
//!   truncated results still held, those of JSON-RPC ids `5` and `"5"` (two requests, one
//!   `call_id` `5`: the envelope spec, seed 000, echoes the id as a string): it cannot say
//!   which, so neither is paged, and the answer says why. A page's own `call_id` (one of the
//!   session's last 32) answers a `not_found` naming the original `call_id` to pass instead.
//!   The messages quote a requested `call_id` longer than 128 characters as its first 128 and
//!   `… [N characters cut]`.
//!
//! The rows are kept in a [`PageStore`] per process, keyed by session and the JSON text of
//! the call's JSON-RPC id ([`PageKey`]).
//! Source: issue 15 of the project.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::envelope::Envelope;
use crate::outcome::{map_result_from, Mapped, MappingContext, Outcome};
use crate::paging::{
    Cursor, NotKept, PageKey, PageStore, StoredCall, DEFAULT_MAX_BYTES, DEFAULT_TTL,
};
use crate::settings::PositiveCount;

/// The page tool's built-in name.
pub const DEFAULT_TOOL_NAME: &str = "envelope_next_page";

/// What the page tool tells the model (its `description`).
pub const DESCRIPTION: &str = "Returns the next rows of a tool result whose envelope came back with status \"truncated\": pass that envelope's call_id, and call again with the same call_id until status is \"ok\". Pass skip to leave out rows first: a row too long for any page answers an error saying so and naming the skip that passes it (skip counts from the rows already answered).";

/// The `[paging]` table as written.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Paging")]
pub struct RawPaging {
    /// Offer the page tool and keep the rows of truncated results. Default: true.
    pub enabled: Option<bool>,
    /// The page tool's name as the client sees it (letters, digits, `_`, `-`, `.`; at most
    /// 128). Default: "envelope_next_page".
    #[schemars(with = "Option<String>")]
    pub tool_name: Option<toml::Spanned<String>>,
    /// Most bytes of truncated results kept (least recently used dropped first; a larger
    /// result is not kept, and its answer says so); each result counts the bytes it holds
    /// plus 280 of bookkeeping. Default: 33554432 (32 MiB).
    pub max_bytes: Option<PositiveCount>,
    /// Seconds a kept result lives after its last use. Default: 600.
    pub ttl_sec: Option<PositiveCount>,
}

/// The validated `[paging]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagingConfig {
    /// Whether the page tool is offered.
    pub enabled: bool,
    /// Its name.
    pub tool_name: String,
    /// Store size in bytes.
    pub max_bytes: usize,
    /// Time-to-live of an entry since its last use.
    pub ttl: Duration,
}

impl Default for PagingConfig {
    fn default() -> Self {
        PagingConfig {
            enabled: true,
            tool_name: DEFAULT_TOOL_NAME.to_owned(),
            max_bytes: DEFAULT_MAX_BYTES,
            ttl: DEFAULT_TTL,
        }
    }
}

impl PagingConfig {
    /// Validates the raw table; the error is the span and message for the `paging.tool_name`
    /// key.
    pub fn from_raw(
        raw: Option<RawPaging>,
    ) -> Result<PagingConfig, (Option<std::ops::Range<usize>>, String)> {
        let Some(raw) = raw else {
            return Ok(PagingConfig::default());
        };
        let built_in = PagingConfig::default();
        let span = raw.tool_name.as_ref().map(|n| n.span());
        let tool_name = raw.tool_name.map_or(built_in.tool_name, |n| n.into_inner());
        let valid = !tool_name.is_empty()
            && tool_name.len() <= 128
            && tool_name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid {
            return Err((
                span,
                format!(
                    "`{tool_name}` is not a tool name: use 1 to 128 letters, digits, `_`, `-` or `.`"
                ),
            ));
        }
        Ok(PagingConfig {
            enabled: raw.enabled.unwrap_or(true),
            tool_name,
            max_bytes: raw.max_bytes.map_or(built_in.max_bytes, |b| b.0),
            ttl: raw
                .ttl_sec
                .map_or(built_in.ttl, |s| Duration::from_secs(s.0 as u64)),
        })
    }
}

/// One session's access to the page tool and the process's store.
#[derive(Debug, Clone)]
pub struct Pager {
    tool_name: String,
    session: u64,
    store: Arc<Mutex<PageStore>>,
    /// The session's last page calls, newest last: `(page call's call_id, the original
    /// call_id it paged)`, at most [`MAX_PAGE_IDS`], so paging a page's own call_id can name
    /// the original one.
    pages: Arc<Mutex<VecDeque<(String, String)>>>,
}

/// Most page calls a session remembers the original call_id of.
const MAX_PAGE_IDS: usize = 32;

/// A page call's answer and what its transcript record needs.
#[derive(Debug)]
pub struct PageAnswer {
    /// The envelope (and no media).
    pub mapped: Mapped,
    /// The record's outcome: [`Outcome::Page`] for a page, [`Outcome::PageError`] for an
    /// error envelope.
    pub outcome: Outcome,
    /// The original call, when found: its server, the server's own tool name, the budget
    /// settings the page was made with.
    pub original: Option<Arc<StoredCall>>,
}

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

impl Pager {
    /// The pager of a new session, with a store of its own; `None` when paging is off.
    pub fn new(config: &PagingConfig) -> Option<Pager> {
        config.enabled.then(|| {
            let store = PageStore::new(config.max_bytes, config.ttl);
            Pager::with_store(&config.tool_name, Arc::new(Mutex::new(store)))
        })
    }

    /// The pager of a new session sharing `store` with other sessions.
    pub fn with_store(tool_name: &str, store: Arc<Mutex<PageStore>>) -> Pager {
        Pager {
            tool_name: tool_name.to_owned(),
            session: NEXT_SESSION.fetch_add(1, Ordering::Relaxed),
            store,
            pages: Arc::default(),
        }
    }

    /// A pager for another session over the same store (its own key into it: a session
    /// pages only its own results).
    pub fn for_new_session(&self) -> Pager {
        Pager::with_store(&self.tool_name, self.store.clone())
    }

    /// The store's size in bytes.
    pub fn max_bytes(&self) -> usize {
        self.store.lock().unwrap().max_bytes()
    }

    /// The page tool's name.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The page tool's definition for `tools/list` (MCP specification 2025-06-18, "Tools").
    pub fn tool_definition(&self) -> Value {
        json!({
            "name": self.tool_name,
            "description": DESCRIPTION,
            "inputSchema": {
                "type": "object",
                "properties": {
                    "call_id": {"type": "string", "description": "The call_id of the ORIGINAL tool call whose envelope came back with status \"truncated\" (not a page's own call_id): the same one for every page."},
                    "skip": {"type": "integer", "minimum": 0, "description": "Rows to leave out before this page. Default 0."}
                },
                "required": ["call_id"],
                "additionalProperties": false
            },
            "outputSchema": Envelope::json_schema(),
        })
    }

    /// Keeps a truncated call's result for paging, when `envelope` is truncated, under the
    /// call's JSON-RPC `id` (whose `call_id` the envelope has); `result_json` (the
    /// `CallToolResult` as JSON text) is only made then. `server_tool` is the server's own
    /// name of the tool.
    pub fn keep(
        &self,
        id: &Value,
        ctx: &MappingContext<'_>,
        server_tool: &str,
        envelope: &Envelope,
        result_json: impl FnOnce() -> Option<String>,
    ) -> Result<(), NotKept> {
        if envelope.status != crate::envelope::Status::Truncated {
            return Ok(());
        }
        let Some(result_json) = result_json() else {
            return Ok(());
        };
        let call = StoredCall {
            result_json,
            tool: ctx.tool.to_owned(),
            server: ctx.server.to_owned(),
            server_tool: server_tool.to_owned(),
            budget: ctx.budget,
            media: ctx.media,
            text: ctx.text,
        };
        self.store.lock().unwrap().insert(
            self.key(crate::proxy::id_key(id)),
            call,
            envelope.omitted,
            Instant::now(),
        )
    }

    fn key(&self, id: String) -> PageKey {
        PageKey {
            session: self.session,
            id,
        }
    }

    /// The key of the result `call_id` `of` names: of the string id `of`, or of the number
    /// (or null) id whose JSON text is `of`, whichever is held (the string id's when neither
    /// is); `None` when both are.
    fn key_of(&self, of: &str) -> Option<PageKey> {
        let string = self.key(Value::from(of).to_string());
        if of.starts_with('"') {
            // No number's text starts so: only a string id can have this call_id.
            return Some(string);
        }
        let other = self.key(of.to_owned());
        let mut store = self.store.lock().unwrap();
        let now = Instant::now();
        match (store.holds(&string, now), store.holds(&other, now)) {
            (true, true) => None,
            (false, true) => Some(other),
            _ => Some(string),
        }
    }

    /// Answers a call of the page tool with JSON-RPC id string `call_id` and `arguments`.
    pub fn page(&self, call_id: &str, arguments: Option<&Value>) -> PageAnswer {
        let error = |error_type: &str, message: String| {
            let outcome = Outcome::PageError {
                error_type: error_type.to_owned(),
                message,
            };
            let ctx = MappingContext {
                call_id,
                tool: &self.tool_name,
                server: "",
                budget: crate::budget::Budget::default(),
                media: crate::config::MediaMode::Passthrough,
                text: crate::outcome::TextShape::default(),
            };
            PageAnswer {
                mapped: crate::outcome::map_outcome(&outcome, &ctx),
                outcome,
                original: None,
            }
        };
        let (of, skip) = match page_arguments(arguments) {
            Ok(args) => args,
            Err(message) => return error("invalid_argument", message),
        };
        // The call_id as the messages quote it: one longer than any id the proxy keeps rows
        // for is cut as an unknown tool name is, so one request cannot put an id of any
        // length into the envelope and the transcript.
        let shown = shown_call_id(&of);
        let Some(key) = self.key_of(&of) else {
            return error("invalid_argument", two_results(&shown));
        };
        for _ in 0..8 {
            let Some((call, cursor)) = self.store.lock().unwrap().get(&key, Instant::now()) else {
                break;
            };
            let (mapped, first_row, next, not_held) =
                match page_of(&call, cursor, skip, call_id, &self.tool_name) {
                    Ok(page) => page,
                    Err(left) => {
                        return error("invalid_argument", skip_past_end(&shown, skip, left))
                    }
                };
            let remaining = mapped.envelope.omitted;
            if next == first_row && remaining > 0 {
                // No row shown: the same call would answer the same empty page forever.
                if remaining <= not_held {
                    return error("not_found", rows_not_held(&shown, remaining));
                }
                return error(
                    "invalid_argument",
                    row_too_long(&shown, first_row, skip, remaining),
                );
            }
            if self
                .store
                .lock()
                .unwrap()
                .advance(&key, cursor, next, remaining)
            {
                self.remember_page(call_id, &of);
                return PageAnswer {
                    mapped,
                    outcome: Outcome::Page {
                        of_call_id: of,
                        first_row,
                    },
                    original: Some(call),
                };
            }
        }
        error("not_found", self.not_kept(&of, &shown))
    }

    /// Notes that the page call `page_id` paged the original call `of`.
    fn remember_page(&self, page_id: &str, of: &str) {
        let mut pages = self.pages.lock().unwrap();
        pages.retain(|(id, _)| id != page_id);
        if pages.len() == MAX_PAGE_IDS {
            pages.pop_front();
        }
        pages.push_back((page_id.to_owned(), of.to_owned()));
    }

    /// The `not_found` message for call_id `of` (quoted as `shown`, [`shown_call_id`]), of
    /// which no rows are kept: when `of` is a page call's own call_id, the original call_id to
    /// pass instead.
    fn not_kept(&self, of: &str, shown: &str) -> String {
        let pages = self.pages.lock().unwrap();
        if let Some((_, original)) = pages.iter().rev().find(|(id, _)| id == of) {
            return format!(
                "call_id '{shown}' is a page's own call_id, not a truncated tool call's: pass the original call_id '{original}' to get the next rows"
            );
        }
        format!(
            "no rows kept for call_id '{shown}': unknown, already paged to the end, dropped from the paging store (expired or evicted), or never kept (larger than the store); pass the call_id of the ORIGINAL truncated tool call (not a page's own call_id), or call the tool again"
        )
    }
}

/// The message of a page call for call_id `of` that names two results held (see the module
/// documentation): neither is paged.
fn two_results(of: &str) -> String {
    format!(
        "call_id '{of}' names two truncated results of this session, those of the JSON-RPC requests with ids {of} (a number) and \"{of}\" (a string), which share that call_id; the page tool cannot tell which is meant, so it pages neither: call the tool again to see the rows you need"
    )
}

/// A requested call_id as the page tool's messages quote it: whole up to 128 characters,
/// else its first 128 and the one truncation marker, `… [N characters cut]`, as an unknown
/// tool name is shown ([`crate::tool_validation::shown_unknown_name`]).
fn shown_call_id(call_id: &str) -> std::borrow::Cow<'_, str> {
    crate::tool_validation::shown_unknown_name(call_id)
}

/// `(call_id, skip)` from the page tool's arguments, or what is wrong with them.
fn page_arguments(arguments: Option<&Value>) -> Result<(String, u64), String> {
    let args = arguments.and_then(Value::as_object);
    let call_id = match args.and_then(|a| a.get("call_id")) {
        Some(Value::String(s)) => s.clone(),
        // A client may send a numeric id as a number: its call_id is its JSON text.
        Some(n @ Value::Number(_)) => n.to_string(),
        _ => return Err("`call_id` is required: the call_id of a truncated envelope".into()),
    };
    let skip = match args.and_then(|a| a.get("skip")) {
        None | Some(Value::Null) => 0,
        // JSON Schema's `integer` takes 1.0 too (a float with no fraction), as clients send it.
        Some(v) => v
            .as_u64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 9.0e15)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| format!("`skip` must be a whole number >= 0, got {v}"))?,
    };
    Ok((call_id, skip))
}

/// The message of a page call whose `skip` is larger than the `left` rows still to come: no
/// row is consumed, the next call pages from the same place.
fn skip_past_end(of: &str, skip: u64, left: u64) -> String {
    format!(
        "`skip` {skip} is past the end of call_id '{of}': {left} row(s) remain after the rows already answered; pass a skip of at most {left}, nothing was skipped"
    )
}

/// The message of a page call with `skip` whose first row (0-based `row`, after the `skip`
/// rows) does not fit the budget on its own, with `left` rows still to come counting it:
/// nothing is consumed, not even the `skip` rows, so the `skip` that passes it is `skip + 1`
/// (a `skip` counts from the rows already answered, never from the row an error named).
fn row_too_long(of: &str, row: u64, skip: u64, left: u64) -> String {
    let pass = skip.saturating_add(1);
    let after = left - 1;
    if skip == 0 {
        return format!(
            "row {} of call_id '{of}' is longer than the tool's budget on its own, so no page can show it; call again with skip: 1 to leave it out ({after} row(s) after it), or raise the tool's budget; nothing was skipped",
            row + 1,
        );
    }
    format!(
        "row {} of call_id '{of}' is longer than the tool's budget on its own, so no page can show it; call again with skip: {pass} to leave out it and the {skip} row(s) before it (a skip counts from the rows already answered; {after} row(s) after it), or raise the tool's budget; nothing was skipped",
        row + 1,
    )
}

/// The message of a page call after every row held for call_id `of` was answered, while the
/// `left` rows a nested envelope's own proxy left out remain ([`crate::outcome::rows_not_held`]).
fn rows_not_held(of: &str, left: u64) -> String {
    format!(
        "every row held for call_id '{of}' was answered; its other {left} row(s) were left out by the server's own envelope (the server is an mcp-envelope too) and are not held here"
    )
}

/// The page of `call` at `cursor` after `skip` more rows: the mapped envelope, its first row,
/// the row after it, and how many of the result's rows no page can show
/// ([`crate::outcome::rows_not_held`]); `Err(rows left)` when `skip` is larger than the rows
/// still to come.
fn page_of(
    call: &StoredCall,
    cursor: Cursor,
    skip: u64,
    call_id: &str,
    tool: &str,
) -> Result<(Mapped, u64, u64, u64), u64> {
    let result: Value = serde_json::from_str(&call.result_json).unwrap_or(Value::Null);
    let ctx = MappingContext {
        call_id,
        tool,
        server: &call.server,
        budget: call.budget,
        media: call.media,
        text: call.text,
    };
    let (start, left) = match cursor {
        Cursor::At(row) if skip == 0 => (row, None),
        Cursor::At(row) => {
            let total = crate::outcome::count_result_rows(&result, &ctx);
            (row, Some(total.saturating_sub(row)))
        }
        Cursor::Remaining(left) => (
            crate::outcome::count_result_rows(&result, &ctx).saturating_sub(left),
            Some(left),
        ),
    };
    if let Some(left) = left.filter(|left| skip > *left) {
        return Err(left);
    }
    let first_row = start.saturating_add(skip);
    let (mapped, kept) = map_result_from(&result, &ctx, first_row);
    let not_held = crate::outcome::rows_not_held(&result, &ctx);
    Ok((mapped, first_row, first_row + kept, not_held))
}

#[cfg(test)]
mod tests;
