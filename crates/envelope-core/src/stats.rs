//! `stats`: what the envelope did, per tool, over a transcript (pure: records in, text out).
//!
//! For each tool (grouped by the name the client used: one row per name) [`compute`] counts the
//! calls, the errors by envelope error type, how often the envelope was `truncated`, the
//! call durations' p50 and p95 (nearest-rank, milliseconds), and the sizes the envelope saved:
//! the raw outcome (the downstream `result` or `error` member as compact JSON) against the
//! envelope sent (as compact JSON, plus any image or audio blocks passed through beside it), in
//! characters (Unicode scalar values) and in tokens of one tokenizer (`o200k_base` unless told).
//!
//! The suggested budgets are the smallest `char_budget` and `token_budget` that would have kept
//! 90% of the tool's successful results whole: each result is re-mapped with an unlimited
//! budget; the length of that full `content` (in characters, and in tokens) is the least budget
//! at which the greedy fill leaves nothing out (the fill keeps every row exactly when the whole
//! rendering fits), and the suggestion is the nearest-rank 90th percentile of those lengths.
//! Error envelopes take no part in it.
//!
//! The proxy's page tool (`envelope_next_page`, recognised by its records' `page` and
//! `page_error` outcomes, whatever `[paging] tool_name` calls it) gets one row of its own marked
//! [`ToolStats::pages`]: its calls, errors, truncation (pages with rows still to come),
//! durations and envelope sizes. It has no raw size of its own: the rows a page returns are rows
//! of the paged call's raw result, already counted on that tool's row, so its raw sizes are 0,
//! and its saving and suggested budgets do not apply (a page is cut to the paged tool's budget).
//!
//! A call the client cancelled ([`Outcome::Cancelled`]) counts as a call and as an error of type
//! `cancelled` ([`crate::mapping::CANCELLED`]), and in nothing else: it had no answer (no raw or
//! envelope size) and its duration is the time until it was cancelled (no latency). A tool whose
//! calls were all cancelled has no p50 or p95 (`None`: `-` in the table, `null` in JSON).
//!
//! Renderings: [`render_table`] (a fixed-width table for the terminal), [`render_json`] (one
//! JSON document for machines) and [`render_html`] (a self-contained page with an inline SVG
//! bar chart of raw against envelope size per tool, no scripts, no outside resources).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::budget::Tokenizer;
use crate::envelope::Status;
use crate::mapping::{map_outcome, MappingContext, Outcome, CANCELLED};
use crate::record::CallRecord;

/// The share of a tool's successful results the suggested budget keeps whole, in percent.
pub const SUGGESTED_BUDGET_PERCENTILE: usize = 90;

/// The budget used to measure a result's full rendering: large enough that nothing is left
/// out, small enough that no budget arithmetic overflows.
const UNLIMITED: usize = usize::MAX / 4;

/// Statistics for one tool over a transcript.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolStats {
    /// The tool name the client used.
    pub tool: String,
    /// The server's config name (`""` when no server had the tool, and for the page tool,
    /// which the proxy answers; several names joined by `,` when the name moved between
    /// servers within the transcript).
    pub server: String,
    /// Whether this is the proxy's page tool (see the module documentation): raw sizes 0,
    /// no saving, no suggested budgets.
    pub pages: bool,
    /// Recorded calls.
    pub calls: u64,
    /// Error envelopes by error type (`timeout`, `tool_error`, ...), sorted by type.
    pub errors: BTreeMap<String, u64>,
    /// Calls whose envelope was `truncated`.
    pub truncated: u64,
    /// Sum over calls of the raw outcome's size, in characters (compact JSON).
    pub raw_chars: u64,
    /// Sum over calls of the envelope's size, in characters (compact JSON).
    pub envelope_chars: u64,
    /// Sum over calls of the raw outcome's size, in tokens of [`ToolStats::tokenizer`].
    pub raw_tokens: u64,
    /// Sum over calls of the envelope's size, in tokens of [`ToolStats::tokenizer`].
    pub envelope_tokens: u64,
    /// The tokenizer the token counts are in (`o200k_base`, `cl100k_base`).
    pub tokenizer: Tokenizer,
    /// Median call duration, milliseconds (nearest rank) over the calls that finished; `None`
    /// (`null` in JSON, `-` in the table) when every call was cancelled, which leaves no
    /// duration to rank.
    pub p50_ms: Option<u64>,
    /// 95th-percentile call duration, milliseconds (nearest rank) over the calls that finished;
    /// `None` when every call was cancelled, as [`ToolStats::p50_ms`].
    pub p95_ms: Option<u64>,
    /// The smallest `char_budget` that keeps [`SUGGESTED_BUDGET_PERCENTILE`]% of this tool's
    /// successful results whole; `None` when no call succeeded.
    pub suggested_char_budget: Option<usize>,
    /// The smallest `token_budget` (in tokens of [`ToolStats::tokenizer`]) that keeps
    /// [`SUGGESTED_BUDGET_PERCENTILE`]% of this tool's successful results whole; `None` when no
    /// call succeeded.
    pub suggested_token_budget: Option<usize>,
}

