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
