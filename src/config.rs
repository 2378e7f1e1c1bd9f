//! The TOML configuration: which downstream MCP servers to start and how to envelope their tools.
//!
//! Pure apart from [`Config::load`] (reads one file) and the process-environment lookup it passes
//! on; [`Config::parse`] and [`discover`] take every outside input as an argument.
//!
//! # Format
//!
//! Server tables use the same keys as Codex's `[mcp_servers.NAME]`, plus envelope settings
//! (source: issue 3 of the project). Every table rejects unknown keys.
//!
//! ```toml
//! [defaults]
//! char_budget = 2000          # envelope content, in characters (Unicode scalar values), >= 1
//! token_budget = 1000         # optional: also at most this many tokens (>= 1); the tighter wins
//! tokenizer = "o200k_base"    # or "cl100k_base": whose tokens token_budget counts
//! long_rows = "split"         # or "keep": text rows longer than the budget cut into pieces
//! text_rows = "lines"         # or "blocks": plain text as one row per blank-line-separated block
//! tool_timeout_sec = 60       # per tools/call; integer or float seconds, > 0
//! startup_timeout_sec = 20    # spawn + initialize of one server; seconds, > 0
//! max_restarts = 5            # restarts in a row before a crashed server is `unavailable`
//! max_message_bytes = 67108864  # longest JSON-RPC line accepted from either side, bytes, > 0
//! media = "passthrough"       # or "describe": image/audio blocks become a row {type,mimeType,bytes}
//!
//! [transcript]
//! path = "calls.jsonl"        # optional; relative to the config file's directory
//! redact_keys = ["password", "token", "secret", "api_key", "authorization"]  # the default
//!
//! [mcp_servers.git]
//! command = "uvx"             # run directly, never through a shell; must not be empty
//! args = ["mcp-server-git", "--repository", "."]   # "${VAR}" expands
//! env = { GIT_PAGER = "cat" } # added to the child's environment; "${VAR}" expands
//! cwd = "."                   # optional; relative to the config file's directory
//! enabled = true              # optional, default true
//! char_budget = 1500          # optional default for this server's tools
//! tool_timeout_sec = 30       # optional
//! startup_timeout_sec = 20    # optional
//! max_restarts = 5            # optional
//! media = "describe"          # optional
//! enabled_tools = ["git_log", "git_status"]   # optional allowlist
//! disabled_tools = ["git_commit"]             # optional denylist
//! tool_prefix = "git_"        # optional; prepended to the names the client sees
//!
//! [mcp_servers.git.tools.git_log]   # per-tool overrides, keyed by the downstream tool name
//! char_budget = 800
//! tool_timeout_sec = 10
//! media = "passthrough"
//!
//! [mcp_servers.docs]          # a remote server: `url` instead of `command` (see RemoteConfig)
//! url = "https://mcp.example.com/mcp"     # streamable HTTP, or HTTP+SSE as a fallback
//! bearer_token_env_var = "DOCS_TOKEN"     # sent as `Authorization: Bearer <value>`
//! http_headers = { "X-Team" = "t1" }      # fixed values
//! env_http_headers = { "X-Api-Key" = "DOCS_KEY" }   # values from environment variables
//! ```
//!
//! # Resolution order
//!
//! * `char_budget`, `token_budget`, `tokenizer`, `long_rows`, `text_rows`, `tool_timeout_sec`,
//!   `media`: the tool table, then the server table, then `[defaults]`, then the built-in value
//!   ([`Config::tool_settings`]; the budget rule is in [`crate::settings`]).
//! * `startup_timeout_sec`, `max_restarts`: the server table, then `[defaults]`, then built-in.
//! * `max_message_bytes`: `[defaults]`, then built-in.
//!
//! Built-in values: [`DEFAULT_CHAR_BUDGET`], [`DEFAULT_TOOL_TIMEOUT`], [`DEFAULT_STARTUP_TIMEOUT`],
//! [`DEFAULT_MAX_RESTARTS`], [`DEFAULT_MAX_MESSAGE_BYTES`], [`MediaMode::Passthrough`],
//! [`DEFAULT_REDACT_KEYS`].
//!
//! # `${VAR}` expansion
//!
//! In `args` and `env` values only, `${NAME}` (NAME = `[A-Za-z_][A-Za-z0-9_]*`) is replaced by the
//! variable's value; an unset variable, an unterminated `${` or an invalid name is a config error.
//! Everything else is kept as written: a `$` not followed by `{` (`$HOME`, a trailing `$`), and
//! `$$`, which also keeps a following `{…}` literal (`$${HOME}` stays `$${HOME}`).
//!
//! # Errors
//!
//! Every [`ConfigError`] names the file, the 1-based line and column (when known) and the key
//! path, e.g. ``config/x.toml:7:15: mcp_servers.git.char_budget: invalid value: integer `-5`,
//! expected usize``. Config errors are: TOML syntax errors, unknown keys, wrong types, negative
//! numbers, zero/negative/non-finite timeouts, zero `max_message_bytes`, an empty `command`, an
//! unset `${VAR}`, a `media` other than `"passthrough"`/`"describe"`, an empty server name or one
//! containing `__`, an empty env name or one containing `=`, and a `tools.NAME` table for a tool
//! the allow/deny lists hide.

use std::collections::BTreeMap;
use std::fmt;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::budget::{LongRows, TextRows, Tokenizer};
use crate::page_tool::{PagingConfig, RawPaging};
use crate::settings::{BudgetKeys, BudgetRules, PositiveCount};

mod codex;
mod remote;
pub use remote::{display_url, RemoteConfig};

/// Built-in envelope content budget, in characters (Unicode scalar values).
pub const DEFAULT_CHAR_BUDGET: usize = 2000;
/// Built-in per-`tools/call` timeout (60 s).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// Built-in timeout for spawning and initializing one server (20 s).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
/// Built-in number of restarts in a row before a crashed server is `unavailable`.
pub const DEFAULT_MAX_RESTARTS: u32 = 5;
/// Built-in longest JSON-RPC line accepted from either side, in bytes (64 MiB).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Built-in list of argument keys whose values the transcript redacts.
pub const DEFAULT_REDACT_KEYS: [&str; 5] =
    ["password", "token", "secret", "api_key", "authorization"];

pub use envelope_core::mapping::MediaMode;

pub use envelope_core::settings::{Setting, Source, ToolSettings};

/// A validated configuration file.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The file as given to [`Config::load`] / [`Config::parse`].
    pub path: PathBuf,
    /// Absolute directory of the file; relative `command`, `cwd` and transcript paths resolve
    /// against it.
    pub base_dir: PathBuf,
    /// The `[defaults]` table (all keys optional).
    pub defaults: Defaults,
    /// The `[mcp_servers.NAME]` tables, in the order the file has them; may be empty.
    pub servers: Vec<ServerConfig>,
    /// The `[transcript]` table (defaults when absent).
    pub transcript: TranscriptConfig,
    /// The `[paging]` table (defaults when absent).
    pub paging: PagingConfig,
}

/// The `[defaults]` table; `None` for a key not written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Defaults {
    /// `char_budget`, characters (Unicode scalar values).
    pub char_budget: Option<usize>,
    /// `tool_timeout_sec` (seconds in TOML, positive and finite).
    pub tool_timeout: Option<Duration>,
    /// `startup_timeout_sec` (seconds in TOML, positive and finite).
    pub startup_timeout: Option<Duration>,
    /// `max_restarts`.
    pub max_restarts: Option<u32>,
    /// `max_message_bytes`, bytes, at least 1.
    pub max_message_bytes: Option<usize>,
    /// `media`.
    pub media: Option<MediaMode>,
    /// `token_budget`, `tokenizer`, `long_rows`, `text_rows`.
    pub budget_keys: BudgetKeys,
}

