//! Replay: every record's envelope recomputed from its recorded raw outcome, with the settings
//! recorded or the current config's, and compared with the envelope the client got
//! ([`ReplayResult`]). A page of the page tool is recomputed from the call it paged.
//!
//! This module does no I/O; reading the transcript and the config are the main crate's.

use serde_json::Value;

use crate::envelope::Envelope;
use crate::mapping::{map_outcome, map_result_from, MappingContext, MediaMode, Outcome};
use crate::record::CallRecord;
use crate::settings::{RecordedBudget, ToolSettings};

/// The envelope a record's raw outcome gives today: with `current` settings (the config's for
/// its server and tool) when given, else those recorded.
pub fn recompute(record: &CallRecord, current: Option<ToolSettings>) -> Envelope {
    let ctx = replay_context(record, current);
    map_outcome(&record.outcome, &ctx).envelope
}

/// The mapping context replay uses for `record` (see [`settings_for`]).
fn replay_context<'a>(record: &'a CallRecord, current: Option<ToolSettings>) -> MappingContext<'a> {
    let (char_budget, budget, media) = settings_for(record, current);
    MappingContext {
        call_id: &record.call_id,
        tool: &record.tool,
        server: &record.server,
        budget: budget.budget(char_budget),
        media,
        text: budget.text_shape(),
    }
}

/// [`recompute`] of a record that follows `earlier` in its transcript: a page of the page tool
/// ([`Outcome::Page`]) is recomputed from the record of the call it paged (the latest earlier
/// record with that `call_id`), with the page record's settings (those of the paged tool).
pub fn recompute_after(
    earlier: &[CallRecord],
    record: &CallRecord,
    current: Option<ToolSettings>,
) -> Envelope {
    let Outcome::Page {
        of_call_id,
        first_row,
    } = &record.outcome
    else {
        return recompute(record, current);
    };
    let original = earlier.iter().rev().find(|e| {
        &e.call_id == of_call_id
            && !matches!(e.outcome, Outcome::Page { .. } | Outcome::PageError { .. })
    });
    let ctx = replay_context(record, current);
    original
        .and_then(|o| replay_page(&o.outcome, &ctx, *first_row))
        .unwrap_or_else(|| recompute(record, current))
}

/// Why replay compares nothing for `record`, in words: a call cancelled before it was answered
/// ([`Outcome::Cancelled`]) had no answer, so it is not replayed (neither offline nor
/// live); `None` for every other record.
pub fn skip_reason(record: &CallRecord) -> Option<&'static str> {
    matches!(record.outcome, Outcome::Cancelled)
        .then_some("the client cancelled it before it was answered: no answer to compare")
}

/// One record's replay verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayResult {
    /// The recorded envelope.
    pub recorded: Envelope,
    /// The recomputed envelope.
    pub recomputed: Envelope,
}

impl ReplayResult {
    /// Whether the two envelopes are equal.
    pub fn matches(&self) -> bool {
        self.recorded == self.recomputed
    }

    /// A line-per-key diff: `-` recorded, `+` recomputed, for each key that differs.
    pub fn diff(&self) -> Vec<String> {
        let old = self.recorded.to_value();
        let new = self.recomputed.to_value();
        let (Value::Object(old), Value::Object(new)) = (old, new) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (key, o) in &old {
            let n = new.get(key).unwrap_or(&Value::Null);
            if o != n {
                out.push(format!("  - {key}: {o}"));
                out.push(format!("  + {key}: {n}"));
            }
        }
        out
    }
}

/// Replays every record (see [`recompute_after`]); `current` gives a record's current settings
/// (`None`: those recorded).
pub fn replay(
    records: &[CallRecord],
    current: impl Fn(&CallRecord) -> Option<ToolSettings>,
) -> Vec<ReplayResult> {
    records
        .iter()
        .enumerate()
        .map(|(i, r)| ReplayResult {
            recorded: r.envelope.clone(),
            recomputed: recompute_after(&records[..i], r, current(r)),
        })
        .collect()
}

/// The settings `recompute` uses for a record: `current` when given, else the recorded ones. Returns `(char_budget, the other budget settings, media)`.
pub fn settings_for(
    record: &CallRecord,
    current: Option<ToolSettings>,
) -> (usize, RecordedBudget, MediaMode) {
    match current {
        Some(s) => (s.char_budget.value, RecordedBudget::of(&s), s.media.value),
        None => (record.char_budget, record.budget, record.media),
    }
}

/// `replay --update`: sets each record's envelope to the recomputed one and its `char_budget`
/// and `media` to those it was recomputed with, so a later replay without `--config` agrees.
pub fn apply_update(
    records: &mut [CallRecord],
    results: Vec<ReplayResult>,
    current: impl Fn(&CallRecord) -> Option<ToolSettings>,
) {
    for (record, result) in records.iter_mut().zip(results) {
        let (char_budget, budget, media) = settings_for(record, current(record));
        record.char_budget = char_budget;
        record.budget = budget;
        record.media = media;
        record.envelope = result.recomputed;
    }
}

/// The envelope a recorded page call gives when replayed: the page of the original call's
/// `outcome` from `first_row`, within `ctx` (the original tool's budget settings); `None` when
/// the original outcome is not a result.
pub fn replay_page(
    original: &Outcome,
    ctx: &MappingContext<'_>,
    first_row: u64,
) -> Option<Envelope> {
    match original {
        Outcome::Result { result } => Some(map_result_from(result, ctx, first_row).0.envelope),
        _ => None,
    }
}

pub mod live;
