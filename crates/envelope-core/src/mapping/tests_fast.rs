//! The small-result path ([`super::super::fast`]) against the full mapping: the shapes it
//! takes map exactly as the parsed result does, under every budget kind and text setting.

use super::*;
use crate::budget::{Budget, LongRows, TextRows, Tokenizer};
use crate::mapping::fast::map_small_response;

/// Every context the comparison runs under: character and token budgets of several sizes,
/// lines and blocks, long rows split and kept, both media modes.
fn contexts() -> Vec<MappingContext<'static>> {
    let mut all = Vec::new();
    for n in [0, 1, 3, 7, 12, 30, 80, 5000] {
        for budget in [Budget::chars(n), Budget::tokens(n, Tokenizer::O200kBase)] {
            for text_rows in [TextRows::Lines, TextRows::Blocks] {
                for long_rows in [LongRows::Split, LongRows::Keep] {
                    for media in [MediaMode::Passthrough, MediaMode::Describe] {
                        all.push(MappingContext {
                            call_id: "c9",
                            tool: "t",
                            server: "s",
                            budget,
                            text: TextShape {
                                text_rows,
                                long_rows,
                            },
                            media,
                        });
                    }
                }
            }
        }
    }
    all
}

fn line_of(result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result}}}"#)
}

/// The fast path's envelope of `result` in every context; it must take it (`Some`) when
/// `taken`, and whenever it does, equal the full mapping.
fn check(result: &str, taken: bool) {
    let parsed: Value = serde_json::from_str(result).unwrap();
    for ctx in contexts() {
        let full = map_outcome(
            &Outcome::Result {
                result: parsed.clone(),
            },
            &ctx,
        );
        match map_small_response(&line_of(result), &ctx) {
            Some(fast) => assert_eq!(fast, full, "{result} under {ctx:?}"),
            None => assert!(!taken, "not taken: {result} under {ctx:?}"),
        }
    }
}

#[test]
fn the_common_shapes_take_the_small_path_and_map_as_in_full() {
    let taken = [
        // The benchmark's row (an SDK server with an outputSchema: a text copy beside it).
        r#"{"content":[{"type":"text","text":"{\"rows\":[{\"i\":1,\"name\":\"alpha\",\"ok\":true}]}"}],"structuredContent":{"rows":[{"i":1,"name":"alpha","ok":true}]}}"#,
        // server-everything's echo; lines; a text that is JSON; escapes and non-ASCII.
        r#"{"content":[{"type":"text","text":"Echo: hello"}]}"#,
        r#"{"content":[{"type":"text","text":"a\nbb\n\nccc d\n"},{"type":"text","text":"é😀 \u00e9\t\"q\""}]}"#,
        r#"{"content":[{"type":"text","text":"[{\"a\":1},{\"b\":[2,3]}]"}],"isError":false}"#,
        // The header-and-rows rule, rows of every value kind, keys out of order and escaped.
        r#"{"structuredContent":{"total":3,"next":null,"items":[{"z":-1.5,"a":"x;y","m":[1,{"k":"v"}]},{"b":true,"a\u00e9":12345678901234567890123},{}]}}"#,
        r#"{"structuredContent":[{"n":0},{"n":-0},{"n":1e3},{"n":"\u0041"}],"content":[]}"#,
        // No qualifying array, two of them: the object is one row.
        r#"{"structuredContent":{"a":[1,2],"b":"c"}}"#,
        r#"{"structuredContent":{"a":[{"x":1}],"b":[{"y":2}]}}"#,
        // The Python SDK's and FastMCP's wrapping of a string; a wrapped number.
        r#"{"content":[{"type":"text","text":"one\ntwo"}],"structuredContent":{"result":"one\ntwo"}}"#,
        r#"{"structuredContent":{"result":42}}"#,
        // A 2026-07-28 server's result, `_meta` with and without the server's identity.
        r#"{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"},"k":1}}"#,
        r#"{"content":[{"type":"text","text":"hi"}],"_meta":{"io.modelcontextprotocol/serverInfo":{}}}"#,
        // Null members read as absent; unknown members skipped.
        r#"{"content":[{"type":"text","text":"x","annotations":{"audience":["user"]}}],"structuredContent":null,"isError":null,"task":null,"extra":[1]}"#,
        r#"{"content":[]}"#,
        r#"{"structuredContent":[]}"#,
        // A row longer than any budget above: split into pieces, or left out.
        &format!(
            r#"{{"structuredContent":[{{"s":"{}"}},{{"t":1}}]}}"#,
            "w".repeat(6000)
        ),
        &format!(
            r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#,
            "long line ".repeat(700)
        ),
    ];
    for result in taken {
        check(result, true);
    }
}

