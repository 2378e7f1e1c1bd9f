//! Properties over any outcome and result, and raw results mapped without a full parse.

use super::*;

// ---- properties ------------------------------------------------------------------------

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z{}\\[\\]\":,=\\n\\r é😀]{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "text",
            "image",
            "audio",
            "resource",
            "resource_link",
            "TWE=",
            "{\"a\":[{\"b\":1}]}",
            "[1,{\"c\":2}]",
            "MCP error -32602: x",
            "rate_limit",
            "overloaded",
        ])
        .prop_map(Value::from),
    ];
    let keys = prop::sample::select(vec![
        "type",
        "text",
        "data",
        "mimeType",
        "resource",
        "uri",
        "name",
        "blob",
        "content",
        "structuredContent",
        "isError",
        "error",
        "message",
        "code",
        "items",
        "k",
    ]);
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

fn arb_outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        arb_json().prop_map(|result| Outcome::Result { result }),
        (
            prop::collection::vec(arb_json(), 0..5),
            prop::option::of(arb_json()),
            prop::option::of(arb_json())
        )
            .prop_map(|(content, sc, is_error)| {
                let mut r = Map::new();
                r.insert("content".into(), Value::Array(content));
                if let Some(sc) = sc {
                    r.insert("structuredContent".into(), sc);
                }
                if let Some(e) = is_error {
                    r.insert("isError".into(), e.is_truthy_bool());
                }
                Outcome::Result {
                    result: Value::Object(r),
                }
            }),
        arb_json().prop_map(|error| Outcome::RpcError { error }),
        (any::<u64>(), any::<Option<u64>>()).prop_map(|(timeout_ms, timeout_ns)| {
            Outcome::Timeout {
                timeout_ms,
                timeout_ns,
            }
        }),
        ".{0,40}".prop_map(|detail| Outcome::ServerExited { detail }),
        ".{0,40}".prop_map(|detail| Outcome::InvalidResponse { detail }),
        ".{0,40}".prop_map(|reason| Outcome::Unavailable { reason }),
        Just(Outcome::NoSuchTool {
            servers_down: vec![],
            exposed_as: vec![],
            dropped: vec![],
        }),
    ]
}

