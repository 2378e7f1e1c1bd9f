//! A response's head read without parsing its body: whether a large line is a plain success
//! response, and its id. Costs nothing for a result of any size; whether the rest is valid
//! JSON is found out when the result is mapped. Pure.
//!
//! Source: JSON-RPC 2.0 specification, "Response object" (`jsonrpc`, `id`, `result`).

use std::ops::Range;

use serde_json::Value;

use super::jsonrpc::is_valid_id;

/// `"2.0"`, the `jsonrpc` member's value, as JSON text.
const VERSION: &str = "\"2.0\"";

/// The id of a line that looks like a success response: its members other than `result` are
/// exactly `"jsonrpc":"2.0"` and a valid `id` (in either order, unescaped keys), all before
/// `result` (as Python servers write it) or all after it (as the TypeScript SDK writes it:
/// `{"result":…,"jsonrpc":"2.0","id":1}`). Reads only those members, so it costs nothing for a
/// result of any size; whether the rest is valid JSON is found out when the result is mapped.
pub fn response_head(line: &str) -> Option<Value> {
    leading_members(line)
        .map(|(id, _)| id)
        .or_else(|| trailing_members(line))
}

/// Where the text of the id is in a line that [`response_head`] reads with `jsonrpc` and `id`
/// before `result` (byte offsets); `None` for any other line.
pub fn leading_id_span(line: &str) -> Option<Range<usize>> {
    leading_members(line).map(|(_, span)| span)
}

/// [`response_head`] when `jsonrpc` and `id` come first, with where the id's text is.
fn leading_members(line: &str) -> Option<(Value, Range<usize>)> {
    let mut rest = line.trim_start().strip_prefix('{')?;
    let (mut version, mut id) = (false, None);
    loop {
        let after_quote = rest.trim_start().strip_prefix('"')?;
        let key_end = after_quote.find('"')?;
        let key = &after_quote[..key_end];
        rest = after_quote[key_end + 1..].trim_start().strip_prefix(':')?;
        match key {
            "result" => break,
            // The usual spelling, compared as text (no string to allocate and drop).
            "jsonrpc" if rest.starts_with(VERSION) => {
                if version {
                    return None;
                }
                version = true;
                rest = rest[VERSION.len()..].trim_start().strip_prefix(',')?;
            }
            "jsonrpc" | "id" => {
                let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
                let value = values.next()?.ok()?;
                // The value's text: from its first character to where the reader stopped.
                let at = line.len() - rest.len();
                let span = at + (rest.len() - rest.trim_start().len())..at + values.byte_offset();
                rest = rest[values.byte_offset()..]
                    .trim_start()
                    .strip_prefix(',')?;
                if key == "jsonrpc" {
                    if version || value != "2.0" {
                        return None;
                    }
                    version = true;
                } else {
                    if id.is_some() || !is_valid_id(&value) {
                        return None;
                    }
                    id = Some((value, span));
                }
            }
            _ => return None,
        }
    }
    if version {
        id
    } else {
        None
    }
}

/// [`response_head`] when `jsonrpc` and `id` come last: read backwards from the final `}`
/// (which, in a valid line, closes the top-level object, so the members just before it are
/// top-level ones). Only a number or an escape-free string is accepted as a value.
fn trailing_members(line: &str) -> Option<Value> {
    if !line.trim_start().starts_with("{\"result\"") {
        return None;
    }
    let mut rest = line.trim_end().strip_suffix('}')?;
    let (mut version, mut id) = (false, None);
    for _ in 0..2 {
        rest = rest.trim_end();
        let value_start = if let Some(body) = rest.strip_suffix('"') {
            body.rfind('"')?
        } else {
            rest.rfind(|c: char| !matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E'))? + 1
        };
        let text = &rest[value_start..];
        if text.is_empty() || text.contains('\\') {
            return None;
        }
        let before = rest[..value_start].trim_end().strip_suffix(':')?.trim_end();
        let key_body = before.strip_suffix('"')?;
        let key_start = key_body.rfind('"')?;
        let key = &key_body[key_start + 1..];
        rest = key_body[..key_start].trim_end().strip_suffix(',')?;
        // Without escapes, `"2.0"` is the only text of the version; only the id is parsed.
        match key {
            "jsonrpc" if !version && text == VERSION => version = true,
            "id" if id.is_none() => {
                let value: Value = serde_json::from_str(text).ok()?;
                if !is_valid_id(&value) {
                    return None;
                }
                id = Some(value);
            }
            _ => return None,
        }
    }
    id.filter(|_| version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_leading_ids_span_is_its_text() {
        for (line, id) in [
            (r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, "7"),
            (
                r#" { "id" :  "a\"b" , "jsonrpc":"2.0", "result":1}"#,
                r#""a\"b""#,
            ),
            (r#"{"jsonrpc" : "2.0" ,"id":-12 ,"result":[]}"#, "-12"),
        ] {
            let span = leading_id_span(line).unwrap();
            assert_eq!(&line[span], id, "{line}");
        }
        assert_eq!(
            leading_id_span(r#"{"result":{},"jsonrpc":"2.0","id":1}"#),
            None
        );
        assert_eq!(
            leading_id_span(r#"{"jsonrpc":"2.0","id":1,"error":{}}"#),
            None
        );
    }

    #[test]
    fn the_version_is_read_as_text_with_the_same_answers() {
        let cases = [
            (r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, Some(json!(7))),
            (
                r#"{ "id" : "a" , "jsonrpc" : "2.0" , "result":1}"#,
                Some(json!("a")),
            ),
            // An escaped version: read by the JSON parser, as before.
            (
                r#"{"jsonrpc":"2\u002e0","id":7,"result":{}}"#,
                Some(json!(7)),
            ),
            (
                r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":7,"result":{}}"#,
                None,
            ),
            (r#"{"jsonrpc":"2.0"x,"id":7,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.00","id":7,"result":{}}"#, None),
            (r#"{"jsonrpc":2.0,"id":7,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","result":{}}"#, None),
            (r#"{"result":{},"jsonrpc":"2.0","id":25}"#, Some(json!(25))),
            (
                r#"{"result":{} , "id" : "x y" , "jsonrpc" : "2.0" } "#,
                Some(json!("x y")),
            ),
            (r#"{"result":{},"jsonrpc":"2\u002e0","id":25}"#, None),
            (r#"{"result":{},"jsonrpc":"2.0","jsonrpc":"2.0"}"#, None),
            (r#"{"result":{},"jsonrpc":2.0,"id":25}"#, None),
            (r#"{"result":{},"jsonrpc":"2.0","id":1.5}"#, None),
            (r#"{"result":{},"jsonrpc":"2.0","id":1-2}"#, None),
            (r#"{"result":{},"jsonrpc":"2.0","id":null}"#, None),
            (r#"{"result":{},"x":"2.0","id":25}"#, None),
            (r#"{"result":{},"id":-3,"jsonrpc":"2.0"}"#, Some(json!(-3))),
        ];
        for (line, want) in cases {
            assert_eq!(response_head(line), want, "{line}");
        }
    }
}
