//! Remote (HTTP) servers in the config: the keys Codex uses for them in `[mcp_servers.NAME]`
//! (`url`, `bearer_token_env_var`, `http_headers`, `env_http_headers`), checked and converted
//! into a [`RemoteConfig`].
//!
//! A server table has either `command` (a stdio server the proxy starts) or `url` (a remote
//! server it connects to over streamable HTTP, or the older HTTP+SSE transport), never both.
//! Every other server key (budgets, timeouts, allow/deny lists, `max_restarts`, per-tool tables)
//! applies to both; `args`, `env` and `cwd` only to stdio servers.
//!
//! Secrets: header values and tokens are never part of an error message or of `Debug` output;
//! errors name the key or the environment variable instead.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use reqwest::header::{HeaderName, HeaderValue};
use toml::Spanned;

use super::{key_segment, ConfigError, Ctx, RawServer};

/// A remote server: where it is and which credentials go with every request.
///
/// Environment variables are named here and read when the server is connected to (so `check`
/// and the config never hold their values).
#[derive(Clone, PartialEq, Eq)]
pub struct RemoteConfig {
    /// `url` with `${VAR}` expanded: an `http` or `https` URL with a host. It may carry a secret
    /// (a query parameter, user info): show it only through [`RemoteConfig::display_url`].
    pub url: String,
    /// `bearer_token_env_var`: the environment variable whose value is sent as
    /// `Authorization: Bearer <value>`.
    pub bearer_token_env_var: Option<String>,
    /// `http_headers`: header name → fixed value, sorted by name.
    pub http_headers: Vec<(String, String)>,
    /// `env_http_headers`: header name → the environment variable holding its value, sorted by
    /// header name.
    pub env_http_headers: Vec<(String, String)>,
}

impl fmt::Debug for RemoteConfig {
    /// Header values are left out (they are secrets); the URL is shown without user info,
    /// query or fragment.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("url", &self.display_url())
            .field("bearer_token_env_var", &self.bearer_token_env_var)
            .field(
                "http_headers",
                &self.http_headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("env_http_headers", &self.env_http_headers)
            .finish()
    }
}

impl RemoteConfig {
    /// The URL without user info, query and fragment (which may carry secrets): scheme, host,
    /// port and path, for messages and logs.
    pub fn display_url(&self) -> String {
        display_url(&self.url)
    }

    /// Which credentials this server is given, in words, naming keys and environment variables
    /// but no values, e.g. "the bearer token from $FIGMA_TOKEN (bearer_token_env_var)" or "the
    /// user name and password in url (HTTP Basic)"; "no credentials (set
    /// bearer_token_env_var)" when none are configured.
    pub fn credentials(&self) -> String {
        let mut parts = Vec::new();
        if has_user_info(&self.url) {
            parts.push("the user name and password in url (HTTP Basic)".to_owned());
        }
        if let Some(var) = &self.bearer_token_env_var {
            parts.push(format!(
                "the bearer token from ${var} (bearer_token_env_var)"
            ));
        }
        for (header, var) in &self.env_http_headers {
            parts.push(format!("header {header} from ${var} (env_http_headers)"));
        }
        for (header, _) in &self.http_headers {
            parts.push(format!("header {header} (http_headers)"));
        }
        if parts.is_empty() {
            "no credentials (set bearer_token_env_var)".into()
        } else {
            parts.join(", ")
        }
    }
}

/// `url` without user info, query and fragment; `"(invalid URL)"` when it does not parse.
pub fn display_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => "(invalid URL)".into(),
    }
}

/// Headers the transport sets itself (MCP specification 2025-11-25, "Transports: Streamable
/// HTTP"): a config may not set them.
const RESERVED_HEADERS: [&str; 2] = ["mcp-session-id", "mcp-protocol-version"];

