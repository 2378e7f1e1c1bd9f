//! Secrets in any JSON spelling: a server that writes `P\u00e4ssword`, `a\/b`, `\u0041` for
//! `A` or a surrogate pair for an astral character hides nothing from a reader who decodes the
//! text, and neither does one that nests the spelling in JSON inside a string (`P\\u00e4ss`,
//! decoded twice). Pure; no I/O.
//!
//! A text is searched as written and after each round of JSON string unescaping (RFC 8259
//! section 7: `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\uXXXX` in either case,
//! surrogate pairs), up to [`MAX_LEVELS`] rounds; a backslash that starts no valid escape stays
//! as it is. Every character of a round remembers the bytes of the original text it comes from,
//! so what is replaced is exactly the spelling, and the rest of the text (its own escapes
//! included) is kept.

/// Rounds of unescaping searched beyond the text as written: a secret nested deeper than this
/// (2^16 backslashes before its escapes) is not looked for.
pub const MAX_LEVELS: usize = 16;

/// The characters that decide whether escapes need decoding: those of the secrets and `\`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Alphabet(Vec<char>);

impl Alphabet {
    /// The alphabet of `values`.
    pub(crate) fn of<'a>(values: impl IntoIterator<Item = &'a str>) -> Alphabet {
        let mut chars: Vec<char> = values.into_iter().flat_map(str::chars).collect();
        chars.push('\\');
        chars.sort_unstable();
        chars.dedup();
        Alphabet(chars)
    }

    fn has(&self, c: char) -> bool {
        self.0.binary_search(&c).is_ok()
    }

    /// Whether `text` has an escape that could spell part of a secret: one decoding to a
    /// character of the secrets or to a backslash, or one that is not valid. Without one, a
    /// secret in any round of unescaping is also in `text` as written. One pass over the
    /// backslashes of an ordinary line (`\n`, `\"` in text without those characters).
    pub(crate) fn suspicious(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        let mut at = 0;
        while let Some(i) = bytes[at..].iter().position(|&b| b == b'\\') {
            match escape_at(&bytes[at + i..]) {
                Some((c, len)) if !self.has(c) => at += i + len,
                _ => return true,
            }
        }
        false
    }
}

/// The character of a one-letter escape (`n` for a line feed), if `b` is one.
fn simple_escape(b: u8) -> Option<char> {
    Some(match b {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

/// The value of four hex digits (either case) at the start of `bytes`.
fn hex4(bytes: &[u8]) -> Option<u16> {
    let digits = std::str::from_utf8(bytes.get(..4)?).ok()?;
    digits
        .bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then(|| u16::from_str_radix(digits, 16).ok())?
}

/// The escape at the start of `bytes` (a backslash first): its character and its length in
/// bytes (an escape is ASCII); `None` when it is no valid escape (a lone surrogate is none).
fn escape_at(bytes: &[u8]) -> Option<(char, usize)> {
    let next = *bytes.get(1)?;
    if next != b'u' {
        return simple_escape(next).map(|c| (c, 2));
    }
    let high = hex4(bytes.get(2..)?)?;
    if !(0xD800..=0xDFFF).contains(&high) {
        return char::from_u32(high.into()).map(|c| (c, 6));
    }
    if bytes.get(6..8)? != b"\\u" {
        return None;
    }
    let low = hex4(&bytes[8..])?;
    let c = char::decode_utf16([high, low]).next()?.ok()?;
    Some((c, 12))
}

/// One round of unescaping of `text`: calls `each` with every character of the result, the
/// index of the first character of `text` it comes from and how many; whether an escape was
/// decoded.
fn unescape(text: &str, mut each: impl FnMut(char, usize, usize)) -> bool {
    let bytes = text.as_bytes();
    let mut decoded = false;
    let (mut byte, mut index) = (0, 0);
    while let Some(c) = text[byte..].chars().next() {
        let escape = (c == '\\').then(|| escape_at(&bytes[byte..])).flatten();
        let (out, bytes_taken, chars_taken) = match escape {
            Some((out, len)) => (out, len, len),
            None => (c, c.len_utf8(), 1),
        };
        decoded |= escape.is_some();
        each(out, index, chars_taken);
        byte += bytes_taken;
        index += chars_taken;
    }
    decoded
}

/// `text` as written, then each round of unescaping while one decodes something (at most
/// [`MAX_LEVELS`]).
fn rounds(text: &str) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    std::iter::successors(Some(std::borrow::Cow::Borrowed(text)), |round| {
        if !round.contains('\\') {
            return None;
        }
        let mut next = String::with_capacity(round.len());
        unescape(round, |c, _, _| next.push(c)).then_some(next.into())
    })
    .take(MAX_LEVELS + 1)
}

/// `text` as written, then each round of unescaping, each with the byte range of `text`
/// every one of its characters comes from.
fn mapped_rounds(text: &str) -> impl Iterator<Item = (String, Vec<(usize, usize)>)> {
    let first: Vec<(usize, usize)> = text
        .char_indices()
        .map(|(i, c)| (i, i + c.len_utf8()))
        .collect();
    std::iter::successors(Some((text.to_owned(), first)), |(round, ranges)| {
        if !round.contains('\\') {
            return None;
        }
        let mut next = (String::with_capacity(round.len()), Vec::new());
        let decoded = unescape(round, |c, first, count| {
            next.0.push(c);
            next.1.push((ranges[first].0, ranges[first + count - 1].1));
        });
        decoded.then_some(next)
    })
    .take(MAX_LEVELS + 1)
}

/// Whether `text` holds one of `values` as written or in any JSON spelling.
pub(crate) fn holds_spelled(text: &str, values: &[impl AsRef<str>]) -> bool {
    rounds(text).any(|round| values.iter().any(|v| round.contains(v.as_ref())))
}

/// The byte ranges of `text` that spell one of `values` in some round, sorted and merged.
fn spelled_ranges(text: &str, values: &[impl AsRef<str>]) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    for (round, sources) in mapped_rounds(text) {
        let char_at: Vec<usize> = round.char_indices().map(|(b, _)| b).collect();
        for v in values.iter().map(AsRef::as_ref).filter(|v| !v.is_empty()) {
            let chars = v.chars().count();
            for (at, _) in round.match_indices(v) {
                let first = char_at.binary_search(&at).expect("a match starts a char");
                ranges.push((sources[first].0, sources[first + chars - 1].1));
            }
        }
    }
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// `text` with every spelling of `values` (as written or JSON-escaped, see the module
/// documentation) replaced by `replacement`; `None` when there is none. Replacing can join
/// what is left into a new spelling; then the text is searched again, and after
/// [`MAX_LEVELS`] searches the whole text is replaced.
pub(crate) fn replace_spelled(
    text: &str,
    values: &[impl AsRef<str>],
    replacement: &str,
) -> Option<String> {
    let mut out = text.to_owned();
    for _ in 0..MAX_LEVELS {
        let ranges = spelled_ranges(&out, values);
        if ranges.is_empty() {
            return (out != text).then_some(out);
        }
        let mut next = String::with_capacity(out.len());
        let mut kept = 0;
        for (start, end) in ranges {
            next.push_str(&out[kept..start]);
            next.push_str(replacement);
            kept = end;
        }
        next.push_str(&out[kept..]);
        out = next;
    }
    Some(replacement.to_owned())
}

#[cfg(test)]
mod tests;
