//! Plain text → rows: one row per line or per blank-line-separated block, and rows longer than
//! the budget cut into pieces that each fit it.
//!
//! Rules (the `text_rows` and `long_rows` settings of a tool):
//! * `text_rows = "lines"`: the text without one final `\n` is split at each `\n`; one `\r`
//!   before it is dropped; each line is a [`Row::Line`] (joined back with `\n`).
//! * `text_rows = "blocks"`: the text is split at its widest runs of blank lines (lines empty or
//!   of whitespace only); each part, without the blank lines around it, is a [`Row::Block`]
//!   (joined back with one blank line). Blank lines at the start and the end are no rows, and a
//!   run of fewer blank lines than the widest stays inside its block. So paragraphs separated
//!   by one blank line are one row each, and a text that separates its records by two blank
//!   lines and their paragraphs by one (mcp-server-git's `git_log`: commits, and the
//!   paragraphs of a commit message) gives one row per record: one commit, one row. See
//!   [`blocks`].
//! * `long_rows = "split"`: a line or block that does not fit the budget on its own becomes
//!   its first piece followed by [`Row::Continued`] pieces, each the longest prefix of the rest
//!   that fits (see [`Budget::split`]); they join with no separator, so a page boundary inside
//!   it loses nothing. `"keep"` leaves it whole (it is then left out and counted in `omitted`).
//!   Object rows are cut the same way, in their rendered `k=v` text ([`SplitLongObjects`]).
//!
//! An empty text gives no rows. This module does no I/O.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::budget::RenderBound;
use crate::budget::{Budget, LongRows, TextRows};
use crate::envelope::{render_row, render_row_within, Row, RowKind};

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
    let block = rules.text_rows == TextRows::Blocks;
    let parts: Box<dyn Iterator<Item = &'a str>> = if block {
        Box::new(blocks(text).into_iter())
    } else {
        let body = text.strip_suffix('\n').unwrap_or(text);
        Box::new(
            body.split('\n')
                .map(|line| line.strip_suffix('\r').unwrap_or(line)),
        )
    };
    let kind = if block { RowKind::Block } else { RowKind::Line };
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
                    Row::Continued(Cow::Borrowed(piece), kind)
                }
            }))
        }),
    )
}

/// `long_rows = "split"` for object rows: the rows of an iterator, each [`Row::Object`] (or [`Row::Whole`]) that
/// does not fit the budget on its own replaced by the pieces of its rendered text, cut as a
/// long line is ([`Budget::split`]): the first a [`Row::Rendered`], the others
/// [`Row::Continued`] of kind [`RowKind::Object`]. Every other row passes unchanged.
///
/// Cost: a bound of each object row's rendered bytes is counted without rendering it; only a
/// row that may not fit is rendered, up to the budget's [`Budget::unreachable_chars`] (into one
/// buffer reused for every row), and only a row that is cut is rendered in full, its pieces
/// copied out one at a time as they are asked for.
pub struct SplitLongObjects<'a, I> {
    rows: I,
    budget: Budget,
    scratch: Vec<u8>,
    /// The rendered text of the row being cut, and the byte offsets where its pieces still to
    /// give end (last first).
    cut: Option<(String, usize, Vec<usize>)>,
    _rows: std::marker::PhantomData<Row<'a>>,
}

impl<'a, I: Iterator<Item = Row<'a>>> SplitLongObjects<'a, I> {
    /// `rows` with the object rows that do not fit `budget` cut (see the type's doc).
    pub fn new(rows: I, budget: Budget) -> Self {
        SplitLongObjects {
            rows,
            budget,
            scratch: Vec::new(),
            cut: None,
            _rows: std::marker::PhantomData,
        }
    }

    /// Whether object row `row` fits the budget on its own: surely when an upper bound of its
    /// rendered bytes, counted without rendering it, is within every limit (a character and a
    /// token are each at least one byte); else by rendering it up to the budget.
    fn fits_alone(&mut self, row: &Row<'_>) -> bool {
        if let Row::Object(map) = row {
            if object_row_bytes_within(map, self.budget.surely_fitting_bytes()).is_some() {
                return true;
            }
        }
        let bound = RenderBound {
            chars: self.budget.unreachable_chars(),
            bytes: usize::MAX,
        };
        render_row_within(row, bound, &mut self.scratch).is_some_and(|_| {
            std::str::from_utf8(&self.scratch).is_ok_and(|text| self.budget.fits(text))
        })
    }
}

