use super::*;
use serde_json::json;

fn summarize(value: Value, budget: usize) -> Envelope {
    summarize_tool_result(&ToolResult::from_json(&value).unwrap(), budget)
}

#[test]
fn seed_sample_budget_8_keeps_first_row() {
    let env = summarize(
        json!({"call_id": "t1", "tool": "sql", "rows": [{"b": 2, "a": 1}, {"a": 9, "b": 8}]}),
        8,
    );
    assert_eq!(env.content, "a=1,b=2");
    assert_eq!(env.omitted, 1);
    assert_eq!(env.status, Status::Truncated);
    assert!(!env.retryable);
}

#[test]
fn exact_fit_is_kept() {
    let env = summarize(json!({"rows": [{"a": 1}, {"b": 2}]}), 8);
    assert_eq!(env.content, "a=1; b=2");
    assert_eq!(env.status, Status::Ok);
    let env = summarize(json!({"rows": [{"a": 1}, {"b": 2}]}), 7);
    assert_eq!(env.content, "a=1");
    assert_eq!(env.omitted, 1);
}

#[test]
fn first_row_that_does_not_fit_stops_the_fill() {
    let env = summarize(json!({"rows": [{"a": "long value"}, {"b": 2}]}), 5);
    assert_eq!(env.content, "");
    assert_eq!(env.omitted, 2);
    assert_eq!(env.status, Status::Truncated);
}

#[test]
fn never_skips_to_a_smaller_later_row() {
    let env = summarize(
        json!({"rows": [{"a": 1}, {"b": "xxxxxxxxxx"}, {"c": 3}]}),
        10,
    );
    assert_eq!(env.content, "a=1");
    assert_eq!(env.omitted, 2);
}

#[test]
fn empty_and_absent_rows_are_ok_and_empty() {
    for v in [
        json!({"call_id": "x", "tool": "t"}),
        json!({"rows": []}),
        json!({"rows": null}),
    ] {
        let env = summarize(v, 0);
        assert_eq!(env.content, "");
        assert_eq!(env.status, Status::Ok);
        assert_eq!(env.omitted, 0);
    }
}

#[test]
fn falsy_errors_take_the_success_path() {
    for err in [
        json!(null),
        json!(false),
        json!(0),
        json!(""),
        json!({}),
        json!([]),
    ] {
        let env = summarize(json!({"error": err, "rows": [{"a": 1}]}), 10);
        assert_eq!(env.status, Status::Ok, "error {err} should be falsy");
        assert_eq!(env.content, "a=1");
    }
}

#[test]
fn error_path_shapes() {
    let env = summarize(json!({"error": {"message": "boom"}}), 0);
    assert_eq!(env.content, "unknown: boom");
    assert!(!env.retryable);
    let env = summarize(json!({"error": {"type": "timeout"}}), 0);
    assert_eq!(env.content, "timeout: ");
    assert!(env.retryable);
    let env = summarize(json!({"error": "disk full"}), 0);
    assert_eq!(env.content, "unknown: disk full");
    assert_eq!(env.omitted, 0);
    assert_eq!(env.status, Status::Error);
}

#[test]
fn retryable_types_are_exact_and_case_sensitive() {
    for t in RETRYABLE_ERROR_TYPES {
        assert!(summarize(json!({"error": {"type": t, "message": "m"}}), 0).retryable);
    }
    for t in [
        "Timeout",
        "RATE_LIMIT",
        "not_found",
        "invalid_argument",
        "timeout ",
    ] {
        assert!(!summarize(json!({"error": {"type": t, "message": "m"}}), 0).retryable);
    }
}

#[test]
fn lengths_are_unicode_scalar_values() {
    // "k=é" is 3 characters but 4 bytes.
    assert_eq!(summarize(json!({"rows": [{"k": "é"}]}), 3).content, "k=é");
    assert_eq!(summarize(json!({"rows": [{"k": "😀"}]}), 3).content, "k=😀");
    // e + combining acute accent is two scalar values.
    let env = summarize(json!({"rows": [{"k": "e\u{301}"}]}), 3);
    assert_eq!(env.status, Status::Truncated);
    assert_eq!(
        summarize(json!({"rows": [{"k": "e\u{301}"}]}), 4).content,
        "k=e\u{301}"
    );
}

