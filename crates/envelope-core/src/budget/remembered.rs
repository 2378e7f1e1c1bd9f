//! The last long cut under a token budget, remembered: each page of a row longer than the
//! budget maps the stored result again and cuts the whole row again to count the pieces left
//! (the envelope's `omitted` is exact), which for a 5 MB row under a 500-token budget is
//! about 0.7 s a page, so paging it through was quadratic (fresh-user tester, 2026-12-04).
//!
//! One cut is kept, of a text of at least [`MIN_BYTES`], with a copy of the text: a later cut
//! of an equal text (compared in full, not by a hash) under an equal budget reuses its piece
//! ends. Character budgets cut fast enough (milliseconds for 5 MB) and are not remembered.
//! What [`Budget::split`] returns is the same either way; only its time changes.

use std::sync::Mutex;

use super::Budget;

/// Texts shorter than this many bytes are cut afresh each time.
pub(super) const MIN_BYTES: usize = 256 * 1024;

/// A cut: the budget, the text it cut, and the end (byte offset) of each piece.
struct Cut {
    budget: Budget,
    text: Box<str>,
    ends: Vec<usize>,
}

/// The one remembered cut.
static LAST: Mutex<Option<Cut>> = Mutex::new(None);

/// The pieces of `text` under `budget` as last cut, when that cut was of this very text.
pub(super) fn recall<'t>(budget: &Budget, text: &'t str) -> Option<Vec<&'t str>> {
    let last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cut = last
        .as_ref()
        .filter(|c| c.budget == *budget && *c.text == *text)?;
    let mut start = 0;
    Some(
        cut.ends
            .iter()
            .map(|&end| {
                let piece = &text[start..end];
                start = end;
                piece
            })
            .collect(),
    )
}

/// Remembers `pieces`, the cut of `text` under `budget` (replacing the cut remembered before).
pub(super) fn remember(budget: &Budget, text: &str, pieces: &[&str]) {
    let mut end = 0;
    let ends = pieces
        .iter()
        .map(|p| {
            end += p.len();
            end
        })
        .collect();
    let cut = Cut {
        budget: *budget,
        text: text.into(),
        ends,
    };
    *LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(cut);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Tokenizer;

    /// A remembered cut is the cut made afresh; another text or budget is not served from it.
    #[test]
    fn a_remembered_cut_is_the_same_cut_and_only_for_the_same_text_and_budget() {
        let text = "A".repeat(MIN_BYTES + 1_000);
        let budget = Budget::tokens(300, Tokenizer::O200kBase);
        let first = budget.split(&text);
        assert!(first.len() > 1);
        assert_eq!(recall(&budget, &text), Some(first.clone()));
        let again = budget.split(&text);
        assert_eq!(again, first);
        let other_budget = Budget::tokens(299, Tokenizer::O200kBase);
        assert_eq!(recall(&other_budget, &text), None);
        let mut other_text = text.clone();
        other_text.replace_range(MIN_BYTES..MIN_BYTES + 1, "B");
        assert_eq!(recall(&budget, &other_text), None);
        let fresh = other_budget.split(&other_text);
        assert!(fresh.concat() == other_text);
        assert_eq!(recall(&other_budget, &other_text), Some(fresh));
    }
}