/// An upper bound of the bytes of an object row's rendering (`k=v` pairs joined by `,`, see
/// [`crate::envelope::Row::Object`]) when it is at most `limit`; `None` as soon as it exceeds
/// `limit` (the walk stops there, so a huge row costs at most `limit` of walking).
fn object_row_bytes_within(map: &Map<String, Value>, limit: usize) -> Option<usize> {
    let mut total = map.len().saturating_sub(1); // the commas
    for (key, value) in map {
        total += key.len() + 1;
        total += match value {
            // A row renders a string member as its text, unquoted and unescaped.
            Value::String(s) => s.len(),
            other => json_bytes_within(other, limit.checked_sub(total)?)?,
        };
        if total > limit {
            return None;
        }
    }
    Some(total)
}

/// An upper bound of the bytes of `value` written as compact JSON by serde_json, when at
/// most `limit`: a string's bytes escaped at worst (`\u00XX`, six bytes for one), a number's
/// text as written ([`crate::numbers::written_len`]), with quotes, brackets, colons and commas
/// counted.
fn json_bytes_within(value: &Value, limit: usize) -> Option<usize> {
    let bytes = match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(n) => crate::numbers::written_len(n),
        Value::String(s) => s.len().checked_mul(6)?.checked_add(2)?,
        Value::Array(items) => {
            let mut total = 2 + items.len();
            for item in items {
                total += json_bytes_within(item, limit.checked_sub(total)?)?;
            }
            total
        }
        Value::Object(map) => {
            let mut total = 2 + map.len();
            for (key, item) in map {
                total += key.len() * 6 + 3;
                total += json_bytes_within(item, limit.checked_sub(total)?)?;
            }
            total
        }
    };
    (bytes <= limit).then_some(bytes)
}

impl<'a, I: Iterator<Item = Row<'a>>> Iterator for SplitLongObjects<'a, I> {
    type Item = Row<'a>;

    fn next(&mut self) -> Option<Row<'a>> {
        if let Some((text, start, ends)) = &mut self.cut {
            if let Some(end) = ends.pop() {
                let piece = text[*start..end].to_owned();
                *start = end;
                return Some(Row::Continued(Cow::Owned(piece), RowKind::Object));
            }
            self.cut = None;
        }
        let row = self.rows.next()?;
        if !matches!(row, Row::Object(_) | Row::Whole(_)) || self.fits_alone(&row) {
            return Some(row);
        }
        let text = render_row(&row);
        let mut ends: Vec<usize> = Vec::new();
        let mut end = 0;
        for piece in self.budget.split(&text) {
            end += piece.len();
            ends.push(end);
        }
        ends.reverse();
        let first = ends.pop().unwrap_or(text.len());
        let row = Row::Rendered(Cow::Owned(text[..first].to_owned()));
        self.cut = Some((text, first, ends));
        Some(row)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let pieces = self.cut.as_ref().map_or(0, |(_, _, ends)| ends.len());
        (self.rows.size_hint().0.saturating_add(pieces), None)
    }
}

