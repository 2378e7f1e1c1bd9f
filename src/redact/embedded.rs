//! Secrets written as `key=value` pairs inside one argument: a URL's query
//! (`https://h/mcp?api_key=…&x=1`) and a libpq-style connection string
//! (`host=db password=… dbname=x`, PostgreSQL "Connection Strings", keyword/value form).
//!
//! [`super::secret_args`] reads a whole argument as one `KEY=value`, so the `password` of a
//! connection string or the `token` of a query went unseen: into the logs of the server they
//! were passed to, and into the config `import` wrote. Pure; no I/O.

use super::key_is_secret;

/// One `key=value` pair inside an argument whose key is secret ([`key_is_secret`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedSecret<'a> {
    /// The key as written (`password`, `api_key`, `api%5Fkey`).
    pub key: &'a str,
    /// The value as written, without the single quotes of a quoted connection-string value.
    pub value: &'a str,
    /// Byte range of `value` in the argument.
    pub span: std::ops::Range<usize>,
}

impl EmbeddedSecret<'_> {
    /// The key percent-decoded (RFC 3986 section 2.1: `api%5Fkey` is `api_key`), as the
    /// server reads a query's keys.
    pub fn name(&self) -> String {
        super::percent_decoded(self.key)
    }
}

/// Whether the byte before a key lets it start a pair: the start of the argument, a query's
/// `?` or `&`, a fragment's `#` (OAuth's `#access_token=…`), a `;`, or white space
/// (connection strings separate pairs with spaces).
fn starts_pair(before: Option<u8>) -> bool {
    before.is_none_or(|b| matches!(b, b'?' | b'&' | b'#' | b';') || b.is_ascii_whitespace())
}

/// Whether `b` may be part of a key (`%` of a percent-encoded one, `api%5Fkey`, too).
fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'%')
}

/// Keys that name a secret inside a connection string or a query, though not as a variable or
/// flag name ([`key_is_secret`] leaves them out there: `PWD` is the shell's working directory):
/// ODBC's and SQL Server's `PWD`, MySQL's `pass`, a Google API `key`, a signed URL's `sig`
/// (Azure SAS) and any key ending in `signature` (`X-Amz-Signature`), compared ignoring case,
/// `_`, `-` and `.`.
const EMBEDDED_SECRET_KEYS: [&str; 5] = ["pwd", "pass", "key", "sig", "signature"];

/// Whether `key`, written inside an argument, names a secret, read percent-decoded (a query's
/// `api%5Fkey` is the server's `api_key`).
fn is_secret_key(key: &str) -> bool {
    let decoded;
    let key = if key.contains('%') {
        decoded = super::percent_decoded(key);
        decoded.as_str()
    } else {
        key
    };
    let normal = super::normalize(key);
    key_is_secret(key)
        || normal.ends_with("signature")
        || EMBEDDED_SECRET_KEYS.contains(&normal.as_str())
}

/// Every pair of `arg` whose key is secret ([`is_secret_key`]), in order; pairs with an empty
/// value are skipped. Spaces may stand around the `=` (libpq allows them). A value ends at
/// `&`, `;`, `#` or white space; one that starts with `'` or `"` runs to the next such quote
/// not escaped by `\`, one that starts with `{` (ODBC) to the next `}` not doubled, or to the
/// end of the argument when none closes it.
pub fn embedded_secrets(arg: &str) -> Vec<EmbeddedSecret<'_>> {
    let bytes = arg.as_bytes();
    let mut found = Vec::new();
    for (eq, _) in arg.match_indices('=') {
        let key_end = bytes[..eq]
            .iter()
            .rposition(|&b| b != b' ')
            .map_or(0, |i| i + 1);
        let key_start = bytes[..key_end]
            .iter()
            .rposition(|&b| !is_key_byte(b))
            .map_or(0, |i| i + 1);
        let key = &arg[key_start..key_end];
        let before = key_start.checked_sub(1).map(|i| bytes[i]);
        // A key written `--token=` is a flag's, which `secret_args` reads whole.
        let flag = key.starts_with('-');
        if key.is_empty() || flag || !starts_pair(before) || !is_secret_key(key) {
            continue;
        }
        let start = eq + 1 + bytes[eq + 1..].iter().take_while(|&&b| b == b' ').count();
        let span = value_span(bytes, start);
        if !span.is_empty() {
            found.push(EmbeddedSecret {
                key,
                value: &arg[span.clone()],
                span,
            });
        }
    }
    found
}

/// The byte ranges of the secrets written inside `text`, in order and without overlaps: a URL's
/// password (`scheme://user:PASSWORD@host`, RFC 3986 section 3.2.1) and the values of
/// [`embedded_secrets`] (a query's `?token=…`, a connection string's `password=…`).
pub fn embedded_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut spans: Vec<_> = embedded_secrets(text).into_iter().map(|s| s.span).collect();
    if let Some((_, password)) = super::url_user_info(text) {
        // A slice of `text`: its offset is where it starts.
        let start = password.as_ptr() as usize - text.as_ptr() as usize;
        spans.push(start..start + password.len());
    }
    spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let mut merged: Vec<std::ops::Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// Replaces, in every string of `value` at any depth (not in member names), the secrets
