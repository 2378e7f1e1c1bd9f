//! From the raw form to the validated one ([`Config`]): each check that needs more than one
//! key (server names, env names, a tool table for a hidden tool, `${VAR}` expansion), paths
//! resolved against the config's directory, and errors with position and key path.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::load::expand_vars;
use super::raw::{RawConfig, RawServer, RawTool};
use super::{codex, remote};
use super::{Config, ConfigError, Defaults, ServerConfig, ToolOverride, TranscriptConfig};
use crate::page_tool::PagingConfig;
use crate::settings::BudgetKeys;

/// The [`BudgetKeys`] of a raw table (the same four fields in each).
macro_rules! budget_keys {
    ($raw:expr) => {
        BudgetKeys {
            token_budget: $raw.token_budget.map(|c| c.into_inner().0),
            tokenizer: $raw.tokenizer,
            long_rows: $raw.long_rows,
            text_rows: $raw.text_rows,
        }
    };
}

/// What a conversion step needs to report an error or expand `${VAR}`: the file's path and
/// text, and the variable lookup; and the warnings noted so far (see `findings.rs`).
pub(super) struct Ctx<'a> {
    pub(super) path: &'a Path,
    pub(super) text: &'a str,
    pub(super) env: &'a dyn Fn(&str) -> Option<String>,
    pub(super) warnings: std::cell::RefCell<Vec<ConfigError>>,
}

