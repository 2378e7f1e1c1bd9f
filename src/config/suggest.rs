//! "Did you mean …?": the known name closest to a mistyped one, for config errors (an unknown
//! key) and for `check` (a tool name the server does not offer).
//!
//! Closeness is the optimal-string-alignment edit distance (insertions, deletions,
//! substitutions and swaps of two neighbours, each one edit; [`strsim::osa_distance`]) between
//! the names in lower case, counted in Unicode scalar values. A name is suggested when it is at
//! most one edit per three characters of the typed name away (at least one edit), the closest
//! one first in the given order on a tie. No I/O.

/// The name in `known` closest to `typed` when it is close enough to be what was meant (see
/// the module documentation); `None` when none is, or `typed` itself is known.
pub fn closest<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed_lower = typed.to_lowercase();
    let allowed = (typed.chars().count() / 3).max(1);
    let mut best: Option<(usize, &'a str)> = None;
    for name in known {
        if name == typed {
            return None;
        }
        let distance = strsim::osa_distance(&typed_lower, &name.to_lowercase());
        if distance <= allowed && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, name));
        }
    }
    best.map(|(_, name)| name)
}

/// serde's unknown-field message (``unknown field `x`, expected one of `a`, `b` ``, ``…,
/// expected `a` or `b` ``, ``…, expected `a` ``, ``…, there are no fields``) as this config's:
/// ``unknown key `x`; did you mean `a`?`` when a known key is close (see [`closest`]), or
/// ``did you mean `a` or `b`?`` when `x` (four characters or more) is part of at most three
/// known keys, else ``unknown key `x` (known keys: `a`, `b`)``. `None` for any other message.
pub(super) fn unknown_key_message(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (typed, expected) = rest.split_once('`')?;
    let known = backticked(expected);
    if let Some(name) = closest(typed, known.iter().copied()) {
        return Some(format!("unknown key `{typed}`; did you mean `{name}`?"));
    }
    // Part of a known key (`budget` for `char_budget`): those keys.
    let containing: Vec<String> = known
        .iter()
        .filter(|k| typed.chars().count() >= 4 && k.contains(typed))
        .map(|k| format!("`{k}`"))
        .collect();
    if !containing.is_empty() && containing.len() <= 3 {
        let names = containing.join(" or ");
        return Some(format!("unknown key `{typed}`; did you mean {names}?"));
    }
    if known.is_empty() {
        return Some(format!("unknown key `{typed}` (this table has no keys)"));
    }
    let list: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    Some(format!(
        "unknown key `{typed}` (known keys: {})",
        list.join(", ")
    ))
}

/// The backticked words of `text`, in order.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_suggested_far_ones_are_not() {
        let known = ["git_status", "git_commit", "git_log"];
        assert_eq!(closest("git_comit", known), Some("git_commit"));
        assert_eq!(
            closest("git_lgo", known),
            Some("git_log"),
            "a swap is one edit"
        );
        assert_eq!(
            closest("Git_Log", known),
            Some("git_log"),
            "case is no edit"
        );
        assert_eq!(closest("git_log", known), None, "known: nothing to suggest");
        assert_eq!(closest("push", known), None);
        assert_eq!(
            closest("ab", ["xy"]),
            None,
            "two edits in a short name are too many"
        );
        assert_eq!(closest("a", ["b"]), Some("b"), "one edit is always allowed");
        assert_eq!(
            closest("git_x", ["git_a", "git_b"]),
            Some("git_a"),
            "first on a tie"
        );
        assert_eq!(closest("git_log", []), None);
    }

    #[test]
    fn serde_messages_become_suggestions_or_a_list() {
        let serde =
            "unknown field `char_budjet`, expected one of `char_budget`, `token_budget`, `media`";
        assert_eq!(
            unknown_key_message(serde).unwrap(),
            "unknown key `char_budjet`; did you mean `char_budget`?"
        );
        assert_eq!(
            unknown_key_message("unknown field `zzz`, expected `path` or `redact_keys`").unwrap(),
            "unknown key `zzz` (known keys: `path`, `redact_keys`)"
        );
        assert_eq!(
            unknown_key_message("unknown field `zzz`, there are no fields").unwrap(),
            "unknown key `zzz` (this table has no keys)"
        );
        assert_eq!(
            unknown_key_message(
                "unknown field `budget`, expected one of `char_budget`, `token_budget`, `media`"
            )
            .unwrap(),
            "unknown key `budget`; did you mean `char_budget` or `token_budget`?"
        );
        assert_eq!(unknown_key_message("invalid type: string"), None);
    }
}
