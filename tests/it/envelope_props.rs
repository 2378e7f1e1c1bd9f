//! Property tests of the envelope core (issue 2): on the success path the content never exceeds
//! the budget, `omitted` counts exactly the rows not rendered, the kept rows are always a prefix
//! of the input, and the six keys are always present, in order.

use mcp_envelope::envelope::{render_row, summarize_tool_result, Row, Status, ToolResult};
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// Keys and strings drawn from characters that stress the rules: separators, multi-byte
/// letters, an emoji, a combining accent.
fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('a'),
            Just('Z'),
            Just('0'),
            Just(' '),
            Just(','),
            Just(';'),
            Just('='),
            Just('é'),
            Just('中'),
            Just('😀'),
            Just('\u{301}'),
        ],
        0..6,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        (-1000.0f64..1000.0).prop_map(|f| json!(f)),
        text().prop_map(Value::from),
        proptest::collection::vec(any::<u8>().prop_map(Value::from), 0..3).prop_map(Value::from),
    ]
}

fn row() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::btree_map(text(), scalar(), 0..4).prop_map(|m| m.into_iter().collect())
}

fn result() -> impl Strategy<Value = (Vec<Map<String, Value>>, usize)> {
    (proptest::collection::vec(row(), 0..12), 0usize..80)
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn success_path_invariants((rows, budget) in result()) {
        let input = ToolResult { call_id: "c".into(), tool: "t".into(), rows: rows.clone(), error: None };
        let env = summarize_tool_result(&input, budget);

        // Content never exceeds the budget (Unicode scalar values).
        prop_assert!(chars(&env.content) <= budget, "{} > {budget}", chars(&env.content));

        // The kept rows are a prefix: content equals the first k rows joined with "; ", and
        // omitted counts the rest exactly.
        let rendered: Vec<String> = rows.iter().map(|r| render_row(&Row::Object(Cow::Borrowed(r)))).collect();
        let kept = rows.len() - env.omitted as usize;
        prop_assert_eq!(&env.content, &rendered[..kept].join("; "));

        // Greedy: the first omitted row would not have fitted.
        if kept < rows.len() {
            let sep = if kept == 0 { 0 } else { 2 };
            prop_assert!(chars(&env.content) + sep + chars(&rendered[kept]) > budget);
        }
        prop_assert_eq!(env.status, if env.omitted > 0 { Status::Truncated } else { Status::Ok });
        prop_assert!(!env.retryable);
    }

    #[test]
    fn six_keys_in_order_on_both_paths((rows, budget) in result(), err in proptest::option::of(("[a-z_]{0,12}", text()))) {
        let mut value = json!({"call_id": "id", "tool": "t", "rows": rows});
        if let Some((t, m)) = &err {
            value["error"] = json!({"type": t, "message": m});
        }
        let env = summarize_tool_result(&ToolResult::from_json(&value).unwrap(), budget);
        let v = env.to_value();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        prop_assert_eq!(keys, vec!["call_id", "tool", "status", "content", "omitted", "retryable"]);
        if let Some((t, m)) = err {
            prop_assert_eq!(env.status, Status::Error);
            prop_assert_eq!(env.content, format!("{t}: {m}"));
            prop_assert_eq!(env.omitted, 0);
        }
    }
}
