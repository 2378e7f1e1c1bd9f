//! The end of a rendering cut short by its budget: the line that counts the calls left out,
//! and the first call shortened when not even it fits whole (rules in the parent's docs,
//! section *Budget*).

use super::Group;
use crate::budget::Measure;

/// `(N more calls omitted for budget)` (`call` for one), with its newline.
pub(super) fn omitted_line(left: usize) -> String {
    format!("({left} more {} omitted for budget)\n", calls(left))
}

fn calls(n: usize) -> &'static str {
    if n == 1 {
        "call"
    } else {
        "calls"
    }
}

/// The first of `calls` groups, which does not fit `budget` whole: its lines cut after their
/// labels to the largest common length with which it and the omitted line for the other calls
/// fit together; or, when even the labels alone do not, one line saying what the first call
/// needs (then the only output that may pass the budget: it says so).
pub(super) fn first_group(group: &Group, budget: usize, measure: Measure, calls: usize) -> String {
    let trailer = match calls {
        0 | 1 => 0,
        _ => measure.count(&omitted_line(calls - 1)),
    };
    let needs = measure.count(&group.numbered(1, Some(0))) + trailer;
    if needs > budget {
        let unit = match measure {
            Measure::Chars => "characters",
            Measure::Tokens(_) => "tokens",
        };
        return format!(
            "(the first call needs {needs} {unit} even shortened, more than the budget of {budget}: {calls} {} omitted for budget)\n",
            self::calls(calls)
        );
    }
    let fits = |cap: usize| measure.count(&group.numbered(1, Some(cap))) + trailer <= budget;
    // `lo` fits; `hi` (the longest line whole, i.e. the group itself) does not.
    let mut lo = 0;
    let mut hi = group
        .items
        .iter()
        .map(|(_, rest)| rest.chars().count())
        .max()
        .unwrap_or(0);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let mut out = group.numbered(1, Some(lo));
    if calls > 1 {
        out.push_str(&omitted_line(calls - 1));
    }
    out
}