/// [`embedded_spans`] finds with [`super::REDACTED`]: what a transcript records of a call's
/// arguments whatever its `redact_keys` (`{"url": "https://u:[redacted]@h/x?token=[redacted]"}`).
/// Returns whether anything was replaced.
pub fn redact_embedded_json(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::String(text) => {
            let spans = embedded_spans(text);
            for span in spans.iter().rev() {
                text.replace_range(span.clone(), super::REDACTED);
            }
            !spans.is_empty()
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, v| redact_embedded_json(v) | changed),
        Value::Object(members) => members
            .values_mut()
            .fold(false, |changed, v| redact_embedded_json(v) | changed),
        _ => false,
    }
}

/// The byte range of the value that starts at `start` (see [`embedded_secrets`]).
fn value_span(bytes: &[u8], start: usize) -> std::ops::Range<usize> {
    let close = match bytes.get(start) {
        Some(b'\'') => Some(b'\''),
        Some(b'"') => Some(b'"'),
        Some(b'{') => Some(b'}'),
        _ => None,
    };
    if let Some(close) = close {
        let mut i = start + 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' if close != b'}' => i += 2,
                b'}' if close == b'}' && bytes.get(i + 1) == Some(&b'}') => i += 2,
                b if b == close => return start + 1..i,
                _ => i += 1,
            }
        }
        return start + 1..bytes.len();
    }
    let end = bytes[start..]
        .iter()
        .position(|&b| matches!(b, b'&' | b';' | b'#') || b.is_ascii_whitespace())
        .map_or(bytes.len(), |i| start + i);
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(arg: &str) -> Vec<(&str, &str)> {
        embedded_secrets(arg)
            .into_iter()
            .map(|s| (s.key, s.value))
            .collect()
    }

    #[test]
    fn query_parameters_and_connection_string_keywords_are_found() {
        assert_eq!(
            values("https://h/mcp?x=1&api_key=k%40y-1&token=t2#frag"),
            [("api_key", "k%40y-1"), ("token", "t2")]
        );
        assert_eq!(
            values("host=db port=5432 password=pw-123 dbname=x"),
            [("password", "pw-123")]
        );
        assert_eq!(
            values(r"host=db password='a b\'c' sslmode=require"),
            [("password", r"a b\'c")]
        );
        assert_eq!(values("password='open"), [("password", "open")]);
        assert_eq!(
            values(r#"host=db password="dq secret 77" dbname=x"#),
            [("password", "dq secret 77")]
        );
        assert_eq!(
            values("Server=x;UID=u;PWD={a;b}}c};Database=d"),
            [("PWD", "a;b}}c")]
        );
        assert_eq!(
            values("password = SpacedPW66 host=db"),
            [("password", "SpacedPW66")]
        );
        assert_eq!(
            values("https://maps/?key=AIza-1&sig=s1g&X-Amz-Signature=abc&keyboard=1"),
            [
                ("key", "AIza-1"),
                ("sig", "s1g"),
                ("X-Amz-Signature", "abc")
            ]
        );
        assert_eq!(
            values("Server=x;UID=u;PWD=OdbcPwd999;"),
            [("PWD", "OdbcPwd999")]
        );
        assert_eq!(values("API_TOKEN=ghp_1"), [("API_TOKEN", "ghp_1")]);
        let encoded = "https://h/mcp?x=1&api%5Fkey=SECRET1&%70assword=pw2&max%5Ftokens=9";
        assert_eq!(
            values(encoded),
            [("api%5Fkey", "SECRET1"), ("%70assword", "pw2")]
        );
        let names: Vec<String> = embedded_secrets(encoded).iter().map(|s| s.name()).collect();
        assert_eq!(names, ["api_key", "password"]);
    }

    #[test]
    fn keys_inside_words_and_harmless_keys_are_not_pairs() {
        // `--token=` is a flag: `secret_args` reads it whole.
        assert!(values("--token=abc").is_empty());
        assert!(values("https://h/x?max_tokens=4096&page=2").is_empty());
        assert!(values("host=db password='' dbname=x").is_empty());
        assert!(values("a=b=c").is_empty());
    }

    #[test]
    fn the_span_points_at_the_value() {
        let arg = "user=bob password='s3cr3t x' db=y";
        let found = embedded_secrets(arg);
        assert_eq!(&arg[found[0].span.clone()], "s3cr3t x");
    }

    #[test]
    fn urls_and_pairs_inside_json_strings_are_redacted() {
        let mut value = serde_json::json!({
            "url": "https://u:v14@h/x?token=v15&page=2",
            "dsn": ["host=db password=pw dbname=x"],
            "query": "max_tokens=5",
            "plain": "https://h/x",
        });
        assert!(redact_embedded_json(&mut value));
        assert_eq!(
            value,
            serde_json::json!({
                "url": "https://u:[redacted]@h/x?token=[redacted]&page=2",
                "dsn": ["host=db password=[redacted] dbname=x"],
                "query": "max_tokens=5",
                "plain": "https://h/x",
            })
        );
        assert!(!redact_embedded_json(
            &mut serde_json::json!({"a": "b", "n": 1})
        ));
    }
}
