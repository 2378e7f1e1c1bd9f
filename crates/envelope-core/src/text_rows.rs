//! Plain text → rows: one row per line or per blank-line-separated block, and rows longer than
//! the budget cut into pieces that each fit it.
//!
//! Rules (the `text_rows` and `long_rows` settings of a tool):
//! * `text_rows = "lines"`: the text without one final `\n` is split at each `\n`; one `\r`
//!   before it is dropped; each line is a [`Row::Line`] (joined back with `\n`).
//! * `text_rows = "blocks"`: the text without one final `\n` is split at each `\n\n`; each part
//!   is a [`Row::Block`] (joined back with a blank line), so one commit of a `git log` is one row.
//! * `long_rows = "split"`: a line or block that does not fit the budget on its own becomes
//!   its first piece followed by [`Row::Continued`] pieces, each the longest prefix of the rest
//!   that fits (see [`Budget::split`]); they join with no separator, so a page boundary inside
//!   it loses nothing. `"keep"` leaves it whole (it is then left out and counted in `omitted`).
//!
//! An empty text gives no rows. This module does no I/O.

use std::borrow::Cow;

use crate::budget::{Budget, LongRows, TextRows};
use crate::envelope::Row;

/// How text becomes rows, for one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextRules {
    /// Lines or blocks.
    pub text_rows: TextRows,
    /// Split rows that do not fit, or keep them whole.
    pub long_rows: LongRows,
    /// The budget pieces must fit.
    pub budget: Budget,
}

/// The rows of a plain `text` under `rules` (see the module documentation).
pub fn plain_text_rows<'a>(
    text: &'a str,
    rules: TextRules,
) -> Box<dyn Iterator<Item = Row<'a>> + 'a> {
    if text.is_empty() {
        return Box::new(std::iter::empty());
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    let block = rules.text_rows == TextRows::Blocks;
    let parts: Box<dyn Iterator<Item = &'a str>> = if block {
        Box::new(body.split("\n\n"))
    } else {
        Box::new(
            body.split('\n')
                .map(|line| line.strip_suffix('\r').unwrap_or(line)),
        )
    };
    let whole = move |part: &'a str| {
        if block {
            Row::Block(Cow::Borrowed(part))
        } else {
            Row::Line(Cow::Borrowed(part))
        }
    };
    if rules.long_rows == LongRows::Keep {
        return Box::new(parts.map(whole));
    }
    Box::new(
        parts.flat_map(move |part| -> Box<dyn Iterator<Item = Row<'a>>> {
            if rules.budget.fits(part) {
                return Box::new(std::iter::once(whole(part)));
            }
            let pieces = rules.budget.split(part);
            Box::new(pieces.into_iter().enumerate().map(move |(i, piece)| {
                if i == 0 {
                    whole(piece)
                } else {
                    Row::Continued(Cow::Borrowed(piece), block)
                }
            }))
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Tokenizer;
    use crate::envelope::{fill_rows_within, render_row};

    fn rows(text: &str, rules: TextRules) -> Vec<Row<'_>> {
        plain_text_rows(text, rules).collect()
    }

    fn rules(text_rows: TextRows, long_rows: LongRows, budget: Budget) -> TextRules {
        TextRules {
            text_rows,
            long_rows,
            budget,
        }
    }

    #[test]
    fn lines_and_blocks() {
        let text = "Commit: a\nAuthor: x\n\nCommit: b\r\nAuthor: y\n";
        let r = rows(
            text,
            rules(TextRows::Lines, LongRows::Keep, Budget::chars(5)),
        );
        assert_eq!(r.len(), 5);
        assert_eq!(r[3], Row::Line(Cow::Borrowed("Commit: b")));
        let r = rows(
            text,
            rules(TextRows::Blocks, LongRows::Keep, Budget::chars(5)),
        );
        assert_eq!(
            r,
            vec![
                Row::Block(Cow::Borrowed("Commit: a\nAuthor: x")),
                Row::Block(Cow::Borrowed("Commit: b\r\nAuthor: y")),
            ]
        );
        assert!(rows("", TextRules::default()).is_empty());
    }

    #[test]
    fn long_rows_split_into_pieces_that_fit() {
        let line = "x".repeat(25);
        let r = rows(
            &line,
            rules(TextRows::Lines, LongRows::Split, Budget::chars(10)),
        );
        assert_eq!(r.len(), 3);
        assert_eq!(r[0], Row::Line(Cow::Borrowed(&line[..10])));
        assert_eq!(r[2], Row::Continued(Cow::Borrowed(&line[20..]), false));
        let joined: String = r.iter().map(render_row).collect();
        assert_eq!(joined, line);
        // Kept whole, the line is left out: an empty answer.
        let r = rows(
            &line,
            rules(TextRows::Lines, LongRows::Keep, Budget::chars(10)),
        );
        assert_eq!(fill_rows_within(r, &Budget::chars(10)).content, "");
    }

    #[test]
    fn a_long_json_line_split_for_tokens_is_never_an_empty_answer() {
        let line = format!("[{}]", "{\"key\": \"value\"}, ".repeat(300));
        let budget = Budget::tokens(50, Tokenizer::O200kBase);
        let r = rows(&line, rules(TextRows::Lines, LongRows::Split, budget));
        let filled = fill_rows_within(r.clone(), &budget);
        assert!(!filled.content.is_empty());
        assert!(Tokenizer::O200kBase.count(&filled.content) <= 50);
        assert_eq!(r.iter().map(render_row).collect::<String>(), line);
    }
}
