//! Writing an edited JSON document back over the text it was read from, changing only what
//! changed: unchanged values keep their exact text (a compact object stays compact, a
//! hand-aligned one stays aligned), members removed from an object take their separator with
//! them, members added go after the last one in the object's own layout (one line, or one
//! member a line with its indentation), and a value that changed is written in the layout of
//! the value it replaces. The text must be strict JSON (RFC 8259); the scan below relies on it.

use std::ops::Range;

use serde::Serialize;
use serde_json::{Map, Value};

/// `new` written over `original`, the text of a document that parses to `old`; what is before
/// and after the top-level value (whitespace, the final newline) is kept. `None` when
/// `original` cannot be scanned as one JSON value (the caller writes the whole document).
pub(super) fn write_over(original: &str, old: &Value, new: &Value) -> Option<String> {
    let b = original.as_bytes();
    let start = ws(b, 0);
    let end = value_end(b, start)?;
    let pretty = original.trim().contains('\n');
    let style = Style {
        text: original,
        unit: indent_unit(original),
    };
    let body = style.value(start..end, old, new, "", pretty)?;
    Some(format!("{}{body}{}", &original[..start], &original[end..]))
}

/// The file's indentation step: the first indented line's leading whitespace, else two spaces.
pub(super) fn indent_unit(text: &str) -> &str {
    text.lines()
        .skip(1)
        .map(|l| &l[..l.len() - l.trim_start().len()])
        .find(|ws| !ws.is_empty())
        .unwrap_or("  ")
}

/// `value` as JSON text: on one line, or one member or element a line indented by `unit`
/// steps after `base` (the indentation of the line the value starts on).
pub(super) fn serialize_at(value: &Value, pretty: bool, base: &str, unit: &str) -> String {
    if !pretty {
        return value.to_string();
    }
    let mut buf = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
    value
        .serialize(&mut ser)
        .expect("a Value always serializes");
    let text = String::from_utf8(buf).expect("serde_json writes UTF-8");
    // A JSON string never holds a raw newline, so every newline is layout.
    text.replace('\n', &format!("\n{base}"))
}

/// The original text and its indentation step.
struct Style<'t> {
    text: &'t str,
    unit: &'t str,
}

/// One `"key": value` of an object in the text.
struct Member {
    key: String,
    key_start: usize,
    value: Range<usize>,
}

impl Style<'_> {
    /// The new text of the value at `span` (which was `old`, and is to be `new`). `base` is
    /// the indentation of its line; `pretty` whether its container lays out one member a line.
    fn value(
        &self,
        span: Range<usize>,
        old: &Value,
        new: &Value,
        base: &str,
        pretty: bool,
    ) -> Option<String> {
        let was = &self.text[span.clone()];
        if old == new {
            return Some(was.to_owned());
        }
        if let (Value::Object(o), Value::Object(n)) = (old, new) {
            if let Some(text) = self.object(span.clone(), o, n, base, pretty) {
                return Some(text);
            }
        }
        let multi = if was.contains('\n') {
            true
        } else if was.len() > 2 && matches!(old, Value::Object(_) | Value::Array(_)) {
            false
        } else {
            pretty
        };
        Some(serialize_at(new, multi, base, self.unit))
    }

    /// The new text of an object whose kept members stay in their order with new members
    /// after them; `None` otherwise (the caller writes it anew).
    fn object(
        &self,
        span: Range<usize>,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        base: &str,
        pretty: bool,
    ) -> Option<String> {
        let members = members(self.text, span.clone())?;
        if members.len() != o.len() {
            return None; // a key written twice
        }
        let kept: Vec<&String> = n.keys().filter(|k| o.contains_key(*k)).collect();
        let old_kept: Vec<&String> = o.keys().filter(|k| n.contains_key(*k)).collect();
        let added_after = n.keys().skip(kept.len()).all(|k| !o.contains_key(k));
        if kept != old_kept || !added_after {
            return None;
        }
        let t = self.text;
        let close = span.end - 1;
        let leading = match members.first() {
            Some(m) => &t[span.start + 1..m.key_start],
            None => &t[span.start + 1..close],
        };
        let multi = leading.contains('\n') || (members.is_empty() && pretty);
        let indent = match (multi, members.is_empty()) {
            (false, _) => base.to_owned(),
            (true, false) => leading.rsplit('\n').next().unwrap_or("").to_owned(),
            (true, true) => format!("{base}{}", self.unit),
        };
        let mut out = String::from("{");
        if members.len() == n.len() && kept.len() == n.len() {
            // Same keys in the same order: only values change; every separator stays.
            let mut at = span.start + 1;
            for m in &members {
                out.push_str(&t[at..m.value.start]);
                let v = self.value(m.value.clone(), &o[&m.key], &n[&m.key], &indent, multi)?;
                out.push_str(&v);
                at = m.value.end;
            }
            out.push_str(&t[at..span.end]);
            return Some(out);
        }
        if n.is_empty() {
            return Some("{}".into());
        }
        let colon = match members.first() {
            Some(m) => {
                let key_end = string_end(t.as_bytes(), m.key_start)?;
                t[key_end..m.value.start].to_owned()
            }
            None if multi => ": ".into(),
            None => ":".into(),
        };
        let sep = match (members.first(), members.get(1)) {
            (Some(a), Some(b)) => t[a.value.end..b.key_start].to_owned(),
            _ if multi => format!(",\n{indent}"),
            _ if colon == ": " => ", ".into(),
            _ => ",".into(),
        };
        let (lead, trail) = match (members.first(), members.last()) {
            (Some(_), Some(last)) => (leading.to_owned(), t[last.value.end..close].to_owned()),
            _ if multi => (format!("\n{indent}"), format!("\n{base}")),
            _ => (String::new(), String::new()),
        };
        let mut items = Vec::with_capacity(n.len());
        for (key, value) in n {
            let item = match members.iter().find(|m| &m.key == key) {
                Some(m) => {
                    let v = self.value(m.value.clone(), &o[key], value, &indent, multi)?;
                    format!("{}{v}", &t[m.key_start..m.value.start])
                }
                None => format!(
                    "{}{colon}{}",
                    Value::String(key.clone()),
                    serialize_at(value, multi, &indent, self.unit)
                ),
            };
            items.push(item);
        }
        out.push_str(&lead);
        out.push_str(&items.join(&sep));
        out.push_str(&trail);
        out.push('}');
        Some(out)
    }
}