impl Ctx<'_> {
    pub(super) fn error(
        &self,
        span: Option<Range<usize>>,
        key: Option<String>,
        message: String,
    ) -> ConfigError {
        let (line, column) = match span {
            Some(span) => {
                let (line, column) = line_column(self.text, span.start);
                (Some(line), Some(column))
            }
            None => (None, None),
        };
        ConfigError {
            path: self.path.to_path_buf(),
            line,
            column,
            key,
            message,
        }
    }

    pub(super) fn serde_error(
        &self,
        err: serde_path_to_error::Error<toml::de::Error>,
    ) -> ConfigError {
        let key = key_path(err.path());
        let inner = err.inner();
        if key.is_empty() {
            // A number TOML cannot hold is refused before any key is read: find its key.
            let found = super::numbers::unholdable_number(self.text, inner.span(), inner.message());
            if let Some((span, key, message)) = found {
                return self.error(Some(span), Some(key), message);
            }
        }
        // toml's syntax messages span several lines; keep the error on one.
        let message = super::error::one_line(inner.message());
        // The key names the problem; a string value in the wrong place may be a secret, and
        // any value of an `env` or header table is one.
        let mut message = crate::redact::without_quoted_values(&message);
        message = super::numbers::plain_expectation(&message);
        message = super::numbers::short_floats(&message);
        if let Some(better) = super::suggest::unknown_key_message(&message) {
            message = better;
        }
        if holds_secrets(&key) || echoes_a_non_number(&message) {
            message = without_backticked(&message);
        }
        self.error(inner.span(), (!key.is_empty()).then_some(key), message)
    }

    pub(super) fn convert(&self, raw: RawConfig, base_dir: PathBuf) -> Result<Config, ConfigError> {
        let d = raw.defaults;
        self.check_token_budget("defaults", d.token_budget.as_ref());
        let defaults = Defaults {
            char_budget: d.char_budget.map(|c| c.0),
            budget_keys: budget_keys!(d),
            tool_timeout: d.tool_timeout_sec.map(|s| s.0),
            startup_timeout: d.startup_timeout_sec.map(|s| s.0),
            max_restarts: d.max_restarts,
            max_message_bytes: d.max_message_bytes.map(NonZeroUsize::get),
            media: d.media,
        };
        let mut transcript_path_at = None;
        let mut transcript_path_empty = false;
        let transcript = match raw.transcript {
            None => TranscriptConfig::default(),
            Some(t) => TranscriptConfig {
                path: t.path.map(|p| {
                    transcript_path_at = Some(line_column(self.text, p.span().start));
                    transcript_path_empty = p.get_ref().is_empty();
                    resolve_path(&base_dir, p.get_ref())
                }),
                redact_keys: t
                    .redact_keys
                    .unwrap_or_else(|| TranscriptConfig::default().redact_keys),
            },
        };
        let paging = PagingConfig::from_raw(raw.paging)
            .map_err(|(span, msg)| self.error(span, Some("paging.tool_name".into()), msg))?;
        let mut servers = Vec::with_capacity(raw.mcp_servers.len());
        // In the order they are written: name collisions between servers resolve in it.
        let mut raw_servers: Vec<_> = raw.mcp_servers.into_iter().collect();
        raw_servers.sort_by_key(|(_, server)| server.span().start);
        for (name, server) in raw_servers {
            servers.push(self.server(name, server, &base_dir)?);
        }
        Ok(Config {
            path: self.path.to_path_buf(),
            base_dir,
            defaults,
            servers,
            transcript,
            transcript_path_at,
            transcript_path_empty,
            paging,
            warnings: self.warnings.take(),
        })
    }

    /// One `[mcp_servers.NAME]` table, checked and converted.
    fn server(
        &self,
        name: String,
        raw: Spanned<RawServer>,
        base_dir: &Path,
    ) -> Result<ServerConfig, ConfigError> {
        let key = format!("mcp_servers.{}", key_segment(&name));
        let span = raw.span();
        let mut raw = raw.into_inner();
        if name.is_empty() {
            return Err(self.error(Some(span), Some(key), "server name is empty".into()));
        }
        if name.contains("__") {
            return Err(self.error(
                Some(span),
                Some(key),
                format!("server name `{name}` contains `__` (reserved for `<server>__<tool>`)"),
            ));
        }
        let startup_timeout_ms = codex::check(self, &key, &raw)?;
        self.check_token_budget(&key, raw.token_budget.as_ref());
        let (enabled_tools, disabled_tools) = (raw.enabled_tools.take(), raw.disabled_tools.take());
        self.check_tool_lists(&key, enabled_tools.as_deref(), disabled_tools.as_deref());
        let remote = remote::check(self, &key, span, &mut raw)?;
        let (command, program) = match raw.command.take() {
            Some(c) => self.program(c, &key, base_dir)?,
            None => (String::new(), PathBuf::new()),
        };
        let cwd = match raw.cwd.take() {
            Some(c) => Some(resolve_path(
                base_dir,
                &self.expand(c, format!("{key}.cwd"))?,
            )),
            None => None,
        };
        let mut args = Vec::with_capacity(raw.args.len());
        for (i, arg) in std::mem::take(&mut raw.args).into_iter().enumerate() {
            args.push(self.expand(arg, format!("{key}.args[{i}]"))?);
        }
        let env = self.env(&key, std::mem::take(&mut raw.env))?;
        let tools = std::mem::take(&mut raw.tools);
        let mut server = ServerConfig {
            name,
            command,
            program,
            args,
            env,
            cwd,
            enabled: raw.enabled.unwrap_or(true),
            char_budget: raw.char_budget.map(|c| c.0),
            budget_keys: budget_keys!(raw),
            tool_timeout: raw.tool_timeout_sec.map(|s| s.0),
            startup_timeout: raw.startup_timeout_sec.map(|s| s.0).or(startup_timeout_ms),
            max_restarts: raw.max_restarts,
            media: raw.media,
            enabled_tools: super::findings::names(enabled_tools),
            disabled_tools: super::findings::names(disabled_tools).unwrap_or_default(),
            tool_prefix: raw.tool_prefix.map(|p| p.0).unwrap_or_default(),
            enabled_prompts: raw.enabled_prompts,
            disabled_prompts: raw.disabled_prompts.unwrap_or_default(),
            tools: BTreeMap::new(),
            remote,
        };
        server.tools = self.tool_overrides(&key, &server, tools)?;
        Ok(server)
    }

    /// A server's `env` table: names checked, values `${VAR}`-expanded, sorted by name.
    fn env(
        &self,
        key: &str,
        raw: BTreeMap<String, Spanned<String>>,
    ) -> Result<Vec<(String, String)>, ConfigError> {
        let mut env = Vec::with_capacity(raw.len());
        for (var, value) in raw {
            let var_key = format!("{key}.env.{}", key_segment(&var));
            if var.is_empty() || var.contains('=') || var.contains('\0') {
                return Err(self.error(
                    Some(value.span()),
                    Some(var_key),
                    format!("invalid environment variable name `{var}`"),
                ));
            }
            let value = self.expand(value, var_key)?;
            env.push((var, value));
        }
        Ok(env)
    }

    /// A server's `[mcp_servers.NAME.tools.TOOL]` tables; each must name a tool `server`
    /// exposes.
    fn tool_overrides(
        &self,
        key: &str,
        server: &ServerConfig,
        raw: BTreeMap<String, Spanned<RawTool>>,
    ) -> Result<BTreeMap<String, ToolOverride>, ConfigError> {
        let mut tools = BTreeMap::new();
        for (tool, table) in raw {
            if !server.exposes(&tool) {
                let why = if server.disabled_tools.contains(&tool) {
                    "is listed in disabled_tools"
                } else {
                    "is not listed in enabled_tools"
                };
                return Err(self.error(
                    Some(table.span()),
                    Some(format!("{key}.tools.{}", key_segment(&tool))),
                    format!("tool `{tool}` has settings but {why}, so it is never exposed"),
                ));
            }
            let t = table.into_inner();
            let tool_key = format!("{key}.tools.{}", key_segment(&tool));
            self.check_token_budget(&tool_key, t.token_budget.as_ref());
            let over = ToolOverride {
                char_budget: t.char_budget.map(|c| c.0),
                budget_keys: budget_keys!(t),
                tool_timeout: t.tool_timeout_sec.map(|s| s.0),
                media: t.media,
            };
            tools.insert(tool, over);
        }
        Ok(tools)
    }

    /// `command` as written and the program it names (see [`ServerConfig::program`]).
    fn program(
        &self,
        command: Spanned<String>,
        key: &str,
        base_dir: &Path,
    ) -> Result<(String, PathBuf), ConfigError> {
        let command_span = command.span();
        let written = command.get_ref().clone();
        let expanded_command = self.expand(command, format!("{key}.command"))?;
        if expanded_command.trim().is_empty() {
            return Err(self.error(
                Some(command_span),
                Some(format!("{key}.command")),
                "command is empty".into(),
            ));
        }
        let program = if expanded_command.contains('/')
            || expanded_command.contains(std::path::MAIN_SEPARATOR)
        {
            resolve_path(base_dir, &expanded_command)
        } else {
            PathBuf::from(&expanded_command)
        };
        Ok((written, program))
    }

    pub(super) fn expand(
        &self,
        value: Spanned<String>,
        key: String,
    ) -> Result<String, ConfigError> {
        let span = value.span();
        expand_vars(value.get_ref(), self.env).map_err(|msg| self.error(Some(span), Some(key), msg))
    }
}

