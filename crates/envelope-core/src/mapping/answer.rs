//! The `CallToolResult` the proxy answers with (MCP specification 2025-06-18, "Tools"):
//! `{"content": [{"type":"text","text":"<envelope as compact JSON>"}, ...media],
//! "structuredContent": <envelope>, "isError": <status == "error">, "_meta"?: <the result's>}`.
//!
//! The envelope is serialized once: its compact JSON text is both the text block's string and,
//! written as it is, `structuredContent` (the same six keys in the same order as serializing
//! the envelope there again would give, byte for byte).

use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::Mapped;
use crate::envelope::Status;
use crate::era;

/// Our `CallToolResult` for `mapped` as a JSON value (see the module documentation).
pub fn call_tool_result(mapped: &Mapped) -> Value {
    serde_json::to_value(CallToolResultView::of(mapped))
        .expect("a CallToolResult always serializes")
}

impl Mapped {
    /// Writes `{"jsonrpc":"2.0","id":<id>,"result":<CallToolResult>}` (see
    /// [`call_tool_result`]) straight as compact JSON text, without building a
    /// [`serde_json::Value`] tree first: the per-call answer path. The bytes are those
    /// `serde_json` writes for the same answer (members in [`call_tool_result`]'s order); the
    /// envelope's text is made once and escaped as a JSON string by [`push_escaped_json`].
    pub fn response_json(&self, id: &Value) -> Vec<u8> {
        self.write_response(id, false)
    }

    /// [`Mapped::response_json`] for an MCP 2026-07-28 client: the same answer with what
    /// [`crate::era::stamp_result`] adds to a `tools/call` result (`resultType` `"complete"`,
    /// our `serverInfo` in `_meta`), written in place, byte for byte what stamping the parsed
    /// answer and serializing it again gives (MCP 2026-07-28 "Base Protocol: Per-response
    /// protocol fields").
    pub fn stamped_response_json(&self, id: &Value) -> Vec<u8> {
        self.write_response(id, true)
    }

