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
//! redact_keys = ["password", "token", "secret", "api_key", …]  # the default: DEFAULT_REDACT_KEYS
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
//! expected usize``. An unknown key is named with the closest known key of its table when one is
//! close (``unknown key `char_budjet`; did you mean `char_budget`?``), else with the table's
//! keys. Config errors are: TOML syntax errors, unknown keys, wrong types, negative
//! numbers, zero/negative/non-finite timeouts, zero `max_message_bytes`, an empty `command`, an
//! unset `${VAR}`, a `media` other than `"passthrough"`/`"describe"`, an empty server name or one
//! containing `__`, an empty env name or one containing `=`, and a `tools.NAME` table for a tool
//! the allow/deny lists hide.

mod call_scope;
mod codex;
mod error;
mod findings;
mod load;
mod model;
mod numbers;
mod raw;
mod remote;
mod suggest;
mod validate;

pub use error::{toml_syntax_error, ConfigError};
pub use load::{discover, DiscoveryError};
pub use model::*;
pub use raw::{json_schema, MAX_TIMEOUT_SECS};
pub use remote::{display_url, RemoteConfig};
pub(crate) use suggest::closest;
// For the sibling modules (codex.rs, remote.rs): the raw server table, the conversion context
// and the key-path helper.
use raw::RawServer;
use validate::{key_segment, Ctx};

#[cfg(test)]
mod tests;
