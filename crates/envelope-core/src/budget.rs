//! Budgets and how text is measured against them: characters or tokens.
//!
//! A [`Measure`] counts text in one unit: [`Measure::Chars`] counts Unicode scalar values (Rust
//! `char`s, what Python's `len` counts); [`Measure::Tokens`] counts the tokens of a named
//! OpenAI tokenizer ([`Tokenizer::O200kBase`] or [`Tokenizer::Cl100kBase`], exactly as the
//! reference `tiktoken` encodes ordinary text, no special tokens). A [`Budget`] holds a
//! character limit, a token limit, or both; text fits a budget when it fits every limit it
//! holds, so the tighter one wins.
//!
//! Token counts are not additive: `count(a + b)` may differ from `count(a) + count(b)` where
//! the pieces meet. The [`Meter`] used by the greedy fill ([`crate::envelope::fill_rows_within`])
//! therefore counts the content it would produce, exactly; it recounts only the text after the
//! last point at which the tokenizer's pre-tokenization is known to cut (see [`safe_cut`]), and
//! verifies the finished content once with a full count.
//!
//! The vocabularies are compiled into the binary (crate `bpe-openai`, GitHub's `bpe`): nothing
//! is downloaded; each tokenizer is loaded the first time it is used, once per process.
//!
//! This module does no I/O.

mod prefix;
mod remembered;

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// At most how many tokens one character takes in a byte-level BPE (the tokenizers here):
/// one a UTF-8 byte at worst. A token budget of at least this fits every character alone, so
/// a long row cut into pieces shows all of it; a smaller one cannot show some characters.
pub const TOKENS_OF_ANY_CHARACTER: usize = 4;

/// A named tokenizer whose tokens a [`Budget`] can count.
///
/// Config and transcript spelling: `"o200k_base"` (the default; GPT-4o, GPT-4.1, o-series and
/// later OpenAI models) or `"cl100k_base"` (GPT-4, GPT-3.5).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum Tokenizer {
    /// OpenAI's `o200k_base` encoding (about 200,000 tokens).
    #[default]
    #[serde(rename = "o200k_base")]
    O200kBase,
    /// OpenAI's `cl100k_base` encoding (about 100,000 tokens).
    #[serde(rename = "cl100k_base")]
    Cl100kBase,
}

impl Tokenizer {
    /// Every tokenizer, in a fixed order.
    pub const ALL: [Tokenizer; 2] = [Tokenizer::O200kBase, Tokenizer::Cl100kBase];

    /// The spelling used in configs and transcripts: `o200k_base`, `cl100k_base`.
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200kBase => "o200k_base",
            Tokenizer::Cl100kBase => "cl100k_base",
        }
    }

    /// The tokenizer with this exact name.
    pub fn parse(name: &str) -> Option<Tokenizer> {
        Tokenizer::ALL.into_iter().find(|t| t.name() == name)
    }

    fn bpe(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Tokenizer::O200kBase => bpe_openai::o200k_base(),
            Tokenizer::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }

    /// Loads the vocabulary now (it is otherwise loaded on first use, once per process).
    pub fn preload(self) {
        self.max_token_bytes();
    }

    /// Exact number of tokens of `text`, as tiktoken's `encode_ordinary` gives.
    pub fn count(self, text: &str) -> usize {
        self.bpe().count(text)
    }

    /// `Some(count(text))` when it is at most `limit`, else `None`; stops counting soon after
    /// the limit is passed.
    pub fn count_within(self, text: &str, limit: usize) -> Option<usize> {
        let bpe = self.bpe();
        let mut total = 0usize;
        for piece in bpe.split(text) {
            total += bpe.bpe.count(piece.as_bytes());
            if total > limit {
                return None;
            }
        }
        Some(total)
    }

    /// The longest token of the vocabulary, in bytes: a text of `n` tokens has at most
    /// `n * max_token_bytes()` bytes.
    pub fn max_token_bytes(self) -> usize {
        static LONGEST: [OnceLock<usize>; 2] = [OnceLock::new(), OnceLock::new()];
        *LONGEST[self as usize].get_or_init(|| {
            let bpe = &self.bpe().bpe;
            (0..bpe.num_tokens() as u32)
                .map(|t| bpe.token_len(t))
                .max()
                .unwrap_or(1)
        })
    }
}

