//! The longest prefix of a text that fits a [`Budget`], the step of [`Budget::split`] that cuts
//! a row longer than the budget into pieces.
//!
//! With a token limit the cut is searched near a guess, not over the whole window a fitting
//! text could span: [`Tokenizer::crossing`] walks the tokenizer's pre-tokenization pieces and,
//! inside the piece where the count passes the limit, appends that piece's bytes to an
//! incremental BPE encoder (crate `bpe`'s `AppendableEncoder`, whose count of every prefix is
//! exact) until the limit is passed. The guess is then checked, and moved, by full counts of
//! the prefix ([`Tokenizer::count_within`]), so the pieces are the ones the counts say fit.
//! Before this, each piece of a 5 MB unbroken row under a 500-token budget cost a count of the
//! whole 64 kB window and a dozen counts of bisection (1.5 s per call; BENCHMARKS.md).

use bpe_openai::appendable_encoder::AppendableEncoder;

use super::{Budget, TokenLimit, Tokenizer};

impl Tokenizer {
    /// `Ok(count)` when `text` has at most `limit` tokens, else `Err(guess)`: a byte offset
    /// (a char boundary, possibly 0) near the end of the longest prefix of `text` within
    /// `limit` tokens. The guess is the end of the pre-tokenization pieces that fit whole plus
    /// the longest prefix of the next piece whose own count fits what is left.
    pub(super) fn crossing(self, text: &str, limit: usize) -> Result<usize, usize> {
        let bpe = self.bpe();
        let mut total = 0usize;
        let mut start = 0usize;
        for piece in bpe.split(text) {
            let left = limit - total;
            match bpe.bpe.count_till_limit(piece.as_bytes(), left) {
                Some(n) => {
                    total += n;
                    start += piece.len();
                }
                None => {
                    let mut encoder = AppendableEncoder::new(&bpe.bpe);
                    let mut fitting = 0;
                    for (i, byte) in piece.bytes().enumerate() {
                        encoder.push(byte);
                        if encoder.token_count() > left {
                            break;
                        }
                        if piece.is_char_boundary(i + 1) {
                            fitting = i + 1;
                        }
                    }
                    return Err(start + fitting);
                }
            }
        }
        Ok(total)
    }
}

impl Budget {
    /// Byte length of the longest prefix of `text` that fits (at least one character). Looks
    /// at no more of `text` than a fitting text can have (the character limit, then
    /// `limit * max_token_bytes` bytes for tokens): cutting a long text into pieces costs time
    /// linear in its length, not in its length times the number of pieces.
    pub(super) fn longest_fitting_prefix(&self, text: &str) -> usize {
        let mut end = match self.chars {
            Some(n) => text.char_indices().nth(n).map_or(text.len(), |(i, _)| i),
            None => text.len(),
        };
        if let Some(t) = self.tokens {
            let most = floor_char_boundary(
                text,
                end.min(t.limit.saturating_mul(t.tokenizer.max_token_bytes())),
            );
            // A window of `FIRST_WINDOW_BYTES_PER_TOKEN` bytes a token first, four times larger
            // while it all fits: the pre-tokenizer scans the whole window, and ordinary text
            // has far fewer bytes a token than the longest token.
            let mut window = floor_char_boundary(
                text,
                most.min(t.limit.saturating_mul(FIRST_WINDOW_BYTES_PER_TOKEN)),
            );
            end = loop {
                match t.tokenizer.crossing(&text[..window], t.limit) {
                    Err(guess) => break search_near(text, guess.min(window), window, t),
                    Ok(_) if window >= most => break most,
                    Ok(_) => {
                        let wider = window.saturating_mul(4).max(window + 1);
                        window = ceil_char_boundary(text, wider).min(most);
                    }
                }
            };
        }
        if end == 0 {
            text.chars().next().map_or(0, char::len_utf8)
        } else {
            end
        }
    }
}

/// Bytes a token of the first window [`Budget::longest_fitting_prefix`] looks at: ordinary
/// prose, code and JSON have a few bytes a token, so the first window nearly always holds
/// the cut.
const FIRST_WINDOW_BYTES_PER_TOKEN: usize = 16;

/// The longest prefix of `text[..window]` within `t`, given that the whole window is not and
/// that the answer is near `guess`: from the guess, steps that double in length up (when the
/// guess fits) or down (when it does not) until the answer is bracketed, then bisection.
/// Every step is a full count of the prefix, so what is returned fits (0 when no character
/// does).
fn search_near(text: &str, guess: usize, window: usize, t: TokenLimit) -> usize {
    let fits = |end: usize| t.tokenizer.count_within(&text[..end], t.limit).is_some();
    // Invariant: the prefix of `lo` bytes fits (0 always does), that of `hi` does not.
    let (mut lo, mut hi) = (0, window);
    let mut step = 1;
    if guess > 0 && fits(guess) {
        lo = guess;
        loop {
            let next = ceil_char_boundary(text, lo + step);
            if next >= hi {
                break;
            }
            if !fits(next) {
                hi = next;
                break;
            }
            lo = next;
            step *= 2;
        }
    } else {
        hi = hi.min(guess.max(1));
        hi = ceil_char_boundary(text, hi);
        loop {
            let next = floor_char_boundary(text, hi.saturating_sub(step));
            if next == 0 {
                break;
            }
            if fits(next) {
                lo = next;
                break;
            }
            hi = next;
            step *= 2;
        }
    }
    while lo < hi {
        let mid = floor_char_boundary(text, lo + (hi - lo).div_ceil(2));
        if mid <= lo || mid >= hi {
            break;
        }
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The largest char boundary of `s` at or below `i`.
pub(super) fn floor_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` at or above `i` (`s.len()` past the end).
fn ceil_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each piece fits, and (but for the last) one more character would not: the cut is the
    /// longest, for texts made of one long pre-tokenization piece, many short ones, and
    /// multi-byte characters.
    #[test]
    fn pieces_fit_and_are_the_longest_that_do() {
        let texts = [
            "A".repeat(20_000),
            "word, 12345 数据 😀\n".repeat(300),
            "x".repeat(3_000) + &" y".repeat(2_000),
        ];
        for text in &texts {
            for t in Tokenizer::ALL {
                for limit in [1, 7, 100] {
                    let budget = Budget::tokens(limit, t);
                    let pieces = budget.split(text);
                    assert_eq!(pieces.concat(), *text);
                    for (i, piece) in pieces.iter().enumerate() {
                        assert!(budget.fits(piece) || piece.chars().count() == 1);
                        let Some(next) = pieces.get(i + 1).and_then(|p| p.chars().next()) else {
                            continue;
                        };
                        let longer = format!("{piece}{next}");
                        assert!(!budget.fits(&longer), "{t} {limit}: {longer:?} fits too");
                    }
                }
            }
        }
    }

    #[test]
    fn the_guess_is_exact_inside_one_piece() {
        let t = Tokenizer::O200kBase;
        let text = "A".repeat(5_000);
        let Err(guess) = t.crossing(&text, 50) else {
            panic!("5,000 letters in 50 tokens");
        };
        assert_eq!(t.count_within(&text[..guess], 50), Some(50));
        assert_eq!(t.count_within(&text[..guess + 1], 50), None);
        assert_eq!(t.crossing("one two", 5), Ok(2));
    }
}
