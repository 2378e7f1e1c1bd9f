//! Error messages cut to a [`Budget`] in characters, tokens or both, with the one cut marker
//! `… [N characters cut]` of [`cut_message`].
//!
//! This module does no I/O.

use crate::budget::Budget;
use crate::outcome::{cut_marker, cut_message, message_head, prefix_end};

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
}