/// One `[mcp_servers.NAME]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The table name: non-empty, without `__`.
    pub name: String,
    /// `command` as written (non-empty); empty for a remote server.
    pub command: String,
    /// What to spawn (directly, never through a shell): a relative `command` containing a path
    /// separator resolved against [`Config::base_dir`]; otherwise `command` as written (an
    /// absolute path, or a bare name looked up in `PATH`). Empty for a remote server.
    pub program: PathBuf,
    /// `args`, with `${VAR}` expanded.
    pub args: Vec<String>,
    /// `env`, values `${VAR}`-expanded, sorted by key; added to the child's inherited environment.
    pub env: Vec<(String, String)>,
    /// `cwd` resolved against [`Config::base_dir`]; `None` inherits the proxy's directory.
    pub cwd: Option<PathBuf>,
    /// `enabled`, default `true`; a disabled server is not started.
    pub enabled: bool,
    /// `char_budget` for this server's tools, characters.
    pub char_budget: Option<usize>,
    /// `tool_timeout_sec` for this server's tools.
    pub tool_timeout: Option<Duration>,
    /// `startup_timeout_sec`.
    pub startup_timeout: Option<Duration>,
    /// `max_restarts`.
    pub max_restarts: Option<u32>,
    /// `media` for this server's tools.
    pub media: Option<MediaMode>,
    /// `token_budget`, `tokenizer`, `long_rows`, `text_rows` for this server's tools.
    pub budget_keys: BudgetKeys,
    /// `enabled_tools`: when given, only these downstream tools are exposed.
    pub enabled_tools: Option<Vec<String>>,
    /// `disabled_tools`: these downstream tools are never exposed (default empty).
    pub disabled_tools: Vec<String>,
    /// `tool_prefix`, prepended to the tool names the client sees (default empty); prompt names
    /// get it too.
    pub tool_prefix: String,
    /// `enabled_prompts`: when given, only these downstream prompts are exposed.
    pub enabled_prompts: Option<Vec<String>>,
    /// `disabled_prompts`: these downstream prompts are never exposed (default empty).
    pub disabled_prompts: Vec<String>,
    /// `[mcp_servers.NAME.tools.TOOL]` overrides, keyed by downstream tool name; every key is a
    /// tool that [`ServerConfig::exposes`].
    pub tools: BTreeMap<String, ToolOverride>,
    /// `url` and its credentials: a remote server the proxy connects to instead of starting
    /// one; `None` for a stdio server.
    pub remote: Option<RemoteConfig>,
}

/// One `[mcp_servers.S.tools.TOOL]` table; `None` for a key not written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOverride {
    /// `char_budget`, characters (Unicode scalar values).
    pub char_budget: Option<usize>,
    /// `tool_timeout_sec` (seconds in TOML).
    pub tool_timeout: Option<Duration>,
    /// `media`.
    pub media: Option<MediaMode>,
    /// `token_budget`, `tokenizer`, `long_rows`, `text_rows`.
    pub budget_keys: BudgetKeys,
}

/// The `[transcript]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptConfig {
    /// Where to append the JSONL transcript, resolved against [`Config::base_dir`]; `None`
    /// (the default) writes no transcript.
    pub path: Option<PathBuf>,
    /// Argument keys whose values are redacted; [`DEFAULT_REDACT_KEYS`] when not written.
    pub redact_keys: Vec<String>,
}

impl Default for TranscriptConfig {
    fn default() -> Self {
        TranscriptConfig {
            path: None,
            redact_keys: DEFAULT_REDACT_KEYS.iter().map(|k| k.to_string()).collect(),
        }
    }
}

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

/// No config file was found; lists every place looked at, in order.
///
/// Display: `no config file found; looked at: <place>, <place>, …`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no config file found; looked at: {}", self.looked.join(", "))]
pub struct DiscoveryError {
    /// Each place looked at with why it did not apply, e.g. `--config (not given)`,
    /// `MCP_ENVELOPE_CONFIG (not set)`, `/home/u/mcp-envelope.toml (not found)`.
    pub looked: Vec<String>,
}

/// Finds the config file (pure): `explicit` (`--config`), else the `MCP_ENVELOPE_CONFIG`
/// variable, else `mcp-envelope.toml` in `cwd`, else
/// `$XDG_CONFIG_HOME/mcp-envelope/config.toml` (`XDG_CONFIG_HOME` unset, empty or relative
/// meaning `$HOME/.config`).
///
/// An explicit path and a non-empty `MCP_ENVELOPE_CONFIG` are returned as given without checking
/// that they exist (reading them then reports a clear error); the other two places are used only
/// when `exists` says so. Errors with a [`DiscoveryError`] naming all four places.
pub fn discover(
    explicit: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    exists: &dyn Fn(&Path) -> bool,
) -> Result<PathBuf, DiscoveryError> {
    if let Some(path) = explicit {
        return Ok(path.to_path_buf());
    }
    let mut looked = vec!["--config (not given)".to_string()];
    match env("MCP_ENVELOPE_CONFIG") {
        Some(value) if !value.is_empty() => return Ok(PathBuf::from(value)),
        Some(_) => looked.push("MCP_ENVELOPE_CONFIG (empty)".to_string()),
        None => looked.push("MCP_ENVELOPE_CONFIG (not set)".to_string()),
    }
    let local = cwd.join("mcp-envelope.toml");
    if exists(&local) {
        return Ok(local);
    }
    looked.push(format!("{} (not found)", local.display()));
    let config_home = env("XDG_CONFIG_HOME")
        .filter(|v| Path::new(v).is_absolute())
        .map(PathBuf::from)
        .or_else(|| {
            env("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| Path::new(&home).join(".config"))
        });
    match config_home {
        Some(dir) => {
            let user = dir.join("mcp-envelope").join("config.toml");
            if exists(&user) {
                return Ok(user);
            }
            looked.push(format!("{} (not found)", user.display()));
        }
        None => looked.push(
            "$XDG_CONFIG_HOME/mcp-envelope/config.toml (neither XDG_CONFIG_HOME nor HOME is set)"
                .to_string(),
        ),
    }
    Err(DiscoveryError { looked })
}

impl Config {
    /// Reads and parses the file at `path`; `${VAR}` lookups use the process environment and a
    /// relative `path` is made absolute against the current directory.
    ///
    /// Errors: `<path>: cannot read: <reason>` when the file cannot be read (or is not UTF-8),
    /// otherwise as [`Config::parse`].
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|err| ConfigError {
            path: path.to_path_buf(),
            line: None,
            column: None,
            key: None,
            message: format!("cannot read: {}", io_reason(&err)),
        })?;
        Config::parse(&text, path, &|name| std::env::var(name).ok())
    }

    /// Parses `text` as if read from `path`, looking `${VAR}` up with `env`.
    ///
    /// Pure except that a relative `path` is made absolute with the process's current directory
    /// (to compute [`Config::base_dir`]); pass an absolute path for full determinism.
    /// Errors: any config error listed in the module doc, with position and key path.
    pub fn parse(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let ctx = Ctx { path, text, env };
        let deserializer = toml::Deserializer::new(text);
        let raw: RawConfig =
            serde_path_to_error::deserialize(deserializer).map_err(|err| ctx.serde_error(err))?;
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let base_dir = std::path::absolute(parent)
            .map(|p| p.components().collect::<PathBuf>())
            .map_err(|err| ctx.error(None, None, format!("cannot resolve directory: {err}")))?;
        ctx.convert(raw, base_dir)
    }

    /// The server named `name`, if configured (enabled or not).
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The servers with `enabled = true` (the default), in file order.
    pub fn enabled_servers(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.iter().filter(|s| s.enabled)
    }

    /// Settings for downstream tool `tool` of server `server`, each resolved tool table →
    /// server table → `[defaults]` → built-in. An unknown server or tool skips those levels.
    pub fn tool_settings(&self, server: &str, tool: &str) -> ToolSettings {
        let srv = self.server(server);
        let over = srv.and_then(|s| s.tools.get(tool));
        ToolSettings {
            char_budget: resolve(
                over.and_then(|t| t.char_budget),
                srv.and_then(|s| s.char_budget),
                self.defaults.char_budget,
                DEFAULT_CHAR_BUDGET,
            ),
            tool_timeout: resolve(
                over.and_then(|t| t.tool_timeout),
                srv.and_then(|s| s.tool_timeout),
                self.defaults.tool_timeout,
                DEFAULT_TOOL_TIMEOUT,
            ),
            media: resolve(
                over.and_then(|t| t.media),
                srv.and_then(|s| s.media),
                self.defaults.media,
                MediaMode::Passthrough,
            ),
            budget_rules: BudgetRules::resolve(
                over.map(|t| &t.budget_keys),
                srv.map(|s| &s.budget_keys),
                &self.defaults.budget_keys,
            ),
        }
    }

    /// Spawn + initialize timeout of `server`: server table → `[defaults]` → built-in.
    pub fn startup_timeout(&self, server: &str) -> Setting<Duration> {
        resolve(
            None,
            self.server(server).and_then(|s| s.startup_timeout),
            self.defaults.startup_timeout,
            DEFAULT_STARTUP_TIMEOUT,
        )
    }

    /// Restarts in a row before `server` is `unavailable`: server table → `[defaults]` →
    /// built-in.
    pub fn max_restarts(&self, server: &str) -> Setting<u32> {
        resolve(
            None,
            self.server(server).and_then(|s| s.max_restarts),
            self.defaults.max_restarts,
            DEFAULT_MAX_RESTARTS,
        )
    }

    /// Longest accepted JSON-RPC line in bytes: `[defaults]` → built-in.
    pub fn max_message_bytes(&self) -> usize {
        self.defaults
            .max_message_bytes
            .unwrap_or(DEFAULT_MAX_MESSAGE_BYTES)
    }
}

