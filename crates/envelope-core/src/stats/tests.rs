use serde_json::json;

use super::*;
use crate::budget::Tokenizer;
use crate::mapping::MediaMode;

/// A record of `tool` on server `git` whose outcome is `outcome`, mapped with `char_budget`.
fn record(tool: &str, outcome: Outcome, char_budget: usize, duration_ms: u64) -> CallRecord {
    crate::record::test_record(tool, json!({}), outcome, char_budget, duration_ms)
}

fn text_result(text: &str) -> Outcome {
    Outcome::Result {
        result: json!({"content": [{"type": "text", "text": text}]}),
    }
}

#[test]
fn nearest_rank_percentiles() {
    assert_eq!(nearest_rank::<u64>(&mut [], 50), None);
    assert_eq!(nearest_rank(&mut [7], 95), Some(7));
    let mut v: Vec<u64> = (1..=20).rev().collect();
    assert_eq!(nearest_rank(&mut v, 50), Some(10));
    assert_eq!(nearest_rank(&mut v, 95), Some(19));
    assert_eq!(nearest_rank(&mut v, 100), Some(20));
}

#[test]
fn counts_calls_errors_truncation_and_durations_per_tool() {
    let records = vec![
        record("git_log", text_result("a\nb\nc"), 3, 10),
        record("git_log", text_result("a"), 3, 30),
        record(
            "git_log",
            Outcome::Timeout {
                timeout_ms: 1000,
                timeout_ns: None,
            },
            3,
            1000,
        ),
        record(
            "git_status",
            Outcome::NoSuchTool {
                servers_down: vec![],
                exposed_as: vec![],
                dropped: vec![],
            },
            100,
            1,
        ),
    ];
    let stats = compute(&records, Tokenizer::O200kBase);
    assert_eq!(stats.len(), 2);
    let log = &stats[0];
    assert_eq!((log.tool.as_str(), log.calls), ("git_log", 3));
    assert_eq!(log.truncated, 1, "a\\nb\\nc does not fit 3 characters");
    assert_eq!(log.errors_label(), "timeout:1");
    assert_eq!((log.p50_ms, log.p95_ms), (Some(30), Some(1000)));
    assert_eq!(stats[1].errors_label(), "not_found:1");
    assert_eq!(stats[1].suggested_char_budget, None, "no successful call");
}

/// A cancelled call counts as a call and a `cancelled` error, and in no size or duration: it
/// had no answer, and its duration is only the wait until it was cancelled.
#[test]
fn a_cancelled_call_counts_as_cancelled_and_nothing_else() {
    let answered = vec![record("t", text_result("abc"), 10, 20)];
    let mut with_cancelled = answered.clone();
    with_cancelled.push(record("t", Outcome::Cancelled, 10, 9_000));
    let before = &compute(&answered, Tokenizer::O200kBase)[0];
    let after = &compute(&with_cancelled, Tokenizer::O200kBase)[0];
    assert_eq!(after.calls, 2);
    assert_eq!(after.errors_label(), "cancelled:1");
    assert_eq!(after.server, "git");
    assert_eq!(
        (after.raw_chars, after.envelope_chars, after.raw_tokens),
        (before.raw_chars, before.envelope_chars, before.raw_tokens)
    );
    assert_eq!((after.p50_ms, after.p95_ms), (Some(20), Some(20)));
}

/// A tool whose calls were all cancelled has no duration to rank: its p50 and p95 are `-` in the
/// table and `null` in JSON (they were a made-up 0), while a tool with a finished call keeps its
/// durations.
#[test]
fn a_tool_whose_calls_were_all_cancelled_has_no_percentiles() {
    let records = vec![
        record("gone", Outcome::Cancelled, 10, 9_000),
        record("gone", Outcome::Cancelled, 10, 4_000),
        record("kept", text_result("abc"), 10, 20),
        record("kept", Outcome::Cancelled, 10, 7_000),
    ];
    let stats = compute(&records, Tokenizer::O200kBase);
    let table = render_table(&stats);
    let row = |tool: &str| -> Vec<String> {
        let line = table.lines().find(|l| l.starts_with(tool)).unwrap();
        line.split_whitespace().map(str::to_owned).collect()
    };
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    let p50 = header.iter().position(|h| *h == "P50_MS").unwrap();
    assert_eq!(row("gone")[p50..p50 + 2], ["-", "-"], "{table}");
    assert_eq!(row("kept")[p50..p50 + 2], ["20", "20"], "{table}");
    let doc: serde_json::Value = serde_json::from_str(&render_json(&stats)).unwrap();
    let tools = doc["tools"].as_array().unwrap();
    assert_eq!(tools[0]["tool"], "gone");
    assert_eq!(
        (&tools[0]["p50_ms"], &tools[0]["p95_ms"]),
        (&json!(null), &json!(null))
    );
    assert_eq!(
        (&tools[1]["p50_ms"], &tools[1]["p95_ms"]),
        (&json!(20), &json!(20))
    );
}