impl std::fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A unit in which text is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Measure {
    /// Unicode scalar values.
    Chars,
    /// Tokens of the named tokenizer.
    Tokens(Tokenizer),
}

impl Measure {
    /// The length of `text` in this unit.
    pub fn count(self, text: &str) -> usize {
        match self {
            Measure::Chars => text.chars().count(),
            Measure::Tokens(t) => t.count(text),
        }
    }

    /// The unit in words: `characters`, `o200k_base tokens`.
    pub fn unit(self) -> String {
        match self {
            Measure::Chars => "characters".to_owned(),
            Measure::Tokens(t) => format!("{t} tokens"),
        }
    }
}

/// A token limit: at most `limit` tokens of `tokenizer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenLimit {
    /// Most tokens allowed (at least 1 when read from a config).
    pub limit: usize,
    /// Whose tokens.
    pub tokenizer: Tokenizer,
}

/// The limits a tool's envelope `content` must respect: characters, tokens, or both (then
/// content fits when it fits both, i.e. the tighter limit wins). With neither, nothing is
/// limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Budget {
    /// Most characters (Unicode scalar values), when limited.
    pub chars: Option<usize>,
    /// Most tokens, when limited.
    pub tokens: Option<TokenLimit>,
}

impl Budget {
    /// At most `n` characters: the seed's `char_budget`.
    pub fn chars(n: usize) -> Budget {
        Budget {
            chars: Some(n),
            tokens: None,
        }
    }

    /// At most `n` tokens of `tokenizer`.
    pub fn tokens(n: usize, tokenizer: Tokenizer) -> Budget {
        Budget {
            chars: None,
            tokens: Some(TokenLimit {
                limit: n,
                tokenizer,
            }),
        }
    }

    /// Whether `text` fits every limit.
    pub fn fits(&self, text: &str) -> bool {
        let chars_ok = self
            .chars
            .is_none_or(|n| text.len() <= n || text.chars().count() <= n);
        chars_ok
            && self.tokens.is_none_or(|t| {
                text.len() <= t.limit || t.tokenizer.count_within(text, t.limit).is_some()
            })
    }

    /// At most how many rows a fill can keep, when that is provable without rendering them:
    /// every row after the first costs at least the two-character separator `"; "` of object
    /// rows, so `chars / 2 + 1`. `None` without a character limit (token counts are not
    /// additive, so no bound is claimed for tokens alone).
    pub fn max_object_rows(&self) -> Option<usize> {
        self.chars.map(|n| n / 2 + 1)
    }

    /// A length in bytes within which every text fits: the smaller of the character and token
    /// limits, since a character and a token (of a byte-level BPE) are each at least one byte;
    /// `usize::MAX` without limits.
    pub fn surely_fitting_bytes(&self) -> usize {
        let tokens = self.tokens.map_or(usize::MAX, |t| t.limit);
        self.chars.unwrap_or(usize::MAX).min(tokens)
    }

    /// A length in characters that no fitting text exceeds: the character limit, or for
    /// tokens `limit * max_token_bytes` (a text has at least as many bytes as characters, and
    /// at least `bytes / max_token_bytes` tokens); `usize::MAX` without limits.
    pub fn unreachable_chars(&self) -> usize {
        let tokens = self.tokens.map_or(usize::MAX, |t| {
            t.limit.saturating_mul(t.tokenizer.max_token_bytes())
        });
        self.chars.unwrap_or(usize::MAX).min(tokens)
    }

