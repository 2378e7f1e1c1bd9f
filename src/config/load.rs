//! Reading a config: the file ([`Config::load`]), its text ([`Config::parse`]), `${VAR}`
//! expansion, and finding the file ([`discover`]).

use std::path::{Path, PathBuf};

use super::raw::RawConfig;
use super::validate::Ctx;
use super::{Config, ConfigError};

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
        Config::load_with(path, &|name| std::env::var(name).ok())
    }

    /// Reads the file like [`Config::load`], for a command that starts no server and sends
    /// nothing (the offline `replay`, which reads only budgets and mapping settings): a
    /// `${VAR}` whose variable is not set expands to `unset-VAR` instead of failing, so that a
    /// transcript replays where the servers' secrets are not set (a CI job). A config loaded
    /// this way must never start a server.
    ///
    /// Errors: as [`Config::load`], but never an unset variable.
    pub fn load_offline(path: &Path) -> Result<Config, ConfigError> {
        Config::load_with(path, &|name| {
            Some(std::env::var(name).unwrap_or_else(|_| format!("unset-{name}")))
        })
    }

    fn load_with(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|err| ConfigError {
            path: path.to_path_buf(),
            line: None,
            column: None,
            key: None,
            message: format!("cannot read: {}", io_reason(&err)),
        })?;
        Config::parse(&text, path, env)
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
        let ctx = Ctx {
            path,
            text,
            env,
            warnings: Default::default(),
        };
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
}

/// Expands `${NAME}`; see the module doc for the exact rules.
pub(super) fn expand_vars(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
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
            if !is_env_name(name) {
                return Err(format!(
                    "invalid variable name in `${{…}}` ({ENV_NAME_RULE})"
                ));
            }
            if looks_like_a_token(name) {
                return Err(format!(
                    "`${{…}}` holds what looks like a token, not a variable name ({TOKEN_SHAPE}); \
                     the value is not shown"
                ));
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

/// What [`is_env_name`] accepts, in words for error messages.
pub(super) const ENV_NAME_RULE: &str =
    "a variable name has only letters, digits and `_`, and does not start with a digit";

/// Whether `name` is a portable environment variable name (POSIX.1-2017, Base Definitions 8.1:
/// letters, digits and `_`, not starting with a digit). A config key that takes a variable
/// NAME refuses anything else, so that a secret written there by mistake is never looked up,
/// logged or shown.
pub(super) fn is_env_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What [`looks_like_a_token`] refuses, in words for error messages.
pub(super) const TOKEN_SHAPE: &str =
    "a known token prefix such as `ghp_` or `github_pat_`, or 24 or more characters mixing \
     lower-case letters, upper-case letters and digits";

/// Known prefixes of credentials that are also valid variable names: GitHub tokens (`ghp_`,
/// `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), Stripe keys (`sk_live_`, `sk_test_`,
/// `rk_live_`, `rk_test_`), and AWS access key ids (`AKIA`, `ASIA`, followed by 16 upper-case
/// letters and digits).
const TOKEN_PREFIXES: [&str; 10] = [
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "rk_test_",
];

/// Whether `name`, though a valid variable name ([`is_env_name`]), has the shape of a
/// credential rather than of a variable's name ([`TOKEN_SHAPE`]): a key that takes a NAME
/// refuses it, since the messages that name an unset variable (`check`, the log, the
/// `initialize` instructions the model reads) would show it.
pub(super) fn looks_like_a_token(name: &str) -> bool {
    let aws = (name.starts_with("AKIA") || name.starts_with("ASIA"))
        && name.len() == 20
        && name[4..]
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    let mixed = name.len() >= 24
        && name.bytes().any(|b| b.is_ascii_lowercase())
        && name.bytes().any(|b| b.is_ascii_uppercase())
        && name.bytes().any(|b| b.is_ascii_digit());
    aws || mixed || TOKEN_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// `io::Error` text without the trailing ` (os error N)`.
fn io_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error ") {
        Some(i) if text.ends_with(')') => text[..i].to_string(),
        _ => text,
    }
}