/// Whether the dotted `key` is in a table whose values are secrets: a server's `env`,
/// `http_headers` or `env_http_headers`.
fn holds_secrets(key: &str) -> bool {
    [".env", ".http_headers", ".env_http_headers"]
        .iter()
        .any(|table| key.contains(&format!("{table}.")) || key.ends_with(table))
}

/// Whether a parser's `invalid type`/`invalid value` message quotes a value written where
/// something other than a number was expected (``invalid type: integer `987654321`, expected a
/// string``): such a value may be a secret written in the wrong place (a numeric token in
/// `args`), so it is not echoed; the expected type says what is wrong. A value of a numeric key
/// (``invalid value: integer `-5`, expected a whole number of at least 1``) is kept.
fn echoes_a_non_number(message: &str) -> bool {
    let numeric = ["expected a whole number", "expected a positive number"];
    (message.starts_with("invalid type:") || message.starts_with("invalid value:"))
        && !numeric.iter().any(|n| message.contains(n))
}

/// A parser's message without the values it quotes in backticks (``invalid type: integer
/// `12345`, expected a string`` becomes `invalid type: integer, expected a string`).
fn without_backticked(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        out.push_str(rest[..open].trim_end_matches(' '));
        rest = &rest[open + 1 + len + 1..];
    }
    out.push_str(rest);
    out
}

/// `rel` against `base` (unless absolute), with `.` components removed.
fn resolve_path(base: &Path, rel: &str) -> PathBuf {
    base.join(rel).components().collect()
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// A TOML key as written in a dotted path: bare when possible, else quoted.
pub(super) fn key_segment(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_string()
    } else {
        format!("{key:?}")
    }
}

/// The dotted key path of a serde error, without `toml::Spanned`'s internal keys.
pub(super) fn key_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } if key.starts_with("$__serde_spanned_private") => {}
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&key_segment(key));
            }
            Segment::Unknown => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push('?');
            }
        }
    }
    out
}
