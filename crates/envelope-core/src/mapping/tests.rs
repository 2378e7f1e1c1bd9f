use super::*;
use crate::envelope::Status;
use proptest::prelude::*;
use serde_json::{json, Map};

const SERVER: &str = "git";

fn ctx(budget: usize, media: MediaMode) -> MappingContext<'static> {
    MappingContext {
        call_id: "c7",
        tool: "git_log",
        server: SERVER,
        budget: crate::budget::Budget::chars(budget),
        text: crate::mapping::TextShape {
            long_rows: crate::budget::LongRows::Keep,
            ..Default::default()
        },
        media,
    }
}

fn map(outcome: Outcome, budget: usize) -> Mapped {
    map_outcome(&outcome, &ctx(budget, MediaMode::Passthrough))
}

fn map_result_with(result: Value, budget: usize, media: MediaMode) -> Mapped {
    map_outcome(&Outcome::Result { result }, &ctx(budget, media))
}

fn ok(result: Value, budget: usize) -> Envelope {
    map_result_with(result, budget, MediaMode::Passthrough).envelope
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn assert_error(env: &Envelope, error_type: ErrorType, content: &str) {
    assert_eq!(env.status, Status::Error);
    assert_eq!(env.content, content);
    assert_eq!(env.omitted, 0);
    assert_eq!(env.retryable, error_type.is_retryable());
    assert!(env.content.starts_with(&format!("{error_type}: ")));
}

// ---- success path ----------------------------------------------------------------------

#[test]
fn time_server_structured_content_is_one_row() {
    let sc = json!({"timezone": "Europe/Warsaw", "datetime": "2026-11-30T03:48:18+01:00", "day_of_week": "Monday", "is_dst": false});
    let result = json!({
        "content": [text(&sc.to_string())],
        "structuredContent": sc,
        "isError": false
    });
    let env = ok(result, 2000);
    assert_eq!(
        env.content,
        "datetime=2026-11-30T03:48:18+01:00,day_of_week=Monday,is_dst=false,timezone=Europe/Warsaw"
    );
    assert_eq!(env.status, Status::Ok);
    assert_eq!(env.omitted, 0);
    assert_eq!(env.call_id, "c7");
    assert_eq!(env.tool, "git_log");
    assert!(!env.retryable);
}

/// The downstream result's `_meta` is kept, less the downstream server's serverInfo: the
/// answer is the proxy's.
#[test]
fn result_meta_is_kept_without_the_servers_identity() {
    let info = json!({"name": "modern-fixture", "version": "1.0.0"});
    let with = |meta: Value| {
        let result = json!({"content": [text("hi")], "_meta": meta});
        map_result_with(result, 100, MediaMode::Passthrough).meta
    };
    let meta = with(json!({"io.modelcontextprotocol/serverInfo": info, "com.example/trace": 7}));
    assert_eq!(meta, Some(json!({"com.example/trace": 7})));
    assert_eq!(
        with(json!({"io.modelcontextprotocol/serverInfo": info})),
        None
    );
    assert_eq!(
        with(json!({"progressToken": 3})),
        Some(json!({"progressToken": 3}))
    );
    assert_eq!(with(Value::Null), None);
    // Not an object: dropped (every revision's schema makes `_meta` an object).
    for not_object in [json!(5), json!([1]), json!("s"), json!(true)] {
        assert_eq!(with(not_object.clone()), None, "{not_object}");
    }
}

#[test]
fn git_log_text_is_truncated_with_rows_omitted() {
    let log = "commit 3f2a9c1d\nAuthor: Ada <ada@example.org>\nDate:   Mon Nov 30 03:48:18 2026 +0100\n\n    Fix the parser\n\ncommit 1b7e0aa2\nAuthor: Bob <bob@example.org>\n";
    let env = ok(json!({"content": [text(log)]}), 45);
    assert_eq!(
        env.content,
        "commit 3f2a9c1d\nAuthor: Ada <ada@example.org>"
    );
    assert_eq!(env.status, Status::Truncated);
    assert_eq!(env.omitted, 6);
    let env = ok(json!({"content": [text(log)]}), 2000);
    assert_eq!(env.content, log.strip_suffix('\n').unwrap());
    assert_eq!(env.status, Status::Ok);
}

#[test]
fn single_array_field_gives_header_row_then_items() {
    let sc = json!({"items": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}], "total": 3});
    let env = ok(
        json!({"content": [], "structuredContent": sc.clone()}),
        2000,
    );
    assert_eq!(
        env.content,
        "total=3; id=1,name=a; id=2,name=b; id=3,name=c"
    );
    // Same from a text block holding the JSON.
    let env = ok(json!({"content": [text(&sc.to_string())]}), 2000);
    assert_eq!(
        env.content,
        "total=3; id=1,name=a; id=2,name=b; id=3,name=c"
    );
    // No other fields: no header row.
    let env = ok(
        json!({"content": [], "structuredContent": {"items": [{"a": 1}]}}),
        100,
    );
    assert_eq!(env.content, "a=1");
    // Budget: header plus one item.
    let env = ok(json!({"content": [], "structuredContent": sc}), 20);
    assert_eq!(env.content, "total=3; id=1,name=a");
    assert_eq!(env.omitted, 2);
}