/// The index after the JSON whitespace at `i`.
fn ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The index after the string that opens at `i`.
fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The index after the value that starts at `i`.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let (mut depth, mut j) = (0usize, i);
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while !matches!(
                b.get(j),
                None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            ) {
                j += 1;
            }
            Some(j)
        }
    }
}

/// The members of the object at `span`, in order; `None` when the text is not an object.
fn members(text: &str, span: Range<usize>) -> Option<Vec<Member>> {
    let b = text.as_bytes();
    if b.get(span.start) != Some(&b'{') {
        return None;
    }
    let mut i = ws(b, span.start + 1);
    let mut out = Vec::new();
    if b.get(i) == Some(&b'}') {
        return Some(out);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(b, i)?;
        let key: String = serde_json::from_str(&text[i..key_end]).ok()?;
        let colon = ws(b, key_end);
        if b.get(colon) != Some(&b':') {
            return None;
        }
        let start = ws(b, colon + 1);
        let end = value_end(b, start)?;
        out.push(Member {
            key,
            key_start: i,
            value: start..end,
        });
        let next = ws(b, end);
        match b.get(next)? {
            b',' => i = ws(b, next + 1),
            b'}' => return Some(out),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edit(text: &str, change: impl FnOnce(&mut Value)) -> String {
        let old: Value = serde_json::from_str(text).unwrap();
        let mut new = old.clone();
        change(&mut new);
        let out = write_over(text, &old, &new).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), new, "{out}");
        out
    }

    #[test]
    fn only_the_changed_member_differs() {
        let text = "{\n  \"a\": {\"x\":1,\"y\":[1,2]},\n  \"s\": {\n    \"old\": {\"command\": \"c\"},\n    \"keep\": 1\n  },\n  \"z\": \"\\\"}\"\n}\n";
        let out = edit(text, |v| {
            let s = v["s"].as_object_mut().unwrap();
            s.shift_remove("old");
            s.insert("new".into(), json!({"command": "p", "args": []}));
        });
        assert_eq!(
            out,
            "{\n  \"a\": {\"x\":1,\"y\":[1,2]},\n  \"s\": {\n    \"keep\": 1,\n    \"new\": {\n      \"command\": \"p\",\n      \"args\": []\n    }\n  },\n  \"z\": \"\\\"}\"\n}\n"
        );
    }

    #[test]
    fn compact_objects_stay_compact_and_new_members_follow_their_layout() {
        let text = "{\n\t\"p\": {\"/a\":{\"h\":[]},\"/b\":{\"k\": 1}}\n}";
        let out = edit(text, |v| {
            v["p"]["/a"]["s"] = json!({"e": {"c": "x"}});
            v["p"]["/b"]["s"] = json!({});
        });
        assert_eq!(
            out,
            "{\n\t\"p\": {\"/a\":{\"h\":[],\"s\":{\"e\":{\"c\":\"x\"}}},\"/b\":{\"k\": 1, \"s\": {}}}\n}"
        );
        // A new member of an empty object in a multi-line file, and a removed last member.
        let out = edit("{\n  \"s\": {},\n  \"t\": 1\n}", |v| {
            v["s"]["e"] = json!({"c": 1});
            v.as_object_mut().unwrap().shift_remove("t");
        });
        assert_eq!(
            out,
            "{\n  \"s\": {\n    \"e\": {\n      \"c\": 1\n    }\n  }\n}"
        );
    }

    #[test]
    fn reordered_members_are_written_anew_in_the_layout_of_the_file() {
        let out = edit("{\"s\": {\"b\": 1, \"a\": 2}}", |v| {
            v["s"] = json!({"a": 3, "b": 1});
        });
        assert_eq!(out, "{\"s\": {\"a\":3,\"b\":1}}");
        assert!(write_over("{\"a\":", &json!({}), &json!({"a": 1})).is_none());
    }
}
