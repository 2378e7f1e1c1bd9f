//! What is questionable in a config but does not stop the proxy ([`Config::warnings`]), each
//! located as a config error is (file, line, column, key path; [`ConfigError`]):
//!
//! * a tool name in both `enabled_tools` and `disabled_tools` of one server: the denylist wins,
//!   so the tool is never offered and its allowlist entry does nothing;
//! * a `token_budget` under [`envelope_core::budget::TOKENS_OF_ANY_CHARACTER`], once per place
//!   it is set (`[defaults]`, a server table, a tool table), however many tools it applies to.
//!
//! `check` lists them; `serve` and `call` log them as warnings. Pure: the spans come from the
//! raw tables.

use std::ops::Range;

use toml::Spanned;

use super::validate::{line_column, Ctx};
use super::{Config, ConfigError};
use crate::settings::PositiveCount;

impl Ctx<'_> {
    /// Notes a warning about `key` at `span`.
    pub(super) fn warn(&self, span: Range<usize>, key: String, message: String) {
        let warning = self.error(Some(span), Some(key), message);
        self.warnings.borrow_mut().push(warning);
    }

    /// Warns when the `token_budget` of the table at `table_key` (`defaults`,
    /// `mcp_servers.fx`, `mcp_servers.fx.tools.echo`) is too small to show any character.
    pub(super) fn check_token_budget(
        &self,
        table_key: &str,
        token_budget: Option<&Spanned<PositiveCount>>,
    ) {
        let Some(budget) = token_budget else {
            return;
        };
        let value = budget.get_ref().0;
        let least = envelope_core::budget::TOKENS_OF_ANY_CHARACTER;
        if value < least {
            self.warn(
                budget.span(),
                format!("{table_key}.token_budget"),
                format!(
                    "token_budget {value} is under {least}: one character can take up to \
                     {least} tokens, and text made of such characters cannot be shown (not \
                     even cut into pieces) by the tools it applies to"
                ),
            );
        }
    }

    /// Warns about each tool name of server table `key` in both `enabled` and `disabled`, at
    /// its `disabled_tools` entry (once per name).
    pub(super) fn check_tool_lists(
        &self,
        key: &str,
        enabled: Option<&[Spanned<String>]>,
        disabled: Option<&[Spanned<String>]>,
    ) {
        let (Some(enabled), Some(disabled)) = (enabled, disabled) else {
            return;
        };
        let mut warned: Vec<&str> = Vec::new();
        for entry in disabled {
            let name = entry.get_ref().as_str();
            let allowed = enabled.iter().find(|e| e.get_ref() == name);
            let Some(allowed) = allowed.filter(|_| !warned.contains(&name)) else {
                continue;
            };
            warned.push(name);
            let (line, _) = line_column(self.text, allowed.span().start);
            self.warn(
                entry.span(),
                format!("{key}.disabled_tools"),
                format!(
                    "\"{name}\" is also listed in enabled_tools (line {line}): disabled_tools \
                     wins, so the tool is never offered; remove it from one of the two lists"
                ),
            );
        }
    }
}

/// The plain names of a raw tool list.
pub(super) fn names(list: Option<Vec<Spanned<String>>>) -> Option<Vec<String>> {
    list.map(|l| l.into_iter().map(Spanned::into_inner).collect())
}

impl Config {
    /// Each warning as `check` and the log show it: `<file>:<line>:<column>: <key>: <message>`.
    pub fn warning_lines(&self) -> Vec<String> {
        self.warnings.iter().map(ConfigError::render).collect()
    }
}