impl ToolStats {
    /// Characters the envelope saved against the raw outcome (negative when it added some);
    /// `None` for the page tool, which has no raw outcome of its own.
    pub fn saved_chars(&self) -> Option<i64> {
        (!self.pages).then(|| self.raw_chars as i64 - self.envelope_chars as i64)
    }

    /// Tokens the envelope saved against the raw outcome (negative when it added some);
    /// `None` for the page tool, which has no raw outcome of its own.
    pub fn saved_tokens(&self) -> Option<i64> {
        (!self.pages).then(|| self.raw_tokens as i64 - self.envelope_tokens as i64)
    }

    /// Errors as `type:count` pairs joined by `,`; `-` when there were none.
    pub fn errors_label(&self) -> String {
        if self.errors.is_empty() {
            return "-".to_owned();
        }
        let parts: Vec<String> = self
            .errors
            .iter()
            .map(|(t, n)| format!("{t}:{n}"))
            .collect();
        parts.join(",")
    }
}

/// The raw outcome as compact JSON, as the tool answered it: the `result` or `error` member
/// for answers from the server, the recorded outcome itself otherwise.
fn raw_text(outcome: &Outcome) -> String {
    let value = match outcome {
        Outcome::Result { result } => result.clone(),
        Outcome::RpcError { error } => error.clone(),
        Outcome::InputFailed { error, .. } => Value::clone(error),
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    };
    value.to_string()
}

/// The text the client received for the record: the recorded envelope as compact JSON followed
/// by the media blocks (images, audio) passed through beside it under the recorded settings,
/// which the raw size counts too.
fn answered_text(record: &CallRecord) -> String {
    let ctx = MappingContext {
        call_id: &record.call_id,
        tool: &record.tool,
        server: &record.server,
        budget: record.budget.budget(record.char_budget),
        media: record.media,
        text: record.budget.text_shape(),
    };
    let media = map_outcome(&record.outcome, &ctx).media;
    let mut text = serde_json::to_string(&record.envelope).unwrap_or_default();
    for block in &media {
        text.push_str(&block.to_string());
    }
    text
}

/// The record's full `content` (nothing left out), or `None` when the outcome maps to an error
/// envelope.
fn full_content(record: &CallRecord) -> Option<String> {
    let ctx = MappingContext {
        call_id: &record.call_id,
        tool: &record.tool,
        server: &record.server,
        budget: crate::budget::Budget::chars(UNLIMITED),
        media: record.media,
        text: crate::mapping::TextShape {
            long_rows: crate::budget::LongRows::Keep,
            ..Default::default()
        },
    };
    let envelope = map_outcome(&record.outcome, &ctx).envelope;
    (envelope.status != Status::Error).then_some(envelope.content)
}

/// The nearest-rank `pct` percentile of `values` (sorted here); `None` when empty.
pub fn nearest_rank<T: Ord + Copy>(values: &mut [T], pct: usize) -> Option<T> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let rank = (pct * values.len()).div_ceil(100).max(1);
    Some(values[rank - 1])
}

