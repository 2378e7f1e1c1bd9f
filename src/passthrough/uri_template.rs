//! Whether a URI could have been produced by a URI template (RFC 6570), for routing a resource
//! request to the server whose `resourceTemplates` entry matches (MCP 2025-11-25 "Resources:
//! Resource Templates").
//!
//! Matching is by the shape of each expression's expansion, with backtracking:
//! - `{var}` (simple string expansion): any run of characters without `/`, `?`, `#`;
//! - `{+var}` (reserved) : any run of characters;
//! - `{#var}`: empty, or `#` followed by anything;
//! - `{.var}`, `{/var}`, `{;var}`: empty, or the operator character followed by characters
//!   without `?` or `#` (`{.var}` also without `/`);
//! - `{?var}`, `{&var}`: empty, or `?` (`&`) followed by characters without `#`.
//!
//! Literal text must match exactly. A malformed template (an unclosed `{`) matches nothing.
//! Pure; no I/O.

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq)]
enum Part<'a> {
    Literal(&'a str),
    /// An expression's operator (`None` for simple expansion).
    Expr(Option<char>),
}

fn parse(template: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        match rest.find('{') {
            Some(0) => {
                let end = rest.find('}')?;
                let body = &rest[1..end];
                let op = body
                    .chars()
                    .next()
                    .filter(|c| matches!(c, '+' | '#' | '.' | '/' | ';' | '?' | '&'));
                parts.push(Part::Expr(op));
                rest = &rest[end + 1..];
            }
            Some(i) => {
                parts.push(Part::Literal(&rest[..i]));
                rest = &rest[i..];
            }
            None => {
                parts.push(Part::Literal(rest));
                rest = "";
            }
        }
    }
    Some(parts)
}

/// Whether `text` is a possible expansion of an expression with operator `op`.
fn expansion_fits(op: Option<char>, text: &str) -> bool {
    let without = |s: &str, banned: &[char]| !s.contains(banned);
    match op {
        None => without(text, &['/', '?', '#']),
        Some('+') => true,
        Some('#') => text.is_empty() || text.starts_with('#'),
        Some('.') => text.is_empty() || (text.starts_with('.') && without(text, &['/', '?', '#'])),
        Some(c @ ('/' | ';')) => {
            text.is_empty() || (text.starts_with(c) && without(text, &['?', '#']))
        }
        Some(c @ ('?' | '&')) => text.is_empty() || (text.starts_with(c) && without(text, &['#'])),
        Some(_) => false,
    }
}

fn match_from(parts: &[Part<'_>], uri: &str) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(lit), rest)) => uri
            .strip_prefix(lit)
            .is_some_and(|after| match_from(rest, after)),
        Some((Part::Expr(op), rest)) => {
            // Try the longest expansion first; every char boundary is a possible end.
            let ends = uri
                .char_indices()
                .map(|(i, _)| i)
                .chain(std::iter::once(uri.len()))
                .rev();
            for end in ends {
                let (taken, after) = uri.split_at(end);
                if expansion_fits(*op, taken) && match_from(rest, after) {
                    return true;
                }
            }
            false
        }
    }
}

/// Whether `uri` matches `template` (see the module documentation for the rules).
pub fn matches(template: &str, uri: &str) -> bool {
    parse(template).is_some_and(|parts| match_from(&parts, uri))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_expansion_stays_within_a_segment() {
        let t = "demo://resource/dynamic/text/{resourceId}";
        assert!(matches(t, "demo://resource/dynamic/text/5"));
        assert!(matches(t, "demo://resource/dynamic/text/"));
        assert!(!matches(t, "demo://resource/dynamic/text/5/6"));
        assert!(!matches(t, "demo://resource/dynamic/blob/5"));
        assert!(matches("file:///{dir}/{name}.txt", "file:///a/b.c.txt"));
        assert!(!matches("file:///{dir}/{name}.txt", "file:///a/b/c.txt"));
    }

    #[test]
    fn operators() {
        assert!(matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(matches("repo://{owner}{/path}", "repo://me/src/lib.rs"));
        assert!(matches("repo://{owner}{/path}", "repo://me"));
        assert!(matches(
            "search://q{?query,page}",
            "search://q?query=x&page=2"
        ));
        assert!(matches("search://q{?query}", "search://q"));
        assert!(!matches("search://q{?query}", "search://qx"));
        assert!(matches("doc://a{#frag}", "doc://a#top"));
        assert!(matches("v://x{.fmt}", "v://x.json"));
        assert!(!matches("v://x{.fmt}", "v://x/json"));
        assert!(matches("a://{x}{&y}", "a://1&y=2"));
        assert!(matches("a://{;p}", "a://;p=1"));
    }

    #[test]
    fn literals_and_malformed_templates() {
        assert!(matches("demo://fixed", "demo://fixed"));
        assert!(!matches("demo://fixed", "demo://fixed2"));
        assert!(!matches("demo://{unclosed", "demo://x"));
        assert!(matches("ü://{x}/é", "ü://ß/é"));
    }
}
