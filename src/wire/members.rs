//! One JSON-RPC message read without a map of its top-level members: the members
//! classification needs ([`Members`]) are taken as they are parsed, the others parsed and
//! dropped. Parsing a line into a `serde_json::Value` first built an `IndexMap` (a `String`
//! and a SipHash per key) only to take the same members out of it again, twice per call
//! (request and response).
//!
//! The members are written into a [`Members`] the caller owns (a [`DeserializeSeed`]), not
//! returned inside the parse's result: a returned `Members` (480 bytes) was copied about four
//! times on its way out of serde_json, about 300 instructions per message (callgrind,
//! 2026-12-02).
//!
//! The outcome is that of parsing the line into a `Value` and reading the members from it:
//! the same text is accepted and rejected (every value, unknown members included, goes
//! through `Value`'s parser, with its number and nesting limits), and a member given twice
//! keeps its last value, as a map insert does.

use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The top-level members of a message object that classification reads; `None` when absent
/// (`Some(Value::Null)` when present as `null`).
#[derive(Debug, Default)]
pub(super) struct Members {
    /// `jsonrpc` (JSON-RPC 2.0 requires the string `"2.0"`; checked by the caller).
    pub jsonrpc: Option<Value>,
    /// `id` of a request or response.
    pub id: Option<Value>,
    /// `method` of a request or notification.
    pub method: Option<Value>,
    /// `params` of a request or notification.
    pub params: Option<Value>,
    /// `result` of a success response.
    pub result: Option<Value>,
    /// `error` object of an error response.
    pub error: Option<Value>,
}

impl Members {
    /// The members of an object already parsed into a map.
    pub(super) fn of_map(mut obj: Map<String, Value>) -> Members {
        Members {
            jsonrpc: obj.remove("jsonrpc"),
            id: obj.remove("id"),
            method: obj.remove("method"),
            params: obj.remove("params"),
            result: obj.remove("result"),
            error: obj.remove("error"),
        }
    }

    fn slot(&mut self, key: Key) -> Option<&mut Option<Value>> {
        Some(match key {
            Key::Jsonrpc => &mut self.jsonrpc,
            Key::Id => &mut self.id,
            Key::Method => &mut self.method,
            Key::Params => &mut self.params,
            Key::Result => &mut self.result,
            Key::Error => &mut self.error,
            Key::Other | Key::Number => return None,
        })
    }
}

/// A member's name, told apart without copying it.
enum Key {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
    /// The whole line is a number that is not a 64-bit integer
    /// ([`envelope_core::numbers::NUMBER_TOKEN`]).
    Number,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        d.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "jsonrpc" => Key::Jsonrpc,
            "id" => Key::Id,
            "method" => Key::Method,
            "params" => Key::Params,
            "result" => Key::Result,
            "error" => Key::Error,
            envelope_core::numbers::NUMBER_TOKEN => Key::Number,
            _ => Key::Other,
        })
    }
}

/// Parses a whole line; an object's members go into `members` (which should be empty).
/// A line that is valid UTF-8 (nearly every line) is checked as UTF-8 once and parsed as text:
/// parsed as bytes, every string in it is checked on its own (a `from_utf8` per string, about
/// 2,000 instructions of a small `tools/call`'s request and response). A line that is not valid
/// UTF-8 is parsed as bytes, for the same error. The outcome is that of
/// `serde_json::from_slice` either way (the value, then nothing but whitespace).
pub(super) fn parse_line(
    line: &[u8],
    members: &mut Members,
) -> Result<TopLevel, serde_json::Error> {
    match std::str::from_utf8(line) {
        Ok(text) => parse_whole(serde_json::Deserializer::from_str(text), members),
        Err(_) => parse_whole(serde_json::Deserializer::from_slice(line), members),
    }
}

/// What `serde_json::from_str` / `from_slice` do: one value, then the end of the input.
fn parse_whole<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    members: &mut Members,
) -> Result<TopLevel, serde_json::Error> {
    let top = TopLevelSeed(members).deserialize(&mut de)?;
    de.end()?;
    Ok(top)
}

/// A whole line: an object (its members are in the [`Members`] given to [`parse_line`]), an
/// array (a batch, its items parsed), or any other JSON value.
#[derive(Debug)]
pub(super) enum TopLevel {
    Object,
    Array(Vec<Value>),
    Other,
}

/// Parses a whole line's value, an object's members into the [`Members`] it holds.
struct TopLevelSeed<'m>(&'m mut Members);