/// Whether `name` passes an allowlist (when given) and a denylist.
fn allowed_by(allow: Option<&[String]>, deny: &[String], name: &str) -> bool {
    allow.map_or(true, |list| list.iter().any(|n| n == name)) && !deny.iter().any(|n| n == name)
}

impl ServerConfig {
    /// Whether downstream tool `tool` is exposed to the client: listed in `enabled_tools` (when
    /// that is given) and not listed in `disabled_tools`.
    pub fn exposes(&self, tool: &str) -> bool {
        allowed_by(self.enabled_tools.as_deref(), &self.disabled_tools, tool)
    }

    /// Whether downstream prompt `prompt` is exposed to the client: listed in `enabled_prompts`
    /// (when that is given) and not listed in `disabled_prompts` (the same rule as tools).
    pub fn exposes_prompt(&self, prompt: &str) -> bool {
        allowed_by(
            self.enabled_prompts.as_deref(),
            &self.disabled_prompts,
            prompt,
        )
    }

    /// Tool names that `enabled_tools`, `disabled_tools` or a `[mcp_servers.NAME.tools.TOOL]`
    /// table mention but the server does not offer (`offered`: its own tool names): most likely
    /// typos, and a typo in `disabled_tools` leaves the tool exposed. Returned as
    /// `(key, name)` pairs in that key order, e.g. `("disabled_tools", "git_comit")`.
    pub fn unknown_tool_names<'a>(&'a self, offered: &[&str]) -> Vec<(&'static str, &'a str)> {
        let unknown = |name: &&String| !offered.contains(&name.as_str());
        let lists = [
            (
                "enabled_tools",
                self.enabled_tools.as_deref().unwrap_or_default(),
            ),
            ("disabled_tools", self.disabled_tools.as_slice()),
        ];
        let mut out: Vec<(&'static str, &'a str)> = lists
            .into_iter()
            .flat_map(|(key, names)| names.iter().filter(unknown).map(move |n| (key, n.as_str())))
            .collect();
        out.extend(
            self.tools
                .keys()
                .filter(unknown)
                .map(|n| ("tools", n.as_str())),
        );
        out
    }
}

fn resolve<T>(tool: Option<T>, server: Option<T>, defaults: Option<T>, built_in: T) -> Setting<T> {
    let (value, source) = match (tool, server, defaults) {
        (Some(v), _, _) => (v, Source::Tool),
        (None, Some(v), _) => (v, Source::Server),
        (None, None, Some(v)) => (v, Source::Defaults),
        (None, None, None) => (built_in, Source::BuiltIn),
    };
    Setting { value, source }
}

/// `io::Error` text without the trailing ` (os error N)`.
fn io_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error ") {
        Some(i) if text.ends_with(')') => text[..i].to_string(),
        _ => text,
    }
}

// ---------------------------------------------------------------------------------------------
// Raw (as-written) form.

/// mcp-envelope configuration: the downstream MCP servers to start and how to envelope their
/// tools' results. Settings resolve tool table → server table → `[defaults]` → built-in.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "mcp-envelope configuration")]
struct RawConfig {
    /// Settings for every server and tool unless a server or tool table overrides them.
    #[serde(default)]
    defaults: RawDefaults,
    /// Optional JSONL transcript of every tools/call.
    transcript: Option<RawTranscript>,
    /// The page tool, which answers the rows a truncated result left out.
    paging: Option<RawPaging>,
    /// The downstream MCP servers, keyed by name (non-empty, without `__`). Same keys as
    /// Codex's `[mcp_servers.NAME]`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawServer>")]
    mcp_servers: BTreeMap<String, Spanned<RawServer>>,
}

/// The `[defaults]` table: every key optional.
#[derive(Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Defaults")]
struct RawDefaults {
    /// Envelope content budget per tool result, in characters (Unicode scalar values), at
    /// least 1. Built-in: 2000 (only for tools without a token_budget).
    char_budget: Option<PositiveCount>,
    /// Envelope content budget per tool result, in tokens of `tokenizer` (at least 1). With
    /// char_budget also set, the tighter one wins. Built-in: none.
    token_budget: Option<PositiveCount>,
    /// Whose tokens token_budget counts: "o200k_base" or "cl100k_base". Built-in: "o200k_base".
    tokenizer: Option<Tokenizer>,
    /// Text rows (lines or blocks) longer than the budget: "split" into pieces that fit, or
    /// "keep" them whole (then left out). Built-in: "split".
    long_rows: Option<LongRows>,
    /// Plain text as one row per line ("lines") or per blank-line-separated block ("blocks").
    /// Built-in: "lines".
    text_rows: Option<TextRows>,
    /// Timeout of one tools/call, in seconds (integer or float, > 0). Built-in: 60.
    tool_timeout_sec: Option<Seconds>,
    /// Seconds for spawning one server and completing initialize + tools/list (> 0).
    /// Built-in: 20.
    startup_timeout_sec: Option<Seconds>,
    /// Restarts in a row before a crashed server is reported `unavailable`. Built-in: 5.
    max_restarts: Option<u32>,
    /// Longest JSON-RPC line accepted from the client or a server, in bytes (> 0).
    /// Built-in: 67108864 (64 MiB).
    max_message_bytes: Option<NonZeroUsize>,
    /// What to do with image/audio blocks. Built-in: "passthrough".
    media: Option<MediaMode>,
}

/// The `[transcript]` table.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Transcript")]
struct RawTranscript {
    /// Append one JSON line per tools/call to this file (relative to the config file's
    /// directory). No transcript when absent.
    path: Option<String>,
    /// Argument keys whose values are stored as "[redacted]". Default: password, token,
    /// secret, api_key, authorization.
    redact_keys: Option<Vec<String>>,
}

/// One `[mcp_servers.NAME]` table: a stdio MCP server to start (`command`) or a remote one to
/// connect to (`url`).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Server")]
#[schemars(extend("oneOf" = [{"required": ["command"]}, {"required": ["url"]}]))]
struct RawServer {
    /// Program to run directly (never through a shell); must not be empty; `${VAR}` expands.
    /// A relative path containing `/` is relative to the config file's directory; a bare name
    /// is looked up in PATH. `~` is not expanded (use `${HOME}`).
    #[schemars(with = "Option<String>")]
    command: Option<Spanned<String>>,
    /// A remote server's endpoint (streamable HTTP, or the older HTTP+SSE transport):
    /// an http or https URL; `${VAR}` expands. Instead of `command`.
    #[schemars(with = "Option<String>")]
    url: Option<Spanned<String>>,
    /// Remote servers: the environment variable whose value is sent as
    /// `Authorization: Bearer <value>`.
    #[schemars(with = "Option<String>")]
    bearer_token_env_var: Option<Spanned<String>>,
    /// Remote servers: headers sent with every request, name -> fixed value.
    #[schemars(with = "Option<BTreeMap<String, String>>")]
    http_headers: Option<Spanned<BTreeMap<String, String>>>,
    /// Remote servers: headers sent with every request, name -> the environment variable
    /// holding the value.
    #[schemars(with = "Option<BTreeMap<String, String>>")]
    env_http_headers: Option<Spanned<BTreeMap<String, String>>>,
    /// Its arguments; `${VAR}` expands from the proxy's environment (an unset VAR is an error).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    args: Vec<Spanned<String>>,
    /// Variables added to the child's environment; values may use `${VAR}`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    env: BTreeMap<String, Spanned<String>>,
    /// Working directory of the child, relative to the config file's directory; `${VAR}`
    /// expands. Default: the proxy's own.
    #[schemars(with = "Option<String>")]
    cwd: Option<Spanned<String>>,
    /// `false` keeps the table but starts nothing. Default: true.
    enabled: Option<bool>,
    /// Default envelope budget for this server's tools, in characters (at least 1).
    char_budget: Option<PositiveCount>,
    /// Default token budget for this server's tools (at least 1).
    token_budget: Option<PositiveCount>,
    /// Whose tokens token_budget counts: "o200k_base" or "cl100k_base".
    tokenizer: Option<Tokenizer>,
    /// "split" or "keep" text rows longer than the budget.
    long_rows: Option<LongRows>,
    /// "lines" or "blocks".
    text_rows: Option<TextRows>,
    /// Default tools/call timeout for this server's tools, in seconds (> 0).
    tool_timeout_sec: Option<Seconds>,
    /// Seconds for spawn + initialize + tools/list of this server (> 0).
    startup_timeout_sec: Option<Seconds>,
    /// Restarts in a row before this server is reported `unavailable`.
    max_restarts: Option<u32>,
    /// What to do with image/audio blocks of this server's tools.
    media: Option<MediaMode>,
    /// Allowlist of the server's own tool names; when given, only these are exposed.
    enabled_tools: Option<Vec<String>>,
    /// Denylist of the server's own tool names; these are never exposed.
    disabled_tools: Option<Vec<String>>,
    /// Prepended to the tool names (and prompt names) the client sees. Default: "".
    tool_prefix: Option<String>,
    /// Allowlist of the server's own prompt names; when given, only these are exposed.
    enabled_prompts: Option<Vec<String>>,
    /// Denylist of the server's own prompt names; these are never exposed.
    disabled_prompts: Option<Vec<String>>,
    /// Per-tool overrides, keyed by the server's own tool name (which must be exposed).
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawTool>")]
    tools: BTreeMap<String, Spanned<RawTool>>, // Codex's own keys (config/codex.rs says what each does here).
    /// Codex: variables forwarded from the proxy's environment (servers inherit it whole, so
    /// every one listed is passed). Names, or `{ name, source = "local" }`.
    env_vars: Option<Vec<codex::EnvVar>>,
    /// Codex: startup timeout in milliseconds (> 0), used when `startup_timeout_sec` is absent.
    startup_timeout_ms: Option<u64>,
    /// Codex: accepted, no effect in the proxy.
    #[allow(dead_code)] // read by Codex, not by the proxy
    required: Option<bool>,
    /// Codex: accepted, no effect in the proxy (it serves concurrent calls anyway).
    #[allow(dead_code)] // read by Codex, not by the proxy
    supports_parallel_tool_calls: Option<bool>,
    /// Codex: accepted, no effect in the proxy.
    #[allow(dead_code)] // read by Codex, not by the proxy
    default_tools_approval_mode: Option<codex::ApprovalMode>,
    /// Codex: a legacy display name; accepted, no effect.
    #[allow(dead_code)] // read by Codex, not by the proxy
    name: Option<String>,
    #[schemars(skip)]
    experimental_environment: codex::Refused,
    #[schemars(skip)]
    bearer_token: codex::Refused,
    #[schemars(skip)]
    scopes: codex::Refused,
    #[schemars(skip)]
    oauth: codex::Refused,
    #[schemars(skip)]
    oauth_resource: codex::Refused,
}

