//! The page tool: one extra tool the proxy offers (default name `envelope_next_page`) that
//! answers the rows a truncated result left out, as an envelope within the same budget rules
//! as the tool that made it, so a model can page through a result in order.
//!
//! Contract:
//! * Arguments: `call_id` (string, required): the `call_id` of a truncated envelope; `skip`
//!   (integer >= 0, default 0): rows to leave out before the page (for example a row too long
//!   to show). A `skip` larger than the rows still to come answers an `invalid_argument` error
//!   envelope naming how many rows remain, and moves nothing: no row is dropped unseen.
//! * Each call answers the next rows after those already answered for that `call_id` (the
//!   first answer's rows, then each page's), filled greedily within the original tool's
//!   budget; `omitted` counts the rows still after the page, and `status` is `ok` on the last
//!   page. The envelope's `call_id` is the page call's own id and `tool` the page tool's name.
//! * An unknown, expired, evicted or fully paged `call_id` answers a `not_found` error
//!   envelope; bad arguments an `invalid_argument` one.
//!
//! The rows are kept in a [`PageStore`] per process, keyed by session and `call_id`.
//! Source: issue 15 of the project.

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
pub const DESCRIPTION: &str = "Returns the next rows of a tool result whose envelope came back with status \"truncated\": pass that envelope's call_id, and call again with the same call_id until status is \"ok\". Pass skip to leave out rows first: a row too long for any page answers an error saying so, and skip: 1 passes it.";

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
}

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
                    "call_id": {"type": "string", "description": "The call_id of an envelope whose status is \"truncated\"."},
                    "skip": {"type": "integer", "minimum": 0, "description": "Rows to leave out before this page. Default 0."}
                },
                "required": ["call_id"],
                "additionalProperties": false
            },
            "outputSchema": Envelope::json_schema(),
        })
    }

    /// Keeps a truncated call's result for paging, when `envelope` is truncated;
    /// `result_json` (the `CallToolResult` as JSON text) is only made then. `server_tool` is
    /// the server's own name of the tool.
    pub fn keep(
        &self,
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
            self.key(&envelope.call_id),
            call,
            envelope.omitted,
            Instant::now(),
        )
    }

    fn key(&self, call_id: &str) -> PageKey {
        PageKey {
            session: self.session,
            call_id: call_id.to_owned(),
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
        let key = self.key(&of);
        for _ in 0..8 {
            let Some((call, cursor)) = self.store.lock().unwrap().get(&key, Instant::now()) else {
                break;
            };
            let (mapped, first_row, next, not_held) =
                match page_of(&call, cursor, skip, call_id, &self.tool_name) {
                    Ok(page) => page,
                    Err(left) => return error("invalid_argument", skip_past_end(&of, skip, left)),
                };
            let remaining = mapped.envelope.omitted;
            if next == first_row && remaining > 0 {
                // No row shown: the same call would answer the same empty page forever.
                if remaining <= not_held {
                    return error("not_found", rows_not_held(&of, remaining));
                }
                return error("invalid_argument", row_too_long(&of, first_row, remaining));
            }
            if self
                .store
                .lock()
                .unwrap()
                .advance(&key, cursor, next, remaining)
            {
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
        let message = format!(
            "no rows kept for call_id '{of}': unknown, already paged to the end, dropped from the paging store (expired or evicted), or never kept (larger than the store); call the tool again"
        );
        error("not_found", message)
    }
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

/// The message of a page call whose next row (0-based `row`) does not fit the budget on its
/// own, with `left` rows still to come counting it: nothing is consumed; a `skip` of 1 passes
/// it.
fn row_too_long(of: &str, row: u64, left: u64) -> String {
    format!(
        "row {} of call_id '{of}' is longer than the tool's budget on its own, so no page can show it; call again with skip: 1 to leave it out ({} row(s) after it), or raise the tool's budget; nothing was skipped",
        row + 1,
        left - 1
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
mod tests {
    use super::*;
    use crate::budget::{Budget, LongRows, Measure, TextRows, TokenLimit, Tokenizer};
    use crate::config::MediaMode;
    use crate::outcome::{map_outcome, TextShape};
    use proptest::prelude::*;

    fn ctx<'a>(call_id: &'a str, budget: Budget, text: TextShape) -> MappingContext<'a> {
        MappingContext {
            call_id,
            tool: "t",
            server: "s",
            budget,
            media: MediaMode::Passthrough,
            text,
        }
    }

    /// Maps `result`, keeps it, and pages to the end; returns the first envelope and every
    /// page with its first row.
    fn page_all(
        pager: &Pager,
        result: &Value,
        budget: Budget,
        text: TextShape,
    ) -> (Envelope, Vec<(Envelope, u64)>) {
        let first = map_outcome(
            &Outcome::Result {
                result: result.clone(),
            },
            &ctx("1", budget, text),
        )
        .envelope;
        pager
            .keep(&ctx("1", budget, text), "t", &first, || {
                Some(result.to_string())
            })
            .unwrap();
        let mut pages = Vec::new();
        let mut status = first.status;
        while status == crate::envelope::Status::Truncated {
            let answer = pager.page(&format!("p{}", pages.len()), Some(&json!({"call_id": "1"})));
            let Outcome::Page { first_row, .. } = answer.outcome else {
                // A row too long for any page (long rows kept whole), or rows a nested
                // envelope left out, end paging here.
                let content = &answer.mapped.envelope.content;
                let known = ["longer than the tool's budget", "are not held here"];
                assert!(known.iter().any(|k| content.contains(k)), "{content}");
                break;
            };
            status = answer.mapped.envelope.status;
            pages.push((answer.mapped.envelope, first_row));
        }
        (first, pages)
    }

    fn pager() -> Pager {
        Pager::new(&PagingConfig::default()).unwrap()
    }

    /// Keeps call "1", four lines `a` to `d` of which the first answer (budget 1) showed `a`.
    fn keep_four_rows(pager: &Pager) {
        let result = json!({"content": [{"type": "text", "text": "a\nb\nc\nd"}]});
        let c = ctx("1", Budget::chars(1), TextShape::default());
        let first = map_outcome(
            &Outcome::Result {
                result: result.clone(),
            },
            &c,
        )
        .envelope;
        pager
            .keep(&c, "t", &first, || Some(result.to_string()))
            .unwrap();
    }

    #[test]
    fn another_session_cannot_page_a_result() {
        let store = Arc::new(Mutex::new(PageStore::new(1 << 20, DEFAULT_TTL)));
        let mine = Pager::with_store(DEFAULT_TOOL_NAME, store.clone());
        let theirs = Pager::with_store(DEFAULT_TOOL_NAME, store);
        keep_four_rows(&mine);
        let answer = theirs.page("9", Some(&json!({"call_id": "1"})));
        assert_eq!(
            answer.mapped.envelope.status,
            crate::envelope::Status::Error
        );
        assert!(answer.mapped.envelope.content.starts_with("not_found: "));
        let answer = mine.page("9", Some(&json!({"call_id": "1"})));
        assert_eq!(answer.mapped.envelope.content, "b");
    }

    #[test]
    fn skip_past_the_end_is_an_error_that_drops_nothing() {
        let p = pager();
        keep_four_rows(&p);
        let page = |skip: u64| {
            let args = json!({"call_id": "1", "skip": skip});
            p.page("9", Some(&args)).mapped.envelope
        };
        // Before the first page (3 rows to come), then after it (2 rows to come).
        for (skip, left, next) in [(4, 3, "b"), (3, 2, "")] {
            let env = page(skip);
            assert_eq!(env.status, crate::envelope::Status::Error);
            assert!(!env.retryable);
            assert_eq!(
                env.content,
                format!("invalid_argument: `skip` {skip} is past the end of call_id '1': {left} row(s) remain after the rows already answered; pass a skip of at most {left}, nothing was skipped")
            );
            if !next.is_empty() {
                assert_eq!(page(0).content, next, "the error consumed no row");
            }
        }
        assert_eq!(page(1).content, "d", "skip 1 of the 2 left: c is left out");
    }

    #[test]
    fn a_row_too_long_for_any_page_is_an_error_until_skipped() {
        let p = pager();
        let result =
            json!({"structuredContent": {"rows": [{"a": "x".repeat(40)}, {"b": 1}, {"c": 2}]}});
        let c = ctx("1", Budget::chars(20), TextShape::default());
        let first = map_outcome(
            &Outcome::Result {
                result: result.clone(),
            },
            &c,
        )
        .envelope;
        assert_eq!((first.content.as_str(), first.omitted), ("", 3));
        p.keep(&c, "t", &first, || Some(result.to_string()))
            .unwrap();
        for _ in 0..2 {
            let env = p.page("9", Some(&json!({"call_id": "1"}))).mapped.envelope;
            assert_eq!(env.status, crate::envelope::Status::Error);
            assert!(!env.retryable);
            assert_eq!(
                env.content,
                "invalid_argument: row 1 of call_id '1' is longer than the tool's budget on its own, so no page can show it; call again with skip: 1 to leave it out (2 row(s) after it), or raise the tool's budget; nothing was skipped"
            );
        }
        let env = p
            .page("9", Some(&json!({"call_id": "1", "skip": 1.0})))
            .mapped
            .envelope;
        assert_eq!((env.content.as_str(), env.omitted), ("b=1; c=2", 0));
        assert_eq!(env.status, crate::envelope::Status::Ok);
    }

    #[test]
    fn a_nested_envelopes_rows_page_to_the_end_and_its_own_omitted_is_said() {
        let rows: Vec<String> = (0..12).map(|i| format!("r{i:02}")).collect();
        for inner_omitted in [0, 3] {
            let status = if inner_omitted > 0 { "truncated" } else { "ok" };
            let inner = json!({"call_id": "a", "tool": "t", "status": status,
                "content": rows.join("\n"), "omitted": inner_omitted, "retryable": false});
            let result = json!({"content": [{"type": "text", "text": inner.to_string()}],
                "structuredContent": inner});
            let p = pager();
            let (first, pages) = page_all(&p, &result, Budget::chars(20), TextShape::default());
            let first = (first.content.as_str(), first.omitted);
            assert_eq!(first, ("r00\nr01\nr02\nr03\nr04", 7 + inner_omitted));
            let shown: Vec<(&str, u64)> = pages
                .iter()
                .map(|(e, _)| (e.content.as_str(), e.omitted))
                .collect();
            let last = ("r10\nr11", inner_omitted);
            assert_eq!(
                shown,
                [("r05\nr06\nr07\nr08\nr09", 2 + inner_omitted), last]
            );
            if inner_omitted == 0 {
                assert_eq!(pages[1].0.status, crate::envelope::Status::Ok);
                continue;
            }
            let env = p.page("p9", Some(&json!({"call_id": "1"}))).mapped.envelope;
            assert_eq!(
                env.content,
                "not_found: every row held for call_id '1' was answered; its other 3 row(s) were left out by the server's own envelope (the server is an mcp-envelope too) and are not held here"
            );
        }
    }

    #[test]
    fn bad_arguments_and_bad_config() {
        let p = pager();
        for (args, start) in [
            (json!({}), "invalid_argument: `call_id` is required"),
            (
                json!({"call_id": true}),
                "invalid_argument: `call_id` is required",
            ),
            (
                json!({"call_id": "1", "skip": 1.5}),
                "invalid_argument: `skip` must be",
            ),
            (
                json!({"call_id": "1"}),
                "not_found: no rows kept for call_id '1'",
            ),
        ] {
            let env = p.page("5", Some(&args)).mapped.envelope;
            assert!(env.content.starts_with(start), "{}", env.content);
            assert_eq!(env.call_id, "5");
            assert_eq!(env.tool, DEFAULT_TOOL_NAME);
        }
        let bad = RawPaging {
            enabled: None,
            tool_name: Some(toml::Spanned::new(0..3, "a b".into())),
            max_bytes: None,
            ttl_sec: None,
        };
        assert!(PagingConfig::from_raw(Some(bad))
            .unwrap_err()
            .1
            .contains("not a tool name"));
        assert!(Pager::new(&PagingConfig {
            enabled: false,
            ..PagingConfig::default()
        })
        .is_none());
    }

    fn lines() -> impl Strategy<Value = Vec<String>> {
        let atom = prop::sample::select(vec![
            "",
            "a",
            "word ",
            "数据",
            "😀",
            "  ",
            "/x",
            ";",
            "1234",
            "{\"k\":1}",
            "é",
        ]);
        let line = prop::collection::vec(atom, 0..12).prop_map(|v| v.concat());
        prop::collection::vec(line, 1..40)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Pages follow one another with no gap and no repeat until every row was answered,
        /// and every envelope fits the tighter budget.
        #[test]
        fn paging_never_repeats_or_skips_a_row(
            lines in lines(),
            chars in prop::option::of(4usize..80),
            tokens in prop::option::of(2usize..30),
            blocks in any::<bool>(),
            split in any::<bool>(),
        ) {
            let budget = Budget {
                chars: chars.or(tokens.is_none().then_some(10)),
                tokens: tokens.map(|limit| TokenLimit { limit, tokenizer: Tokenizer::O200kBase }),
            };
            let text = TextShape {
                text_rows: if blocks { TextRows::Blocks } else { TextRows::Lines },
                long_rows: if split { LongRows::Split } else { LongRows::Keep },
            };
            let result = json!({"content": [{"type": "text", "text": lines.join("\n")}]});
            let total = crate::outcome::count_result_rows(&result, &ctx("1", budget, text));
            let pager = pager();
            let (first, pages) = page_all(&pager, &result, budget, text);
            let fits = |e: &Envelope| {
                budget.chars.is_none_or(|n| Measure::Chars.count(&e.content) <= n)
                    && budget.tokens.is_none_or(|t| Measure::Tokens(t.tokenizer).count(&e.content) <= t.limit)
            };
            prop_assert!(fits(&first));
            let mut next = total - first.omitted;
            let mut left = first.omitted;
            for (page, first_row) in &pages {
                prop_assert!(fits(page));
                prop_assert_eq!(*first_row, next, "a gap or a repeat");
                let kept = left - page.omitted;
                next += kept;
                left = page.omitted;
                // A row too long for any page is an error, never an empty page.
                prop_assert!(kept >= 1, "no progress: {:?}", page);
            }
            if split {
                prop_assert_eq!(next, total);
                prop_assert_eq!(left, 0);
            }
        }
    }
}