impl<'de> DeserializeSeed<'de> for TopLevelSeed<'_> {
    type Value = TopLevel;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TopLevel, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopLevelSeed<'_> {
    type Value = TopLevel;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<TopLevel, E> {
        Ok(TopLevel::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<TopLevel, E> {
        Ok(TopLevel::Other)
    }

    fn visit_u64<E>(self, _: u64) -> Result<TopLevel, E> {
        Ok(TopLevel::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<TopLevel, E> {
        Ok(TopLevel::Other)
    }

    fn visit_str<E>(self, _: &str) -> Result<TopLevel, E> {
        Ok(TopLevel::Other)
    }

    fn visit_unit<E>(self) -> Result<TopLevel, E> {
        Ok(TopLevel::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TopLevel, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(TopLevel::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
        while let Some(key) = map.next_key::<Key>()? {
            if matches!(key, Key::Number) {
                map.next_value::<serde::de::IgnoredAny>()?;
                return Ok(TopLevel::Other);
            }
            let value = map.next_value::<Value>()?;
            if let Some(slot) = self.0.slot(key) {
                *slot = Some(value);
            }
        }
        Ok(TopLevel::Object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The members as a `Value` parse gives them, or the parse error.
    fn via_value(line: &str) -> Result<Option<String>, String> {
        match serde_json::from_str::<Value>(line) {
            Err(e) => Err(e.to_string()),
            Ok(Value::Object(obj)) => Ok(Some(format!("{:?}", Members::of_map(obj)))),
            Ok(_) => Ok(None),
        }
    }

    fn direct(line: &str) -> Result<Option<String>, String> {
        let mut members = Members::default();
        match parse_line(line.as_bytes(), &mut members) {
            Err(e) => Err(e.to_string()),
            Ok(TopLevel::Object) => Ok(Some(format!("{members:?}"))),
            Ok(_) => Ok(None),
        }
    }

    #[test]
    fn the_same_members_and_the_same_errors_as_a_value_parse() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,2]}}"#.to_owned(),
            r#"{"id":1,"id":2,"result":null,"x":{"y":1},"jsonrpc":"2.0"}"#.to_owned(),
            r#"{"\u0069d":"a","error":{"code":1},"params":null}"#.to_owned(),
            r#"{"jsonrpc":"2.0","x":1e400}"#.to_owned(),
            format!(r#"{{"jsonrpc":"2.0","x":{deep}}}"#),
            r#"{"a":"\ud800"}"#.to_owned(),
            r#"{"a":1,}"#.to_owned(),
            r#"{"a":1} x"#.to_owned(),
            String::new(),
            "[1,{\"a\":2}]".to_owned(),
            "42".to_owned(),
            "1.5".to_owned(),
            "123456789012345678901234567890".to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"result":{"n":0.12345678901234567890123}}"#.to_owned(),
            "\"s\"".to_owned(),
            "null".to_owned(),
        ];
        for line in &lines {
            assert_eq!(direct(line), via_value(line), "{line}");
        }
    }

    /// What parsing `line` as bytes gives, as text (members or the error with its position).
    fn as_bytes(line: &[u8]) -> String {
        let mut members = Members::default();
        let top = parse_whole(serde_json::Deserializer::from_slice(line), &mut members);
        format!("{:?} {members:?}", top.map_err(|e| e.to_string()))
    }

    #[test]
    fn a_line_parsed_as_text_gives_what_parsing_its_bytes_gives() {
        let deep = format!("{}{}", "{\"a\":".repeat(130), "}".repeat(130));
        let mut lines: Vec<Vec<u8>> = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":"é😀","result":{"content":[{"type":"text","text":"a\nb\u00e9\ud83d\ude00"}]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":"\ud800"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":"\udc00\ud800x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":"\u12"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":"\q"}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"tab\there\"}",
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":1e400}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"result":null,"result":[1,2.5,-0,true]}"#,
            r#"{"id":1,"jsonrpc":"2.0","error":{"code":-32601,"message":"ü"}} x"#,
            r#"[{"jsonrpc":"2.0","method":"m"},{"id":1}]"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            "",
            "  \"s\"  ",
            "nul",
            &deep,
        ]
        .iter()
        .map(|l| l.as_bytes().to_vec())
        .collect();
        // Not UTF-8: inside a string, outside one, a truncated sequence, a surrogate's bytes.
        for bad in [&b"\xff"[..], b"\xc3", b"\xed\xa0\x80", b"\xe2\x82"] {
            let mut inside = br#"{"jsonrpc":"2.0","id":1,"result":""#.to_vec();
            inside.extend_from_slice(bad);
            inside.extend_from_slice(br#""}"#);
            lines.push(inside);
            let mut outside = br#"{"jsonrpc":"2.0","id":1,"result":1"#.to_vec();
            outside.extend_from_slice(bad);
            lines.push(outside);
        }
        for line in &lines {
            let mut members = Members::default();
            let top = parse_line(line, &mut members).map_err(|e| e.to_string());
            let text = format!("{top:?} {members:?}");
            assert_eq!(text, as_bytes(line), "{}", String::from_utf8_lossy(line));
        }
    }
}
