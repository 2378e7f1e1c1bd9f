//! What can still be read from a line that is not valid JSON (nested deeper than the parser's
//! recursion limit, a lone surrogate escape, a broken tail): its top-level members' names and
//! its `id`, so that the error answer names the request (JSON-RPC 2.0 asks for the id when it
//! can be determined) and a broken answer from a server ends the call it answers at once.
//!
//! A single pass over the bytes that tracks nesting and strings; only members of the outermost
//! object count, so an `"id"` inside `params` is never taken for the request's. Pure; no I/O.

use serde_json::Value;

use crate::wire::jsonrpc::is_valid_id;

/// The outermost object's member names (in order) and its `id` when that is a valid id
/// (a string or an integer) that parses on its own.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TopLevel {
    /// Member names of the outermost object, as written (unescaped names only).
    pub keys: Vec<String>,
    /// The `id` member's value, when valid.
    pub id: Option<Value>,
}

impl TopLevel {
    /// Whether the line looks like a response: an `id`, a `result` or `error` member and no
    /// `method`.
    pub fn is_response(&self) -> bool {
        self.id.is_some()
            && !self.keys.iter().any(|k| k == "method")
            && self.keys.iter().any(|k| k == "result" || k == "error")
    }
}

/// Scans `line` (see the module doc). Never fails: what cannot be read is left out.
pub fn top_level(line: &[u8]) -> TopLevel {
    let mut out = TopLevel::default();
    let start = match line.iter().position(|b| !b.is_ascii_whitespace()) {
        Some(i) if line[i] == b'{' => i + 1,
        _ => return out,
    };
    let mut depth = 1usize;
    let mut i = start;
    // Whether the next string at depth 1 is a member name (after `{` or `,`).
    let mut expect_key = true;
    while i < line.len() {
        match line[i] {
            b'"' => {
                let end = string_end(line, i);
                if depth == 1 && expect_key {
                    let name = &line[i + 1..end.saturating_sub(1).max(i + 1)];
                    let name = String::from_utf8_lossy(name).into_owned();
                    if name == "id" && out.id.is_none() {
                        out.id = value_after_colon(&line[end..]);
                    }
                    out.keys.push(name);
                    expect_key = false;
                }
                i = end;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            b',' if depth == 1 => expect_key = true,
            _ => {}
        }
        i += 1;
    }
    out
}

/// The index just past the string that starts at `line[start] == b'"'` (or the line's end).
fn string_end(line: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    line.len()
}

/// The value after `: ` at the start of `rest`, when it is a valid id.
fn value_after_colon(rest: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(rest)
        .or_else(|e| std::str::from_utf8(&rest[..e.valid_up_to()]))
        .ok()?;
    let value = text.trim_start().strip_prefix(':')?;
    let mut values = serde_json::Deserializer::from_str(value).into_iter::<Value>();
    values.next()?.ok().filter(is_valid_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deep(n: usize) -> String {
        format!("{}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn finds_the_outer_id_only() {
        let line = format!(
            r#"{{"jsonrpc":"2.0","params":{{"id":9,"x":{}}},"id":"req-1","method":"tools/call"}}"#,
            deep(500)
        );
        assert!(
            serde_json::from_str::<Value>(&line).is_err(),
            "too deep for serde"
        );
        let top = top_level(line.as_bytes());
        assert_eq!(top.id, Some(json!("req-1")));
        assert_eq!(top.keys, ["jsonrpc", "params", "id", "method"]);
        assert!(!top.is_response());
    }

    #[test]
    fn lone_surrogates_and_escaped_quotes_do_not_confuse_it() {
        let line = r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"s":"\ud800 \" }"}}"#;
        assert!(serde_json::from_str::<Value>(line).is_err());
        assert_eq!(top_level(line.as_bytes()).id, Some(json!(7)));
    }

    #[test]
    fn responses_with_deep_data() {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":3,"error":{{"code":1,"message":"m","data":{}}}}}"#,
            deep(1000)
        );
        let top = top_level(line.as_bytes());
        assert!(top.is_response());
        assert_eq!(top.id, Some(json!(3)));
        for not in [
            "[1]",
            "nope",
            r#"{"id":1.5,"result":1}"#,
            r#"{"id":null,"error":1}"#,
        ] {
            assert!(!top_level(not.as_bytes()).is_response(), "{not}");
        }
    }
}