trait TruthyBool {
    fn is_truthy_bool(&self) -> Value;
}
impl TruthyBool for Value {
    /// Half the time a real bool, otherwise the value itself (isError of any shape).
    fn is_truthy_bool(&self) -> Value {
        match self {
            Value::Null => Value::Bool(true),
            Value::Bool(_) => self.clone(),
            Value::Number(_) => Value::Bool(false),
            other => other.clone(),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn text_content_never_exceeds_budget(
        lines in prop::collection::vec("[a-z é😀\\r{\\[]{0,10}", 0..12),
        trailing in any::<bool>(),
        budget in 0usize..80,
    ) {
        let mut t = lines.join("\n");
        if trailing { t.push('\n'); }
        let env = ok(json!({"content": [text(&t)]}), budget);
        prop_assert_ne!(env.status, Status::Error);
        prop_assert!(env.content.chars().count() <= budget);
        prop_assert_eq!(env.status == Status::Truncated, env.omitted > 0);
    }

    #[test]
    fn any_outcome_maps_without_panicking(
        outcome in arb_outcome(),
        budget in 0usize..120,
        describe in any::<bool>(),
    ) {
        let media = if describe { MediaMode::Describe } else { MediaMode::Passthrough };
        let mapped = map_outcome(&outcome, &ctx(budget, media));
        let env = &mapped.envelope;
        match env.status {
            Status::Error => {
                let (t, message) = env.content.split_once(": ").unwrap();
                let t = ErrorType::parse(t).unwrap();
                prop_assert_eq!(env.retryable, t.is_retryable());
                prop_assert_eq!(env.omitted, 0);
                if budget >= 40 {
                    prop_assert!(message.chars().count() <= budget);
                }
                prop_assert!(mapped.media.is_empty());
            }
            _ => {
                prop_assert!(env.content.chars().count() <= budget);
                prop_assert!(!env.retryable);
                if describe { prop_assert!(mapped.media.is_empty()); }
            }
        }
        let answer = call_tool_result(&mapped);
        prop_assert_eq!(&answer["structuredContent"], &env.to_value());
        prop_assert_eq!(answer["isError"].as_bool(), Some(env.status == Status::Error));
        let round: Outcome = serde_json::from_str(&serde_json::to_string(&outcome).unwrap()).unwrap();
        prop_assert_eq!(round, outcome);
    }
}

// ---- raw results -----------------------------------------------------------------------

fn raw_ctx(
    budget: usize,
    media: MediaMode,
    long_rows: crate::budget::LongRows,
) -> (String, MappingContext<'static>) {
    (
        String::new(),
        MappingContext {
            call_id: "c1",
            tool: "t",
            server: "s",
            budget: crate::budget::Budget::chars(budget),
            text: crate::mapping::TextShape {
                long_rows,
                ..Default::default()
            },
            media,
        },
    )
}

/// `map_raw_result` of `text` equals `map_outcome` of the fully parsed result, whether long
/// rows are kept whole or split.
fn assert_raw_same(text: &str, budget: usize, media: MediaMode) {
    for long_rows in [
        crate::budget::LongRows::Keep,
        crate::budget::LongRows::Split,
    ] {
        assert_raw_same_with(text, budget, media, long_rows);
    }
}

fn assert_raw_same_with(
    text: &str,
    budget: usize,
    media: MediaMode,
    long_rows: crate::budget::LongRows,
) {
    let (_, ctx) = raw_ctx(budget, media, long_rows);
    let result: Value = serde_json::from_str(text).unwrap();
    let full = map_outcome(&Outcome::Result { result }, &ctx);
    let lazy = map_raw_result(text, &ctx);
    assert_eq!(lazy, full, "budget {budget}: {text}");
    // The same result inside a whole response line, members in either order: mapped in
    // one pass, or given up on (then the caller parses in full) but never different.
    for line in [
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{text}}}"#),
        format!(r#"{{"result":{text},"id":"x","jsonrpc":"2.0"}}"#),
    ] {
        if let Some(lazy) = map_raw_response(&line, &ctx) {
            assert_eq!(lazy, full, "budget {budget}: {line}");
        }
    }
}

#[test]
fn raw_responses_that_are_not_plain_success_responses_are_given_up_on() {
    let (_, ctx) = raw_ctx(100, MediaMode::Passthrough, crate::budget::LongRows::Keep);
    let ok = r#"{"structuredContent":{"rows":[{"a":1},{"a":2}]}}"#;
    let good = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok}}}"#);
    assert_eq!(
        map_raw_response(&good, &ctx).unwrap().envelope.status,
        Status::Ok
    );
    for line in [
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok},"error":{{}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok},"result":{ok}}}"#),
        format!(r#"{{"jsonrpc":"1.0","id":1,"result":{ok}}}"#),
        format!(r#"{{"jsonrpc":"2.0","result":{ok}}}"#),
        r#"{"jsonrpc":"2.0","id":1}"#.to_string(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok}}} x"#),
        r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"rows":[{"a":1},tru]}}}"#
            .to_string(),
    ] {
        assert!(map_raw_response(&line, &ctx).is_none(), "{line}");
    }
}

fn small_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-1000i64..1000).prop_map(Value::from),
        "[a-z;{} ]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec(("[a-c]", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn row_object() -> impl Strategy<Value = Value> {
    prop::collection::vec(("[a-d]", small_value()), 0..3)
        .prop_map(|kv| Value::Object(kv.into_iter().collect()))
}

fn row_array() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::collection::vec(row_object(), 0..40),
        1 => prop::collection::vec(small_value(), 0..40),
    ]
    .prop_map(Value::from)
}

fn structured() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => row_array(),
        3 => prop::collection::vec(
            ("[a-e]", prop_oneof![2 => row_array(), 1 => small_value()]),
            0..4
        )
        .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        1 => small_value(),
    ]
}