#[test]
fn other_shapes_are_left_to_the_full_mapping_or_map_the_same() {
    let others = [
        r#"{"content":[{"type":"text","text":"x"}],"isError":true}"#,
        r#"{"content":[{"type":"image","mimeType":"image/png","data":"TWFu"}]}"#,
        r#"{"content":[{"type":"text","text":"x"},{"type":"audio","mimeType":"audio/wav","data":"TWFu"}],"structuredContent":[{"a":1}]}"#,
        r#"{"content":[{"type":"resource_link","uri":"u","name":"n"}]}"#,
        r#"{"content":[{"type":"text","text":5}]}"#,
        r#"{"content":[{"type":"text"}]}"#,
        r#"{"content":["x"]}"#,
        r#"{"content":"x"}"#,
        r#"{"content":null}"#,
        r#"{}"#,
        r#"{"resultType":"input_required","inputRequests":{}}"#,
        r#"{"task":{"taskId":"t1","status":"working"}}"#,
        r#"{"structuredContent":{"call_id":"1","tool":"t","status":"ok","content":"x","omitted":0,"retryable":false}}"#,
        r#"{"structuredContent":[{"a":1},2]}"#,
        r#"{"structuredContent":{"result":[1,"two"]}}"#,
        r#"{"structuredContent":"text"}"#,
        r#"{"structuredContent":{"a":1,"a":2}}"#,
        r#"{"structuredContent":[{"a":1,"a":2}]}"#,
        r#"{"content":[{"type":"text","text":"x","type":"text"}]}"#,
    ];
    for result in others {
        check(result, false);
    }
}

#[test]
fn lines_that_are_not_plain_success_responses_are_not_taken() {
    let ctx = &contexts()[0];
    let ok = r#"{"content":[{"type":"text","text":"x"}]}"#;
    assert!(map_small_response(&line_of(ok), ctx).is_some());
    for line in [
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok},"error":{{}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok},"result":{ok}}}"#),
        format!(r#"{{"jsonrpc":"1.0","id":1,"result":{ok}}}"#),
        format!(r#"{{"jsonrpc":"2.0","result":{ok}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok}}} x"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{ok},"method":"m"}}"#),
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]"#.into(),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
            "x".repeat(crate::mapping::fast::FAST_MAX_BYTES)
        ),
    ] {
        assert!(map_small_response(&line, ctx).is_none(), "{line}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any result of the generator of `tests_props.rs`: the small path, when it takes it,
    /// gives the full mapping's envelope, under character and token budgets.
    #[test]
    fn the_small_path_equals_the_full_mapping(
        result in super::props::raw_result_value(),
        n in 0usize..60,
        tokens in any::<bool>(),
        blocks in any::<bool>(),
        keep in any::<bool>(),
    ) {
        let ctx = MappingContext {
            call_id: "c",
            tool: "t",
            server: "s",
            budget: if tokens { Budget::tokens(n, Tokenizer::Cl100kBase) } else { Budget::chars(n) },
            text: TextShape {
                text_rows: if blocks { TextRows::Blocks } else { TextRows::Lines },
                long_rows: if keep { LongRows::Keep } else { LongRows::Split },
            },
            media: MediaMode::Passthrough,
        };
        let full = map_outcome(&Outcome::Result { result: result.clone() }, &ctx);
        if let Some(fast) = map_small_response(&line_of(&result.to_string()), &ctx) {
            prop_assert_eq!(fast, full);
        }
    }
}