#[test]
fn suggested_budget_keeps_ninety_percent_whole() {
    // Ten results whose full renderings are 10, 20, ..., 100 characters.
    let records: Vec<CallRecord> = (1..=10)
        .map(|n| record("t", text_result(&"x".repeat(n * 10)), 5, 1))
        .collect();
    let stats = compute(&records, Tokenizer::O200kBase);
    assert_eq!(stats[0].suggested_char_budget, Some(90));
    // With budget 90, nine of the ten are whole when re-mapped.
    let whole = records
        .iter()
        .filter(|r| {
            let ctx = MappingContext {
                call_id: "1",
                tool: "t",
                server: "git",
                budget: crate::budget::Budget::chars(90),
                text: crate::mapping::TextShape {
                    long_rows: crate::budget::LongRows::Keep,
                    ..Default::default()
                },
                media: MediaMode::Passthrough,
            };
            map_outcome(&r.outcome, &ctx).envelope.status == Status::Ok
        })
        .count();
    assert_eq!(whole, 9);
}

#[test]
fn sizes_compare_raw_json_with_the_envelope() {
    let big = "line\n".repeat(200);
    let stats = compute(
        &[record("t", text_result(&big), 50, 1)],
        Tokenizer::O200kBase,
    );
    let s = &stats[0];
    let raw = json!({"content": [{"type": "text", "text": big}]}).to_string();
    assert_eq!(s.raw_chars, raw.chars().count() as u64);
    assert_eq!(
        s.envelope_chars,
        serde_json::to_string(&record("t", text_result(&big), 50, 1).envelope)
            .unwrap()
            .chars()
            .count() as u64
    );
    assert!(s.saved_chars().unwrap() > 800, "{s:?}");
}

#[test]
fn table_json_and_html_name_every_tool() {
    let stats = compute(
        &[
            record("git_log", text_result("a\nb"), 100, 5),
            record("<script>", text_result("a"), 100, 5),
        ],
        Tokenizer::Cl100kBase,
    );
    let table = render_table(&stats);
    assert!(table.starts_with("TOOL "), "{table}");
    assert!(table.contains("git_log"), "{table}");
    assert!(
        table
            .trim_end()
            .ends_with("2 call(s), 2 tool(s); tokens: cl100k_base"),
        "{table}"
    );
    let doc: Value = serde_json::from_str(&render_json(&stats)).unwrap();
    assert_eq!(doc["tools"][1]["tool"], "git_log");
    assert_eq!(doc["suggested_budget_percentile"], 90);
    let html = render_html(&stats, "calls.jsonl");
    assert!(html.contains("<svg id=\"saved-chart\""), "{html}");
    assert!(html.contains("&lt;script&gt;"), "tool names are escaped");
    assert!(!html.contains("<script>"), "no raw markup from tool names");
    assert_eq!(html.matches("class=\"tool\"").count(), 2);
}

#[test]
fn tokens_are_counted_with_the_chosen_tokenizer() {
    let text = "日本語のテキスト 🎉 and some English words\n".repeat(40);
    let records = [record("t", text_result(&text), 80, 1)];
    for tokenizer in Tokenizer::ALL {
        let s = &compute(&records, tokenizer)[0];
        let raw = json!({"content": [{"type": "text", "text": text}]}).to_string();
        assert_eq!(s.raw_tokens, tokenizer.count(&raw) as u64);
        let answered = serde_json::to_string(&records[0].envelope).unwrap();
        assert_eq!(s.envelope_tokens, tokenizer.count(&answered) as u64);
        assert!(s.saved_tokens().unwrap() > 0);
        // The suggested token budget is the full rendering's token count.
        let full = map_outcome(
            &records[0].outcome,
            &MappingContext {
                call_id: "1",
                tool: "t",
                server: "git",
                budget: crate::budget::Budget::chars(usize::MAX / 4),
                media: MediaMode::Passthrough,
                text: crate::mapping::TextShape {
                    long_rows: crate::budget::LongRows::Keep,
                    ..Default::default()
                },
            },
        )
        .envelope
        .content;
        assert_eq!(s.suggested_token_budget, Some(tokenizer.count(&full)));
    }
}