/// The blocks of `text` for `text_rows = "blocks"` (see the module documentation), in order,
/// each a slice of `text` from the start of its first line that is not blank to the end of its
/// last one (without its `\n`). A text of blank lines only has none.
pub fn blocks(text: &str) -> Vec<&str> {
    // Lines as (start, end) byte offsets, without their `\n`.
    let lines = || {
        let mut start = 0;
        text.split_inclusive('\n').map(move |line| {
            let range = (start, start + line.trim_end_matches('\n').len());
            start += line.len();
            range
        })
    };
    // The widest run of blank lines between two lines that are not blank.
    let (mut widest, mut run, mut seen) = (0, 0, false);
    for (s, e) in lines() {
        if text[s..e].trim().is_empty() {
            run += 1;
        } else {
            if seen {
                widest = widest.max(run);
            }
            (run, seen) = (0, true);
        }
    }
    let mut out = Vec::new();
    let mut current: Option<(usize, usize)> = None;
    let mut run = 0;
    for (s, e) in lines() {
        if text[s..e].trim().is_empty() {
            run += 1;
            continue;
        }
        current = match current {
            Some((start, end)) if widest > 0 && run >= widest => {
                out.push(&text[start..end]);
                Some((s, e))
            }
            Some((start, _)) => Some((start, e)),
            None => Some((s, e)),
        };
        run = 0;
    }
    out.extend(current.map(|(start, end)| &text[start..end]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Tokenizer;
    use crate::envelope::{fill_rows_within, render_row};
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-z\"\\\u{0}-\u{1f}é😀]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec(("[a-z\"\u{1}]{0,3}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The bound counted without rendering is never below the rendering's bytes.
        #[test]
        fn the_object_row_bound_is_never_below_the_rendering(
            members in prop::collection::vec(("[a-z=,é]{0,4}", json_value()), 0..5),
            limit in 0usize..400,
        ) {
            let map: Map<String, Value> = members.into_iter().collect();
            let rendered = render_row(&Row::Object(Cow::Borrowed(&map)));
            match object_row_bytes_within(&map, limit) {
                Some(bound) => {
                    prop_assert!(bound >= rendered.len(), "{bound} < {}: {rendered}", rendered.len());
                    prop_assert!(bound <= limit);
                }
                None => prop_assert!(object_row_bytes_within(&map, usize::MAX).unwrap() > limit),
            }
        }
    }

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
    fn blocks_split_at_the_widest_blank_line_runs_and_no_block_starts_blank() {
        // mcp-server-git's git_log: two blank lines between commits, one between paragraphs.
        let log = "Commit history:\nCommit: a\nMessage: one\n\n\nCommit: b\nMessage: two\n\nsecond paragraph\n\n\nCommit: c\nMessage: three\n";
        assert_eq!(
            blocks(log),
            [
                "Commit history:\nCommit: a\nMessage: one",
                "Commit: b\nMessage: two\n\nsecond paragraph",
                "Commit: c\nMessage: three",
            ]
        );
        // One blank line apart: paragraphs; blank lines at the ends are no rows.
        assert_eq!(
            blocks("\n\npara 1\nline 2\n\npara 2\n\n\n"),
            ["para 1\nline 2", "para 2"]
        );
        // Whitespace-only lines are blank; CRLF text too.
        assert_eq!(blocks("a\r\n \t\r\nb\r\n"), ["a\r", "b\r"]);
        assert_eq!(
            blocks("one block\nno blank line"),
            ["one block\nno blank line"]
        );
        assert!(blocks("\n \n\n").is_empty());
        assert!(blocks("").is_empty());
    }

    #[test]
    fn a_git_log_gives_one_row_per_commit_and_pages_rejoin_it() {
        let commits: Vec<String> = (0..20)
            .map(|i| format!("Commit: {i:040}\nAuthor: x\nMessage: change {i}\n\nwhy, at length\n"))
            .collect();
        let log = format!("Commit history:\n{}", commits.join("\n\n"));
        let rules = rules(TextRows::Blocks, LongRows::Split, Budget::chars(200));
        let r = rows(&log, rules);
        assert_eq!(r.len(), 20, "one row per commit");
        let filled = fill_rows_within(r.clone(), &Budget::chars(200));
        assert!(!filled.content.starts_with('\n'), "{:?}", filled.content);
        assert_eq!(
            filled.omitted as usize + filled.content.matches("Commit: ").count(),
            20
        );
        let joined: Vec<String> = r.iter().map(render_row).collect();
        // Joined with one blank line, the rows are the text with one blank line between
        // commits: nothing of it is lost.
        assert_eq!(
            joined.join("\n\n"),
            log.trim_end().replace("\n\n\nCommit", "\n\nCommit")
        );
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
        assert_eq!(
            r[2],
            Row::Continued(Cow::Borrowed(&line[20..]), RowKind::Line)
        );
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
