//! Config errors about numbers, in the same words for every numeric key: what the key expects
//! ("a whole number of at least 1", "a whole number of at least 0, at most 4294967295", "a
//! positive number of seconds, ...") rather than a Rust type name (`u32`), and a number TOML
//! itself cannot hold (an integer beyond 64 bits, a float beyond `f64`) reported under its key.
//!
//! TOML 1.0 ("Integer"): integers are 64-bit signed, and one that cannot be represented
//! losslessly is an error. The toml parser reports it before any key is deserialized, so its
//! error has a position but no key: [`unholdable_number`] finds the key (and what it expects)
//! by deserializing again with an empty inline table (`{}`) in the number's place, which every
//! key that takes a number or a string refuses under its own key path. The number itself is never echoed (it may sit under a
//! secret's key).

use std::ops::Range;

use super::raw::RawConfig;
use super::validate::key_path;

/// The toml parser's messages for a number it cannot hold, and how we say each.
const UNHOLDABLE: [(&str, &str); 3] = [
    (
        "number too large to fit in target type",
        "an integer too large for TOML (at most 9223372036854775807)",
    ),
    (
        "number too small to fit in target type",
        "an integer too small for TOML (at least -9223372036854775808)",
    ),
    (
        "invalid floating-point number",
        "a float TOML cannot hold (finite, at most about 1.8e308)",
    ),
];

/// A number the toml parser refused (`message`, at `span` of `text`), as `(position, key,
/// message)`: `invalid value: <what it is>, expected <what the key expects>`. `None` for any
/// other error, or when the key cannot be found (the caller keeps the parser's message).
pub(super) fn unholdable_number(
    text: &str,
    span: Option<Range<usize>>,
    message: &str,
) -> Option<(Range<usize>, String, String)> {
    let (_, what) = UNHOLDABLE.iter().find(|(m, _)| message.contains(m))?;
    let start = span?.start;
    let len = text
        .get(start..)?
        .find(literal_end)
        .unwrap_or(text.len() - start);
    if len == 0 {
        return None;
    }
    let probe = format!("{}{{}}{}", &text[..start], &text[start + len..]);
    let deserializer = toml::Deserializer::new(&probe);
    let err = serde_path_to_error::deserialize::<_, RawConfig>(deserializer).err()?;
    let key = key_path(err.path());
    let inner = err.inner();
    if key.is_empty() || inner.span().map(|s| s.start) != Some(start) {
        return None;
    }
    let expected = inner.message().split_once(", expected ")?.1;
    let expected = plain_expectation(&format!("expected {expected}"));
    let message = format!("invalid value: {what}, {}", expected.trim());
    Some((start..start + len, key, message))
}

/// Where a number literal ends: TOML numbers hold none of these.
fn literal_end(c: char) -> bool {
    c.is_whitespace() || matches!(c, ',' | '}' | ']' | '#')
}

/// `message` with an expectation named by a Rust type (serde's words for an integer field:
/// `expected u32`, `expected a nonzero usize`) said as the other numeric keys say it: "a whole
/// number of at least N[, at most M]". Other messages are returned unchanged.
pub(super) fn plain_expectation(message: &str) -> String {
    let Some((before, expected)) = message.rsplit_once("expected ") else {
        return message.to_owned();
    };
    let (nonzero, ty) = match expected.trim_end().strip_prefix("a nonzero ") {
        Some(ty) => (true, ty),
        None => (false, expected.trim_end()),
    };
    let range = match ty {
        "u8" => Some((0, Some(u64::from(u8::MAX)))),
        "u16" => Some((0, Some(u64::from(u16::MAX)))),
        "u32" => Some((0, Some(u64::from(u32::MAX)))),
        // A TOML integer is at most i64::MAX, well within these.
        "u64" | "usize" => Some((0, None)),
        _ => None,
    };
    let Some((least, most)) = range else {
        return message.to_owned();
    };
    let least = if nonzero { 1 } else { least };
    let most = most.map(|m| format!(", at most {m}")).unwrap_or_default();
    format!("{before}expected a whole number of at least {least}{most}")
}

/// `message` with each float serde quotes (`` floating point `…` ``) that is longer than 24
/// characters written in scientific notation: serde prints a float's every digit, so
/// `tool_timeout_sec = 1e300` was echoed as a 300-digit literal. Other text is unchanged.
pub(super) fn short_floats(message: &str) -> String {
    const MARK: &str = "floating point `";
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(MARK) {
        let (head, tail) = rest.split_at(at + MARK.len());
        out.push_str(head);
        let Some(end) = tail.find('`') else {
            rest = tail;
            break;
        };
        let literal = &tail[..end];
        match literal.parse::<f64>() {
            Ok(v) if literal.len() > 24 => out.push_str(&format!("{v:e}")),
            _ => out.push_str(literal),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_float_is_said_in_scientific_notation() {
        let long = format!("1{}.0", "0".repeat(300));
        let message = format!("invalid type: floating point `{long}`, expected u32");
        assert_eq!(
            short_floats(&message),
            "invalid type: floating point `1e300`, expected u32"
        );
        let short = "invalid value: floating point `1.5`, expected x";
        assert_eq!(short_floats(short), short);
        assert_eq!(short_floats("floating point `oops"), "floating point `oops");
    }

    #[test]
    fn rust_type_names_become_the_words_other_keys_use() {
        let cases = [
            (
                "invalid type: floating point `1.5`, expected u32",
                "invalid type: floating point `1.5`, expected a whole number of at least 0, at most 4294967295",
            ),
            (
                "invalid value: integer `0`, expected a nonzero usize",
                "invalid value: integer `0`, expected a whole number of at least 1",
            ),
            (
                "invalid type: string \"x\", expected u64",
                "invalid type: string \"x\", expected a whole number of at least 0",
            ),
            (
                "invalid value: integer `0`, expected a whole number of at least 1",
                "invalid value: integer `0`, expected a whole number of at least 1",
            ),
            ("unknown field `x`", "unknown field `x`"),
        ];
        for (message, said) in cases {
            assert_eq!(plain_expectation(message), said);
        }
    }

    #[test]
    fn an_unholdable_number_is_reported_under_its_key() {
        let text = "[defaults]\nchar_budget = 99999999999999999999 # note\n";
        let at = text.find("999").unwrap();
        let (span, key, message) = unholdable_number(
            text,
            Some(at..at + 1),
            "number too large to fit in target type",
        )
        .unwrap();
        assert_eq!(span, at..at + 20);
        assert_eq!(key, "defaults.char_budget");
        assert_eq!(
            message,
            "invalid value: an integer too large for TOML (at most 9223372036854775807), expected a whole number of at least 1"
        );
        assert_eq!(
            unholdable_number(text, Some(at..at + 1), "expected `=`"),
            None
        );
    }
}