/// One `[mcp_servers.NAME.tools.TOOL]` table: overrides for one tool.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Tool")]
struct RawTool {
    /// Envelope budget for this tool, in characters (Unicode scalar values, at least 1).
    char_budget: Option<PositiveCount>,
    /// Envelope budget for this tool, in tokens of `tokenizer` (at least 1).
    token_budget: Option<PositiveCount>,
    /// Whose tokens token_budget counts: "o200k_base" or "cl100k_base".
    tokenizer: Option<Tokenizer>,
    /// "split" or "keep" text rows longer than the budget.
    long_rows: Option<LongRows>,
    /// "lines" or "blocks".
    text_rows: Option<TextRows>,
    /// tools/call timeout for this tool, in seconds (> 0).
    tool_timeout_sec: Option<Seconds>,
    /// What to do with image/audio blocks of this tool.
    media: Option<MediaMode>,
    /// Codex: accepted, no effect in the proxy.
    #[allow(dead_code)] // read by Codex, not by the proxy
    approval_mode: Option<codex::ApprovalMode>,
}

/// The longest timeout accepted, in seconds (about 31.7 years): longer ones would overflow the
/// clock arithmetic of deadlines.
pub const MAX_TIMEOUT_SECS: u64 = 1_000_000_000;

/// A timeout in seconds: a positive integer or float of at most [`MAX_TIMEOUT_SECS`], checked
/// while deserializing so the error carries the key path and position.
struct Seconds(Duration);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        const EXPECTED: &str = "a positive number of seconds, at most 1000000000";
        impl serde::de::Visitor<'_> for V {
            type Value = Seconds;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Seconds, E> {
                if v <= 0 || v as u64 > MAX_TIMEOUT_SECS {
                    return Err(E::invalid_value(
                        serde::de::Unexpected::Signed(v),
                        &EXPECTED,
                    ));
                }
                Ok(Seconds(Duration::from_secs(v as u64)))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Seconds, E> {
                if v == 0 || v > MAX_TIMEOUT_SECS {
                    return Err(E::invalid_value(
                        serde::de::Unexpected::Unsigned(v),
                        &EXPECTED,
                    ));
                }
                Ok(Seconds(Duration::from_secs(v)))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Seconds, E> {
                if !(v.is_finite() && v > 0.0 && v <= MAX_TIMEOUT_SECS as f64) {
                    return Err(E::invalid_value(serde::de::Unexpected::Float(v), &EXPECTED));
                }
                Duration::try_from_secs_f64(v)
                    .map(Seconds)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Float(v), &EXPECTED))
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for Seconds {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Seconds".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A positive number of seconds (integer or float), at most 1000000000.",
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 1_000_000_000u64
        })
    }
}

/// The JSON Schema (draft 7, which Taplo / Even Better TOML and most editors understand) of the
/// config file, generated from the deserialization types so it always matches what
/// [`Config::parse`] accepts structurally: every table rejects unknown keys
/// (`additionalProperties: false`), and doc comments become descriptions. Checks that need the
/// whole file (a tool table for a hidden tool, `${VAR}` expansion, server names) are not in it.
/// Source: issue 7 of the project.
pub fn json_schema() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    let schema = generator.into_root_schema_for::<RawConfig>();
    let mut value = serde_json::to_value(schema).expect("a schema is plain JSON");
    strip_null(&mut value);
    value
}

/// TOML has no null (a key is left out instead), so `Option`'s `null` alternative goes:
/// `"type": [T, "null"]` becomes `"type": T`, and `anyOf: [S, {"type": "null"}]` becomes `S`.
fn strip_null(value: &mut serde_json::Value) {
    use serde_json::Value;
    if let Value::Object(map) = value {
        if let Some(Value::Array(types)) = map.get_mut("type") {
            types.retain(|t| t != "null");
            if types.len() == 1 {
                let only = types.remove(0);
                map.insert("type".into(), only);
            }
        }
        if let Some(Value::Array(any)) = map.get_mut("anyOf") {
            any.retain(|s| s.get("type").and_then(Value::as_str) != Some("null"));
            if any.len() == 1 {
                let Some(Value::Object(only)) = any.pop() else {
                    unreachable!("schemas are objects")
                };
                map.remove("anyOf");
                for (k, v) in only {
                    map.entry(k).or_insert(v);
                }
            }
        }
        map.values_mut().for_each(strip_null);
    } else if let Value::Array(items) = value {
        items.iter_mut().for_each(strip_null);
    }
}

// ---------------------------------------------------------------------------------------------
// Validation and conversion.

/// The [`BudgetKeys`] of a raw table (the same four fields in each).
macro_rules! budget_keys {
    ($raw:expr) => {
        BudgetKeys {
            token_budget: $raw.token_budget.map(|c| c.0),
            tokenizer: $raw.tokenizer,
            long_rows: $raw.long_rows,
            text_rows: $raw.text_rows,
        }
    };
}

