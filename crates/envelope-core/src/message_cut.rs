//! The one truncation rule and its one marker, `… [N characters cut]` ([`cut_marker`]; `N` in
//! characters, Unicode scalar values).
//!
//! - [`cut_message`] / [`cut_message_within`]: an error message cut so that it *with* the
//!   marker fits a budget in characters, tokens or both (the envelope's error path).
//! - [`cut_chars`]: text kept to its first `max` characters and the marker appended (labels and
//!   quoted text in trajectories and warnings, where the limit is on the kept text).
//!
//! This module does no I/O.

use crate::budget::Budget;

/// [`cut_message`] for any budget: a message that fits is kept whole; a longer one keeps its
/// first `k` characters followed by the marker `… [N characters cut]` (`N` the characters
/// cut), `k` the largest length found by bisection for which the result fits every limit;
/// when not even the marker alone fits, it is the marker alone. With a character limit only,
/// exactly [`cut_message`]. Only about as much text as could fit is ever copied.
pub fn cut_message_within<'s>(
    pieces: impl IntoIterator<Item = &'s str>,
    budget: &Budget,
) -> String {
    if budget.tokens.is_none() {
        return cut_message(pieces, budget.chars.unwrap_or(usize::MAX));
    }
    let reach = budget.unreachable_chars();
    let (head, head_chars, total) = message_head(pieces, reach.saturating_add(1));
    if total == head_chars && budget.fits(&head) {
        return head;
    }
    let with_marker = |k: usize| {
        let mut out = head[..prefix_end(&head, k).0].to_owned();
        out.push_str(&cut_marker(total - k));
        out
    };
    // Invariant: `lo` characters fit (or lo = 0); bisect for the largest that does.
    let (mut lo, mut hi) = (0usize, head_chars.min(total.saturating_sub(1)));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if budget.fits(&with_marker(mid)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    with_marker(lo)
}

/// `s` when it has at most `max_chars` characters (Unicode scalar values); else its first
/// `max_chars` characters followed by [`cut_marker`] of the characters cut. The marker is not
/// counted in `max_chars` (contrast [`cut_message`], whose budget includes it).
pub fn cut_chars(s: &str, max_chars: usize) -> String {
    let (head, cut) = head_and_rest(s, max_chars);
    if cut == 0 {
        head.to_owned()
    } else {
        format!("{head}{}", cut_marker(cut))
    }
}

/// The first `max_chars` characters (Unicode scalar values) of `s`, and how many characters
/// follow them.
pub fn head_and_rest(s: &str, max_chars: usize) -> (&str, usize) {
    let (end, _) = prefix_end(s, max_chars);
    (&s[..end], s[end..].chars().count())
}

/// The marker that replaces the cut part of a message: `… [N characters cut]`
/// (`… [1 character cut]` for one).
pub fn cut_marker(cut: usize) -> String {
    if cut == 1 {
        "… [1 character cut]".to_owned()
    } else {
        format!("… [{cut} characters cut]")
    }
}

/// Joins `pieces` into an error message of at most `char_budget` characters (Unicode scalar
/// values).
///
/// Rule: a message of `n <= char_budget` characters is kept whole. A longer one keeps its first
/// `k` characters followed by the marker `… [N characters cut]` with `N = n - k`
/// (`… [1 character cut]` when `N = 1`; the marker is 19 characters plus the digits of `N`),
/// with `k` the largest value for which `k + len(marker) <= char_budget`. When even `k = 0` does not fit (a budget smaller than the
/// marker, about 20 characters), the message is the marker alone, which then exceeds the budget:
/// saying that something was cut matters more than the budget. The budget covers the message
/// only, not the `"<type>: "` prefix of the envelope's `content`.
///
/// Only the first `char_budget` characters are ever copied, so a huge text costs one scan.
pub fn cut_message<'s>(pieces: impl IntoIterator<Item = &'s str>, char_budget: usize) -> String {
    let (mut head, _, total) = message_head(pieces, char_budget);
    if total <= char_budget {
        return head;
    }
    // Largest k with k + len(marker(total - k)) <= budget; the marker grows by one character
    // per extra digit, so this loop runs a handful of times.
    let min_marker = cut_marker(1).chars().count();
    let mut kept = char_budget.saturating_sub(min_marker);
    while kept > 0 && kept + cut_marker(total - kept).chars().count() > char_budget {
        kept -= 1;
    }
    let (end, _) = prefix_end(&head, kept);
    head.truncate(end);
    head.push_str(&cut_marker(total - kept));
    head
}

/// The first `max_chars` characters of the joined `pieces`, how many characters that is, and
/// how many the whole message has (counted without copying the rest).
pub fn message_head<'s>(
    pieces: impl IntoIterator<Item = &'s str>,
    max_chars: usize,
) -> (String, usize, usize) {
    let mut head = String::new();
    let mut head_chars = 0usize;
    let mut total = 0usize;
    for piece in pieces {
        let (end, taken) = prefix_end(piece, max_chars - head_chars);
        head.push_str(&piece[..end]);
        head_chars += taken;
        total += taken;
        if end < piece.len() {
            total += piece[end..].chars().count();
        }
    }
    (head, head_chars, total)
}

