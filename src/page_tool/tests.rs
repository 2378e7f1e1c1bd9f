//! Tests of the page tool.

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
        .keep(&json!(1), &ctx("1", budget, text), "t", &first, || {
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
        .keep(&json!(1), &c, "t", &first, || Some(result.to_string()))
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
    // Long rows kept whole: with "split" (the default) the long row is cut into pieces.
    let keep = TextShape {
        long_rows: crate::budget::LongRows::Keep,
        ..TextShape::default()
    };
    let c = ctx("1", Budget::chars(20), keep);
    let first = map_outcome(
        &Outcome::Result {
            result: result.clone(),
        },
        &c,
    )
    .envelope;
    assert_eq!((first.content.as_str(), first.omitted), ("", 3));
    p.keep(&json!(1), &c, "t", &first, || Some(result.to_string()))
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Object rows longer than the budget (`long_rows = "split"`): every page makes progress
    /// and fits, and the pages reach the last row, in characters and in tokens.
    #[test]
    fn paging_long_object_rows_reaches_the_end(
        values in prop::collection::vec("[a-z é;=]{0,70}", 1..12),
        chars in prop::option::of(4usize..60),
        tokens in prop::option::of(2usize..20),
    ) {
        let budget = Budget {
            chars: chars.or(tokens.is_none().then_some(10)),
            tokens: tokens.map(|limit| TokenLimit { limit, tokenizer: Tokenizer::O200kBase }),
        };
        let rows: Vec<Value> = values.iter().map(|v| json!({"k": v, "n": 1})).collect();
        let result = json!({"content": [], "structuredContent": rows});
        let text = TextShape::default();
        let total = crate::outcome::count_result_rows(&result, &ctx("1", budget, text));
        prop_assert!(total >= rows.len() as u64);
        let (first, pages) = page_all(&pager(), &result, budget, text);
        let fits = |e: &Envelope| {
            budget.chars.is_none_or(|n| Measure::Chars.count(&e.content) <= n)
                && budget.tokens.is_none_or(|t| Measure::Tokens(t.tokenizer).count(&e.content) <= t.limit)
        };
        prop_assert!(fits(&first));
        let mut left = first.omitted;
        for (page, _) in &pages {
            prop_assert!(fits(page));
            prop_assert!(page.omitted < left, "no progress: {:?}", page);
            left = page.omitted;
        }
        prop_assert_eq!(left, 0, "paging stopped before the last row");
    }
}

#[test]
fn paging_a_pages_own_call_id_names_the_original_one() {
    let p = pager();
    keep_four_rows(&p);
    let page = p.page("p1", Some(&json!({"call_id": "1"})));
    assert!(matches!(page.outcome, Outcome::Page { .. }), "{page:?}");
    let wrong = p
        .page("p2", Some(&json!({"call_id": "p1"})))
        .mapped
        .envelope;
    assert_eq!(
        wrong.content,
        "not_found: call_id 'p1' is a page's own call_id, not a truncated tool call's: pass the original call_id '1' to get the next rows"
    );
    let unknown = p
        .page("p3", Some(&json!({"call_id": "zz"})))
        .mapped
        .envelope;
    assert!(
        unknown
            .content
            .contains("call_id of the ORIGINAL truncated tool call"),
        "{}",
        unknown.content
    );
    let schema = p.tool_definition();
    let said = &schema["inputSchema"]["properties"]["call_id"]["description"];
    assert!(
        said.as_str().unwrap().contains("not a page's own call_id"),
        "{said}"
    );
}

/// An unknown call_id of 100,000 characters: the `not_found` answer quotes its first 128 and
/// the cut marker, in the envelope and in the outcome the transcript records (it quoted the
/// whole id in both).
#[test]
fn an_overlong_unknown_call_id_is_cut_in_not_found() {
    let p = pager();
    let long = "x".repeat(100_000);
    let answer = p.page("5", Some(&json!({"call_id": long})));
    let shown = format!("call_id '{}… [99872 characters cut]'", "x".repeat(128));
    let content = &answer.mapped.envelope.content;
    assert!(content.starts_with("not_found: "), "{content}");
    assert!(content.contains(&shown), "{content}");
    assert!(content.chars().count() < 1_000, "{} chars", content.len());
    let Outcome::PageError { message, .. } = &answer.outcome else {
        panic!("not a page error: {:?}", answer.outcome);
    };
    assert!(message.contains(&shown), "{message}");
    assert!(message.chars().count() < 1_000, "{} chars", message.len());
}

/// Pages call "1" following every answer's advice: no `skip` after a page, the `skip` an
/// error names after a row too long for any page. Returns the pages' contents and the rows
/// the errors named, or panics when the advice makes no progress.
fn follow_the_advice(p: &Pager) -> (Vec<String>, Vec<String>) {
    let (mut shown, mut named) = (Vec::new(), Vec::new());
    let mut skip = 0u64;
    for n in 0..20 {
        let env = p
            .page(
                &format!("p{n}"),
                Some(&json!({"call_id": "1", "skip": skip})),
            )
            .mapped
            .envelope;
        match env.status {
            crate::envelope::Status::Error => {
                let content = env.content;
                let advice = content
                    .split("call again with skip: ")
                    .nth(1)
                    .unwrap_or_else(|| panic!("no advice: {content}"));
                let advised: u64 = advice.split(' ').next().unwrap().parse().unwrap();
                assert!(advised > skip, "the advice repeats skip {skip}: {content}");
                let row = content.split(" of call_id").next().unwrap();
                let row = row.trim_start_matches("invalid_argument: ");
                named.push(row.to_owned());
                skip = advised;
            }
            crate::envelope::Status::Ok => {
                shown.push(env.content);
                return (shown, named);
            }
            _ => {
                shown.push(env.content);
                skip = 0;
            }
        }
    }
    panic!("following the advice did not reach the end: {shown:?}, {named:?}");
}

/// Long rows kept whole, several in a row: the error after a `skip` names the `skip` that
/// passes the row it names (counted from the rows already answered), so following it
/// reaches the end. It said `skip: 1` whatever the `skip`, and `skip: 1` named the same row
/// again, forever.
#[test]
fn following_the_skip_advice_reaches_the_end() {
    let keep = TextShape {
        long_rows: LongRows::Keep,
        ..TextShape::default()
    };
    let c = ctx("1", Budget::chars(10), keep);
    for (text, pages, named) in [
        (
            "short\nthis row is far too long\nthis one is also too long\nend",
            vec!["end"],
            vec!["row 2", "row 3"],
        ),
        (
            "short\nthis row is far too long\nok\nthis one is also too long\nthe third long row\nend\nlast long row here",
            vec!["ok", "end", ""],
            vec!["row 2", "row 4", "row 5", "row 7"],
        ),
    ] {
        let p = pager();
        let result = json!({"content": [{"type": "text", "text": text}]});
        let first = map_outcome(&Outcome::Result { result: result.clone() }, &c).envelope;
        assert_eq!(first.content, "short");
        p.keep(&json!(1), &c, "t", &first, || Some(result.to_string())).unwrap();
        let (shown, errors) = follow_the_advice(&p);
        assert_eq!((shown, errors), (pages.iter().map(|s| s.to_string()).collect(), named.iter().map(|s| s.to_string()).collect()), "{text}");
    }
    // The tester's second call: skip 1 past row 2 names row 3 and the skip that passes both.
    let p = pager();
    let result = json!({"content": [{"type": "text", "text": "short\nthis row is far too long\nthis one is also too long\nend"}]});
    let first = map_outcome(
        &Outcome::Result {
            result: result.clone(),
        },
        &c,
    )
    .envelope;
    p.keep(&json!(1), &c, "t", &first, || Some(result.to_string()))
        .unwrap();
    let env = p
        .page("9", Some(&json!({"call_id": "1", "skip": 1})))
        .mapped
        .envelope;
    assert_eq!(
        env.content,
        "invalid_argument: row 3 of call_id '1' is longer than the tool's budget on its own, so no page can show it; call again with skip: 2 to leave out it and the 1 row(s) before it (a skip counts from the rows already answered; 1 row(s) after it), or raise the tool's budget; nothing was skipped"
    );
}

/// The truncated result of a call with JSON-RPC id `id` (call_id "5", two rows of `prefix`)
/// kept in `p`.
fn keep_rows_of(p: &Pager, id: Value, prefix: &str) {
    let c = ctx("5", Budget::chars(6), TextShape::default());
    let rows = json!([{"r": format!("{prefix}0")}, {"r": format!("{prefix}1")}]);
    let result = json!({"content": [], "structuredContent": {"rows": rows}});
    let outcome = Outcome::Result {
        result: result.clone(),
    };
    let first = map_outcome(&outcome, &c).envelope;
    assert_eq!((first.call_id.as_str(), first.omitted), ("5", 1));
    p.keep(&id, &c, "t", &first, || Some(result.to_string()))
        .unwrap();
}

/// JSON-RPC ids 5 and "5" are two requests whose envelopes share call_id "5" (the envelope
/// spec echoes the id as a string): both results are kept, a page call for "5" says it cannot
/// tell which is meant and pages neither, and either one alone pages as any result does.
#[test]
fn ids_5_and_string_5_are_kept_apart_and_paging_their_call_id_says_it_is_ambiguous() {
    let p = pager();
    keep_rows_of(&p, json!(5), "n");
    keep_rows_of(&p, json!("5"), "s");
    for args in [json!({"call_id": "5"}), json!({"call_id": 5})] {
        let env = p.page("9", Some(&args)).mapped.envelope;
        assert_eq!(env.status, crate::envelope::Status::Error);
        assert_eq!(
            env.content,
            "invalid_argument: call_id '5' names two truncated results of this session, those of the JSON-RPC requests with ids 5 (a number) and \"5\" (a string), which share that call_id; the page tool cannot tell which is meant, so it pages neither: call the tool again to see the rows you need"
        );
    }
    for (id, row) in [(json!(5), "r=n1"), (json!("5"), "r=s1")] {
        let alone = pager();
        keep_rows_of(&alone, id, &row[2..3]);
        let env = alone
            .page("9", Some(&json!({"call_id": "5"})))
            .mapped
            .envelope;
        assert_eq!((env.content.as_str(), env.omitted), (row, 0));
    }
    // A call_id that begins with a quote is only ever a string id's.
    let quoted = pager();
    keep_rows_of(&quoted, json!("\"5\""), "q");
    let env = quoted.page("9", Some(&json!({"call_id": "\"5\""})));
    assert!(
        matches!(env.outcome, Outcome::Page { .. }),
        "{:?}",
        env.outcome
    );
}