struct Acc {
    tokenizer: Tokenizer,
    servers: std::collections::BTreeSet<String>,
    pages: bool,
    calls: u64,
    errors: BTreeMap<String, u64>,
    truncated: u64,
    raw_chars: u64,
    envelope_chars: u64,
    raw_tokens: u64,
    envelope_tokens: u64,
    durations: Vec<u64>,
    full_chars: Vec<usize>,
    full_tokens: Vec<usize>,
}

impl Acc {
    fn new(tokenizer: Tokenizer) -> Acc {
        Acc {
            tokenizer,
            servers: std::collections::BTreeSet::new(),
            pages: false,
            calls: 0,
            errors: BTreeMap::new(),
            truncated: 0,
            raw_chars: 0,
            envelope_chars: 0,
            raw_tokens: 0,
            envelope_tokens: 0,
            durations: Vec::new(),
            full_chars: Vec::new(),
            full_tokens: Vec::new(),
        }
    }

    fn add(&mut self, record: &CallRecord) {
        self.calls += 1;
        if record.outcome == Outcome::Cancelled {
            *self.errors.entry(CANCELLED.to_owned()).or_default() += 1;
            if !record.server.is_empty() {
                self.servers.insert(record.server.clone());
            }
            return;
        }
        let envelope = &record.envelope;
        match envelope.status {
            Status::Error => {
                let kind = envelope.content.split(':').next().unwrap_or("").to_owned();
                *self.errors.entry(kind).or_default() += 1;
            }
            Status::Truncated => self.truncated += 1,
            Status::Ok => {}
        }
        if matches!(
            record.outcome,
            Outcome::Page { .. } | Outcome::PageError { .. }
        ) {
            // A page's rows are the paged call's, counted on its row; the proxy answers it.
            self.pages = true;
        } else {
            if !record.server.is_empty() {
                self.servers.insert(record.server.clone());
            }
            let raw = raw_text(&record.outcome);
            self.raw_chars += raw.chars().count() as u64;
            self.raw_tokens += self.tokenizer.count(&raw) as u64;
        }
        let answered = answered_text(record);
        self.envelope_chars += answered.chars().count() as u64;
        self.envelope_tokens += self.tokenizer.count(&answered) as u64;
        self.durations.push(record.duration_ms);
        if let Some(full) = full_content(record) {
            self.full_chars.push(full.chars().count());
            self.full_tokens.push(self.tokenizer.count(&full));
        }
    }

    fn finish(mut self, tool: String) -> ToolStats {
        let servers: Vec<String> = std::mem::take(&mut self.servers).into_iter().collect();
        ToolStats {
            tool,
            server: servers.join(","),
            pages: self.pages,
            calls: self.calls,
            errors: self.errors,
            truncated: self.truncated,
            raw_chars: self.raw_chars,
            envelope_chars: self.envelope_chars,
            raw_tokens: self.raw_tokens,
            envelope_tokens: self.envelope_tokens,
            tokenizer: self.tokenizer,
            p50_ms: nearest_rank(&mut self.durations, 50),
            p95_ms: nearest_rank(&mut self.durations, 95),
            suggested_char_budget: nearest_rank(&mut self.full_chars, SUGGESTED_BUDGET_PERCENTILE),
            suggested_token_budget: nearest_rank(
                &mut self.full_tokens,
                SUGGESTED_BUDGET_PERCENTILE,
            ),
        }
    }
}

/// Per-tool statistics over `records`, one per tool name the client used, sorted by name;
/// token counts in `tokenizer`'s tokens.
pub fn compute(records: &[CallRecord], tokenizer: Tokenizer) -> Vec<ToolStats> {
    let mut groups: BTreeMap<String, Acc> = BTreeMap::new();
    for record in records {
        groups
            .entry(record.tool.clone())
            .or_insert_with(|| Acc::new(tokenizer))
            .add(record);
    }
    groups
        .into_iter()
        .map(|(tool, acc)| acc.finish(tool))
        .collect()
}

/// The tokens saved, as a whole percentage of the raw tokens (`-` when there were none, and
/// for the page tool).
fn saved_percent(s: &ToolStats) -> String {
    match s.saved_tokens() {
        Some(saved) if s.raw_tokens > 0 => format!("{}%", saved * 100 / s.raw_tokens as i64),
        _ => "-".to_owned(),
    }
}

