//! `replay --live`: how a recorded call's answer differs from the same call made again against
//! the real servers today (pure: two records and the current settings of the recorded tool in,
//! a verdict out).
//!
//! Both sides are mapped with the budgets of the current config (the recorded side through
//! [`crate::replay::recompute`]), so a change of budget alone is never drift. Compared, in
//! order: the envelope `status`, the error type (the `content` before the first `:` of an
//! error envelope), the number of rows of the full result, and the `content` itself as a line
//! diff (unless content is ignored, for tools whose answers change with time).

use serde_json::Value;

use crate::envelope::{Envelope, Status};
use crate::mapping::{map_outcome, MappingContext};
use crate::record::{CallRecord, REDACTED};
use crate::replay::{recompute, settings_for};
use crate::settings::ToolSettings;

/// What `replay --live` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DriftOptions {
    /// Compare status, error type and row count only, not the content text.
    pub ignore_content: bool,
}

/// The verdict on one recorded call made again live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Status, error type, row count and (unless ignored) content all agree.
    Same,
    /// Something differs: one human-readable line per difference (a content diff spans
    /// several lines, `-` recorded, `+` live).
    Drift(Vec<String>),
    /// The call was not made again, and why (for example its arguments were redacted).
    Skipped(String),
}

/// Whether `value` holds the transcript's redaction marker anywhere (a whole value, or a secret
/// replaced inside a string or a key): such a call cannot be made again with its real
/// arguments.
pub fn has_redacted(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains(REDACTED),
        Value::Array(items) => items.iter().any(has_redacted),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k.contains(REDACTED) || has_redacted(v)),
        _ => false,
    }
}

/// The error type of an error envelope (`timeout`, `tool_error`, ...), `None` otherwise.
pub fn error_type(envelope: &Envelope) -> Option<&str> {
    (envelope.status == Status::Error).then(|| envelope.content.split(':').next().unwrap_or(""))
}

/// The number of rows in the record's full result: with a budget of 0 the greedy fill keeps
/// no row that renders as text, so `omitted` counts them (rows that render as empty text are
/// not counted). `None` for an error outcome.
pub fn row_count(record: &CallRecord) -> Option<u64> {
    let ctx = MappingContext {
        call_id: &record.call_id,
        tool: &record.tool,
        server: &record.server,
        budget: crate::budget::Budget::chars(0),
        media: record.media,
        text: crate::mapping::TextShape {
            long_rows: crate::budget::LongRows::Keep,
            ..record.budget.text_shape()
        },
    };
    let envelope = map_outcome(&record.outcome, &ctx).envelope;
    (envelope.status != Status::Error).then_some(envelope.omitted)
}

fn status_label(envelope: &Envelope) -> &'static str {
    match envelope.status {
        Status::Ok => "ok",
        Status::Truncated => "truncated",
        Status::Error => "error",
    }
}

/// A line diff of two contents: `    - line` for recorded lines gone, `    + line` for live
/// lines new; unchanged lines are left out.
fn content_diff(recorded: &str, live: &str) -> Vec<String> {
    // A last line with and without a newline is the same line.
    let (recorded, live) = (format!("{recorded}\n"), format!("{live}\n"));
    let diff = similar::TextDiff::from_lines(&recorded, &live);
    diff.iter_all_changes()
        .filter_map(|change| {
            let sign = match change.tag() {
                similar::ChangeTag::Delete => "-",
                similar::ChangeTag::Insert => "+",
                similar::ChangeTag::Equal => return None,
            };
            Some(format!(
                "    {sign} {}",
                change.value().trim_end_matches('\n')
            ))
        })
        .collect()
}

/// Compares a recorded call with the same call made live (`live` must be the live call's
/// record); both envelopes are recomputed with `settings`, the current config's settings for
/// the recorded server and tool.
pub fn compare(
    recorded: &CallRecord,
    live: &CallRecord,
    settings: ToolSettings,
    opts: DriftOptions,
) -> Verdict {
    let old = recompute(recorded, Some(settings));
    let (char_budget, budget, media) = settings_for(recorded, Some(settings));
    let ctx = MappingContext {
        call_id: &recorded.call_id,
        tool: &recorded.tool,
        server: &live.server,
        budget: budget.budget(char_budget),
        media,
        text: budget.text_shape(),
    };
    let new = map_outcome(&live.outcome, &ctx).envelope;
    let rows = (row_count(recorded), row_count(live));
    compare_envelopes(&old, &new, rows, opts)
}

/// The verdict on a recorded envelope `old` and a live one `new` (both mapped with the same
/// settings), with the `(recorded, live)` row counts of their full results when known.
pub fn compare_envelopes(
    old: &Envelope,
    new: &Envelope,
    rows: (Option<u64>, Option<u64>),
    opts: DriftOptions,
) -> Verdict {
    let mut lines = Vec::new();
    if old.status != new.status {
        lines.push(format!(
            "  status: {} -> {}",
            status_label(old),
            status_label(new)
        ));
    }
    if error_type(old) != error_type(new) {
        let label = |t: Option<&str>| t.unwrap_or("none").to_owned();
        lines.push(format!(
            "  error type: {} -> {}",
            label(error_type(old)),
            label(error_type(new))
        ));
    }
    let (old_rows, new_rows) = rows;
    if old_rows.is_some() && new_rows.is_some() && old_rows != new_rows {
        lines.push(format!(
            "  rows: {} -> {}",
            old_rows.unwrap_or(0),
            new_rows.unwrap_or(0)
        ));
    }
    if !opts.ignore_content && old.content != new.content {
        lines.push("  content:".to_owned());
        lines.extend(content_diff(&old.content, &new.content));
    }
    if lines.is_empty() {
        Verdict::Same
    } else {
        Verdict::Drift(lines)
    }
}