    /// The limits in words, e.g. `2000 characters`, `500 o200k_base tokens`,
    /// `2000 characters and 500 o200k_base tokens`, `unlimited`.
    pub fn describe(&self) -> String {
        let chars = self.chars.map(|n| format!("{n} characters"));
        let tokens = self
            .tokens
            .map(|t| format!("{} {} tokens", t.limit, t.tokenizer));
        match (chars, tokens) {
            (Some(c), Some(t)) => format!("{c} and {t}"),
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => "unlimited".to_owned(),
        }
    }

    /// The first pieces of `text` that each fit this budget on their own, cut at character
    /// boundaries: `text` itself when it fits, else the longest prefix that fits (for tokens,
    /// searched near a guess the incremental encoder gives: `budget/prefix.rs`), then the same
    /// for the rest. A piece is never empty; a single
    /// character that does not fit alone (a budget smaller than one character's tokens)
    /// becomes a piece of its own.
    ///
    /// The last cut of a text of 256 KiB or more under a token budget is remembered and reused
    /// for an equal text (`budget/remembered.rs`): the pages of one long row cut it again and
    /// again.
    pub fn split<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let remember = self.tokens.is_some() && text.len() >= remembered::MIN_BYTES;
        if remember {
            if let Some(pieces) = remembered::recall(self, text) {
                return pieces;
            }
        }
        let mut pieces = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let end = self.longest_fitting_prefix(rest);
            pieces.push(&rest[..end]);
            rest = &rest[end..];
        }
        if remember {
            remembered::remember(self, text, &pieces);
        }
        pieces
    }
}

/// Where a fill may cut the count when `row` is appended after `separator`: the byte offset
/// within `separator` after which the tokenizers' pre-tokenization is sure to start a new piece
/// whatever came before, so that `count(before + sep[..k]) + count(sep[k..] + row)` equals
/// `count(before + sep + row)`. `None` when no such point is certain.
///
/// Why (pre-tokenization patterns of `cl100k_base` and `o200k_base`): a piece that contains
/// `;` followed by a space ends at the `;` (punctuation runs stop at white space, and a letter
/// run's optional leading mark cannot be followed by a space); a piece that contains a newline
/// can continue only with more white space, `\r`, `\n` or (`o200k_base`) `/`, so a newline
/// followed by any other character ends a piece. No pattern looks behind.
pub fn safe_cut(separator: &str, row: &str) -> Option<usize> {
    if separator == "; " {
        return Some(1);
    }
    let starts_plain = row
        .chars()
        .next()
        .is_some_and(|c| !c.is_whitespace() && c != '/');
    (separator.ends_with('\n') && starts_plain).then_some(separator.len())
}

/// Bounds for rendering one candidate row: more than this cannot fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderBound {
    /// Most characters the row may have.
    pub chars: usize,
    /// Most bytes the row may have.
    pub bytes: usize,
}

/// Counts a growing content against a [`Budget`] for the greedy fill: exact for both units.
#[derive(Debug)]
pub struct Meter {
    chars: Option<(usize, usize)>,
    tokens: Option<TokenTally>,
}

/// The token side of a [`Meter`].
#[derive(Debug)]
struct TokenTally {
    limit: TokenLimit,
    /// Content before this byte offset is counted in `stable`, cut at safe points.
    stable_end: usize,
    stable: usize,
    /// Tokens of the content after `stable_end`.
    tail: usize,
    /// The candidate accepted by the last [`Meter::admit`]: (new stable_end, stable, tail).
    pending: Option<(usize, usize, usize)>,
    /// Byte offset in the content where each kept row ends.
    row_ends: Vec<usize>,
    scratch: String,
}

impl Meter {
    /// A meter with nothing counted yet.
    pub fn new(budget: &Budget) -> Meter {
        Meter {
            chars: budget.chars.map(|n| (n, 0)),
            tokens: budget.tokens.map(|limit| TokenTally {
                limit,
                stable_end: 0,
                stable: 0,
                tail: 0,
                pending: None,
                row_ends: Vec::new(),
                scratch: String::new(),
            }),
        }
    }

