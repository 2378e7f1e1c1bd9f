//! The keys of Codex's `[mcp_servers.NAME]` tables that mcp-envelope's own keys do not cover, so
//! a Codex table pastes as it is (source: Codex's server-config parser, `RawMcpServerConfig` in
//! `codex-rs/config/src/mcp_types.rs`, and its MCP documentation).
//!
//! | Codex key | here |
//! |---|---|
//! | `env_vars` (names, or `{name, source}`) | accepted: the proxy's servers inherit its whole environment, so every listed variable reaches them; `source = "remote"` is an error |
//! | `startup_timeout_ms` | accepted: the startup timeout when `startup_timeout_sec` is absent (Codex's rule), milliseconds > 0 |
//! | `required`, `supports_parallel_tool_calls`, `default_tools_approval_mode`, `name`, `tools.T.approval_mode` | accepted, no effect: they steer Codex itself; set them on the Codex entry that starts mcp-envelope |
//! | `url`, `bearer_token_env_var`, `http_headers`, `env_http_headers` | a remote server (config/remote.rs) |
//! | `bearer_token` | config error, as in Codex: a token is not written in the config; name its environment variable in `bearer_token_env_var` |
//! | `scopes`, `oauth`, `oauth_resource` | config error: OAuth is not supported yet; use a bearer token from the provider |
//! | `experimental_environment` | config error: the proxy starts servers on its own machine only |

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::{Ctx, RawServer, MAX_TIMEOUT_SECS};
use crate::config::ConfigError;

/// One entry of Codex's `env_vars`: a variable name, or `{ name, source }` with `source`
/// `"local"` (the default) or `"remote"`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
pub(super) enum EnvVar {
    /// A variable name.
    Name(String),
    /// A variable name and where its value comes from.
    Config {
        /// The variable name.
        name: String,
        /// `"local"` (this machine; the default) or `"remote"` (not supported).
        source: Option<String>,
    },
}

/// Codex's approval mode for a server's or a tool's calls (`auto`, `prompt`, `approve`);
/// accepted for compatibility, no effect in the proxy.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum ApprovalMode {
    /// Codex decides.
    Auto,
    /// Codex asks before each call.
    Prompt,
    /// Codex approves each call.
    Approve,
}

/// Keys that only make sense for a remote server, in the order they are reported.
const REMOTE_KEYS: [(&str, &str); 4] = [
    ("bearer_token", BEARER_REASON),
    ("scopes", OAUTH_REASON),
    ("oauth", OAUTH_REASON),
    ("oauth_resource", OAUTH_REASON),
];

/// Why `bearer_token` is refused.
const BEARER_REASON: &str = "a token is not written in the config: put it in an environment variable and name that variable in `bearer_token_env_var`";

/// Why the OAuth keys are refused.
const OAUTH_REASON: &str = "OAuth is not supported yet: put a token from the provider in an environment variable and name it in `bearer_token_env_var`, or keep this server in your client's own config";

/// Checks the Codex-only keys of one server table (`key` is its dotted path, e.g.
/// `mcp_servers.git`) and returns the startup timeout `startup_timeout_ms` gives, if any.
///
/// Errors: a remote-only key or `experimental_environment` (the message says why), an
/// `env_vars` entry with an empty name, one containing `=`, or a `source` other than
/// `"local"`, and a `startup_timeout_ms` of 0 or over [`MAX_TIMEOUT_SECS`] seconds.
pub(super) fn check(
    ctx: &Ctx<'_>,
    key: &str,
    raw: &RawServer,
) -> Result<Option<Duration>, ConfigError> {
    let remote = [
        &raw.bearer_token,
        &raw.scopes,
        &raw.oauth,
        &raw.oauth_resource,
    ];
    for ((name, reason), value) in REMOTE_KEYS.iter().zip(remote) {
        if let Some(v) = value {
            return Err(ctx.error(
                Some(v.span()),
                Some(format!("{key}.{name}")),
                (*reason).into(),
            ));
        }
    }
    if let Some(v) = &raw.experimental_environment {
        return Err(ctx.error(
            Some(v.span()),
            Some(format!("{key}.experimental_environment")),
            "not supported: the proxy starts its servers on its own machine".into(),
        ));
    }
    for (i, entry) in raw.env_vars.iter().flatten().enumerate() {
        let (name, source) = match entry.get_ref() {
            EnvVar::Name(name) => (name, None),
            EnvVar::Config { name, source } => (name, source.as_deref()),
        };
        let problem = if let Err(message) = super::remote::check_var(name) {
            Some(message)
        } else {
            match source {
                None | Some("local") => None,
                Some("remote") => Some(format!("`{name}`: source \"remote\" is not supported (the proxy runs its servers locally)")),
                Some(other) => Some(format!("`{name}`: unknown source `{other}` (expected \"local\")")),
            }
        };
        if let Some(message) = problem {
            let span = Some(entry.span());
            return Err(ctx.error(span, Some(format!("{key}.env_vars[{i}]")), message));
        }
    }
    match raw.startup_timeout_ms {
        None => Ok(None),
        Some(ms) if ms == 0 || ms / 1000 >= MAX_TIMEOUT_SECS => Err(ctx.error(
            None,
            Some(format!("{key}.startup_timeout_ms")),
            format!("invalid value {ms}: expected a positive number of milliseconds, at most {MAX_TIMEOUT_SECS}000"),
        )),
        Some(ms) => Ok(Some(Duration::from_millis(ms))),
    }
}