struct Ctx<'a> {
    path: &'a Path,
    text: &'a str,
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl Ctx<'_> {
    fn error(
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

    fn serde_error(&self, err: serde_path_to_error::Error<toml::de::Error>) -> ConfigError {
        let key = key_path(err.path());
        let inner = err.inner();
        // toml's syntax messages span several lines; keep the error on one.
        let message = inner
            .message()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        // The key names the problem; a string value in the wrong place may be a secret.
        let message = crate::redact::without_quoted_values(&message);
        self.error(inner.span(), (!key.is_empty()).then_some(key), message)
    }

    fn convert(&self, raw: RawConfig, base_dir: PathBuf) -> Result<Config, ConfigError> {
        let d = raw.defaults;
        let defaults = Defaults {
            char_budget: d.char_budget.map(|c| c.0),
            budget_keys: budget_keys!(d),
            tool_timeout: d.tool_timeout_sec.map(|s| s.0),
            startup_timeout: d.startup_timeout_sec.map(|s| s.0),
            max_restarts: d.max_restarts,
            max_message_bytes: d.max_message_bytes.map(NonZeroUsize::get),
            media: d.media,
        };
        let transcript = match raw.transcript {
            None => TranscriptConfig::default(),
            Some(t) => TranscriptConfig {
                path: t.path.map(|p| resolve_path(&base_dir, &p)),
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
            paging,
        })
    }

    fn server(
        &self,
        name: String,
        raw: Spanned<RawServer>,
        base_dir: &Path,
    ) -> Result<ServerConfig, ConfigError> {
        let key = format!("mcp_servers.{}", key_segment(&name));
        let span = raw.span();
        let raw = raw.into_inner();
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
        let mut raw = raw;
        let remote = remote::check(self, &key, span, &mut raw)?;
        let (command, program) = match raw.command.take() {
            Some(c) => self.program(c, &key, base_dir)?,
            None => (String::new(), PathBuf::new()),
        };
        let cwd = match raw.cwd {
            Some(c) => Some(resolve_path(
                base_dir,
                &self.expand(c, format!("{key}.cwd"))?,
            )),
            None => None,
        };
        let mut args = Vec::with_capacity(raw.args.len());
        for (i, arg) in raw.args.into_iter().enumerate() {
            args.push(self.expand(arg, format!("{key}.args[{i}]"))?);
        }
        let mut env = Vec::with_capacity(raw.env.len());
        for (var, value) in raw.env {
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
        let enabled_tools = raw.enabled_tools;
        let disabled_tools = raw.disabled_tools.unwrap_or_default();
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
            enabled_tools,
            disabled_tools,
            tool_prefix: raw.tool_prefix.unwrap_or_default(),
            enabled_prompts: raw.enabled_prompts,
            disabled_prompts: raw.disabled_prompts.unwrap_or_default(),
            tools: BTreeMap::new(),
            remote,
        };
        for (tool, table) in raw.tools {
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
            server.tools.insert(
                tool,
                ToolOverride {
                    char_budget: t.char_budget.map(|c| c.0),
                    budget_keys: budget_keys!(t),
                    tool_timeout: t.tool_timeout_sec.map(|s| s.0),
                    media: t.media,
                },
            );
        }
        Ok(server)
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

    fn expand(&self, value: Spanned<String>, key: String) -> Result<String, ConfigError> {
        let span = value.span();
        expand_vars(value.get_ref(), self.env).map_err(|msg| self.error(Some(span), Some(key), msg))
    }
}

/// Expands `${NAME}`; see the module doc for the exact rules.
fn expand_vars(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            // `$$` stays as is, and so does a `{...}` right after it.
            out.push_str("$$");
            rest = tail;
            if tail.starts_with('{') {
                let end = tail.find('}').map_or(tail.len(), |j| j + 1);
                out.push_str(&tail[..end]);
                rest = &tail[end..];
            }
        } else if let Some(tail) = after.strip_prefix('{') {
            let Some(end) = tail.find('}') else {
                return Err("unterminated `${` (the value is not shown)".to_owned());
            };
            let name = &tail[..end];
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!("invalid variable name `${{{name}}}`"));
            }
            match env(name) {
                Some(value) => out.push_str(&value),
                None => return Err(format!("environment variable `{name}` is not set")),
            }
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `rel` against `base` (unless absolute), with `.` components removed.
fn resolve_path(base: &Path, rel: &str) -> PathBuf {
    base.join(rel).components().collect()
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
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
fn key_segment(key: &str) -> String {
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
fn key_path(path: &serde_path_to_error::Path) -> String {
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

#[cfg(test)]
mod unknown_tool_name_tests {
    use super::*;

    #[test]
    fn typos_in_lists_and_tool_tables_are_reported() {
        let cfg = Config::parse(
            "[mcp_servers.git]\ncommand = \"x\"\nenabled_tools = [\"git_log\", \"git_lgo\"]\ndisabled_tools = [\"git_comit\"]\n[mcp_servers.git.tools.git_log]\nchar_budget = 5\n",
            Path::new("/c.toml"),
            &|_| None,
        )
        .unwrap();
        let server = cfg.server("git").unwrap();
        assert_eq!(
            server.unknown_tool_names(&["git_log", "git_commit"]),
            vec![
                ("enabled_tools", "git_lgo"),
                ("disabled_tools", "git_comit")
            ]
        );
        assert_eq!(
            server.unknown_tool_names(&["git_status"]),
            vec![
                ("enabled_tools", "git_log"),
                ("enabled_tools", "git_lgo"),
                ("disabled_tools", "git_comit"),
                ("tools", "git_log")
            ]
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"
[defaults]
char_budget = 2000
tool_timeout_sec = 60
startup_timeout_sec = 20
max_restarts = 5
max_message_bytes = 67108864
media = "passthrough"

[transcript]
path = "calls.jsonl"
redact_keys = ["password", "token", "secret", "api_key", "authorization"]

[mcp_servers.git]
command = "uvx"
args = ["mcp-server-git", "--repository", "."]
env = { GIT_PAGER = "cat" }
cwd = "."
enabled = true
char_budget = 1500
tool_timeout_sec = 30
startup_timeout_sec = 20
max_restarts = 5
media = "describe"
enabled_tools = ["git_log", "git_status"]
disabled_tools = ["git_commit"]
tool_prefix = "git_"

[mcp_servers.git.tools.git_log]
char_budget = 800
tool_timeout_sec = 10
media = "passthrough"
"#;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn test_env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "TOKEN" => Some("s3cr3t".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/cfg/x.toml"), &test_env)
    }

    /// Parses `text`, expects an error, and checks its position, key path and message part.
    fn assert_error(text: &str, line: usize, column: usize, key: &str, needle: &str) {
        let err = parse(text).expect_err("expected a config error");
        assert_eq!(
            (err.line, err.column, err.key.as_deref()),
            (Some(line), Some(column), Some(key)),
            "{err}"
        );
        assert!(err.message.contains(needle), "{err}");
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!("/cfg/x.toml:{line}:{column}: {key}: ")),
            "{shown}"
        );
    }

    const GIT: &str = "[mcp_servers.git]\ncommand = \"x\"\n";

    #[test]
    fn full_example_parses() {
        let config = parse(FULL).unwrap();
        assert_eq!(config.path, Path::new("/cfg/x.toml"));
        assert_eq!(config.base_dir, Path::new("/cfg"));
        assert_eq!(
            config.defaults,
            Defaults {
                char_budget: Some(2000),
                tool_timeout: Some(Duration::from_secs(60)),
                startup_timeout: Some(Duration::from_secs(20)),
                max_restarts: Some(5),
                max_message_bytes: Some(64 * 1024 * 1024),
                media: Some(MediaMode::Passthrough),
                budget_keys: BudgetKeys::default(),
            }
        );
        assert_eq!(
            config.transcript,
            TranscriptConfig {
                path: Some(PathBuf::from("/cfg/calls.jsonl")),
                redact_keys: DEFAULT_REDACT_KEYS.iter().map(|k| k.to_string()).collect(),
            }
        );
        let mut tools = BTreeMap::new();
        tools.insert(
            "git_log".to_string(),
            ToolOverride {
                char_budget: Some(800),
                tool_timeout: Some(Duration::from_secs(10)),
                media: Some(MediaMode::Passthrough),
                budget_keys: BudgetKeys::default(),
            },
        );
        assert_eq!(
            config.servers,
            vec![ServerConfig {
                name: "git".into(),
                command: "uvx".into(),
                program: PathBuf::from("uvx"),
                args: vec!["mcp-server-git".into(), "--repository".into(), ".".into()],
                env: vec![("GIT_PAGER".into(), "cat".into())],
                cwd: Some(PathBuf::from("/cfg")),
                enabled: true,
                char_budget: Some(1500),
                tool_timeout: Some(Duration::from_secs(30)),
                startup_timeout: Some(Duration::from_secs(20)),
                max_restarts: Some(5),
                media: Some(MediaMode::Describe),
                budget_keys: BudgetKeys::default(),
                enabled_tools: Some(vec!["git_log".into(), "git_status".into()]),
                disabled_tools: vec!["git_commit".into()],
                tool_prefix: "git_".into(),
                enabled_prompts: None,
                disabled_prompts: vec![],
                tools,
                remote: None,
            }]
        );
        let git = config.server("git").unwrap();
        assert!(git.exposes("git_log"));
        assert!(!git.exposes("git_commit"));
        assert!(!git.exposes("git_diff"));
        assert!(config.server("nope").is_none());
        assert_eq!(config.enabled_servers().count(), 1);
    }

    #[test]
    fn minimal_and_empty_configs() {
        let config = parse("").unwrap();
        assert!(config.servers.is_empty());
        assert_eq!(config.defaults, Defaults::default());
        assert_eq!(config.transcript, TranscriptConfig::default());
        assert_eq!(config.max_message_bytes(), DEFAULT_MAX_MESSAGE_BYTES);
        assert!(parse("[mcp_servers]\n").unwrap().servers.is_empty());

        let config = parse(GIT).unwrap();
        let git = config.server("git").unwrap();
        assert!(git.enabled && git.args.is_empty() && git.env.is_empty() && git.cwd.is_none());
        assert!(git.exposes("anything"));
        assert_eq!(git.tool_prefix, "");
    }

    #[test]
    fn servers_in_file_order_and_enabled_filter() {
        let text = "[mcp_servers.b]\ncommand = \"b\"\n[mcp_servers.a]\ncommand = \"a\"\nenabled = false\n[mcp_servers.c]\ncommand = \"c\"\n";
        let config = parse(text).unwrap();
        let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["b", "a", "c"]);
        let enabled: Vec<_> = config.enabled_servers().map(|s| s.name.as_str()).collect();
        assert_eq!(enabled, ["b", "c"]);
        assert_eq!(config.server("a").unwrap().command, "a");
    }

    #[test]
    fn resolution_from_each_source() {
        let text = r#"
[defaults]
char_budget = 1000
startup_timeout_sec = 7
media = "describe"

[mcp_servers.s]
command = "x"
char_budget = 500
tool_timeout_sec = 2.5
max_restarts = 9

[mcp_servers.s.tools.t]
char_budget = 100

[mcp_servers.bare]
command = "y"
"#;
        let config = parse(text).unwrap();
        let t = config.tool_settings("s", "t");
        assert_eq!(
            t.char_budget,
            Setting {
                value: 100,
                source: Source::Tool
            }
        );
        assert_eq!(
            t.tool_timeout,
            Setting {
                value: Duration::from_millis(2500),
                source: Source::Server
            }
        );
        assert_eq!(
            t.media,
            Setting {
                value: MediaMode::Describe,
                source: Source::Defaults
            }
        );

        let u = config.tool_settings("s", "u");
        assert_eq!(
            u.char_budget,
            Setting {
                value: 500,
                source: Source::Server
            }
        );

        let bare = config.tool_settings("bare", "t");
        assert_eq!(
            bare.char_budget,
            Setting {
                value: 1000,
                source: Source::Defaults
            }
        );
        assert_eq!(
            bare.tool_timeout,
            Setting {
                value: DEFAULT_TOOL_TIMEOUT,
                source: Source::BuiltIn
            }
        );

        assert_eq!(
            config.startup_timeout("s"),
            Setting {
                value: Duration::from_secs(7),
                source: Source::Defaults
            }
        );
        assert_eq!(
            config.max_restarts("s"),
            Setting {
                value: 9,
                source: Source::Server
            }
        );
        assert_eq!(
            config.max_restarts("bare"),
            Setting {
                value: DEFAULT_MAX_RESTARTS,
                source: Source::BuiltIn
            }
        );

        let empty = parse("").unwrap();
        let none = empty.tool_settings("missing", "t");
        assert_eq!(
            none,
            ToolSettings {
                char_budget: Setting {
                    value: DEFAULT_CHAR_BUDGET,
                    source: Source::BuiltIn
                },
                tool_timeout: Setting {
                    value: DEFAULT_TOOL_TIMEOUT,
                    source: Source::BuiltIn
                },
                media: Setting {
                    value: MediaMode::Passthrough,
                    source: Source::BuiltIn
                },
                budget_rules: BudgetRules::default(),
            }
        );
        assert_eq!(
            empty.startup_timeout("missing"),
            Setting {
                value: DEFAULT_STARTUP_TIMEOUT,
                source: Source::BuiltIn
            }
        );
        let startup = parse("[mcp_servers.s]\ncommand = \"x\"\nstartup_timeout_sec = 3\n")
            .unwrap()
            .startup_timeout("s");
        assert_eq!(
            startup,
            Setting {
                value: Duration::from_secs(3),
                source: Source::Server
            }
        );
        let bytes = parse("[defaults]\nmax_message_bytes = 1024\n").unwrap();
        assert_eq!(bytes.max_message_bytes(), 1024);
    }

    #[test]
    fn source_display_and_serde() {
        let shown: Vec<_> = [
            Source::Tool,
            Source::Server,
            Source::Defaults,
            Source::BuiltIn,
        ]
        .iter()
        .map(|s| (s.to_string(), serde_json::to_string(s).unwrap()))
        .collect();
        assert_eq!(
            shown,
            [
                ("tool".to_string(), "\"tool\"".to_string()),
                ("server".into(), "\"server\"".into()),
                ("defaults".into(), "\"defaults\"".into()),
                ("built-in".into(), "\"built-in\"".into()),
            ]
        );
        assert_eq!(
            serde_json::to_string(&MediaMode::Describe).unwrap(),
            "\"describe\""
        );
    }

    #[test]
    fn negative_integers_are_spanned_errors() {
        assert_error(
            &format!("{GIT}char_budget = -5\n"),
            3,
            15,
            "mcp_servers.git.char_budget",
            "invalid value: integer `-5`, expected a whole number of at least 1",
        );
        assert_error(
            &format!("{GIT}max_restarts = -1\n"),
            3,
            16,
            "mcp_servers.git.max_restarts",
            "integer `-1`, expected u32",
        );
        assert_error(
            "[defaults]\nmax_message_bytes = -3\n",
            2,
            21,
            "defaults.max_message_bytes",
            "integer `-3`",
        );
        assert_error(
            &format!("{GIT}[mcp_servers.git.tools.t]\nchar_budget = -1\n"),
            4,
            15,
            "mcp_servers.git.tools.t.char_budget",
            "expected a whole number of at least 1",
        );
        // The exact example message from the brief.
        let err = parse(&format!("{GIT}char_budget = -5\n")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/cfg/x.toml:3:15: mcp_servers.git.char_budget: invalid value: integer `-5`, expected a whole number of at least 1"
        );
    }

    #[test]
    fn unknown_keys_anywhere() {
        assert_error("bogus = 1\n", 1, 1, "bogus", "unknown field `bogus`");
        assert_error(
            "[defaults]\n  chars = 1\n",
            2,
            3,
            "defaults.chars",
            "unknown field `chars`",
        );
        assert_error(
            "[transcript]\nfile = \"x\"\n",
            2,
            1,
            "transcript.file",
            "unknown field",
        );
        assert_error(
            &format!("{GIT}bogus = 1\n"),
            3,
            1,
            "mcp_servers.git.bogus",
            "unknown field",
        );
        assert_error(
            &format!("{GIT}[mcp_servers.git.tools.t]\nchar_budgt = 1\n"),
            4,
            1,
            "mcp_servers.git.tools.t.char_budgt",
            "unknown field `char_budgt`",
        );
    }

    #[test]
    fn wrong_types() {
        assert_error(
            "[mcp_servers.git]\ncommand = 3\n",
            2,
            11,
            "mcp_servers.git.command",
            "invalid type: integer `3`, expected a string",
        );
        assert_error(
            &format!("{GIT}args = [\"a\", 2]\n"),
            3,
            14,
            "mcp_servers.git.args[1]",
            "invalid type",
        );
        assert_error(
            &format!("{GIT}enabled = \"yes\"\n"),
            3,
            11,
            "mcp_servers.git.enabled",
            "expected a boolean",
        );
        assert_error(
            "[transcript]\nredact_keys = [1]\n",
            2,
            16,
            "transcript.redact_keys[0]",
            "expected a string",
        );
        assert_error(
            "[defaults]\ntool_timeout_sec = \"60\"\n",
            2,
            20,
            "defaults.tool_timeout_sec",
            "expected a positive number of seconds, at most 1000000000",
        );
        assert_error("mcp_servers = 1\n", 1, 15, "mcp_servers", "invalid type");
        assert_error(
            "[mcp_servers.git]\nargs = []\n",
            1,
            1,
            "mcp_servers.git",
            "missing field `command`",
        );
    }

    #[test]
    fn bad_timeouts() {
        for (value, needle) in [
            ("0", "integer `0`"),
            ("-1", "integer `-1`"),
            ("0.0", "floating point `0.0`"),
            ("-0.5", "floating point `-0.5`"),
            ("nan", "NaN"),
            ("inf", "floating point `inf`"),
            ("1e300", "floating point"),
            ("1e19", "floating point"),
            ("1000000001", "integer `1000000001`"),
        ] {
            assert_error(
                &format!("{GIT}tool_timeout_sec = {value}\n"),
                3,
                20,
                "mcp_servers.git.tool_timeout_sec",
                needle,
            );
        }
        assert_error(
            "[defaults]\nstartup_timeout_sec = 0\n",
            2,
            23,
            "defaults.startup_timeout_sec",
            "expected a positive number of seconds, at most 1000000000",
        );
        assert_error(
            &format!("{GIT}[mcp_servers.git.tools.t]\ntool_timeout_sec = -2\n"),
            4,
            20,
            "mcp_servers.git.tools.t.tool_timeout_sec",
            "integer `-2`",
        );
        let ok = parse(&format!("{GIT}tool_timeout_sec = 0.25\n")).unwrap();
        assert_eq!(ok.servers[0].tool_timeout, Some(Duration::from_millis(250)));
    }

    #[test]
    fn zero_max_message_bytes() {
        assert_error(
            "[defaults]\nmax_message_bytes = 0\n",
            2,
            21,
            "defaults.max_message_bytes",
            "integer `0`",
        );
    }

    #[test]
    fn empty_command() {
        assert_error(
            "[mcp_servers.git]\ncommand = \"\"\n",
            2,
            11,
            "mcp_servers.git.command",
            "command is empty",
        );
        assert_error(
            "[mcp_servers.git]\ncommand = \"  \"\n",
            2,
            11,
            "mcp_servers.git.command",
            "empty",
        );
    }

    /// A value in the wrong place (a token pasted under the wrong key) is not echoed: the
    /// error names the key.
    #[test]
    fn errors_name_the_key_not_the_value() {
        for (text, key) in [
            (
                format!("{GIT}char_budget = \"sk-secret-1\"\n"),
                "mcp_servers.git.char_budget",
            ),
            (
                format!("{GIT}media = \"sk-secret-1\"\n"),
                "mcp_servers.git.media",
            ),
            (
                format!("{GIT}env = {{ T = \"sk-secret-1${{X\" }}\n"),
                "mcp_servers.git.env.T",
            ),
            (
                format!("{GIT}args = [\"--token=sk-secret-1${{\"]\n"),
                "mcp_servers.git.args[0]",
            ),
        ] {
            let err = parse(&text).expect_err("a config error");
            let shown = err.to_string();
            assert_eq!(err.key.as_deref(), Some(key), "{shown}");
            assert!(!shown.contains("sk-secret"), "{shown}");
        }
    }

    #[test]
    fn bad_media() {
        assert_error(
            &format!("{GIT}media = \"inline\"\n"),
            3,
            9,
            "mcp_servers.git.media",
            "unknown variant, expected `passthrough` or `describe`",
        );
        assert_error(
            "[defaults]\nmedia = 1\n",
            2,
            9,
            "defaults.media",
            "wanted string",
        );
    }

    #[test]
    fn bad_server_names() {
        assert_error(
            "[mcp_servers.a__b]\ncommand = \"x\"\n",
            1,
            1,
            "mcp_servers.a__b",
            "contains `__`",
        );
        assert_error(
            "[mcp_servers.\"\"]\ncommand = \"x\"\n",
            1,
            1,
            "mcp_servers.\"\"",
            "server name is empty",
        );
        // A name that is not a bare key is quoted in the key path.
        assert_error(
            "[mcp_servers.\"a b\"]\ncommand = \"x\"\nx = 1\n",
            3,
            1,
            "mcp_servers.\"a b\".x",
            "unknown field",
        );
    }

    #[test]
    fn tool_tables_for_hidden_tools() {
        assert_error(
            &format!("{GIT}disabled_tools = [\"t\"]\n[mcp_servers.git.tools.t]\nchar_budget = 1\n"),
            4,
            1,
            "mcp_servers.git.tools.t",
            "is listed in disabled_tools",
        );
        assert_error(
            &format!(
                "{GIT}enabled_tools = [\"a\"]\n\n[mcp_servers.git.tools.t]\nchar_budget = 1\n"
            ),
            5,
            1,
            "mcp_servers.git.tools.t",
            "is not listed in enabled_tools",
        );
        // Inline tool tables are positioned at their value.
        assert_error(
            &format!(
                "{GIT}disabled_tools = [\"t\"]\ntools = {{ t = {{ media = \"describe\" }} }}\n"
            ),
            4,
            15,
            "mcp_servers.git.tools.t",
            "disabled_tools",
        );
        // Listed in both: the deny list wins.
        assert_error(
            &format!("{GIT}enabled_tools = [\"t\"]\ndisabled_tools = [\"t\"]\n[mcp_servers.git.tools.t]\n"),
            5,
            1,
            "mcp_servers.git.tools.t",
            "disabled_tools",
        );
        let ok = parse(&format!(
            "{GIT}enabled_tools = [\"t\"]\n[mcp_servers.git.tools.t]\n"
        ))
        .unwrap();
        assert_eq!(ok.servers[0].tools["t"], ToolOverride::default());
    }

    #[test]
    fn syntax_error_has_position() {
        let err = parse("[defaults]\nchar_budget = = 3\n").unwrap_err();
        assert_eq!((err.line, err.column), (Some(2), Some(15)), "{err}");
        assert!(!err.message.contains('\n'), "{err}");
        let err = parse("[mcp_servers.git]\ncommand = \"x\"\n[mcp_servers.git]\ncommand = \"y\"\n")
            .unwrap_err();
        assert_eq!(err.line, Some(3), "{err}");
    }

    #[test]
    fn column_counts_characters() {
        // "é" is two bytes but one column.
        assert_error(
            "[mcp_servers.\"é\"]\ncommand = \"x\"\nargs = [\"é\", \"${NOPE}\"]\n",
            3,
            14,
            "mcp_servers.\"é\".args[1]",
            "`NOPE` is not set",
        );
        assert_eq!(line_column("ab\ncdé€f", 9), (2, 4));
        assert_eq!(line_column("ab\ncdé€f", 100), (2, 6));
    }

    #[test]
    fn var_expansion() {
        let env = &test_env;
        assert_eq!(expand_vars("${HOME}/x", env).unwrap(), "/home/u/x");
        assert_eq!(
            expand_vars("a${TOKEN}b${HOME}", env).unwrap(),
            "as3cr3tb/home/u"
        );
        assert_eq!(expand_vars("${EMPTY}", env).unwrap(), "");
        assert_eq!(expand_vars("$HOME", env).unwrap(), "$HOME");
        assert_eq!(expand_vars("cost: 5$", env).unwrap(), "cost: 5$");
        assert_eq!(expand_vars("$$", env).unwrap(), "$$");
        assert_eq!(expand_vars("a$$b", env).unwrap(), "a$$b");
        assert_eq!(expand_vars("$${HOME}", env).unwrap(), "$${HOME}");
        assert_eq!(expand_vars("$${NOPE}", env).unwrap(), "$${NOPE}");
        assert_eq!(expand_vars("$$$", env).unwrap(), "$$$");
        assert_eq!(expand_vars("{HOME}", env).unwrap(), "{HOME}");
        assert!(expand_vars("${NOPE}", env)
            .unwrap_err()
            .contains("`NOPE` is not set"));
        assert!(expand_vars("${HOME", env)
            .unwrap_err()
            .contains("unterminated"));
        assert!(expand_vars("${}", env)
            .unwrap_err()
            .contains("invalid variable name"));
        assert!(expand_vars("${1A}", env)
            .unwrap_err()
            .contains("invalid variable name"));

        let text = format!(
            "{GIT}args = [\"--home=${{HOME}}\", \"$HOME\"]\nenv = {{ Z = \"${{TOKEN}}\", A = \"$$\" }}\n"
        );
        let git = parse(&text).unwrap().servers.remove(0);
        assert_eq!(git.args, ["--home=/home/u", "$HOME"]);
        assert_eq!(
            git.env,
            [
                ("A".to_string(), "$$".to_string()),
                ("Z".into(), "s3cr3t".into())
            ]
        );
        // Command and cwd expand too (`command` keeps the text as written); the transcript
        // path does not.
        let text = "[mcp_servers.s]\ncommand = \"${HOME}/bin/srv\"\ncwd = \"${HOME}/w\"\n";
        let s = parse(text).unwrap().servers.remove(0);
        assert_eq!(s.command, "${HOME}/bin/srv");
        assert_eq!(s.program, PathBuf::from("/home/u/bin/srv"));
        assert_eq!(s.cwd, Some(PathBuf::from("/home/u/w")));
        assert_error(
            "[mcp_servers.s]\ncommand = \"${NOPE}/srv\"\n",
            2,
            11,
            "mcp_servers.s.command",
            "environment variable `NOPE` is not set",
        );
    }

    #[test]
    fn missing_env_var_is_an_error() {
        assert_error(
            &format!("{GIT}args = [\"a\", \"${{NOPE}}\"]\n"),
            3,
            14,
            "mcp_servers.git.args[1]",
            "environment variable `NOPE` is not set",
        );
        assert_error(
            &format!("{GIT}env = {{ A = \"x${{NOPE}}\" }}\n"),
            3,
            13,
            "mcp_servers.git.env.A",
            "`NOPE` is not set",
        );
        assert_error(
            &format!("{GIT}[mcp_servers.git.env]\nA = \"${{HOME\"\n"),
            4,
            5,
            "mcp_servers.git.env.A",
            "unterminated",
        );
        assert_error(
            &format!("{GIT}env = {{ \"A=B\" = \"x\" }}\n"),
            3,
            17,
            "mcp_servers.git.env.\"A=B\"",
            "invalid environment variable name",
        );
    }

    #[test]
    fn relative_paths_resolve_against_config_dir() {
        let text = r#"
[transcript]
path = "logs/calls.jsonl"
[mcp_servers.a]
command = "./bin/server"
cwd = "work"
[mcp_servers.b]
command = "../tools/server"
cwd = "."
[mcp_servers.c]
command = "/usr/bin/server"
cwd = "/tmp"
[mcp_servers.d]
command = "server"
"#;
        let config = Config::parse(text, Path::new("/etc/app/conf.toml"), &no_env).unwrap();
        assert_eq!(config.base_dir, Path::new("/etc/app"));
        assert_eq!(
            config.transcript.path,
            Some(PathBuf::from("/etc/app/logs/calls.jsonl"))
        );
        let a = config.server("a").unwrap();
        assert_eq!(a.command, "./bin/server");
        assert_eq!(a.program, Path::new("/etc/app/bin/server"));
        assert_eq!(a.cwd.as_deref(), Some(Path::new("/etc/app/work")));
        let b = config.server("b").unwrap();
        assert_eq!(b.program, Path::new("/etc/app/../tools/server"));
        assert_eq!(b.cwd.as_deref(), Some(Path::new("/etc/app")));
        let c = config.server("c").unwrap();
        assert_eq!(c.program, Path::new("/usr/bin/server"));
        assert_eq!(c.cwd.as_deref(), Some(Path::new("/tmp")));
        let d = config.server("d").unwrap();
        assert_eq!(d.program, Path::new("server"));

        // A relative config path: base_dir is absolute, from the current directory.
        let cwd = std::env::current_dir().unwrap();
        let rel = Config::parse("", Path::new("sub/x.toml"), &no_env).unwrap();
        assert_eq!(rel.path, Path::new("sub/x.toml"));
        assert_eq!(rel.base_dir, cwd.join("sub"));
        let bare = Config::parse("", Path::new("x.toml"), &no_env).unwrap();
        assert_eq!(bare.base_dir, cwd);
    }

    #[test]
    fn transcript_defaults() {
        let config = parse("[transcript]\n").unwrap();
        assert_eq!(config.transcript, TranscriptConfig::default());
        assert_eq!(config.transcript.redact_keys, DEFAULT_REDACT_KEYS);
        let config = parse("[transcript]\nredact_keys = []\n").unwrap();
        assert!(config.transcript.redact_keys.is_empty());
        assert_eq!(config.transcript.path, None);
    }

    #[test]
    fn load_reads_files_and_reports_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, GIT).unwrap();
        let config = Config::load(&path).unwrap();
        assert_eq!(config.servers[0].name, "git");
        assert_eq!(config.base_dir, dir.path());

        let missing = dir.path().join("missing.toml");
        let err = Config::load(&missing).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: cannot read: No such file or directory",
                missing.display()
            )
        );
        assert_eq!((err.line, err.column, err.key), (None, None, None));
    }

    #[test]
    fn error_render_omits_unknown_parts() {
        let mut err = ConfigError {
            path: "a.toml".into(),
            line: Some(2),
            column: Some(3),
            key: Some("k".into()),
            message: "m".into(),
        };
        assert_eq!(err.to_string(), "a.toml:2:3: k: m");
        err.key = None;
        assert_eq!(err.to_string(), "a.toml:2:3: m");
        err.line = None;
        err.column = None;
        assert_eq!(err.to_string(), "a.toml: m");
    }

    #[test]
    fn discovery_order() {
        let cwd = Path::new("/work/dir");
        let env_all = |name: &str| match name {
            "MCP_ENVELOPE_CONFIG" => Some("/env/c.toml".to_string()),
            "XDG_CONFIG_HOME" => Some("/xdg".to_string()),
            "HOME" => Some("/home/u".to_string()),
            _ => None,
        };
        let all = |_: &Path| true;
        // 1. --config wins, even over existing files, and is not checked.
        let found = discover(Some(Path::new("given.toml")), &env_all, cwd, &|_| false);
        assert_eq!(found.unwrap(), Path::new("given.toml"));
        // 2. MCP_ENVELOPE_CONFIG.
        assert_eq!(
            discover(None, &env_all, cwd, &all).unwrap(),
            Path::new("/env/c.toml")
        );
        // 3. ./mcp-envelope.toml.
        let env_no_var = |name: &str| match name {
            "MCP_ENVELOPE_CONFIG" => Some(String::new()),
            other => env_all(other),
        };
        assert_eq!(
            discover(None, &env_no_var, cwd, &all).unwrap(),
            Path::new("/work/dir/mcp-envelope.toml")
        );
        // 4. $XDG_CONFIG_HOME/mcp-envelope/config.toml.
        let user_only = |p: &Path| p == Path::new("/xdg/mcp-envelope/config.toml");
        assert_eq!(
            discover(None, &env_no_var, cwd, &user_only).unwrap(),
            Path::new("/xdg/mcp-envelope/config.toml")
        );
        // XDG_CONFIG_HOME unset (or relative): $HOME/.config.
        let env_home = |name: &str| match name {
            "HOME" => Some("/home/u".to_string()),
            "XDG_CONFIG_HOME" => Some("relative".to_string()),
            _ => None,
        };
        let home_only = |p: &Path| p == Path::new("/home/u/.config/mcp-envelope/config.toml");
        assert_eq!(
            discover(None, &env_home, cwd, &home_only).unwrap(),
            Path::new("/home/u/.config/mcp-envelope/config.toml")
        );
    }

    #[test]
    fn discovery_error_lists_every_place() {
        let cwd = Path::new("/work/dir");
        let env_home = |name: &str| (name == "HOME").then(|| "/home/u".to_string());
        let err = discover(None, &env_home, cwd, &|_| false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no config file found; looked at: --config (not given), MCP_ENVELOPE_CONFIG (not set), \
             /work/dir/mcp-envelope.toml (not found), \
             /home/u/.config/mcp-envelope/config.toml (not found)"
        );
        let err = discover(None, &no_env, cwd, &|_| false).unwrap_err();
        assert_eq!(err.looked.len(), 4);
        assert!(
            err.looked[3].contains("neither XDG_CONFIG_HOME nor HOME is set"),
            "{err}"
        );
    }

    #[test]
    fn example_config_parses() {
        let text = include_str!("../config/example.toml");
        let config = Config::parse(text, Path::new("/repo/config/example.toml"), &no_env).unwrap();
        let names: Vec<_> = config.enabled_servers().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["everything", "time", "git"]);
        assert_eq!(config.transcript, TranscriptConfig::default());

        let everything = config.server("everything").unwrap();
        assert_eq!(
            everything.program,
            Path::new("/repo/config/../.tools/npm/node_modules/.bin/mcp-server-everything")
        );
        assert_eq!(everything.args, ["stdio"]);
        assert_eq!(
            config
                .tool_settings("everything", "get-tiny-image")
                .media
                .value,
            MediaMode::Describe
        );
        assert_eq!(
            config.tool_settings("everything", "echo").char_budget.value,
            500
        );

        let time = config.server("time").unwrap();
        assert_eq!(
            time.program,
            Path::new("/repo/config/../.tools/venv/bin/mcp-server-time")
        );
        assert!(time.exposes("get_current_time") && time.exposes("convert_time"));

        let git = config.server("git").unwrap();
        assert_eq!(
            git.program,
            Path::new("/repo/config/../.tools/venv/bin/mcp-server-git")
        );
        assert_eq!(git.args, ["--repository", "."]);
        assert_eq!(git.cwd.as_deref(), Some(Path::new("/repo/config/..")));
        assert_eq!(git.tool_prefix, "");
        for tool in [
            "git_commit",
            "git_add",
            "git_reset",
            "git_create_branch",
            "git_checkout",
        ] {
            assert!(!git.exposes(tool), "{tool}");
        }
        assert!(git.exposes("git_log") && git.exposes("git_status") && git.exposes("git_diff"));
        let log = config.tool_settings("git", "git_log");
        assert_eq!(
            log.char_budget,
            Setting {
                value: 600,
                source: Source::Tool
            }
        );
        assert_eq!(
            config.tool_settings("git", "git_status").char_budget,
            Setting {
                value: 1500,
                source: Source::Server
            }
        );
    }
}