pub(super) fn raw_result_value() -> impl Strategy<Value = Value> {
    let block = prop_oneof![
        "[a-z\n{}\\[\\]]{0,10}".prop_map(|t| json!({"type": "text", "text": t})),
        Just(json!({"type": "image", "mimeType": "image/png", "data": "TWFu"})),
        Just(json!({"type": "resource_link", "uri": "u", "name": "n"})),
        small_value(),
    ];
    (
        prop::option::of(structured()),
        prop::option::of(prop::collection::vec(block, 0..4)),
        prop::option::of(prop_oneof![
            Just(json!(true)),
            Just(json!(false)),
            Just(json!(1))
        ]),
        any::<bool>(),
    )
        .prop_map(|(sc, content, is_error, null_sc)| {
            let mut m = Map::new();
            if let Some(c) = content {
                m.insert("content".into(), Value::from(c));
            }
            match sc {
                Some(sc) => {
                    m.insert("structuredContent".into(), sc);
                }
                None if null_sc => {
                    m.insert("structuredContent".into(), Value::Null);
                }
                None => {}
            }
            if let Some(e) = is_error {
                m.insert("isError".into(), e);
            }
            Value::Object(m)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn raw_mapping_equals_full_mapping(
        result in raw_result_value(),
        budget in 0usize..80,
        describe in any::<bool>(),
        pretty in any::<bool>(),
    ) {
        let media = if describe { MediaMode::Describe } else { MediaMode::Passthrough };
        let text = if pretty {
            serde_json::to_string_pretty(&result).unwrap()
        } else {
            serde_json::to_string(&result).unwrap()
        };
        assert_raw_same(&text, budget, media);
    }
}

#[test]
fn raw_mapping_edge_cases() {
    let rows: Vec<Value> = (0..500).map(|i| json!({"i": i})).collect();
    // A long row among the rows only counted: split, it is several rows.
    let mut long_late = rows.clone();
    long_late[400] = json!({"text": "x".repeat(3000)});
    let long_number = vec![json!({"n": 1}); 300]
        .into_iter()
        .chain([json!(1E15), json!({"a": [1E15, 1E15, 1E15]})])
        .collect::<Vec<_>>();
    let cases = [
        json!({"structuredContent": long_late}).to_string(),
        json!({"structuredContent": {"rows": long_late, "n": 1}}).to_string(),
        // Numbers written longer than their JSON text (`1E15` is `1000000000000000.0`).
        r#"{"structuredContent": [{"n":1},{"n":2},{"n":3},{"n":4},1E15,{"a":[1E15,1E15,1E15,1E15]}]}"#.into(),
        json!({"structuredContent": long_number}).to_string(),
        json!({"structuredContent": {"rows": rows}}).to_string(),
        json!({"structuredContent": {"rows": rows, "n": 500, "more": [1, 2]}}).to_string(),
        json!({"structuredContent": {"a": rows, "b": rows}}).to_string(),
        json!({"structuredContent": rows, "content": [image("TWFu")]}).to_string(),
        json!({"structuredContent": rows, "isError": true}).to_string(),
        json!({"structuredContent": {"rows": []}}).to_string(),
        json!({"structuredContent": {"rows": [{"a": 1}, 2]}}).to_string(),
        json!({"structuredContent": {"error": {"type": "rate_limit"}}, "isError": true})
            .to_string(),
        // Duplicate and escaped keys: parsed in full, last duplicate wins.
        r#"{"structuredContent": {"rows": [{"a":1}]}, "structuredContent": [1, 2, 3]}"#.into(),
        r#"{"structuredContent": {"rows": [{"a":1},{"b":2}], "rows": [{"c":3}]}}"#.into(),
        r#"{"structured\u0043ontent": [{"a":1},{"b":2},{"c":3}], "content": []}"#.into(),
        r#"{"structuredContent": {"r\u006fws": [{"a":1},{"b":2}]}}"#.into(),
        r#" { "structuredContent" : [ {"a" : 1} , 7 , { } ] , "isError" : false } "#.into(),
        "[1, 2]".into(),
        "null".into(),
        r#"{"content": "x"}"#.into(),
        r#"{"structuredContent": null}"#.into(),
    ];
    for text in &cases {
        for budget in [0, 1, 2, 3, 5, 10, 20, 100, 5000] {
            for media in [MediaMode::Passthrough, MediaMode::Describe] {
                assert_raw_same(text, budget, media);
            }
        }
    }
}

// ---- a result's members found in one pass --------------------------------------------

proptest! {
    /// What one pass over a result object finds is what looking each member up gives, for
    /// objects with and without each member, in any order, `null` included.
    #[test]
    fn result_members_in_one_pass_are_the_members_looked_up(
        members in prop::collection::vec(
            (prop::sample::select(vec![
                "content", "structuredContent", "isError", "_meta", "resultType", "task",
                "Content", "content ", "x",
            ]), arb_json()),
            0..9,
        ),
    ) {
        let obj: Map<String, Value> = members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let found = super::rows::ResultMembers::of(&obj);
        let looked_up = super::rows::ResultMembers {
            content: obj.get("content"),
            structured: obj.get("structuredContent"),
            is_error: obj.get("isError"),
            meta: obj.get("_meta"),
            result_type: obj.get("resultType"),
            task: obj.get("task"),
        };
        prop_assert_eq!(found, looked_up);
    }
}