/// A remote-only or unsupported key's raw value, kept only for its position.
pub(super) type Refused = Option<Spanned<toml::Value>>;

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;
    use std::time::Duration;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("/c/x.toml"), &|_| None).map_err(|e| e.render())
    }

    #[test]
    fn a_full_codex_stdio_table_is_accepted() {
        let config = parse(
            r#"[mcp_servers.docs]
command = "docs-server"
args = ["--port", "4000"]
env = { A = "1" }
env_vars = ["LOCAL_TOKEN", { name = "OTHER", source = "local" }]
cwd = "/srv"
startup_timeout_ms = 2500
tool_timeout_sec = 30.5
enabled = true
required = true
supports_parallel_tool_calls = true
default_tools_approval_mode = "prompt"
enabled_tools = ["open", "search"]
disabled_tools = ["search"]
name = "Docs"
[mcp_servers.docs.tools.open]
approval_mode = "approve"
"#,
        )
        .unwrap();
        let s = config.server("docs").unwrap();
        assert_eq!(s.startup_timeout, Some(Duration::from_millis(2500)));
        assert_eq!(s.tool_timeout, Some(Duration::from_secs_f64(30.5)));
        assert!(s.exposes("open") && !s.exposes("search"));
    }

    #[test]
    fn startup_timeout_sec_wins_over_ms_as_in_codex() {
        let config = parse(
            "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = 3\nstartup_timeout_ms = 100\n",
        )
        .unwrap();
        assert_eq!(
            config.server("a").unwrap().startup_timeout,
            Some(Duration::from_secs(3))
        );
    }

    #[test]
    fn token_and_oauth_keys_are_refused_with_the_reason() {
        let err = parse(
            "[mcp_servers.figma]\nurl = \"https://example.invalid/mcp\"\nbearer_token = \"T\"\n",
        )
        .unwrap_err();
        assert_eq!(
            err,
            "/c/x.toml:3:16: mcp_servers.figma.bearer_token: a token is not written in the config: put it in an environment variable and name that variable in `bearer_token_env_var`"
        );
        assert!(!err.contains("\"T\""));
        let err = parse("[mcp_servers.a]\nurl = \"https://h/\"\noauth = { client_id = \"x\" }\n")
            .unwrap_err();
        assert!(
            err.contains("mcp_servers.a.oauth: OAuth is not supported yet"),
            "{err}"
        );
        let err = parse("[mcp_servers.a]\ncommand = \"x\"\nexperimental_environment = \"r\"\n")
            .unwrap_err();
        assert!(
            err.contains("experimental_environment: not supported"),
            "{err}"
        );
    }

    #[test]
    fn bad_env_vars_and_ms_are_errors() {
        let err = parse(
            "[mcp_servers.a]\ncommand = \"x\"\nenv_vars = [\"A\", { name = \"B\", source = \"remote\" }]\n",
        )
        .unwrap_err();
        assert!(
            err.contains("mcp_servers.a.env_vars[1]: `B`: source \"remote\" is not supported"),
            "{err}"
        );
        let err = parse("[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_ms = 0\n").unwrap_err();
        assert!(err.contains("mcp_servers.a.startup_timeout_ms"), "{err}");
        let err = parse("[mcp_servers.a]\ncommand = \"x\"\nenv_vars = [\"A=B\"]\n").unwrap_err();
        assert!(err.contains("env_vars[0]"), "{err}");
    }

    #[test]
    fn a_table_without_command_names_the_missing_key() {
        let err = parse("[mcp_servers.a]\nargs = []\n").unwrap_err();
        assert!(err.contains("mcp_servers.a"), "{err}");
        assert!(err.contains("command"), "{err}");
    }
}