/// Checks the transport keys of one server table (`key` is its dotted path, e.g.
/// `mcp_servers.figma`): `Ok(Some(..))` for a remote server, `Ok(None)` for a stdio one.
///
/// Errors (each naming the key, never a header value): both `command` and `url`, or neither;
/// `args`, `env` or `cwd` with `url`; a remote key with `command`; a `url` that is not an
/// `http`/`https` URL with a host, or has an unset `${VAR}`; an invalid header name, a header
/// value that is not valid in HTTP, a reserved header (`Mcp-Session-Id`, `MCP-Protocol-Version`);
/// an invalid environment variable name; two sources of the `Authorization` header (user info
/// in `url`, `bearer_token_env_var`, an `Authorization` header entry).
pub(super) fn check(
    ctx: &Ctx<'_>,
    key: &str,
    span: Range<usize>,
    raw: &mut RawServer,
) -> Result<Option<RemoteConfig>, ConfigError> {
    let err = |span, k: &str, msg: String| ctx.error(span, Some(format!("{key}.{k}")), msg);
    let Some(url) = raw.url.take() else {
        let remote_key = first_written([
            (
                "bearer_token_env_var",
                raw.bearer_token_env_var.as_ref().map(Spanned::span),
            ),
            ("http_headers", raw.http_headers.as_ref().map(Spanned::span)),
            (
                "env_http_headers",
                raw.env_http_headers.as_ref().map(Spanned::span),
            ),
        ]);
        if let Some((k, s)) = remote_key {
            return Err(err(
                Some(s),
                k,
                "only for a remote server (one with `url`)".into(),
            ));
        }
        if raw.command.is_none() {
            return Err(ctx.error(
                Some(span),
                Some(key.to_owned()),
                "missing field `command` (or `url` for a remote server)".into(),
            ));
        }
        return Ok(None);
    };
    if let Some(c) = &raw.command {
        return Err(err(
            Some(c.span()),
            "command",
            "a server has either `command` (stdio) or `url` (remote), not both".into(),
        ));
    }
    let stdio_key = first_written([
        ("args", raw.args.first().map(Spanned::span)),
        ("env", raw.env.values().next().map(Spanned::span)),
        ("cwd", raw.cwd.as_ref().map(Spanned::span)),
    ]);
    if let Some((k, s)) = stdio_key {
        let why = "only for a stdio server (one with `command`); this one has `url`";
        return Err(err(Some(s), k, why.into()));
    }
    let url_span = url.span();
    let url = ctx.expand(url, format!("{key}.url"))?;
    check_url(&url).map_err(|m| err(Some(url_span.clone()), "url", m))?;
    one_authorization(&url, url_span, raw).map_err(|(k, s, m)| err(Some(s), &k, m))?;
    let bearer_token_env_var = match raw.bearer_token_env_var.take() {
        Some(v) => {
            let s = v.span();
            let v = v.into_inner();
            check_var(&v).map_err(|m| err(Some(s), "bearer_token_env_var", m))?;
            Some(v)
        }
        None => None,
    };
    let fixed = headers(ctx, key, "http_headers", raw.http_headers.take(), |v| {
        HeaderValue::from_str(v)
            .map(|_| ())
            .map_err(|_| "the value is not a valid HTTP header value".into())
    })?;
    let from_env = headers(
        ctx,
        key,
        "env_http_headers",
        raw.env_http_headers.take(),
        check_var,
    )?;
    Ok(Some(RemoteConfig {
        url,
        bearer_token_env_var,
        http_headers: fixed,
        env_http_headers: from_env,
    }))
}

/// A request carries one `Authorization` header, so at most one of its sources may be written:
/// user info in `url` (`http://user:password@host/...`, sent as HTTP Basic authorization, RFC
/// 7617), `bearer_token_env_var`, an `Authorization` entry in `http_headers` or
/// `env_http_headers`. Two of them are ambiguous (which one wins is not obvious), so the second
/// is an error: `(key relative to the server table, its position, message)`. The message names
/// keys only, never the user name, password or a header value.
fn one_authorization(
    url: &str,
    url_span: Range<usize>,
    raw: &RawServer,
) -> Result<(), (String, Range<usize>, String)> {
    let header = |table: &'static str, raw: &Option<Spanned<BTreeMap<String, String>>>| {
        let raw = raw.as_ref()?;
        let name = raw
            .get_ref()
            .keys()
            .find(|n| n.eq_ignore_ascii_case("authorization"))?;
        Some((
            format!("{table}.{}", key_segment(name)),
            raw.span(),
            format!("`{table}` sets the Authorization header"),
        ))
    };
    let sources = [
        has_user_info(url).then(|| {
            let what = "`url` has a user name and password (sent as HTTP Basic authorization)";
            ("url".to_owned(), url_span, what.to_owned())
        }),
        raw.bearer_token_env_var.as_ref().map(|v| {
            let what = "`bearer_token_env_var` sets a bearer token";
            ("bearer_token_env_var".to_owned(), v.span(), what.to_owned())
        }),
        header("http_headers", &raw.http_headers),
        header("env_http_headers", &raw.env_http_headers),
    ];
    let mut written = sources.into_iter().flatten();
    match (written.next(), written.next()) {
        (Some((_, _, first)), Some((key, span, second))) => Err((
            key,
            span,
            format!(
                "{first} and {second}; a request carries one Authorization header, so which \
                 one is sent would be a guess: keep only one of them"
            ),
        )),
        _ => Ok(()),
    }
}

