//! Secrets inside a JSON document passed as one argument: `{"password":"hunter2"}`, or
//! `--config` followed by `{"db":{"apiKey":"…"}}`. Such an argument holds no `KEY=value` and
//! no secret flag, so [`super::secret_args`] and [`super::embedded_secrets`] saw nothing in it:
//! its secrets reached the config `import` wrote and the logs of the server it was passed to.
//!
//! A secret is the string value of a member whose name looks secret ([`key_is_secret`], as in
//! a config document, [`super::secrets_in_document`]), at any depth of objects and arrays. The
//! argument must be one JSON object or array (RFC 8259), white space around it allowed;
//! anything else holds none. Pure; no I/O.

use std::fmt;
use std::ops::Range;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::key_is_secret;

/// One secret string inside a JSON argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonSecret {
    /// The member's name, JSON escapes decoded (`apiKey`).
    pub key: String,
    /// The string's value, JSON escapes decoded (what the server reads).
    pub value: String,
    /// Byte range in the argument of the string as written between its quotes (escapes as
    /// written), so that it can be replaced in place.
    pub span: Range<usize>,
}

/// Every non-empty string in `arg` whose member name looks secret, in the order written; a
/// member given twice counts each time. Empty when `arg` is not one JSON object or array.
pub fn json_secrets(arg: &str) -> Vec<JsonSecret> {
    if !arg.trim_start().starts_with(['{', '[']) {
        return Vec::new();
    }
    // Parsed once whole first: the nesting limit of serde_json bounds the walk below.
    let Ok(root) = serde_json::from_str::<&RawValue>(arg) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    walk(arg, root, &mut found);
    found
}

/// Adds the secrets of the JSON value `raw` (a slice of `arg`) to `found`.
fn walk(arg: &str, raw: &RawValue, found: &mut Vec<JsonSecret>) {
    let text = raw.get();
    if text.starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(text).unwrap_or_default();
        items.into_iter().for_each(|item| walk(arg, item, found));
        return;
    }
    if !text.starts_with('{') {
        return;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let Ok(members) = de.deserialize_map(AllMembers) else {
        return;
    };
    for (key, member) in members {
        let written = member.get();
        if !written.starts_with('"') || !key_is_secret(&key) {
            walk(arg, member, found);
            continue;
        }
        let Ok(value) = serde_json::from_str::<String>(written) else {
            continue;
        };
        if value.is_empty() {
            continue;
        }
        let start = written.as_ptr() as usize - arg.as_ptr() as usize;
        found.push(JsonSecret {
            key,
            value,
            span: start + 1..start + written.len() - 1,
        });
    }
}

/// An object's members in the order written, each value borrowed as written (a map would
/// keep only the last of a name given twice, and a server may read the first).
struct AllMembers;

impl<'de> Visitor<'de> for AllMembers {
    type Value = Vec<(String, &'de RawValue)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
            members.push(member);
        }
        Ok(members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(arg: &str) -> Vec<(String, String, &str)> {
        json_secrets(arg)
            .into_iter()
            .map(|s| (s.key, s.value, &arg[s.span]))
            .collect()
    }

    fn owned(all: &[(&str, &str, &'static str)]) -> Vec<(String, String, &'static str)> {
        all.iter()
            .map(|(k, v, w)| (k.to_string(), v.to_string(), *w))
            .collect()
    }

    #[test]
    fn secret_members_are_found_at_any_depth_with_their_spans() {
        assert_eq!(
            found(r#"{"password":"hunter2"}"#),
            owned(&[("password", "hunter2", "hunter2")])
        );
        assert_eq!(
            found(r#" {"db": {"user": "bob", "apiKey": "k-1\"2"}, "list": [{"token": "t9"}]} "#),
            owned(&[("apiKey", "k-1\"2", r#"k-1\"2"#), ("token", "t9", "t9")])
        );
        assert_eq!(
            found(r#"{"token":"a","token":"b","max_tokens":"5","secret":7,"password":""}"#),
            owned(&[("token", "a", "a"), ("token", "b", "b")]),
            "both of a name given twice; no number, empty string or harmless name"
        );
        assert_eq!(
            found(r#"[{"client_secret":"c\u0073"}]"#),
            owned(&[("client_secret", "cs", r"c\u0073")])
        );
    }

    #[test]
    fn other_arguments_hold_no_json_secrets() {
        for arg in [
            "password=hunter2",
            r#"{"password":"unterminated"#,
            r#""password""#,
            "--token",
            "",
            "{}",
        ] {
            assert!(json_secrets(arg).is_empty(), "{arg}");
        }
    }
}
