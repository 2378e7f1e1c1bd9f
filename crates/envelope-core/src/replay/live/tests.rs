use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::mapping::MediaMode;
use crate::record::test_record;
use crate::replay::recompute;
use crate::settings::{BudgetRules, Setting, Source};

const BUDGET: usize = 12;

fn settings() -> ToolSettings {
    let set = |value| Setting {
        value,
        source: Source::Tool,
    };
    ToolSettings {
        char_budget: set(BUDGET),
        tool_timeout: Setting {
            value: Duration::from_secs(60),
            source: Source::BuiltIn,
        },
        media: Setting {
            value: MediaMode::Passthrough,
            source: Source::BuiltIn,
        },
        budget_rules: BudgetRules::default(),
    }
}

/// A `git_log` call `call_id` whose result is `lines`, one row each, recorded at [`BUDGET`].
fn log_call(call_id: &str, lines: &[&str]) -> CallRecord {
    let outcome = Outcome::Result {
        result: json!({"content": [{"type": "text", "text": lines.join("\n")}]}),
    };
    let mut r = test_record("git_log", json!({"max_count": 9}), outcome, BUDGET, 1);
    r.call_id = call_id.to_owned();
    r.envelope = recompute(&r, Some(settings()));
    r
}

/// A page-tool call `call_id` with `arguments` and `outcome`, its envelope recomputed from
/// `earlier` as the proxy would have answered it.
fn page_call(
    earlier: &[CallRecord],
    call_id: &str,
    arguments: Value,
    outcome: Outcome,
) -> CallRecord {
    let mut r = test_record("envelope_next_page", arguments, outcome, BUDGET, 0);
    r.call_id = call_id.to_owned();
    r.envelope = recompute_after(earlier, &r, Some(settings()));
    r
}

fn page(of: &str, first_row: u64) -> Outcome {
    Outcome::Page {
        of_call_id: of.to_owned(),
        first_row,
    }
}

fn not_found(of: &str) -> Outcome {
    Outcome::PageError {
        error_type: "not_found".into(),
        message: format!("no rows kept for call_id '{of}': unknown"),
    }
}

const ROWS: [&str; 6] = ["aaaa", "bbbb", "cccc", "dddd", "eeee", "ffff"];

/// A truncated call `g1` and two pages of it.
fn paged_transcript(rows: &[&str]) -> Vec<CallRecord> {
    let mut t = vec![log_call("g1", rows)];
    let first = page_call(&t, "101", json!({"call_id": "g1"}), page("g1", 2));
    t.push(first);
    let second = page_call(&t, "102", json!({"call_id": "g1"}), page("g1", 4));
    t.push(second);
    t
}

#[test]
fn a_page_call_is_planned_after_the_call_it_pages() {
    let t = paged_transcript(&ROWS);
    assert_eq!(t[0].envelope.status, crate::envelope::Status::Truncated);
    assert_eq!(
        plan(&t),
        vec![
            LivePlan::Call,
            LivePlan::Page { original: 0 },
            LivePlan::Page { original: 0 },
        ]
    );
}

#[test]
fn a_page_call_pages_the_latest_earlier_call_with_its_id_that_is_no_page() {
    let mut t = paged_transcript(&ROWS);
    t.push(log_call("g1", &ROWS));
    let again = page_call(&t, "g1", json!({"call_id": "g1"}), page("g1", 2));
    t.push(again);
    let next = page_call(&t, "104", json!({"call_id": 7}), not_found("7"));
    t.push(next);
    let plans = plan(&t);
    assert_eq!(plans[4], LivePlan::Page { original: 3 });
    assert_eq!(paged_call_id(&t[5]).as_deref(), Some("7"));
}

#[test]
fn a_page_call_whose_call_is_missing_or_not_made_again_is_skipped() {
    let orphan = page_call(&[], "5", json!({"call_id": "zz"}), not_found("zz"));
    let no_id = page_call(&[], "6", json!({}), not_found("?"));
    let mut secret = log_call("s1", &ROWS);
    secret.arguments = json!({"token": crate::record::REDACTED});
    let mut t = vec![orphan, no_id, secret];
    let of_secret = page_call(&t, "7", json!({"call_id": "s1"}), page("s1", 2));
    t.push(of_secret);
    let plans = plan(&t);
    let why = |p: &LivePlan| match p {
        LivePlan::Skip(why) => why.clone(),
        other => panic!("not skipped: {other:?}"),
    };
    assert_eq!(
        why(&plans[0]),
        "the call it pages (call_id 'zz') is not in this transcript"
    );
    assert!(why(&plans[1]).contains("names no call_id"));
    assert!(why(&plans[2]).contains("redacted"));
    assert_eq!(
        why(&plans[3]),
        "the call it pages (call_id 's1') is not made again: its arguments were redacted when recorded"
    );
    assert!(plans.iter().all(|p| !p.is_called()));
}