/// Whether `url` has user info (a user name or a password before `@`).
fn has_user_info(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|u| !u.username().is_empty() || u.password().is_some())
}

/// The first key of `keys` that is written, with its position.
fn first_written<const N: usize>(
    keys: [(&'static str, Option<Range<usize>>); N],
) -> Option<(&'static str, Range<usize>)> {
    keys.into_iter().find_map(|(k, s)| Some((k, s?)))
}

/// Checks one header table: valid, unreserved names; each value through `check_value`.
fn headers(
    ctx: &Ctx<'_>,
    key: &str,
    table: &str,
    raw: Option<Spanned<BTreeMap<String, String>>>,
    check_value: impl Fn(&str) -> Result<(), String>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    let span = raw.span();
    let mut out = Vec::new();
    for (name, value) in raw.into_inner() {
        let name_key = format!("{key}.{table}.{}", key_segment(&name));
        let problem = if HeaderName::from_bytes(name.as_bytes()).is_err() {
            Some(format!("`{name}` is not a valid HTTP header name"))
        } else if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            Some(format!("`{name}` is set by the transport itself"))
        } else {
            check_value(&value).err()
        };
        if let Some(message) = problem {
            return Err(ctx.error(Some(span.clone()), Some(name_key), message));
        }
        out.push((name, value));
    }
    Ok(out)
}

/// An environment variable NAME (see [`super::load::is_env_name`]), not shaped like a token
/// ([`super::load::looks_like_a_token`]). The message never repeats what was written: a value
/// that is not a name is most likely the secret itself.
pub(super) fn check_var(name: &str) -> Result<(), String> {
    const HOW: &str = "the value is not shown, as it may be a secret: put the secret in a \
                       variable and write that variable's NAME here";
    if !super::load::is_env_name(name) {
        Err(format!(
            "invalid environment variable name ({}); {HOW}",
            super::load::ENV_NAME_RULE
        ))
    } else if super::load::looks_like_a_token(name) {
        Err(format!(
            "this looks like a token, not an environment variable name ({}); {HOW}",
            super::load::TOKEN_SHAPE
        ))
    } else {
        Ok(())
    }
}

/// An `http` or `https` URL with a host. The message never repeats the URL (it may hold a
/// secret).
fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a valid URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "the scheme must be http or https, not `{}`",
            parsed.scheme()
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("the URL has no host".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    fn env(name: &str) -> Option<String> {
        (name == "HOST").then(|| "mcp.example.com".into())
    }

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("/c/x.toml"), &env).map_err(|e| e.render())
    }

    #[test]
    fn stdio_servers_do_not_inherit_remote_credential_variables() {
        let config = parse(
            r#"[mcp_servers.figma]
url = "https://${HOST}/mcp"
bearer_token_env_var = "FIGMA_TOKEN"
env_http_headers = { "X-Api-Key" = "FIGMA_KEY", "X-Other" = "FIGMA_TOKEN" }
[mcp_servers.off]
url = "https://${HOST}/off"
enabled = false
bearer_token_env_var = "OFF_TOKEN"
[mcp_servers.local]
command = "srv"
[mcp_servers.needs_it]
command = "srv"
env = { FIGMA_KEY = "its own" }
"#,
        )
        .unwrap();
        let withheld =
            |name| config.credential_variables_withheld_from(config.server(name).unwrap());
        assert_eq!(withheld("local"), ["FIGMA_KEY", "FIGMA_TOKEN", "OFF_TOKEN"]);
        assert_eq!(withheld("needs_it"), ["FIGMA_TOKEN", "OFF_TOKEN"]);
        let no_remote = parse("[mcp_servers.local]\ncommand = \"srv\"\n").unwrap();
        assert!(no_remote
            .credential_variables_withheld_from(no_remote.server("local").unwrap())
            .is_empty());
    }

    #[test]
    fn a_codex_remote_table_is_accepted() {
        let config = parse(
            r#"[mcp_servers.figma]
url = "https://${HOST}/mcp?key=s3cret"
bearer_token_env_var = "FIGMA_TOKEN"
http_headers = { "X-Team" = "t-123" }
env_http_headers = { "X-Api-Key" = "FIGMA_KEY" }
tool_timeout_sec = 30
enabled_tools = ["get_file"]
max_restarts = 2
"#,
        )
        .unwrap();
        let s = config.server("figma").unwrap();
        let r = s.remote.as_ref().unwrap();
        assert_eq!(r.url, "https://mcp.example.com/mcp?key=s3cret");
        assert_eq!(r.display_url(), "https://mcp.example.com/mcp");
        assert_eq!(r.bearer_token_env_var.as_deref(), Some("FIGMA_TOKEN"));
        assert_eq!(r.http_headers, [("X-Team".into(), "t-123".into())]);
        assert_eq!(
            r.env_http_headers,
            [("X-Api-Key".into(), "FIGMA_KEY".into())]
        );
        assert!(s.exposes("get_file") && !s.exposes("other"));
        let debug = format!("{s:?}");
        assert!(
            !debug.contains("t-123") && !debug.contains("s3cret"),
            "{debug}"
        );
        assert_eq!(
            r.credentials(),
            "the bearer token from $FIGMA_TOKEN (bearer_token_env_var), header X-Api-Key from $FIGMA_KEY (env_http_headers), header X-Team (http_headers)"
        );
    }

    #[test]
    fn transport_keys_are_checked_without_echoing_values() {
        let cases = [
            (
                "url = \"ftp://h/x\"",
                "mcp_servers.a.url: the scheme must be http or https, not `ftp`",
            ),
            ("url = \"not a url\"", "mcp_servers.a.url: not a valid URL"),
            (
                "url = \"http://h/\"\ncommand = \"x\"",
                "mcp_servers.a.command: a server has either",
            ),
            (
                "url = \"http://h/\"\nargs = [\"a\"]",
                "mcp_servers.a.args: only for a stdio server",
            ),
            (
                "url = \"http://h/\"\ncwd = \"/\"",
                "mcp_servers.a.cwd: only for a stdio server",
            ),
            (
                "command = \"x\"\nbearer_token_env_var = \"T\"",
                "mcp_servers.a.bearer_token_env_var: only for a remote server",
            ),
            (
                "url = \"http://h/\"\nbearer_token_env_var = \"\"",
                "bearer_token_env_var: invalid environment variable name",
            ),
            (
                "url = \"http://h/\"\nhttp_headers = { \"Bad Name\" = \"v\" }",
                "http_headers.\"Bad Name\": `Bad Name` is not a valid HTTP header name",
            ),
            (
                "url = \"http://h/\"\nhttp_headers = { X = \"s3cret\\n\" }",
                "mcp_servers.a.http_headers.X: the value is not a valid HTTP header value",
            ),
            (
                "url = \"http://h/\"\nenv_http_headers = { Mcp-Session-Id = \"V\" }",
                "is set by the transport itself",
            ),
            ("url = \"http://${NOPE}/\"", "mcp_servers.a.url:"),
            (
                "url = \"http://u:s3cret@h/\"\nbearer_token_env_var = \"T\"",
                "x.toml:3:24: mcp_servers.a.bearer_token_env_var: `url` has a user name and password (sent as HTTP Basic authorization) and `bearer_token_env_var` sets a bearer token; a request carries one Authorization header",
            ),
            (
                "url = \"http://u@h/\"\nhttp_headers = { authorization = \"s3cret\" }",
                "mcp_servers.a.http_headers.authorization: `url` has a user name and password",
            ),
            (
                "url = \"http://h/\"\nbearer_token_env_var = \"T\"\nenv_http_headers = { Authorization = \"V\" }",
                "mcp_servers.a.env_http_headers.Authorization: `bearer_token_env_var` sets a bearer token and `env_http_headers` sets the Authorization header",
            ),
            (
                "args = []",
                "mcp_servers.a: missing field `command` (or `url` for a remote server)",
            ),
        ];
        for (body, want) in cases {
            let err = parse(&format!("[mcp_servers.a]\n{body}\n")).unwrap_err();
            assert!(err.contains(want), "{body}: {err}");
            assert!(!err.contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn user_info_in_the_url_is_named_as_a_credential_without_its_values() {
        let config = parse(
            "[mcp_servers.a]\nurl = \"https://alice:s3cret@h/mcp\"\nhttp_headers = { X-Team = \"t\" }\n",
        )
        .unwrap();
        let r = config.server("a").unwrap().remote.as_ref().unwrap();
        assert_eq!(
            r.credentials(),
            "the user name and password in url (HTTP Basic), header X-Team (http_headers)"
        );
        assert_eq!(r.display_url(), "https://h/mcp");
    }

    #[test]
    fn stdio_servers_have_no_remote() {
        let config = parse("[mcp_servers.a]\ncommand = \"x\"\n").unwrap();
        assert!(config.server("a").unwrap().remote.is_none());
    }
}