/// The byte index just after the first `max_chars` characters of `s` (or `s.len()`), and how
/// many characters that is.
pub fn prefix_end(s: &str, max_chars: usize) -> (usize, usize) {
    if s.len() <= max_chars {
        return (s.len(), s.chars().count());
    }
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => (i, max_chars),
        None => (s.len(), s.chars().count()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Tokenizer;

    #[test]
    fn chars_only_is_the_character_rule() {
        let text = "x".repeat(100);
        assert_eq!(
            cut_message_within([text.as_str()], &Budget::chars(30)),
            cut_message([text.as_str()], 30)
        );
    }

    #[test]
    fn token_budget_cuts_with_the_marker_and_fits() {
        let t = Tokenizer::O200kBase;
        let text = "the server said something long ".repeat(50);
        let budget = Budget::tokens(20, t);
        let cut = cut_message_within(["boom: ", text.as_str()], &budget);
        assert!(t.count(&cut) <= 20, "{cut}");
        assert!(cut.starts_with("boom: the server"));
        let kept = cut.find('…').unwrap();
        let n = 6 + text.chars().count() - cut[..kept].chars().count();
        assert!(cut.ends_with(&format!("… [{n} characters cut]")), "{cut}");
        assert_eq!(cut_message_within(["short"], &budget), "short");
        // Not even the marker fits: the marker alone.
        assert_eq!(
            cut_message_within([text.as_str()], &Budget::tokens(1, t)),
            format!("… [{} characters cut]", text.chars().count())
        );
    }

    #[test]
    fn cut_rule_exact() {
        // Fits: unchanged.
        assert_eq!(cut_message(["abc"], 3), "abc");
        // Marker "… [N characters cut]" is 19 + digits(N) characters.
        let m = cut_message(["a".repeat(50).as_str()], 30);
        assert_eq!(m, format!("{}… [41 characters cut]", "a".repeat(9)));
        assert_eq!(m.chars().count(), 30);
        // Singular marker (only reachable when the budget cannot hold any marker).
        assert_eq!(cut_message(["a"], 0), "… [1 character cut]");
        // 21 characters in 20: no k fits ("… [20 characters cut]" alone is 21), marker alone.
        assert_eq!(
            cut_message(["a".repeat(21).as_str()], 20),
            "… [21 characters cut]"
        );
        // 22 in 21: the smallest marker that fits, 0 kept.
        assert_eq!(
            cut_message(["a".repeat(22).as_str()], 21),
            "… [22 characters cut]"
        );
        assert_eq!(
            cut_message(["a".repeat(30).as_str()], 25),
            "aaaa… [26 characters cut]"
        );
        // Digit boundary: 9 -> 10 cut grows the marker.
        for budget in 20..60 {
            for n in budget + 1..budget + 130 {
                let m = cut_message(["b".repeat(n).as_str()], budget);
                let count = m.chars().count();
                let kept = m.chars().take_while(|c| *c == 'b').count();
                if budget >= cut_marker(n).chars().count() {
                    assert!(count <= budget, "n={n} budget={budget}: {m}");
                    // Maximal: one more kept character would not fit.
                    let more = kept + 1 + cut_marker(n - kept - 1).chars().count();
                    assert!(more > budget || kept + 1 == n);
                }
                assert!(m.ends_with(&cut_marker(n - kept)));
            }
        }
        // Budget too small for the marker: the marker alone.
        assert_eq!(cut_message(["abcdef"], 3), "… [6 characters cut]");
        assert_eq!(cut_message(["abcdef"], 0), "… [6 characters cut]");
        // Pieces are joined.
        assert_eq!(cut_message(["ab", "", "cd"], 10), "abcd");
    }

    #[test]
    fn cut_chars_keeps_max_characters_then_the_marker() {
        assert_eq!(cut_chars("abc", 3), "abc");
        assert_eq!(cut_chars("abcd", 3), "abc… [1 character cut]");
        assert_eq!(cut_chars("żółw😀żółw", 4), "żółw… [5 characters cut]");
        assert_eq!(head_and_rest("żółw😀", 2), ("żó", 3));
        assert_eq!(head_and_rest("ab", 5), ("ab", 0));
    }

    #[test]
    fn cut_counts_unicode_scalar_values_and_cuts_on_char_boundaries() {
        let msg = "żółw😀".repeat(30); // 150 characters, 330 bytes
        let m = cut_message([msg.as_str()], 40);
        assert_eq!(m.chars().count(), 40);
        let kept: String = msg.chars().take(40 - 22).collect();
        assert_eq!(m, format!("{kept}… [132 characters cut]"));
    }
}