    /// How large a row may be after `separator` and still possibly fit; `None` when even an
    /// empty row cannot.
    pub fn bound(&self, separator: &str) -> Option<RenderBound> {
        let chars = match self.chars {
            Some((limit, used)) => limit.checked_sub(used + separator.chars().count())?,
            None => usize::MAX,
        };
        let bytes = match &self.tokens {
            Some(t) => {
                let room = t.limit.limit.checked_sub(t.stable)?;
                room.saturating_mul(t.limit.tokenizer.max_token_bytes())
            }
            None => usize::MAX,
        };
        Some(RenderBound { chars, bytes })
    }

    /// Whether `content + separator + row` fits (the row already fits the character bound of
    /// [`Meter::bound`], `row_chars` long). When it does, the caller appends them to `content`
    /// and calls [`Meter::commit`].
    pub fn admit(&mut self, content: &str, separator: &str, row: &str, row_chars: usize) -> bool {
        let Some(t) = &mut self.tokens else {
            self.chars_pending(separator, row_chars);
            return true;
        };
        let room = t.limit.limit - t.stable;
        let tokenizer = t.limit.tokenizer;
        let tail = &content[t.stable_end..];
        let accepted = match safe_cut(separator, row).filter(|_| !content.is_empty()) {
            Some(k) => {
                t.scratch.clear();
                t.scratch.push_str(tail);
                t.scratch.push_str(&separator[..k]);
                let head = tokenizer.count(&t.scratch);
                t.scratch.clear();
                t.scratch.push_str(&separator[k..]);
                t.scratch.push_str(row);
                room.checked_sub(head)
                    .and_then(|room| tokenizer.count_within(&t.scratch, room))
                    .map(|rest| (content.len() + k, t.stable + head, rest))
            }
            None => {
                t.scratch.clear();
                t.scratch.push_str(tail);
                t.scratch.push_str(separator);
                t.scratch.push_str(row);
                tokenizer
                    .count_within(&t.scratch, room)
                    .map(|n| (t.stable_end, t.stable, n))
            }
        };
        t.pending = accepted;
        if accepted.is_some() {
            self.chars_pending(separator, row_chars);
        }
        accepted.is_some()
    }

    fn chars_pending(&mut self, separator: &str, row_chars: usize) {
        if let Some((_, used)) = &mut self.chars {
            *used += separator.chars().count() + row_chars;
        }
    }

    /// Records the row admitted last; `content_len` is the content's length in bytes now.
    pub fn commit(&mut self, content_len: usize) {
        if let Some(t) = &mut self.tokens {
            if let Some((stable_end, stable, tail)) = t.pending.take() {
                t.stable_end = stable_end;
                t.stable = stable;
                t.tail = tail;
            }
            t.row_ends.push(content_len);
        }
    }

    /// Tokens of the content counted so far (0 without a token limit).
    pub fn tokens_used(&self) -> usize {
        self.tokens.as_ref().map_or(0, |t| t.stable + t.tail)
    }

    /// Checks the finished `content` with one full count and, should it exceed the token limit
    /// (which the cut rule of [`safe_cut`] rules out), drops rows from the end until it fits.
    /// Returns how many rows were dropped.
    pub fn verify(&self, content: &mut String) -> usize {
        let Some(t) = &self.tokens else {
            return 0;
        };
        let limit = t.limit;
        let mut dropped = 0;
        let mut ends = t.row_ends.iter().rev().skip(1);
        while limit.tokenizer.count_within(content, limit.limit).is_none() {
            let end = ends.next().copied().unwrap_or(0);
            // The separator before the dropped row goes with it.
            content.truncate(end);
            dropped += 1;
            if end == 0 {
                break;
            }
        }
        dropped
    }
}