/// The number of table columns.
const COLUMNS: usize = 14;

const HEADERS: [&str; COLUMNS] = [
    "TOOL",
    "SERVER",
    "CALLS",
    "ERRORS",
    "TRUNCATED",
    "RAW_CHARS",
    "ENVELOPE_CHARS",
    "RAW_TOKENS",
    "ENVELOPE_TOKENS",
    "SAVED_TOKENS",
    "P50_MS",
    "P95_MS",
    "SUGGESTED_CHAR_BUDGET",
    "SUGGESTED_TOKEN_BUDGET",
];

fn table_cells(s: &ToolStats) -> [String; COLUMNS] {
    let opt = |n: Option<usize>| n.map_or("-".to_owned(), |n| n.to_string());
    let ms = |n: Option<u64>| n.map_or("-".to_owned(), |n| n.to_string());
    // The page tool has no raw size of its own (module documentation).
    let raw = |n: u64| {
        if s.pages {
            "-".to_owned()
        } else {
            n.to_string()
        }
    };
    [
        name_cell(&s.tool),
        if s.server.is_empty() {
            "-".into()
        } else {
            name_cell(&s.server)
        },
        s.calls.to_string(),
        s.errors_label(),
        s.truncated.to_string(),
        raw(s.raw_chars),
        s.envelope_chars.to_string(),
        raw(s.raw_tokens),
        s.envelope_tokens.to_string(),
        saved_percent(s),
        ms(s.p50_ms),
        ms(s.p95_ms),
        opt(s.suggested_char_budget),
        opt(s.suggested_token_budget),
    ]
}

/// The most characters (Unicode scalar values) a tool or server name takes in the text table;
/// `--json` and `--html` keep every name whole. MCP 2025-11-25 ("Tools: Tool names") asks for
/// tool names of 1 to 128 characters, and a prefixed name adds its server's; 500-character
/// names made every line of the table wider than any terminal.
pub const NAME_CELL_CHARS: usize = 48;

/// A tool or server name as the text table shows it: control and invisible characters escaped
/// ([`crate::trajectory::escape_line`]: a name must not break or hide a line), then, when
/// longer than [`NAME_CELL_CHARS`], its start and its end around a `…` (names that share a
/// long prefix usually differ at the end).
fn name_cell(name: &str) -> String {
    let escaped = crate::trajectory::escape_line(name);
    let count = escaped.chars().count();
    if count <= NAME_CELL_CHARS {
        return escaped;
    }
    let head = (NAME_CELL_CHARS - 1) / 2;
    let tail = NAME_CELL_CHARS - 1 - head;
    let mut out: String = escaped.chars().take(head).collect();
    out.push('…');
    out.extend(escaped.chars().skip(count - tail));
    out
}

/// A fixed-width table, one line per tool after a header line, columns separated by two
/// spaces, then a `N call(s), M tool(s); tokens: <tokenizer>` summary line.
pub fn render_table(stats: &[ToolStats]) -> String {
    let rows: Vec<[String; COLUMNS]> = stats.iter().map(table_cells).collect();
    let mut widths = HEADERS.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = HEADERS.map(str::to_owned);
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    let calls: u64 = stats.iter().map(|s| s.calls).sum();
    let tokenizer = stats.first().map_or("o200k_base", |s| s.tokenizer.name());
    let _ = writeln!(
        out,
        "\n{calls} call(s), {} tool(s); tokens: {tokenizer}",
        stats.len()
    );
    out
}

