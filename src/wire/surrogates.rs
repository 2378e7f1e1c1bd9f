//! Lone surrogate escapes in a JSON line replaced by U+FFFD, so that the line parses.
//!
//! JSON text may escape a UTF-16 surrogate on its own (`"\ud800"`, RFC 8259 section 8.2 calls
//! such strings legal JSON but not interoperable); Python's `json.dumps` writes one for each
//! byte of a file name it could not decode. Rust strings cannot hold one, so serde_json
//! rejects the whole line, and a server's answer would fail every time it is retried. Such an
//! escape is replaced with `\ufffd` (REPLACEMENT CHARACTER, the Unicode Standard's choice for
//! an ill-formed code unit); a high surrogate escape directly followed by a low one is a pair
//! and is kept. Pure; no I/O.

use memchr::memmem;

/// `line` with every lone surrogate escape (`\uD800`–`\uDFFF` not part of a high-low pair)
/// replaced by `\ufffd` (the same length, six bytes). The line is given back untouched, without
/// a copy, when it has none (nearly every line: one `memmem` pass over it for `\u`).
/// A `\u` after an escaped backslash (`\\ud800`, the text `\ud800`) is not an escape and is
/// left alone.
pub fn replace_lone_surrogates(line: Vec<u8>) -> Vec<u8> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut pair_end = 0;
    for at in memmem::find_iter(&line, b"\\u") {
        if at < pair_end || !is_escape(&line, at) {
            continue;
        }
        let Some(unit) = surrogate_at(&line, at) else {
            continue;
        };
        let low_follows = surrogate_at(&line, at + 6).is_some_and(|u| u >= 0xdc00);
        if unit < 0xdc00 && low_follows {
            pair_end = at + 12;
            continue;
        }
        let out = out.get_or_insert_with(|| Vec::with_capacity(line.len()));
        out.extend_from_slice(&line[copied..at]);
        out.extend_from_slice(b"\\ufffd");
        copied = at + 6;
    }
    match out {
        None => line,
        Some(mut out) => {
            out.extend_from_slice(&line[copied..]);
            out
        }
    }
}

/// Whether the backslash at `line[at]` starts an escape: an even number of backslashes
/// (none, or escaped ones) comes before it.
fn is_escape(line: &[u8], at: usize) -> bool {
    line[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0
}

/// The code unit of a `\uXXXX` escape at `line[at..]` when it is a surrogate (D800–DFFF).
fn surrogate_at(line: &[u8], at: usize) -> Option<u16> {
    let hex = line.get(at..at + 6)?.strip_prefix(b"\\u")?;
    let unit = u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
    (0xd800..=0xdfff).contains(&unit).then_some(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(line: &str) -> String {
        String::from_utf8(replace_lone_surrogates(line.as_bytes().to_vec())).unwrap()
    }

    #[test]
    fn lone_surrogates_become_the_replacement_character_and_pairs_stay() {
        let cases = [
            (r#"{"t":"\ud800"}"#, r#"{"t":"\ufffd"}"#),
            (r#"{"t":"a\uDC80b\udfff"}"#, r#"{"t":"a\ufffdb\ufffd"}"#),
            (r#"{"t":"\ud83c\udf89"}"#, r#"{"t":"\ud83c\udf89"}"#),
            (
                r#"{"t":"\ud800\ud83c\udf89\udc00"}"#,
                r#"{"t":"\ufffd\ud83c\udf89\ufffd"}"#,
            ),
            (r#"{"t":"\\ud800 \\\ud800"}"#, r#"{"t":"\\ud800 \\\ufffd"}"#),
            (
                r#"{"t":"\u00e9\ud7ff\ue000\ud8"}"#,
                r#"{"t":"\u00e9\ud7ff\ue000\ud8"}"#,
            ),
        ];
        for (line, want) in cases {
            assert_eq!(fixed(line), want, "{line}");
        }
        let parsed: serde_json::Value = serde_json::from_str(&fixed(r#"{"t":"x\ud800"}"#)).unwrap();
        assert_eq!(parsed["t"], "x\u{fffd}");
    }
}