#[test]
fn non_ascii_keys_sort_by_code_point() {
    let env = summarize(json!({"rows": [{"é": 1, "z": 2, "Z": 3, "中": 4}]}), 100);
    assert_eq!(env.content, "Z=3,z=2,é=1,中=4");
}

#[test]
fn value_rendering_contract() {
    let env = summarize(
        json!({"rows": [{"s": "raw \"q\"", "n": -3.75, "i": 12, "b": false, "z": null, "a": [1, {"k": "é"}]}]}),
        200,
    );
    assert_eq!(
        env.content,
        "a=[1,{\"k\":\"é\"}],b=false,i=12,n=-3.75,s=raw \"q\",z=null"
    );
}

#[test]
fn absent_ids_echo_as_empty_and_key_order_is_fixed() {
    let env = summarize(json!({"rows": [{"a": 1}]}), 10);
    assert_eq!(
        env.to_json(),
        r#"{"call_id":"","tool":"","status":"ok","content":"a=1","omitted":0,"retryable":false}"#
    );
}

#[test]
fn shape_errors_name_the_row() {
    assert_eq!(
        ToolResult::from_json(&json!({"rows": [{}, 3]})),
        Err(ResultShapeError::RowNotAnObject {
            index: 1,
            kind: "number"
        })
    );
    assert_eq!(
        ToolResult::from_json(&json!({"rows": "x"})),
        Err(ResultShapeError::RowsNotAList("string"))
    );
    assert_eq!(
        ToolResult::from_json(&json!([1])),
        Err(ResultShapeError::NotAnObject("array"))
    );
}

#[test]
fn consecutive_line_rows_join_with_newline() {
    let rows = vec![
        Row::Line("first".into()),
        Row::Line("second".into()),
        Row::Object(Cow::Owned(json!({"a": 1}).as_object().unwrap().clone())),
        Row::Line("third".into()),
    ];
    let filled = fill_rows(rows, 100);
    assert_eq!(filled.content, "first\nsecond; a=1; third");
    assert_eq!(filled.kept, 4);
}

#[test]
fn huge_row_is_rejected_without_rendering_it_whole() {
    let big = "x".repeat(1_000_000);
    let filled = fill_rows(vec![Row::Line(Cow::Borrowed(big.as_str()))], 10);
    assert_eq!(filled.content, "");
    assert_eq!(filled.omitted, 1);
}

mod tokens {
    use super::*;
    use crate::budget::{Measure, TokenLimit, Tokenizer};
    use proptest::prelude::*;

    /// The greedy fill computed the slow, obvious way: count the whole candidate content.
    fn naive_fill(rows: &[Row<'_>], budget: &Budget) -> (String, u64) {
        let mut content = String::new();
        let mut previous = None;
        for (i, row) in rows.iter().enumerate() {
            let candidate = format!(
                "{content}{}{}",
                separator_before(previous, row),
                render_row(row)
            );
            if !budget.fits(&candidate) {
                return (content, (rows.len() - i) as u64);
            }
            content = candidate;
            previous = Some(row.kind());
        }
        (content, 0)
    }

    fn line(s: &str) -> Row<'_> {
        Row::Line(Cow::Borrowed(s))
    }

    #[test]
    fn token_budget_counts_the_whole_content() {
        let rows = vec![
            line("hello world"),
            line("hello world"),
            line("hello world"),
        ];
        // "hello world\nhello world" is 5 tokens: the newline is a token of its own.
        let t = Tokenizer::O200kBase;
        assert_eq!(t.count("hello world\nhello world"), 5);
        let filled = fill_rows_within(rows.clone(), &Budget::tokens(5, t));
        assert_eq!(filled.content, "hello world\nhello world");
        assert_eq!((filled.kept, filled.omitted), (2, 1));
        let filled = fill_rows_within(rows, &Budget::tokens(4, t));
        assert_eq!((filled.kept, filled.omitted), (1, 2));
    }

    #[test]
    fn the_tighter_budget_wins() {
        let rows = || vec![line("aaaa"), line("bbbb"), line("cccc")];
        let both = |chars, tokens| Budget {
            chars: Some(chars),
            tokens: Some(TokenLimit {
                limit: tokens,
                tokenizer: Tokenizer::Cl100kBase,
            }),
        };
        // Characters bind: 9 characters hold two rows.
        assert_eq!(fill_rows_within(rows(), &both(9, 100)).kept, 2);
        // Tokens bind.
        let one = Tokenizer::Cl100kBase.count("aaaa");
        assert_eq!(fill_rows_within(rows(), &both(100, one)).kept, 1);
    }