/// What to do with a text row (a line or block) longer than the budget.
///
/// Config spelling: `"split"` (the default) or `"keep"`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LongRows {
    /// Cut it into pieces that each fit the budget, continuing one another with no separator,
    /// so every part of it can be shown (and paged to).
    #[default]
    Split,
    /// Keep it whole: a row longer than the budget is left out (counted in `omitted`).
    Keep,
}

/// How a plain-text content block is cut into rows.
///
/// Config spelling: `"lines"` (the default) or `"blocks"`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TextRows {
    /// One row per line, joined by a newline.
    #[default]
    Lines,
    /// One row per blank-line-separated block (split at each `\n\n`), joined by a blank line.
    Blocks,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_of_known_strings() {
        assert_eq!(Tokenizer::O200kBase.count(""), 0);
        assert_eq!(Tokenizer::O200kBase.count("hello world"), 2);
        assert_eq!(Tokenizer::Cl100kBase.count("hello world"), 2);
        assert_eq!(Tokenizer::parse("cl100k_base"), Some(Tokenizer::Cl100kBase));
        assert_eq!(Tokenizer::parse("gpt2"), None);
        assert!(Tokenizer::O200kBase.max_token_bytes() >= 16);
    }

    #[test]
    fn count_within_stops_at_the_limit() {
        let t = Tokenizer::O200kBase;
        let text = "one two three four five";
        let n = t.count(text);
        assert_eq!(t.count_within(text, n), Some(n));
        assert_eq!(t.count_within(text, n - 1), None);
    }

    #[test]
    fn fits_applies_every_limit() {
        let both = Budget {
            chars: Some(5),
            tokens: Some(TokenLimit {
                limit: 1,
                tokenizer: Tokenizer::O200kBase,
            }),
        };
        assert!(both.fits("hello"));
        assert!(!both.fits("hello!")); // 6 characters
        assert!(!both.fits("a b c")); // 5 characters, 3 tokens
        assert!(Budget::default().fits("anything"));
        assert_eq!(both.describe(), "5 characters and 1 o200k_base tokens");
    }

    #[test]
    fn split_gives_pieces_that_fit_and_rejoin() {
        let text = "数据".repeat(50) + &"😀 word ".repeat(40);
        for budget in [
            Budget::chars(7),
            Budget::tokens(5, Tokenizer::O200kBase),
            Budget::tokens(1, Tokenizer::Cl100kBase),
        ] {
            let pieces = budget.split(&text);
            assert_eq!(pieces.concat(), text);
            assert!(pieces.len() > 1);
            for p in &pieces {
                assert!(!p.is_empty());
                assert!(
                    budget.fits(p) || p.chars().count() == 1,
                    "{p:?} over {budget:?}"
                );
            }
        }
        assert_eq!(Budget::chars(3).split("abcdefg"), ["abc", "def", "g"]);
        assert_eq!(Budget::chars(3).split("ab"), ["ab"]);
    }

    #[test]
    fn every_character_fits_its_most_tokens() {
        let hard = ["👨", "🇵", "\u{10FFFF}", "\u{1F9D1}", "ﷺ", "𒐫", "\u{E0001}"];
        for t in Tokenizer::ALL {
            for c in hard {
                let n = t.count(c);
                assert!((1..=TOKENS_OF_ANY_CHARACTER).contains(&n), "{t} {c:?}: {n}");
            }
        }
    }

    #[test]
    fn safe_cuts() {
        assert_eq!(safe_cut("; ", "x"), Some(1));
        assert_eq!(safe_cut("\n", "x"), Some(1));
        assert_eq!(safe_cut("\n\n", "Commit"), Some(2));
        assert_eq!(safe_cut("\n", "  indented"), None);
        assert_eq!(safe_cut("\n", "/path"), None);
        assert_eq!(safe_cut("", "x"), None);
    }
}