#[test]
fn unchanged_pages_are_the_same_and_changed_pages_drift() {
    let recorded = paged_transcript(&ROWS);
    let opts = DriftOptions::default();
    let verdict = |live: &[CallRecord], i: usize, opts| {
        compare_page(
            &recorded[..i],
            &recorded[i],
            &live[..i],
            &live[i],
            settings(),
            opts,
        )
    };
    let same = paged_transcript(&ROWS);
    assert_eq!(verdict(&same, 1, opts), Verdict::Same);
    assert_eq!(verdict(&same, 2, opts), Verdict::Same);

    let changed = paged_transcript(&["aaaa", "bbbb", "cccc", "dddd", "eeee", "zzzz"]);
    assert_eq!(verdict(&changed, 1, opts), Verdict::Same);
    let Verdict::Drift(lines) = verdict(&changed, 2, opts) else {
        panic!("a changed page must drift");
    };
    assert!(lines.contains(&"    - ffff".to_owned()), "{lines:?}");
    assert!(lines.contains(&"    + zzzz".to_owned()), "{lines:?}");
    let ignore = DriftOptions {
        ignore_content: true,
    };
    assert_eq!(verdict(&changed, 2, ignore), Verdict::Same);
}

#[test]
fn a_page_that_is_gone_live_drifts_even_without_content() {
    let recorded = paged_transcript(&ROWS);
    // Live, the call is no longer truncated: the page tool has nothing kept for it.
    let mut live = vec![log_call("g1", &["aaaa"])];
    let gone = page_call(&live, "101", json!({"call_id": "g1"}), not_found("g1"));
    live.push(gone);
    let ignore = DriftOptions {
        ignore_content: true,
    };
    let verdict = compare_page(
        &recorded[..1],
        &recorded[1],
        &live[..1],
        &live[1],
        settings(),
        ignore,
    );
    let Verdict::Drift(lines) = verdict else {
        panic!("a page gone live must drift");
    };
    assert_eq!(
        lines,
        vec![
            "  status: truncated -> error",
            "  error type: none -> not_found"
        ]
    );
}

#[test]
fn the_recorded_page_is_found_in_the_recorded_transcript() {
    let recorded = paged_transcript(&ROWS);
    let old = recompute_after(&recorded[..2], &recorded[2], Some(settings()));
    assert_eq!(old.content, "eeee\nffff");
    assert_eq!(old.status, crate::envelope::Status::Ok);
}

/// A call during which a server asked the client (a request with an `id` from server to client)
/// is skipped naming the method; a progress notification alone, or the client's answer, is not
/// a request to the client, so such a call is made again.
#[test]
fn a_call_during_which_a_server_asked_the_client_is_skipped() {
    let event = crate::record::event;
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}});
    let roots = json!({"jsonrpc": "2.0", "id": 3, "method": "roots/list"});
    let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"roots": []}});
    let mut asked = log_call("a1", &ROWS);
    asked.events = vec![
        event("server_to_client", progress.clone()),
        event("server_to_client", roots),
        event("client_to_server", answer.clone()),
    ];
    let mut quiet = log_call("a2", &ROWS);
    quiet.events = vec![
        event("server_to_client", progress),
        event("client_to_server", answer),
    ];
    let plans = plan(&[asked, quiet]);
    assert_eq!(
        plans[0],
        LivePlan::Skip(
            "a server asked the client (`roots/list`) during it, and no client answers on a live re-run"
                .into()
        )
    );
    assert_eq!(plans[1], LivePlan::Call);
}

/// A call the client cancelled had no answer: it is not made again (nor compared offline), and
/// a call after it is planned as usual.
#[test]
fn a_cancelled_call_is_skipped_saying_so() {
    let mut cancelled = test_record("git_log", json!({}), Outcome::Cancelled, BUDGET, 3);
    cancelled.envelope = recompute(&cancelled, None);
    let plans = plan(&[cancelled.clone(), log_call("a2", &ROWS)]);
    let reason = crate::replay::skip_reason(&cancelled).expect("a reason");
    assert!(reason.contains("cancelled"), "{reason}");
    assert_eq!(plans, [LivePlan::Skip(reason.into()), LivePlan::Call]);
    assert_eq!(crate::replay::skip_reason(&log_call("a3", &ROWS)), None);
}