    fn write_response(&self, id: &Value, stamped: bool) -> Vec<u8> {
        // Sized up front (growing a buffer copies it): the strings, the keys and the numbers.
        let e = &self.envelope;
        let mut envelope =
            Vec::with_capacity(e.content.len() + e.call_id.len() + e.tool.len() + 128);
        serde_json::to_writer(&mut envelope, e).expect("an envelope always serializes");
        // The envelope's text appears twice, once escaped (at most twice as long), with the
        // members around it, a short id, the stamp and the newline the answer is sent with; a
        // long id and media blocks grow the buffer.
        let mut out = Vec::with_capacity(3 * envelope.len() + 256);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        write_json(&mut out, id);
        out.extend_from_slice(br#","result":{"content":[{"type":"text","text":""#);
        push_escaped_json(&mut out, &envelope);
        out.extend_from_slice(br#""}"#);
        for block in &self.media {
            out.push(b',');
            write_json(&mut out, block);
        }
        out.extend_from_slice(br#"],"structuredContent":"#);
        out.extend_from_slice(&envelope);
        out.extend_from_slice(match self.envelope.status {
            Status::Error => br#","isError":true"#.as_slice(),
            _ => br#","isError":false"#.as_slice(),
        });
        match (&self.meta, stamped) {
            (Some(meta), false) => {
                out.extend_from_slice(br#","_meta":"#);
                write_json(&mut out, meta);
            }
            // The stamp's order: `resultType` goes after the members there are, `_meta` (and
            // `serverInfo` in it) keeps its place when present.
            (Some(meta), true) => {
                out.extend_from_slice(br#","_meta":"#);
                match meta {
                    Value::Object(members) => {
                        let mut members = members.clone();
                        members.insert(era::META_SERVER_INFO.into(), era::server_info());
                        write_json(&mut out, &Value::Object(members));
                    }
                    other => write_json(&mut out, other),
                }
                out.extend_from_slice(br#","resultType":"complete""#);
            }
            (None, true) => {
                out.extend_from_slice(br#","resultType":"complete","_meta":{""#);
                out.extend_from_slice(era::META_SERVER_INFO.as_bytes());
                out.extend_from_slice(br#"":"#);
                out.extend_from_slice(era::SERVER_INFO_JSON.as_bytes());
                out.push(b'}');
            }
            (None, false) => {}
        }
        out.extend_from_slice(b"}}");
        out
    }
}

/// Appends `value` as compact JSON.
fn write_json(out: &mut Vec<u8>, value: &Value) {
    serde_json::to_writer(&mut *out, value).expect("a JSON value always serializes");
}

/// Appends compact JSON text `json` (as `serde_json` writes it) escaped as the inside of a
/// JSON string, byte for byte what `serde_json` writes for it: such text holds no raw control
/// character (JSON escapes them inside strings and allows none outside), so only `"` and `\`
/// need a backslash (RFC 8259 section 7). Runs between them are copied whole, found by
/// `memchr2`, where `serde_json`'s string writer looks at every byte.
fn push_escaped_json(out: &mut Vec<u8>, json: &[u8]) {
    debug_assert!(!json.iter().any(|&b| b < 0x20), "compact JSON text");
    let mut rest = json;
    while let Some(at) = memchr::memchr2(b'"', b'\\', rest) {
        out.extend_from_slice(&rest[..at]);
        out.push(b'\\');
        out.push(rest[at]);
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
}

/// A [`Mapped`] that serializes as our `CallToolResult`, with its envelope's JSON text made
/// once.
struct CallToolResultView<'a> {
    mapped: &'a Mapped,
    envelope: Box<RawValue>,
}

impl<'a> CallToolResultView<'a> {
    fn of(mapped: &'a Mapped) -> CallToolResultView<'a> {
        let envelope = serde_json::value::to_raw_value(&mapped.envelope)
            .expect("an envelope always serializes");
        CallToolResultView { mapped, envelope }
    }
}

/// The content blocks: the envelope's text, then the media passed through.
struct Content<'a>(&'a CallToolResultView<'a>);

impl Serialize for Content<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct TextBlock<'a> {
            r#type: &'static str,
            text: &'a str,
        }
        let media = &self.0.mapped.media;
        let mut seq = serializer.serialize_seq(Some(1 + media.len()))?;
        seq.serialize_element(&TextBlock {
            r#type: "text",
            text: self.0.envelope.get(),
        })?;
        for block in media {
            seq.serialize_element(block)?;
        }
        seq.end()
    }
}

impl Serialize for CallToolResultView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mapped = self.mapped;
        let mut result = serializer.serialize_struct("CallToolResult", 4)?;
        result.serialize_field("content", &Content(self))?;
        result.serialize_field("structuredContent", &*self.envelope)?;
        result.serialize_field("isError", &(mapped.envelope.status == Status::Error))?;
        if let Some(meta) = &mapped.meta {
            result.serialize_field("_meta", meta)?;
        }
        result.end()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::envelope::Envelope;

    /// The answer as it was made before the envelope was serialized once: the envelope
    /// serialized for the text block and again for `structuredContent`.
    fn twice(mapped: &Mapped, id: &Value) -> Vec<u8> {
        let env = &mapped.envelope;
        let mut content = vec![json!({"type": "text", "text": env.to_json()})];
        content.extend(mapped.media.iter().cloned());
        let mut result = serde_json::Map::new();
        result.insert("content".into(), Value::Array(content));
        result.insert("structuredContent".into(), env.to_value());
        result.insert("isError".into(), Value::Bool(env.status == Status::Error));
        if let Some(meta) = &mapped.meta {
            result.insert("_meta".into(), meta.clone());
        }
        let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
        serde_json::to_vec(&response).unwrap()
    }

    fn arb_status() -> impl Strategy<Value = Status> {
        prop_oneof![
            Just(Status::Ok),
            Just(Status::Truncated),
            Just(Status::Error)
        ]
    }

    fn arb_id() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ]
    }

    /// Strings heavy in what JSON escapes: quotes, backslashes, control characters, line
    /// separators, non-ASCII and astral characters.
    fn arb_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[\"\\\\\\x00-\\x1f\\x7f\u{2028}\u{2029}é😀{}:,a ]{0,40}",
        ]
    }

    fn arb_mapped() -> impl Strategy<Value = Mapped> {
        let envelope = (
            arb_text(),
            arb_text(),
            arb_status(),
            arb_text(),
            any::<u64>(),
            any::<bool>(),
        )
            .prop_map(
                |(call_id, tool, status, content, omitted, retryable)| Envelope {
                    call_id,
                    tool,
                    status,
                    content,
                    omitted,
                    retryable,
                },
            );
        let block = arb_text().prop_map(|data| json!({"type": "image", "data": data, "n": 1.5}));
        let meta = prop::option::of(arb_text().prop_map(|t| json!({"k": t, "n": [1, null]})));
        (envelope, prop::collection::vec(block, 0..3), meta).prop_map(|(envelope, media, meta)| {
            Mapped {
                envelope,
                media,
                meta,
            }
        })
    }

    /// Any JSON value: nested arrays and objects of [`arb_text`] strings, numbers and literals.
    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            arb_text().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            Just(Value::Null),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((arb_text(), inner), 0..4)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn json_text_is_escaped_as_serde_json_escapes_it(value in arb_json()) {
            let text = serde_json::to_string(&value).unwrap();
            let mut escaped = b"\"".to_vec();
            push_escaped_json(&mut escaped, text.as_bytes());
            escaped.push(b'"');
            prop_assert_eq!(String::from_utf8(escaped).unwrap(),
                serde_json::to_string(&text).unwrap());
        }

        #[test]
        fn the_answer_is_the_same_text_as_serializing_the_envelope_twice(
            mapped in arb_mapped(),
            id in arb_id(),
        ) {
            let once = mapped.response_json(&id);
            prop_assert_eq!(String::from_utf8(once.clone()).unwrap(),
                String::from_utf8(twice(&mapped, &id)).unwrap());
            let value: Value = serde_json::from_slice(&once).unwrap();
            prop_assert_eq!(&value["result"], &call_tool_result(&mapped));
            prop_assert_eq!(&value["result"]["structuredContent"], &mapped.envelope.to_value());
        }

        #[test]
        fn the_stamped_answer_is_the_answer_stamped_after_parsing(
            mapped in arb_mapped(),
            id in arb_id(),
            server_info_first in any::<bool>(),
        ) {
            let mut mapped = mapped;
            if server_info_first {
                // A `_meta` that already names a server (kept from one): ours takes its place.
                mapped.meta = Some(json!({era::META_SERVER_INFO: {"name": "s"}, "k": 1}));
            }
            let stamped = mapped.stamped_response_json(&id);
            let by_parsing = era::stamp_response_json("tools/call", mapped.response_json(&id));
            prop_assert_eq!(String::from_utf8(stamped).unwrap(),
                String::from_utf8(by_parsing).unwrap());
        }
    }

    #[test]
    fn structured_content_and_the_text_block_hold_the_same_envelope() {
        let mapped = Mapped {
            envelope: Envelope {
                call_id: "7".into(),
                tool: "t\"\\\n😀".into(),
                status: Status::Truncated,
                content: "a\u{1}b\u{2028}é".into(),
                omitted: u64::MAX,
                retryable: false,
            },
            media: vec![json!({"type": "audio", "data": "TQ=="})],
            meta: Some(json!({"progressToken": 1})),
        };
        let text = String::from_utf8(mapped.response_json(&json!(-3))).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"jsonrpc":"2.0","id":-3,"result":{"content":[{"type":"text","text":"#,
                r#""{\"call_id\":\"7\",\"tool\":\"t\\\"\\\\\\n😀\",\"status\":\"truncated\","#,
                r#"\"content\":\"a\\u0001b"#,
                "\u{2028}",
                r#"é\",\"omitted\":18446744073709551615,"#,
                r#"\"retryable\":false}"},{"type":"audio","data":"TQ=="}],"#,
                r#""structuredContent":{"call_id":"7","tool":"t\"\\\n😀","status":"truncated","#,
                r#""content":"a\u0001b"#,
                "\u{2028}",
                r#"é","omitted":18446744073709551615,"retryable":false},"#,
                r#""isError":false,"_meta":{"progressToken":1}}}"#
            )
        );
    }
}
