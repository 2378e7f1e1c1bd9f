//! The validated configuration: what the rest of the proxy reads ([`Config`], one
//! [`ServerConfig`] per server), the built-in values, and setting resolution tool table →
//! server table → `[defaults]` → built-in.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::{ConfigError, RemoteConfig};
use crate::page_tool::PagingConfig;
use crate::settings::{BudgetKeys, BudgetRules};

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
/// Built-in list of argument keys whose values the transcript redacts: every pattern `import`
/// takes for a secret ([`crate::redact::SECRET_KEY_PATTERNS`]), and `passphrase` and `jwt`.
/// The five of earlier versions let `passwd`, `private_key`, `credentials` and cookies into
/// transcripts in clear text (found by a fresh-user tester).
pub const DEFAULT_REDACT_KEYS: [&str; 12] = [
    "password",
    "passwd",
    "passphrase",
    "token",
    "secret",
    "api_key",
    "access_key",
    "private_key",
    "authorization",
    "credential",
    "cookie",
    "jwt",
];

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
    /// Where `[transcript] path` is written: its 1-based line and column (in characters),
    /// for findings about it (`check`: its directory does not exist); `None` when not written.
    pub transcript_path_at: Option<(usize, usize)>,
    /// Whether `[transcript] path` is written as `""`, which [`TranscriptConfig::path`]
    /// resolves to the config's own directory, where no file can be recorded (`check` says
    /// so).
    pub transcript_path_empty: bool,
    /// The `[paging]` table (defaults when absent).
    pub paging: PagingConfig,
    /// What is questionable but does not stop the proxy, located as errors are (a tool name
    /// in both `enabled_tools` and `disabled_tools`, a `token_budget` too small to show a
    /// character); see [`Config::warning_lines`].
    pub warnings: Vec<ConfigError>,
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

impl Config {
    /// The server named `name`, if configured (enabled or not).
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The environment variables that a stdio server started for `server` does not inherit:
    /// every remote server's credential variables (`bearer_token_env_var` and the variables of
    /// `env_http_headers`, enabled servers or not), except those `server`'s own `env` sets.
    /// A tool that prints its environment would otherwise hand them to the model. Sorted,
    /// without repeats.
    pub fn credential_variables_withheld_from(&self, server: &ServerConfig) -> Vec<String> {
        let mut names: Vec<String> = self
            .servers
            .iter()
            .filter_map(|s| s.remote.as_ref())
            .flat_map(|r| {
                let headers = r.env_http_headers.iter().map(|(_, var)| var);
                r.bearer_token_env_var.iter().chain(headers)
            })
            .filter(|var| !server.env.iter().any(|(name, _)| name == *var))
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        names
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
    allow.is_none_or(|list| list.iter().any(|n| n == name)) && !deny.iter().any(|n| n == name)
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

    /// [`Self::unknown_tool_names`] as messages naming the server, the config entry and the
    /// offered tool meant when one is close ([`super::closest`]), e.g.
    /// `mcp_servers.git.disabled_tools names "git_comit", which server 'git' does not offer;
    /// did you mean "git_commit"?` or `[mcp_servers.git.tools.git_lgo] is for "git_lgo", …`.
    /// A name written with the server's `tool_prefix` gets the name without it.
    pub fn unknown_tool_messages(&self, offered: &[&str]) -> Vec<String> {
        let server = super::key_segment(&self.name);
        self.unknown_tool_names(offered)
            .into_iter()
            .map(|(key, tool)| {
                let entry = match key {
                    "tools" => format!(
                        "[mcp_servers.{server}.tools.{}] is for",
                        super::key_segment(tool)
                    ),
                    list => format!("mcp_servers.{server}.{list} names"),
                };
                let unprefixed = tool
                    .strip_prefix(self.tool_prefix.as_str())
                    .filter(|t| !self.tool_prefix.is_empty() && offered.contains(t));
                let hint = match unprefixed {
                    Some(t) => format!(
                        "; did you mean \"{t}\"? (tool names here are the server's own, without tool_prefix \"{}\")",
                        self.tool_prefix
                    ),
                    None => super::closest(tool, offered.iter().copied())
                        .map(|t| format!("; did you mean \"{t}\"?"))
                        .unwrap_or_default(),
                };
                format!(
                    "{entry} \"{tool}\", which server '{}' does not offer{hint}",
                    self.name
                )
            })
            .collect()
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
