//! The config error type: file, position and key path of what is wrong.

use std::path::PathBuf;

/// A config error: the file, the position (1-based line and column, the column counted in
/// characters) and key path when known, and what is wrong.
///
/// Display: `<path>:<line>:<column>: <key>: <message>`, parts omitted when unknown, e.g.
/// ``config/x.toml:7:15: mcp_servers.git.char_budget: invalid value: integer `-5`, expected a whole number of at least 1``
/// or `x.toml: cannot read: No such file or directory`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ConfigError {
    /// The config file as given.
    pub path: PathBuf,
    /// 1-based line, when the error has a position.
    pub line: Option<usize>,
    /// 1-based column in characters, when the error has a position.
    pub column: Option<usize>,
    /// Dotted key path such as `mcp_servers.git.args[1]`, when known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    /// The Display form: `<path>:<line>:<column>: <key>: <message>`, parts omitted when unknown.
    pub fn render(&self) -> String {
        let mut out = self.path.display().to_string();
        if let Some(line) = self.line {
            out.push_str(&format!(":{line}"));
            if let Some(column) = self.column {
                out.push_str(&format!(":{column}"));
            }
        }
        if let Some(key) = &self.key {
            out.push_str(": ");
            out.push_str(key);
        }
        out.push_str(": ");
        out.push_str(&self.message);
        out
    }
}

/// A TOML syntax error in `text` (as `toml_edit` reports it) in words for a message:
/// `line <line>, column <column>: <message>` on one line (the column in characters). The
/// parser's own Display quotes the offending line of the file with a caret under it; that line
/// may hold a secret (a token typed where it does not belong, an `env` value), so it is left
/// out, and so are quoted values in the message ([`crate::redact::without_quoted_values`]).
pub fn toml_syntax_error(text: &str, err: &toml_edit::TomlError) -> String {
    let message = crate::redact::without_quoted_values(&one_line(err.message()));
    match err.span() {
        Some(span) => {
            let (line, column) = super::validate::line_column(text, span.start);
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

/// A parser's message that spans several lines (toml's do) on one: its non-blank lines,
/// trimmed, joined by `; `.
pub(super) fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}