/// One JSON document: `{"tools": [ToolStats...], "suggested_budget_percentile": 90}`.
pub fn render_json(stats: &[ToolStats]) -> String {
    let doc = serde_json::json!({
        "suggested_budget_percentile": SUGGESTED_BUDGET_PERCENTILE,
        "tools": stats,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

/// Escapes text for HTML element content and attribute values.
fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Chart geometry, in SVG user units (pixels at 100% zoom).
const LABEL_WIDTH: usize = 220;
const BAR_AREA: usize = 520;
const ROW_HEIGHT: usize = 34;

/// The inline SVG chart of tokens saved: per tool, a bar for the raw size and one for the
/// envelope size in tokens, both scaled to the largest of them in the transcript.
fn svg_chart(stats: &[ToolStats]) -> String {
    let max = stats
        .iter()
        .map(|s| s.raw_tokens.max(s.envelope_tokens))
        .max()
        .unwrap_or(0)
        .max(1);
    let scale = |n: u64| (n as f64 / max as f64 * BAR_AREA as f64).round() as usize;
    let height = ROW_HEIGHT * stats.len() + 40;
    let width = LABEL_WIDTH + BAR_AREA + 160;
    let mut svg = format!(
        "<svg id=\"saved-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"tokens saved per tool\">\n"
    );
    for (i, s) in stats.iter().enumerate() {
        let y = 10 + i * ROW_HEIGHT;
        // The chart's label as the text table shows the name (shortened, control and invisible
        // characters escaped: a U+202E in a name reversed the label's text on the page).
        let label = escape_html(&name_cell(&s.tool));
        let tool = escape_html(&crate::trajectory::escape_line(&s.tool));
        let (raw_w, env_w) = (scale(s.raw_tokens), scale(s.envelope_tokens));
        let _ = writeln!(
            svg,
            "  <g class=\"tool\" data-tool=\"{tool}\"><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{label}</text>\
<rect class=\"raw\" x=\"{LABEL_WIDTH}\" y=\"{y}\" width=\"{raw_w}\" height=\"12\" fill=\"#c8c8c8\"><title>raw: {} tokens</title></rect>\
<rect class=\"envelope\" x=\"{LABEL_WIDTH}\" y=\"{}\" width=\"{env_w}\" height=\"12\" fill=\"#2f6fb3\"><title>envelope: {} tokens</title></rect>\
<text x=\"{}\" y=\"{}\">saved {}</text></g>",
            LABEL_WIDTH - 8,
            y + 16,
            s.raw_tokens,
            y + 13,
            s.envelope_tokens,
            LABEL_WIDTH + raw_w.max(env_w) + 8,
            y + 16,
            saved_percent(s),
        );
    }
    let legend_y = 10 + stats.len() * ROW_HEIGHT + 12;
    let _ = writeln!(
        svg,
        "  <rect x=\"{LABEL_WIDTH}\" y=\"{legend_y}\" width=\"12\" height=\"12\" fill=\"#c8c8c8\"/><text x=\"{}\" y=\"{}\">raw result</text>\
<rect x=\"{}\" y=\"{legend_y}\" width=\"12\" height=\"12\" fill=\"#2f6fb3\"/><text x=\"{}\" y=\"{}\">envelope</text>\n</svg>",
        LABEL_WIDTH + 18,
        legend_y + 11,
        LABEL_WIDTH + 120,
        LABEL_WIDTH + 138,
        legend_y + 11,
    );
    svg
}

/// A self-contained HTML page: a title naming `source`, the chart, and the table of
/// [`render_table`] as an HTML table.
pub fn render_html(stats: &[ToolStats], source: &str) -> String {
    let mut rows = String::new();
    for s in stats {
        let cells: String = table_cells(s)
            .iter()
            .map(|c| format!("<td>{}</td>", escape_html(c)))
            .collect();
        let _ = writeln!(rows, "<tr>{cells}</tr>");
    }
    let head: String = HEADERS
        .iter()
        .map(|h| format!("<th>{}</th>", h.to_lowercase().replace('_', " ")))
        .collect();
    let title = format!("mcp-envelope stats: {}", escape_html(source));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\n\
<style>body{{font-family:sans-serif;margin:24px}}svg text{{font-size:13px}}\
table{{border-collapse:collapse;margin-top:16px}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}</style>\n\
</head><body>\n<h1>{title}</h1>\n<p>Tokens ({}) of each tool's raw results against the envelopes the model saw (sums over all calls).</p>\n\
{}\n<table id=\"stats\"><thead><tr>{head}</tr></thead><tbody>\n{rows}</tbody></table>\n</body></html>\n",
        stats.first().map_or("o200k_base", |s| s.tokenizer.name()),
        svg_chart(stats)
    )
}

#[cfg(test)]
mod tests;