/// One row per tool name: a call answered with no server (`no_such_tool`) joins its tool's
/// row, and the page tool's pages (answered with the paged call's server) and page errors (no
/// server) make one row with no raw size and no saving.
#[test]
fn one_row_per_tool_name_and_pages_count_no_raw_size() {
    let mut page = record(
        "envelope_next_page",
        Outcome::Page {
            of_call_id: "1".into(),
            first_row: 3,
        },
        100,
        1,
    );
    page.envelope = record("envelope_next_page", text_result("d\ne"), 100, 1).envelope;
    let mut page_error = record(
        "envelope_next_page",
        Outcome::PageError {
            error_type: "not_found".into(),
            message: "gone".into(),
        },
        100,
        1,
    );
    page_error.server = String::new();
    let mut unknown = record(
        "git_log",
        Outcome::NoSuchTool {
            servers_down: vec![],
            exposed_as: vec![],
            dropped: vec![],
        },
        100,
        1,
    );
    unknown.server = String::new();
    let records = [
        record("git_log", text_result("a\nb\nc\nd\ne"), 3, 1),
        page,
        page_error,
        unknown,
    ];
    let stats = compute(&records, Tokenizer::O200kBase);
    let names: Vec<(&str, &str, u64)> = stats
        .iter()
        .map(|s| (s.tool.as_str(), s.server.as_str(), s.calls))
        .collect();
    assert_eq!(
        names,
        [("envelope_next_page", "", 2), ("git_log", "git", 2)]
    );
    let pages = &stats[0];
    assert!(pages.pages && !stats[1].pages);
    assert_eq!((pages.raw_chars, pages.raw_tokens), (0, 0));
    assert!(pages.envelope_tokens > 0);
    assert_eq!((pages.saved_chars(), pages.saved_tokens()), (None, None));
    assert_eq!(pages.errors_label(), "not_found:1");
    assert_eq!(pages.suggested_char_budget, None);
    let table = render_table(&stats);
    let row = table.lines().nth(1).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells[..6],
        ["envelope_next_page", "-", "2", "not_found:1", "0", "-"]
    );
    assert_eq!(cells[9], "-", "no saving for pages: {table}");
}

#[test]
fn long_or_unprintable_names_do_not_widen_or_break_the_table() {
    let long = format!("{}_middle_{}", "a".repeat(300), "z_end".repeat(40));
    let stats = compute(
        &[
            record(&long, text_result("a"), 100, 5),
            record("bad\nname\u{202e}", text_result("a"), 100, 5),
        ],
        Tokenizer::O200kBase,
    );
    let table = render_table(&stats);
    let lines: Vec<&str> = table.lines().collect();
    // The header, two rows, a blank line and the summary: no name broke a line.
    assert_eq!(lines.len(), 5, "{table}");
    let widest = lines.iter().map(|l| l.chars().count()).max().unwrap();
    assert!(widest < 250, "a line of {widest} characters:\n{table}");
    assert!(table.contains(&format!("{}…", "a".repeat(23))), "{table}");
    assert!(
        table.contains("z_endz_end "),
        "the name's end is kept: {table}"
    );
    assert!(table.contains("bad\\nname\\u{202e}"), "{table}");
    let doc: Value = serde_json::from_str(&render_json(&stats)).unwrap();
    let names: Vec<&str> = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tool"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&long.as_str()),
        "--json keeps the whole name"
    );
    let html = render_html(&stats, "calls.jsonl");
    assert!(
        !html.contains('\u{202e}'),
        "a raw bidi override in the page: {html}"
    );
    assert!(html.contains("bad\\nname\\u{202e}"), "{html}");
}
