//! `replay --live` over a whole transcript: which records are made again and how, and the
//! comparison of a page of the page tool with its live counterpart (pure; the calls themselves
//! are the main crate's).
//!
//! A call of the page tool (a record whose outcome is [`Outcome::Page`] or
//! [`Outcome::PageError`]) answers rows of an earlier call, so it can only be made again after
//! that call was: it is replayed against the live re-run of the call it pages (the latest
//! earlier record with its `call_id` that is not itself a page). Every live call is made with
//! the recorded `call_id` as its JSON-RPC id, so the page call's own arguments name the live
//! re-run and the page tool's messages name the same call on both sides. A page call whose
//! call is not in the transcript, or was not made again, is skipped with the reason.

use serde_json::Value;

use crate::drift::{compare_envelopes, has_redacted, DriftOptions, Verdict};
use crate::mapping::Outcome;
use crate::record::CallRecord;
use crate::replay::recompute_after;
use crate::settings::ToolSettings;

/// How `replay --live` treats one record of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LivePlan {
    /// Make the call again (the recorded tool, arguments and `call_id`) and compare it with
    /// [`crate::drift::compare`].
    Call,
    /// A page-tool call: make it again after the live re-run of the call it pages, the
    /// record at index `original` of the transcript, and compare it with [`compare_page`].
    Page {
        /// The index of the paged call's record in the transcript's records.
        original: usize,
    },
    /// Do not make it again, for this reason (one line, for the report).
    Skip(String),
}

impl LivePlan {
    /// Whether the record is made again.
    pub fn is_called(&self) -> bool {
        !matches!(self, LivePlan::Skip(_))
    }
}

/// Whether `record` is a call of the page tool (its outcome is a page or the page tool's error).
pub fn is_page_call(record: &CallRecord) -> bool {
    matches!(
        record.outcome,
        Outcome::Page { .. } | Outcome::PageError { .. }
    )
}

/// The `call_id` a page-tool call pages: the recorded page's `of_call_id`, else its `call_id`
/// argument (a number as its JSON text, as the page tool reads it); `None` when it names none.
pub fn paged_call_id(record: &CallRecord) -> Option<String> {
    if let Outcome::Page { of_call_id, .. } = &record.outcome {
        return Some(of_call_id.clone());
    }
    match record.arguments.get("call_id")? {
        Value::String(s) => Some(s.clone()),
        n @ Value::Number(_) => Some(n.to_string()),
        _ => None,
    }
}

/// The index in `earlier` of the call a page pages: the latest record with `call_id` that is
/// not itself a page-tool call (the same rule as [`recompute_after`]).
pub fn paged_original(earlier: &[CallRecord], call_id: &str) -> Option<usize> {
    earlier
        .iter()
        .rposition(|e| e.call_id == call_id && !is_page_call(e))
}

/// The method of the first request a server made to the client during `record`'s call (an
/// event `{"direction": "server_to_client", "message": {"id": .., "method": ..}}`, e.g.
/// `sampling/createMessage`, `elicitation/create`, `roots/list`); `None` when it made none
/// (notifications, such as progress, have no `id` and do not count).
pub fn client_request(record: &CallRecord) -> Option<&str> {
    record.events.iter().find_map(|event| {
        let message = event.get("message")?;
        let to_client = event.get("direction")? == "server_to_client";
        message.get("id")?;
        message.get("method")?.as_str().filter(|_| to_client)
    })
}

/// Why `replay --live` does not make again a call the proxy refused itself
/// ([`Outcome::Refused`]): no server saw it, and the refused request (its malformed params, its
/// `requestState`) is not in the record to send again; plain replay compares its envelope.
pub const REFUSED: &str =
    "the proxy refused it before it reached a server: no server's answer to compare";

/// The plan for every record of a transcript, in order: a cancelled call is skipped
/// ([`crate::replay::skip_reason`]), and so is a call the proxy refused itself ([`REFUSED`]),
/// and a call whose arguments hold the redaction marker (its real arguments are not in the transcript); so is a call
/// during which a server asked the client for input ([`client_request`]: no client answers it
/// on a live re-run, which would end in an error, not the recorded outcome); a page-tool
/// call is [`LivePlan::Page`] when the call it pages is in the transcript before it and is
/// made again, else skipped saying why; every other record is [`LivePlan::Call`].
pub fn plan(records: &[CallRecord]) -> Vec<LivePlan> {
    let mut plans: Vec<LivePlan> = Vec::with_capacity(records.len());
    for (i, record) in records.iter().enumerate() {
        let plan = if let Some(reason) = crate::replay::skip_reason(record) {
            LivePlan::Skip(reason.into())
        } else if matches!(record.outcome, Outcome::Refused { .. }) {
            LivePlan::Skip(REFUSED.into())
        } else if has_redacted(&record.arguments) {
            LivePlan::Skip("its arguments were redacted when recorded".into())
        } else if let Some(method) = client_request(record) {
            LivePlan::Skip(format!(
                "a server asked the client (`{method}`) during it, and no client answers on a live re-run"
            ))
        } else if is_page_call(record) {
            page_plan(&records[..i], &plans, record)
        } else {
            LivePlan::Call
        };
        plans.push(plan);
    }
    plans
}

/// [`plan`] of a page-tool call `record` after `earlier` records planned as `plans`.
fn page_plan(earlier: &[CallRecord], plans: &[LivePlan], record: &CallRecord) -> LivePlan {
    let Some(of) = paged_call_id(record) else {
        return LivePlan::Skip("a page call that names no call_id to page".into());
    };
    let Some(original) = paged_original(earlier, &of) else {
        return LivePlan::Skip(format!(
            "the call it pages (call_id '{of}') is not in this transcript"
        ));
    };
    match &plans[original] {
        LivePlan::Skip(why) => LivePlan::Skip(format!(
            "the call it pages (call_id '{of}') is not made again: {why}"
        )),
        _ => LivePlan::Page { original },
    }
}

/// Compares a recorded page-tool call with the same call made live after the live re-run of
/// the call it pages: each side's envelope is recomputed from its own transcript
/// ([`recompute_after`] over `recorded_earlier`, and over `live_earlier`, the live records
/// made before it), both with `settings` (the current config's for the paged tool) and the
/// recorded call's `call_id` and tool name; then compared as [`crate::drift::compare`] does,
/// without row counts (those of the full result are compared on the paged call itself).
pub fn compare_page(
    recorded_earlier: &[CallRecord],
    recorded: &CallRecord,
    live_earlier: &[CallRecord],
    live: &CallRecord,
    settings: ToolSettings,
    opts: DriftOptions,
) -> Verdict {
    let old = recompute_after(recorded_earlier, recorded, Some(settings));
    let mut live = live.clone();
    live.call_id.clone_from(&recorded.call_id);
    live.tool.clone_from(&recorded.tool);
    let new = recompute_after(live_earlier, &live, Some(settings));
    compare_envelopes(&old, &new, (None, None), opts)
}

#[cfg(test)]
mod tests;