    #[test]
    fn first_row_over_a_token_budget_gives_empty_content() {
        let text = "word ".repeat(100);
        let filled = fill_rows_within(vec![line(&text)], &Budget::tokens(10, Tokenizer::O200kBase));
        assert_eq!((filled.content.as_str(), filled.omitted), ("", 1));
    }

    #[test]
    fn continued_rows_join_without_separator_and_blocks_with_a_blank_line() {
        let rows = vec![
            Row::Block(Cow::Borrowed("a\nb")),
            Row::Block(Cow::Borrowed("c")),
            Row::Continued(Cow::Borrowed("d"), RowKind::Block),
            Row::Line(Cow::Borrowed("e")),
        ];
        assert_eq!(fill_rows(rows, 100).content, "a\nb\n\ncd\n\ne");
    }

    fn row_text() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "a",
            "Hello",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "/",
            ";",
            "; ",
            ",",
            "=",
            "12345",
            "数据",
            "😀",
            "👍🏽",
            "é",
            "e\u{301}",
            "'s",
            "--",
            "{\"k\":1}",
            "    ",
            "x/y",
        ]);
        prop::collection::vec(atoms, 0..8).prop_map(|v| v.concat())
    }

    fn any_row() -> impl Strategy<Value = (u8, String)> {
        (0u8..4, row_text())
    }

    fn to_row((kind, text): &(u8, String)) -> Row<'_> {
        match kind {
            0 => Row::Line(Cow::Borrowed(text)),
            1 => Row::Block(Cow::Borrowed(text)),
            2 => Row::Continued(Cow::Borrowed(text), RowKind::Line),
            _ => {
                let mut map = Map::new();
                map.insert("k".to_owned(), Value::from(text.as_str()));
                Row::Object(Cow::Owned(map))
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The meter's incremental count gives exactly the obvious greedy fill, and the
        /// content never exceeds either limit.
        #[test]
        fn meter_matches_the_obvious_fill(
            raw in prop::collection::vec(any_row(), 0..12),
            tokens in 1usize..40,
            chars in prop::option::of(1usize..120),
            cl100k in any::<bool>(),
        ) {
            let tokenizer = if cl100k { Tokenizer::Cl100kBase } else { Tokenizer::O200kBase };
            let budget = Budget { chars, tokens: Some(TokenLimit { limit: tokens, tokenizer }) };
            let rows: Vec<Row<'_>> = raw.iter().map(to_row).collect();
            let filled = fill_rows_within(rows.clone(), &budget);
            let (content, omitted) = naive_fill(&rows, &budget);
            prop_assert_eq!(&filled.content, &content);
            prop_assert_eq!(filled.omitted, omitted);
            prop_assert_eq!(filled.kept + filled.omitted, rows.len() as u64);
            prop_assert!(Measure::Tokens(tokenizer).count(&filled.content) <= tokens);
            if let Some(c) = chars {
                prop_assert!(Measure::Chars.count(&filled.content) <= c);
            }
        }
    }
}

mod object_rows {
    use super::*;
    use proptest::prelude::*;

    /// An object row rendered the obvious way: the keys sorted, each value looked up by key.
    fn by_lookup(map: &Map<String, Value>) -> String {
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        let pairs: Vec<String> = keys
            .into_iter()
            .map(|k| format!("{k}={}", render_value(&map[k])))
            .collect();
        pairs.join(",")
    }

    fn any_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[a-z=,\"é😀]{0,6}".prop_map(|s| json!([s, {"k": 1}])),
        ]
    }

    proptest! {
        /// Keys in any order, non-ASCII, empty and sharing prefixes; values of every kind.
        #[test]
        fn an_object_row_renders_its_pairs_sorted_by_key(
            pairs in prop::collection::vec(("[a-cé😀A_]{0,3}", any_value()), 0..8),
        ) {
            let map: Map<String, Value> = pairs.into_iter().collect();
            let row = Row::Object(Cow::Borrowed(&map));
            prop_assert_eq!(render_row(&row), by_lookup(&map));
        }
    }
}
