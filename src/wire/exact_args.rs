//! `tools/call` arguments forwarded byte for byte when parsing would change them.
//!
//! The proxy parses every message into a `serde_json::Value`, whose numbers are `u64`, `i64` or
//! `f64`: an integer beyond 64 bits (`123456789012345678901234567890`) or a decimal with more
//! significant digits than an `f64` holds would reach the server rounded
//! (`1.2345678901234568e29`). A proxy forwards what it is given, so for such a request the
//! `arguments` text of the client's line is kept and spliced into the forwarded request in
//! place of the re-serialized value. Everything else (the parsed arguments for routing checks
//! and the transcript) is unchanged, and requests without such numbers pay only one scan of
//! their line for a run of [`EXACT_DIGITS`] digits.
//!
//! How the text travels: [`capture`] stores it in the request's params under [`EXACT_KEY`] (a
//! member a client cannot send: any it sends is removed first); the session takes it out with
//! [`take`] and marks the forwarded `arguments` with it ([`mark`]); [`splice`] puts the text in
//! place when the request line is written.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::wire::jsonrpc::{Incoming, Message};

/// Digits in a row from which a number may not survive a round trip through `u64`/`i64`/`f64`
/// (an `f64` keeps 15 to 17 significant digits; a `u64` has at most 20).
pub const EXACT_DIGITS: usize = 16;

/// The params member that carries the client's own arguments text inside the proxy.
pub const EXACT_KEY: &str = "\u{0}mcp-envelope/exact-arguments";

/// Marks a forwarded `arguments` value as "write this text instead".
const MARK: &str = "\u{0}mcp-envelope/raw:";

/// Whether `line` has a run of at least [`EXACT_DIGITS`] ASCII digits. Such a run covers a
/// whole 8-byte word of `line` (counted from its start), so words are looked at first, eight
/// bytes at a time, and only a line with a word of eight digits is scanned byte by byte
/// (the byte loop alone was about 700 instructions of a small `tools/call`; callgrind,
/// 2026-12-02).
fn has_long_digit_run(line: &[u8]) -> bool {
    // A run of 15 or more digits always covers a whole word; fewer may not.
    const _: () = assert!(EXACT_DIGITS >= 15);
    let word_of_digits = line
        .chunks_exact(8)
        .any(|w| all_digits(u64::from_le_bytes(w.try_into().expect("8 bytes"))));
    word_of_digits && digit_run_at_least(line, EXACT_DIGITS)
}

/// Whether each of the eight bytes of `word` is an ASCII digit (`0x30..=0x39`): its high
/// nibble is 3 and its low nibble plus 6 stays below 16 (no carry leaves a byte).
fn all_digits(word: u64) -> bool {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const LOW: u64 = 0x0F0F_0F0F_0F0F_0F0F;
    word & HIGH == 0x3030_3030_3030_3030 && ((word & LOW) + 0x0606_0606_0606_0606) & HIGH == 0
}