#[test]
fn two_arrays_of_objects_or_empty_or_mixed_arrays_make_one_row() {
    let env = ok(
        json!({"content": [], "structuredContent": {"a": [{"x": 1}], "b": [{"y": 2}]}}),
        100,
    );
    assert_eq!(env.content, r#"a=[{"x":1}],b=[{"y":2}]"#);
    let env = ok(
        json!({"content": [], "structuredContent": {"a": [], "n": 1}}),
        100,
    );
    assert_eq!(env.content, "a=[],n=1");
    let env = ok(
        json!({"content": [], "structuredContent": {"a": [{"x": 1}, 2]}}),
        100,
    );
    assert_eq!(env.content, r#"a=[{"x":1},2]"#);
    // One array of objects next to an array of scalars: the scalar array is a header field.
    let env = ok(
        json!({"content": [], "structuredContent": {"tags": [1, 2], "rows": [{"x": 1}]}}),
        100,
    );
    assert_eq!(env.content, "tags=[1,2]; x=1");
}

#[test]
fn array_of_objects_and_mixed_array() {
    let env = ok(
        json!({"content": [], "structuredContent": [{"b": 2, "a": 1}, {"a": 3}]}),
        100,
    );
    assert_eq!(env.content, "a=1,b=2; a=3");
    let env = ok(
        json!({"content": [text(r#"[{"a": 1}, 5, "s", [1, 2], null]"#)]}),
        100,
    );
    assert_eq!(
        env.content,
        "a=1; value=5; value=s; value=[1,2]; value=null"
    );
    let env = ok(json!({"content": [text("[]")]}), 100);
    assert_eq!(env.content, "");
    assert_eq!(env.status, Status::Ok);
}

/// A text block whose whole text is a JSON scalar (`42`, `"hi"`, `true`) is plain text: its
/// row is the text as written (README "Where rows come from"); only `structuredContent` and
/// array items give `value=` rows.
#[test]
fn a_text_block_of_a_json_scalar_is_plain_text() {
    for scalar in ["42", "\"hi\"", "true", "null", "-1.5"] {
        assert_eq!(ok(json!({"content": [text(scalar)]}), 100).content, scalar);
    }
}

#[test]
fn scalar_structured_content_is_a_value_row() {
    for (sc, expected) in [
        (json!(42), "value=42"),
        (json!("hi"), "value=hi"),
        (json!(true), "value=true"),
        (json!(-1.5), "value=-1.5"),
    ] {
        assert_eq!(
            ok(json!({"content": [], "structuredContent": sc}), 100).content,
            expected
        );
    }
    // null counts as absent: rows come from content.
    let env = ok(
        json!({"content": [text("x")], "structuredContent": null}),
        100,
    );
    assert_eq!(env.content, "x");
}

#[test]
fn text_json_only_when_it_looks_like_and_parses_as_object_or_array() {
    assert_eq!(
        ok(json!({"content": [text(" {\"a\": 1}\n")]}), 100).content,
        "a=1"
    );
    // Starts like JSON but does not parse: lines.
    assert_eq!(
        ok(json!({"content": [text("{not json\n}")]}), 100).content,
        "{not json\n}"
    );
    // A bare JSON scalar in text stays text.
    assert_eq!(ok(json!({"content": [text("42")]}), 100).content, "42");
    assert_eq!(
        ok(json!({"content": [text("\"q\"")]}), 100).content,
        "\"q\""
    );
}

#[test]
fn crlf_lines_trailing_newline_and_blank_lines() {
    let env = ok(json!({"content": [text("one\r\ntwo\r\n")]}), 100);
    assert_eq!(env.content, "one\ntwo");
    let env = ok(json!({"content": [text("a\n\nb\n")]}), 100);
    assert_eq!(env.content, "a\n\nb");
    // Budget counts the blank line and its separators: "a\n\n" is 3.
    let env = ok(json!({"content": [text("a\n\nb\n")]}), 3);
    assert_eq!(env.content, "a\n");
    assert_eq!(env.omitted, 1);
    // Only the last \r of a line is dropped, and only before \n.
    let env = ok(json!({"content": [text("x\r\r\ny\r")]}), 100);
    assert_eq!(env.content, "x\r\ny");
    // Empty text: no rows.
    let env = ok(json!({"content": [text("")]}), 100);
    assert_eq!((env.content.as_str(), env.omitted), ("", 0));
    // Two text blocks: their lines join with \n; an object row in between uses "; ".
    let env = ok(
        json!({"content": [text("a"), text("b"), text("{\"k\":1}"), text("c")]}),
        100,
    );
    assert_eq!(env.content, "a\nb; k=1; c");
}

#[test]
fn lengths_are_unicode_scalar_values() {
    let env = ok(json!({"content": [text("żółć\n😀😀")]}), 7);
    assert_eq!(env.content, "żółć\n😀😀");
    let env = ok(json!({"content": [text("żółć\n😀😀")]}), 6);
    assert_eq!(env.content, "żółć");
    assert_eq!(env.omitted, 1);
}

// ---- media ---------------------------------------------------------------------------------

#[test]
fn base64_decoded_sizes() {
    assert_eq!(base64_decoded_len(""), 0);
    assert_eq!(base64_decoded_len("TWFu"), 3); // "Man", padding 0
    assert_eq!(base64_decoded_len("TWE="), 2); // "Ma", padding 1
    assert_eq!(base64_decoded_len("TQ=="), 1); // "M", padding 2
    assert_eq!(base64_decoded_len("TWFuTQ=="), 4);
    assert_eq!(base64_decoded_len("TWFuTQ"), 4); // unpadded
    assert_eq!(base64_decoded_len("TWFuTWE=\n"), 5);
    // Line breaks inside (RFC 2045) are not data; malformed padding never underflows.
    assert_eq!(base64_decoded_len("AAAA\nAA==\n"), 4);
    assert_eq!(base64_decoded_len("=="), 0);
    assert_eq!(base64_decoded_len("AAA="), 2);
}

fn image(data: &str) -> Value {
    json!({"type": "image", "data": data, "mimeType": "image/png"})
}

#[test]
fn image_and_audio_pass_through_untouched_and_are_not_rows() {
    let audio = json!({"type": "audio", "data": "TWE=", "mimeType": "audio/wav", "annotations": {"priority": 1}});
    let result = json!({"content": [text("caption"), image("TWFu"), audio.clone(), text("end")]});
    let mapped = map_result_with(result, 100, MediaMode::Passthrough);
    assert_eq!(mapped.envelope.content, "caption\nend");
    assert_eq!(mapped.envelope.status, Status::Ok);
    assert_eq!(mapped.media, vec![image("TWFu"), audio]);
}

#[test]
fn media_described_with_decoded_size() {
    let result = json!({"content": [image("TWFu"), image("TWE="), {"type": "audio", "data": "TQ==", "mimeType": "audio/wav"}]});
    let mapped = map_result_with(result, 500, MediaMode::Describe);
    assert!(mapped.media.is_empty());
    assert_eq!(
        mapped.envelope.content,
        "bytes=3,mimeType=image/png,type=image; bytes=2,mimeType=image/png,type=image; bytes=1,mimeType=audio/wav,type=audio"
    );
}

#[test]
fn media_with_structured_content() {
    let result =
        json!({"content": [text("{\"a\":1}"), image("TWFu")], "structuredContent": {"a": 1}});
    let mapped = map_result_with(result.clone(), 500, MediaMode::Passthrough);
    assert_eq!(mapped.envelope.content, "a=1");
    assert_eq!(mapped.media, vec![image("TWFu")]);
    let mapped = map_result_with(result, 500, MediaMode::Describe);
    assert_eq!(
        mapped.envelope.content,
        "a=1; bytes=3,mimeType=image/png,type=image"
    );
    assert!(mapped.media.is_empty());
}

#[test]
fn resource_link_row() {
    let result = json!({"content": [
        {"type": "resource_link", "uri": "file:///repo/README.md", "name": "README.md", "mimeType": "text/markdown", "description": "x"},
        {"type": "resource_link", "uri": "file:///a", "name": "a"}
    ]});
    assert_eq!(
        ok(result, 500).content,
        "mimeType=text/markdown,name=README.md,type=resource_link,uri=file:///repo/README.md; name=a,type=resource_link,uri=file:///a"
    );
}

#[test]
fn embedded_text_resource_gives_uri_row_then_text_rows() {
    let result = json!({"content": [
        {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "line 1\nline 2\n"}},
        {"type": "resource", "resource": {"uri": "file:///d.json", "text": "{\"k\": \"v\"}"}}
    ]});
    assert_eq!(
        ok(result, 500).content,
        "uri=file:///notes.txt; line 1\nline 2; uri=file:///d.json; k=v"
    );
}

#[test]
fn blob_resource_is_media() {
    let blob = json!({"type": "resource", "resource": {"uri": "file:///logo.png", "mimeType": "image/png", "blob": "TWE="}});
    let result = json!({"content": [text("see"), blob.clone()]});
    let mapped = map_result_with(result.clone(), 500, MediaMode::Passthrough);
    assert_eq!(mapped.envelope.content, "see");
    assert_eq!(mapped.media, vec![blob]);
    let mapped = map_result_with(result, 500, MediaMode::Describe);
    assert_eq!(
        mapped.envelope.content,
        "see; bytes=2,mimeType=image/png,type=resource,uri=file:///logo.png"
    );
    assert!(mapped.media.is_empty());
}

#[test]
fn unknown_and_malformed_blocks_become_object_rows() {
    let result = json!({"content": [
        {"type": "hologram", "x": 1},
        {"type": "text"},
        {"type": "image", "mimeType": "image/png"},
        "bare",
        {"type": "resource", "resource": {"uri": "u"}}
    ]});
    let mapped = map_result_with(result, 500, MediaMode::Passthrough);
    assert!(mapped.media.is_empty());
    assert_eq!(
        mapped.envelope.content,
        r#"type=hologram,x=1; type=text; mimeType=image/png,type=image; value=bare; resource={"uri":"u"},type=resource"#
    );
}

#[test]
fn invalid_call_tool_results_are_server_errors() {
    let env = ok(json!("hello"), 500);
    assert_error(
        &env,
        ErrorType::ServerError,
        "server_error: invalid CallToolResult from server 'git': the result is string, not an object",
    );
    let env = ok(json!({"isError": false}), 500);
    assert_error(
        &env,
        ErrorType::ServerError,
        "server_error: invalid CallToolResult from server 'git': `content` is missing",
    );
    let env = ok(json!({"content": "text"}), 500);
    assert_error(
        &env,
        ErrorType::ServerError,
        "server_error: invalid CallToolResult from server 'git': `content` is string, not an array",
    );
    // ... unless structuredContent exists.
    let env = ok(
        json!({"content": "text", "structuredContent": {"a": 1}}),
        500,
    );
    assert_eq!(env.content, "a=1");
    let env = ok(json!({"structuredContent": {"a": 1}}), 500);
    assert_eq!(env.content, "a=1");
}

#[test]
fn huge_borrowed_scalars_are_left_out_without_being_copied_whole() {
    let big = "x".repeat(100_000);
    let env = ok(
        json!({"content": [], "structuredContent": [1, big.clone(), 2]}),
        50,
    );
    assert_eq!(env.content, "value=1");
    assert_eq!(env.omitted, 2);
    // A string of exactly the room left still fits: the bounded copy keeps budget + 1.
    let env = ok(
        json!({"content": [], "structuredContent": ["y".repeat(44)]}),
        50,
    );
    assert_eq!(env.content, format!("value={}", "y".repeat(44)));
    let env = ok(
        json!({"content": [], "structuredContent": {"note": big, "rows": [{"a": 1}]}}),
        50,
    );
    assert_eq!(env.content, "");
    assert_eq!(env.omitted, 2);
}

#[path = "tests_errors.rs"]
mod errors;
#[path = "tests_fast.rs"]
mod fast;
#[path = "tests_props.rs"]
mod props;

// ---- the Python SDK's and FastMCP's `{"result": …}` wrapping ---------------------------

/// A tool returning a long `str` through the Python SDK or FastMCP: `structuredContent` is
/// `{"result": "<the text>"}`. Its lines are the rows (the last one, longer than the budget,
/// split), the fill shows the first ones, and the pages the page tool would answer
/// (`map_result_from`) show the whole text, every row once.
#[test]
fn an_sdk_wrapped_string_gives_the_rows_of_its_text() {
    let lines: Vec<String> = (1..=50).map(|i| format!("line {i:02}")).collect();
    let long = format!("{}\n{}", lines.join("\n"), "x".repeat(250));
    let result = json!({"content": [text(&long)], "structuredContent": {"result": long}});
    let mut c = ctx(100, MediaMode::Passthrough);
    c.text.long_rows = crate::budget::LongRows::Split;
    let first = map_outcome(
        &Outcome::Result {
            result: result.clone(),
        },
        &c,
    )
    .envelope;
    assert_eq!(first.status, Status::Truncated);
    assert!(first.content.starts_with("line 01\nline 02\n"), "{first:?}");
    let total = count_result_rows(&result, &c);
    assert_eq!(total, 50 + 3, "50 lines and 3 pieces of the long one");
    let (mut shown, mut from) = (Vec::new(), 0);
    while from < total {
        let (page, kept) = map_result_from(&result, &c, from);
        assert!(kept > 0, "every page shows a row");
        assert_eq!(page.envelope.omitted, total - from - kept);
        shown.push(page.envelope.content);
        from += kept;
    }
    // Pages end at row boundaries; without the newlines between them, the text comes back.
    assert_eq!(shown.concat().replace('\n', ""), long.replace('\n', ""));
    assert!(shown.len() > 3, "{shown:?}");
}

#[test]
fn a_short_sdk_wrapped_value_is_shown_without_its_wrapper() {
    let short = json!({"content": [text("hello")], "structuredContent": {"result": "hello"}});
    assert_eq!(ok(short, 100).content, "hello");
    let list = json!({"content": [], "structuredContent": {"result": ["a", "b", "c"]}});
    let env = ok(list, 3);
    assert_eq!(env.content, "a\nb");
    assert_eq!(env.omitted, 1);
    // A string item longer than the budget is split like a long line, never left unshown.
    let long = "L".repeat(250);
    let list = json!({"content": [], "structuredContent": {"result": ["short", long, "tail"]}});
    let mut c = ctx(100, MediaMode::Passthrough);
    c.text.long_rows = crate::budget::LongRows::Split;
    let result = list;
    let total = count_result_rows(&result, &c);
    assert_eq!(total, 1 + 3 + 1);
    let (page, kept) = map_result_from(&result, &c, 1);
    assert_eq!((page.envelope.content.len(), kept), (100, 1));
    // Only the one-member `result` object is a wrapping; others stay one row.
    let other = json!({"content": [], "structuredContent": {"summary": "hello"}});
    assert_eq!(ok(other, 100).content, "summary=hello");
    let two = json!({"content": [], "structuredContent": {"result": "a", "more": 1}});
    assert_eq!(ok(two, 100).content, "more=1,result=a");
}

/// The store keeps [`paged_result_json`] of a result; every page of it (row 1 on) is the page
/// of the whole result, and the rows count the same, in either media mode.
#[test]
fn a_page_of_the_held_members_is_the_page_of_the_whole_result() {
    let rows = json!({"rows": [{"a": 1}, {"a": 2}, {"a": 3}, {"a": 4}]});
    let image = json!({"type": "image", "mimeType": "image/png", "data": "aGVsbG8="});
    let inner = json!({"call_id": "x", "tool": "t", "status": "ok", "content": "r1\nr2\nr3\nr4", "omitted": 0, "retryable": false});
    let results = [
        json!({"content": [{"type": "text", "text": rows.to_string()}, image.clone()], "structuredContent": rows, "_meta": {"k": 1}}),
        json!({"content": [{"type": "text", "text": "l1\nl2\nl3\nl4"}, image.clone(), {"type": "text", "text": "l5"}]}),
        json!({"content": [{"type": "text", "text": inner.to_string()}, image], "structuredContent": inner}),
        json!({"content": [{"type": "text", "text": "m1\nm2"}], "structuredContent": null}),
    ];
    for result in &results {
        for media in [MediaMode::Passthrough, MediaMode::Describe] {
            let c = ctx(5, media);
            let held: Value = serde_json::from_str(&paged_result_json(result, media)).unwrap();
            assert!(held.to_string().len() <= result.to_string().len(), "{held}");
            let total = count_result_rows(result, &c);
            assert_eq!(count_result_rows(&held, &c), total, "{result}");
            for from in 1..=total {
                assert_eq!(
                    map_result_from(&held, &c, from),
                    map_result_from(result, &c, from),
                    "{result} from {from}"
                );
            }
        }
    }
    // The SDKs' JSON copy of structuredContent is not held.
    let held = paged_result_json(&results[0], MediaMode::Passthrough);
    assert_eq!(
        held,
        r#"{"structuredContent":{"rows":[{"a":1},{"a":2},{"a":3},{"a":4}]},"_meta":{"k":1}}"#
    );
}

// ---- object rows longer than the budget (`long_rows = "split"`) ------------------------

fn split_ctx(budget: usize) -> MappingContext<'static> {
    MappingContext {
        text: crate::mapping::TextShape::default(),
        ..ctx(budget, MediaMode::Passthrough)
    }
}

/// Every page of `result` from row 0 on, as `(content, omitted)`.
fn pages(result: &Value, ctx: &MappingContext<'_>) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut row = 0;
    loop {
        let (mapped, kept) = super::rows::map_result_from(result, ctx, row);
        assert!(kept > 0, "a page never comes back empty while rows remain");
        out.push((mapped.envelope.content.clone(), mapped.envelope.omitted));
        row += kept;
        if mapped.envelope.omitted == 0 {
            return out;
        }
    }
}

#[test]
fn an_object_longer_than_the_budget_is_cut_into_pieces_not_left_out() {
    let issue = json!({"title": "Crash on start", "body": "b".repeat(95), "number": 7});
    let rendered = crate::envelope::render_row(&crate::envelope::Row::Object(
        std::borrow::Cow::Borrowed(issue.as_object().unwrap()),
    ));
    assert_eq!(rendered.chars().count(), 130);
    // As structuredContent, and as the JSON text of a text block.
    for result in [
        json!({"content": [], "structuredContent": issue}),
        json!({"content": [text(&issue.to_string())]}),
    ] {
        let env = map_outcome(
            &Outcome::Result {
                result: result.clone(),
            },
            &split_ctx(50),
        )
        .envelope;
        assert_eq!(env.status, Status::Truncated);
        assert_eq!(env.content, rendered.chars().take(50).collect::<String>());
        assert_eq!(env.omitted, 2, "130 characters are three pieces of 50");
        let all = pages(&result, &split_ctx(50));
        assert_eq!(all.len(), 3);
        let joined: String = all.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(
            joined, rendered,
            "the pages join with no separator into the row"
        );
        // Kept whole, it is left out: the seed's rule.
        let keep = map_outcome(
            &Outcome::Result { result },
            &ctx(50, MediaMode::Passthrough),
        );
        assert_eq!(
            (keep.envelope.content.as_str(), keep.envelope.omitted),
            ("", 1)
        );
    }
}

#[test]
fn the_pieces_of_a_cut_object_row_are_joined_to_their_neighbours_as_an_object_row() {
    let result = json!({"content": [], "structuredContent": [
        {"a": 1},
        {"long": "x".repeat(30)},
        {"b": 2},
    ]});
    // Budget 20: "a=1" | "long=xxxxxxxxxxxxxxx" "xxxxxxxxxxxxxxxxxxx" | "b=2".
    let all = pages(&result, &split_ctx(20));
    let contents: Vec<&str> = all.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(
        contents,
        ["a=1", "long=xxxxxxxxxxxxxxx", "xxxxxxxxxxxxxxx; b=2"],
        "a piece starts its row after `; ` and the next row follows it after `; `"
    );
    assert_eq!(
        all[0].1, 3,
        "the first page leaves out both pieces and the last row"
    );
    // The whole result in one budget is the seed's rendering.
    let whole = map_outcome(&Outcome::Result { result }, &split_ctx(100)).envelope;
    assert_eq!(whole.content, format!("a=1; long={}; b=2", "x".repeat(30)));
    assert_eq!(whole.status, Status::Ok);
}

#[test]
fn a_long_value_the_proxy_wraps_is_split_from_its_whole_text() {
    // An array item that is not an object becomes `{"value": item}`: under "split" its whole
    // text is in the pieces (under "keep" it is copied only up to the budget, being left out).
    let long = "y".repeat(45);
    let result = json!({"content": [], "structuredContent": [long]});
    let all = pages(&result, &split_ctx(20));
    let joined: String = all.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(joined, format!("value={long}"));
}

/// Numbers reach the envelope as the server wrote them: an integer beyond 64 bits and a
/// decimal longer than an `f64` keeps were rounded (`1.2345678901234568e29`) under status `ok`
/// (found by the fresh-user tester). Both the full parse and the lazy large-result path.
#[test]
fn numbers_are_rendered_as_written() {
    let sc = r#"{"rows":[{"id":123456789012345678901234567890,"amount":0.12345678901234567890123,"e":1E400},{"id":-0,"amount":12345678901234567.89,"e":5}]}"#;
    let raw = format!(r#"{{"content":[{{"type":"text","text":"x"}}],"structuredContent":{sc}}}"#);
    // serde_json writes an exponent as `e+400`: the same number, every digit kept.
    let want = "amount=0.12345678901234567890123,e=1e+400,id=123456789012345678901234567890; \
                amount=12345678901234567.89,e=5,id=-0";
    let full = ok(serde_json::from_str(&raw).unwrap(), 2000);
    assert_eq!(full.content, want);
    let lazy = crate::mapping::lazy::map_raw_result(&raw, &ctx(2000, MediaMode::Passthrough));
    assert_eq!(lazy.envelope.content, want);
    let as_text = ok(json!({"content": [text(sc)]}), 2000);
    assert_eq!(as_text.content, want);
}
