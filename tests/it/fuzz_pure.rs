//! Issue 5, pure property tests (no processes): the JSON-RPC classifier, the over-long-line id
//! finder, the line framer, and the outcome mapper on MCP-shaped results with wrong-typed
//! fields. (Generic arbitrary outcomes are already covered by `outcome`'s unit tests.)

use mcp_envelope::config::MediaMode;
use mcp_envelope::envelope::Status;
use mcp_envelope::jsonrpc::{self, classify, id_from_head, is_valid_id, Frame, Incoming, Message};
use mcp_envelope::outcome::{map_outcome, MappingContext, Outcome};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::from),
        Just(json!("2.0")),
        Just(json!("tools/call")),
    ]
    .boxed()
}

fn any_json() -> BoxedStrategy<Value> {
    leaf()
        .prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

/// A JSON-RPC-looking object: each of the members is absent or any JSON.
fn rpc_like() -> impl Strategy<Value = Value> {
    let member = || prop::option::of(any_json());
    (member(), member(), member(), member(), member(), member()).prop_map(|(v, id, m, p, r, e)| {
        let mut o = Map::new();
        for (k, x) in [
            ("jsonrpc", v),
            ("id", id),
            ("method", m),
            ("params", p),
            ("result", r),
            ("error", e),
        ] {
            if let Some(x) = x {
                o.insert(k.into(), x);
            }
        }
        Value::Object(o)
    })
}

fn check_message(m: &Message) -> Result<(), TestCaseError> {
    match m {
        Message::Request { id, params, .. } => {
            prop_assert!(is_valid_id(id));
            if let Some(p) = params {
                prop_assert!(p.is_object() || p.is_array());
            }
        }
        Message::Notification { params, .. } => {
            if let Some(p) = params {
                prop_assert!(p.is_object() || p.is_array());
            }
        }
        Message::Response { outcome, .. } => {
            if let Err(e) = outcome {
                prop_assert!(e.is_object());
            }
        }
        Message::Invalid { id, .. } => prop_assert!(id.is_null() || is_valid_id(id)),
    }
    Ok(())
}

fn ctx(budget: usize) -> MappingContext<'static> {
    MappingContext {
        call_id: "c",
        tool: "t",
        server: "s",
        budget: mcp_envelope::budget::Budget::chars(budget),
        text: mcp_envelope::outcome::TextShape {
            long_rows: mcp_envelope::budget::LongRows::Keep,
            ..Default::default()
        },
        media: MediaMode::Passthrough,
    }
}

/// A content block whose `type` is a known one and whose other fields are right or any JSON.
fn block() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec![
            "text",
            "image",
            "audio",
            "resource",
            "resource_link",
            "other",
        ]),
        prop::option::of(any_json()),
        prop::option::of(any_json()),
        prop::option::of(any_json()),
    )
        .prop_map(|(t, a, b, c)| {
            let mut o = Map::new();
            o.insert("type".into(), Value::from(t));
            for (k, v) in [
                ("text", a),
                ("data", b.clone()),
                ("mimeType", c),
                ("resource", b),
            ] {
                if let Some(v) = v {
                    o.insert(k.into(), v);
                }
            }
            Value::Object(o)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Arbitrary bytes never panic the classifier; whatever it returns is well-formed.
    #[test]
    fn classify_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        match classify(&bytes) {
            Incoming::ParseError(_) => {}
            Incoming::Single(m) => check_message(&m)?,
            Incoming::Batch(ms) => {
                prop_assert!(!ms.is_empty());
                for m in &ms { check_message(m)?; }
            }
        }
    }

    /// JSON-RPC-shaped objects (alone or in a batch) with any member values classify into
    /// well-formed messages; a request is classified as one only with jsonrpc "2.0", a string
    /// method and a valid id.
    #[test]
    fn classify_rpc_like(msgs in prop::collection::vec(rpc_like(), 1..4), as_batch in any::<bool>()) {
        let line = if as_batch { Value::Array(msgs.clone()) } else { msgs[0].clone() };
        let got = classify(line.to_string().as_bytes());
        let singles: Vec<Message> = match got {
            Incoming::Single(m) => vec![m],
            Incoming::Batch(ms) => ms,
            Incoming::ParseError(e) => return Err(TestCaseError::fail(format!("valid JSON rejected: {e}"))),
        };
        for (m, raw) in singles.iter().zip(&msgs) {
            check_message(m)?;
            if let Message::Request { method, .. } = m {
                prop_assert_eq!(&raw["jsonrpc"], &json!("2.0"));
                prop_assert_eq!(raw["method"].as_str(), Some(method.as_str()));
            }
        }
    }

    /// The id finder for over-long lines never panics and only ever returns a valid id.
    #[test]
    fn id_from_head_is_total(bytes in prop::collection::vec(any::<u8>(), 0..300), id in any::<i64>()) {
        if let Some(v) = id_from_head(&bytes) { prop_assert!(is_valid_id(&v)); }
        let head = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"x\":\"");
        let mut line = head.into_bytes();
        line.extend_from_slice(&bytes);
        prop_assert_eq!(id_from_head(&line), Some(json!(id)));
    }

    /// The framer returns every non-empty line whole (or as TooLong with its full length) and
    /// never a line longer than the maximum, whatever the read-buffer size.
    #[test]
    fn line_reader_frames(lines in prop::collection::vec("[a-z]{0,40}", 0..12), max in 1usize..30, cap in 1usize..16) {
        let input = lines.join("\n");
        let frames = tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
            let mut r = jsonrpc::LineReader::new(tokio::io::BufReader::with_capacity(cap, input.as_bytes()), max);
            let mut out = Vec::new();
            while let Some(f) = r.next_frame().await.unwrap() { out.push(f); }
            out
        });
        let want: Vec<&String> = lines.iter().filter(|l| !l.is_empty()).collect();
        prop_assert_eq!(frames.len(), want.len());
        for (f, l) in frames.iter().zip(want) {
            match f {
                Frame::Line(b) => { prop_assert!(b.len() <= max); prop_assert_eq!(b.as_slice(), l.as_bytes()); }
                Frame::TooLong { len, head } => { prop_assert!(l.len() > max); prop_assert_eq!(*len, l.len()); prop_assert!(l.as_bytes().starts_with(head)); }
            }
        }
    }

    /// MCP-shaped results whose blocks have wrong-typed fields map without panicking, within
    /// the budget on the success path, and with a `<type>: ` prefix on the error path.
    #[test]
    fn map_outcome_on_wrong_typed_blocks(
        blocks in prop::collection::vec(block(), 0..5),
        structured in prop::option::of(any_json()),
        is_error in prop::option::of(any_json()),
        budget in 0usize..200,
    ) {
        let mut r = Map::new();
        r.insert("content".into(), Value::Array(blocks));
        if let Some(s) = structured { r.insert("structuredContent".into(), s); }
        if let Some(e) = is_error { r.insert("isError".into(), e); }
        let mapped = map_outcome(&Outcome::Result { result: Value::Object(r) }, &ctx(budget));
        let env = &mapped.envelope;
        if env.status == Status::Error {
            prop_assert!(env.content.contains(": "));
            prop_assert_eq!(env.omitted, 0);
        } else {
            prop_assert!(env.content.chars().count() <= budget);
        }
        let answer = mapped.into_call_tool_result();
        prop_assert!(answer["structuredContent"].is_object());
    }
}