/// Whether `line` has a run of at least `min` ASCII digits, byte by byte.
fn digit_run_at_least(line: &[u8], min: usize) -> bool {
    let mut run = 0;
    for &b in line {
        if b.is_ascii_digit() {
            run += 1;
            if run >= min {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// For a `tools/call` request read from `line`: removes any [`EXACT_KEY`] member the client
/// sent, and when the line has a long digit run and its `params.arguments` is an object whose
/// text differs from what the parsed value serializes to, stores that text under
/// [`EXACT_KEY`].
pub fn capture(line: &[u8], incoming: &mut Incoming) {
    let request = match incoming {
        Incoming::Single(Message::Request { method, params, .. }) => (method, params),
        Incoming::Batch(messages) => {
            // Only a single request's text is kept; a client's own member goes in any case.
            for m in messages {
                if let Message::Request {
                    params: Some(Value::Object(params)),
                    ..
                } = m
                {
                    crate::small_map::remove(params, EXACT_KEY);
                }
            }
            return;
        }
        _ => return,
    };
    let (method, params) = request;
    let Some(Value::Object(params)) = params.as_mut() else {
        return;
    };
    crate::small_map::remove(params, EXACT_KEY);
    if method != "tools/call" || !has_long_digit_run(line) {
        return;
    }
    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        arguments: Option<&'a RawValue>,
    }
    let Ok(Line {
        params: Some(Params {
            arguments: Some(raw),
        }),
    }) = serde_json::from_slice::<Line<'_>>(line)
    else {
        return;
    };
    let text = raw.get();
    let parsed = params.get("arguments").map(Value::to_string);
    if text.starts_with('{') && parsed.as_deref() != Some(text) {
        params.insert(EXACT_KEY.into(), Value::from(text));
    }
}

/// Takes the client's arguments text out of `params`, if [`capture`] stored one.
pub fn take(params: &mut Map<String, Value>) -> Option<String> {
    match crate::small_map::remove(params, EXACT_KEY) {
        Some(Value::String(text))
            if text.starts_with('{') && serde_json::from_str::<&RawValue>(&text).is_ok() =>
        {
            Some(text)
        }
        _ => None,
    }
}

/// `params` to forward with `arguments` marked to be written as `text`; the caller restores
/// the returned arguments afterwards.
pub fn mark(params: &mut Map<String, Value>, text: &str) -> Option<Value> {
    params.insert("arguments".into(), Value::from(format!("{MARK}{text}")))
}

/// The arguments a [`mark`]ed `arguments` value carries, parsed (as a transcript records
/// arguments); any other value as it is. For a call that ended while its arguments were
/// marked (its request cancelled before [`mark`]'s caller restored them).
pub fn unmarked(arguments: Value) -> Value {
    let parsed = match &arguments {
        Value::String(marked) => marked
            .strip_prefix(MARK)
            .and_then(|text| serde_json::from_str(text).ok()),
        _ => None,
    };
    parsed.unwrap_or(arguments)
}

/// In a serialized request `line` whose `params.arguments` was [`mark`]ed, replaces the mark
/// with the text it carries.
pub fn splice(line: &mut Vec<u8>, params: Option<&Value>) {
    let Some(Value::String(marked)) = params.and_then(|p| crate::small_map::member(p, "arguments"))
    else {
        return;
    };
    let Some(text) = marked.strip_prefix(MARK) else {
        return;
    };
    let quoted = serde_json::to_vec(marked).expect("a string always serializes");
    if let Some(at) = line
        .windows(quoted.len())
        .position(|w| w == quoted.as_slice())
    {
        line.splice(at..at + quoted.len(), text.bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::jsonrpc::{classify, request_line};
    use serde_json::json;

    fn forwarded(line: &str) -> String {
        let mut incoming = classify(line.as_bytes());
        capture(line.as_bytes(), &mut incoming);
        let Incoming::Single(Message::Request {
            params: Some(Value::Object(mut params)),
            ..
        }) = incoming
        else {
            panic!("not a request");
        };
        if let Some(text) = take(&mut params) {
            mark(&mut params, &text);
        }
        let params = Value::Object(params);
        let bytes = request_line(&json!(1), "tools/call", Some(&params));
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn marked_arguments_read_back_as_the_arguments_they_carry() {
        let mut params = Map::new();
        params.insert("arguments".into(), json!({"n": 1}));
        let before = mark(&mut params, r#"{"n": 7, "s": "x"}"#);
        assert_eq!(before, Some(json!({"n": 1})));
        let marked = params.remove("arguments").unwrap();
        assert_eq!(unmarked(marked), json!({"n": 7, "s": "x"}));
        assert_eq!(unmarked(json!("plain")), json!("plain"));
        assert_eq!(unmarked(json!({"a": 1})), json!({"a": 1}));
    }

    #[test]
    fn a_digit_run_is_found_word_by_word_as_byte_by_byte() {
        // Every byte next to the digits' range, runs of 7 to 17 digits at every offset of a
        // word, in short and long lines.
        for filler in [b'/', b':', b'?', b'a', b' ', 0xb5, b'I'] {
            for len in 7..=17 {
                for offset in 0..10 {
                    for tail in [0, 1, 5, 9] {
                        let mut line = vec![filler; offset];
                        line.extend(std::iter::repeat_n(b'7', len));
                        line.extend(std::iter::repeat_n(filler, tail));
                        assert_eq!(
                            has_long_digit_run(&line),
                            digit_run_at_least(&line, EXACT_DIGITS),
                            "{filler} {len} {offset} {tail}"
                        );
                        assert_eq!(has_long_digit_run(&line), len >= EXACT_DIGITS);
                    }
                }
            }
        }
        for word in [
            *b"01234567",
            *b"89898989",
            *b"0123456:",
            *b"/1234567",
            *b"0000000\xb0",
        ] {
            let digits = word.iter().all(u8::is_ascii_digit);
            assert_eq!(all_digits(u64::from_le_bytes(word)), digits, "{word:?}");
        }
    }

    #[test]
    fn big_numbers_reach_the_server_as_written() {
        let line = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{"n":123456789012345678901234567890,"d":0.12345678901234567890123,"s":"\"x\""}}}"#;
        let out = forwarded(line);
        assert!(
            out.contains(r#""arguments":{"n":123456789012345678901234567890,"d":0.12345678901234567890123,"s":"\"x\""}"#),
            "{out}"
        );
        assert!(!out.contains("mcp-envelope"), "{out}");
    }

    #[test]
    fn ordinary_arguments_take_the_usual_path_and_clients_cannot_inject_text() {
        let line = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{"n":12}}}"#;
        assert!(forwarded(line).contains(r#""arguments":{"n":12}"#));
        // A digit run that round-trips (inside a string) changes nothing either.
        let line = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{"s":"12345678901234567890"}}}"#;
        assert!(forwarded(line).contains(r#""arguments":{"s":"12345678901234567890"}"#));
        let sneaky = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{"n":1},"\u0000mcp-envelope/exact-arguments":"{},\"name\":\"other\""}}"#;
        let out = forwarded(sneaky);
        assert!(out.contains(r#""arguments":{"n":1}"#), "{out}");
        assert!(!out.contains("other"), "{out}");
    }
}
