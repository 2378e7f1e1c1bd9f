//! Setting one top-level member of a JSON-RPC message given as text, keeping every other
//! member as the client or the session wrote it (numbers keep their exact text): how the HTTP
//! transport gives a request a wire id of its own and puts the client's id back in the
//! answer. Pure.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// `line` with its top-level `id` set to `id`, on one line ([`with_member`]). An answer that
/// starts like a success response (`jsonrpc` and `id` before `result`, as the session writes
/// its answers: [`crate::wire::head::leading_id_span`]) has the id's text replaced without
/// the rest being read.
pub(super) fn with_id(line: &[u8], id: &Value) -> Option<Vec<u8>> {
    let head = std::str::from_utf8(line)
        .ok()
        .and_then(crate::wire::head::leading_id_span);
    match head {
        Some(span) => {
            let id = serde_json::to_vec(id).ok()?;
            Some(one_line(
                [&line[..span.start], &id, &line[span.end..]].concat(),
            ))
        }
        None => with_member(line, "id", id),
    }
}

/// The JSON object `json` on one line with its member `key` set to `value`, every other
/// member kept as written (numbers keep their exact text). A member there once has its value's
/// text replaced where it stands, the rest of the text copied; a member absent or repeated
/// makes the members written again in key order (the last of a repeated one kept, as a parser
/// keeps it). `None` when `json` is not a JSON object.
pub(super) fn with_member(json: &[u8], key: &str, value: &Value) -> Option<Vec<u8>> {
    let Members(members) = serde_json::from_slice(json).ok()?;
    let value = serde_json::value::to_raw_value(value).ok()?;
    let mut named = members.iter().filter(|(k, _)| k == key);
    if let (Some((_, old)), None) = (named.next(), named.next()) {
        // `old` borrows from `json` (read from the slice, never copied): its place in it.
        let start = old.get().as_ptr() as usize - json.as_ptr() as usize;
        let end = start + old.get().len();
        let mut out = Vec::with_capacity(json.len() + value.get().len());
        out.extend_from_slice(&json[..start]);
        out.extend_from_slice(value.get().as_bytes());
        out.extend_from_slice(&json[end..]);
        return Some(one_line(out));
    }
    let mut sorted: BTreeMap<Cow<'_, str>, &RawValue> = members.into_iter().collect();
    sorted.insert(Cow::Borrowed(key), &value);
    serde_json::to_vec(&sorted).ok().map(one_line)
}

/// A JSON object's members in order, repeated ones included, keys decoded and values as
/// written.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    members.push((key, map.next_value()?));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// The JSON text of one message on one line: line breaks between tokens become spaces (inside
/// JSON strings they are always escaped, so nothing else changes).
pub fn one_line(mut json: Vec<u8>) -> Vec<u8> {
    for byte in json.iter_mut() {
        if *byte == b'\n' || *byte == b'\r' {
            *byte = b' ';
        }
    }
    json
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_replaced_id_leaves_every_other_member_as_written() {
        let raw = br#"{"jsonrpc":"2.0","id":5,
 "method":"tools/call","params":{"n":1.10,"big":123456789012345678901234567890}}"#;
        let line = with_member(raw, "id", &json!("abc")).unwrap();
        let text = String::from_utf8(line).unwrap();
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains(r#""id":"abc""#), "{text}");
        assert!(
            text.contains(r#"{"n":1.10,"big":123456789012345678901234567890}"#),
            "{text}"
        );
        assert_eq!(with_member(b"[1]", "id", &json!(1)), None);
        // Replaced where it stands, the rest as written; absent or repeated: written again.
        let spliced = with_member(br#"{"b": 1.50 ,"id" : 7,"a":"\u00e9"}"#, "id", &json!("x"));
        assert_eq!(
            String::from_utf8(spliced.unwrap()).unwrap(),
            r#"{"b": 1.50 ,"id" : "x","a":"\u00e9"}"#
        );
        let added = with_member(br#"{"b":1,"a":2}"#, "id", &json!(3)).unwrap();
        assert_eq!(String::from_utf8(added).unwrap(), r#"{"a":2,"b":1,"id":3}"#);
        let repeated = with_member(br#"{"id":1,"b":1,"id":2}"#, "id", &json!(3)).unwrap();
        assert_eq!(String::from_utf8(repeated).unwrap(), r#"{"b":1,"id":3}"#);
        let escaped_key = with_member(br#"{"i\u0064":1}"#, "id", &json!(3)).unwrap();
        assert_eq!(String::from_utf8(escaped_key).unwrap(), r#"{"i\u0064":3}"#);
    }
}
