//! A client's remote server entry → the keys of a remote `[mcp_servers.NAME]` table (Codex's:
//! `url`, `bearer_token_env_var`, `http_headers`, `env_http_headers`). Pure: no I/O.
//!
//! Entry shapes: Claude Desktop, Cursor and Claude Code (`url` + `headers`, `type` `http` /
//! `sse` optional), VS Code (`type` `http` / `sse`, `url`, `headers`), Gemini CLI (`httpUrl` for
//! streamable HTTP or `url` for SSE, `headers`). The proxy tries streamable HTTP and falls back
//! to SSE by itself, so the `type` is not needed.
//!
//! Secrets never reach the output: a header whose value is one variable reference (`${X}`,
//! `${env:X}`, `${input:X}`) names that variable; `Authorization: Bearer …` becomes
//! `bearer_token_env_var`; a literal value of a secret-looking header (`Authorization`,
//! `Cookie`, names like `*-Token`, `*-Key`, `*Secret*`: [`crate::redact::key_is_secret`]) is moved
//! into an environment variable named after the server and the header (`FIGMA_X_API_KEY`), and
//! a comment says to set it, without the value. Other literal values stay in `http_headers`.
//! Secret-looking query parameters of the URL are moved the same way (`?api_key=${NAME_API_KEY}`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::scalars::{string_value, Slot};
use super::{convert_vars, kind, upper_var, ImportError};
use crate::redact::key_is_secret;

/// The converted keys of one remote entry.
#[derive(Debug, Default)]
pub(super) struct Remote {
    /// `key = value` lines of the table, in order.
    pub(super) lines: Vec<String>,
    /// Comments for the user (which variables to set and why).
    pub(super) notes: Vec<String>,
}

/// Converts the transport keys of the remote entry `name` (at key path `path`); `vars`
/// collects the variables its values use.
///
/// Errors: `url` / `httpUrl` or `headers` of the wrong type.
pub(super) fn convert(
    name: &str,
    entry: &Map<String, Value>,
    path: &str,
    vars: &mut BTreeSet<String>,
) -> Result<Remote, ImportError> {
    let mut out = Remote::default();
    let url_key = if entry.contains_key("httpUrl") {
        "httpUrl"
    } else {
        "url"
    };
    let url = match entry.get(url_key) {
        Some(Value::String(u)) => u,
        Some(other) => {
            return Err(ImportError(format!(
                "{path}.{url_key}: expected a string, found {}",
                kind(other)
            )))
        }
        None => unreachable!("a remote entry without a URL is noted by the caller"),
    };
    let url = secret_url(&convert_vars(url, vars), name, &mut out.notes);
    out.lines
        .push(format!("url = {}", toml::Value::String(url)));
    let headers = match entry.get("headers") {
        None => return Ok(out),
        Some(Value::Object(h)) => h,
        Some(other) => {
            return Err(ImportError(format!(
                "{path}.headers: expected an object, found {}",
                kind(other)
            )))
        }
    };
    let (mut fixed, mut from_env) = (toml::Table::new(), toml::Table::new());
    for (header, value) in headers {
        let value = string_value(
            value,
            &format!("{path}.headers.{header}"),
            Slot::Header,
            &mut out.notes,
        )?;
        let value = convert_vars(&value, vars);
        match header_source(name, header, &value) {
            Source::Fixed => {
                fixed.insert(header.clone(), toml::Value::String(value));
            }
            Source::Bearer(var, moved) => {
                out.lines.push(format!(
                    "bearer_token_env_var = {}",
                    toml::Value::String(var.clone())
                ));
                if moved {
                    out.notes.push(format!("set {var} in the proxy's environment to the bearer token that was written in headers.{header} (not copied here)"));
                }
            }
            Source::Env(var, moved) => {
                if moved {
                    out.notes.push(format!("set {var} in the proxy's environment to the value of headers.{header} (not copied here{})", if value.contains("${") { ", with its variables filled in" } else { "" }));
                }
                from_env.insert(header.clone(), toml::Value::String(var));
            }
        }
    }
    for (key, table) in [("http_headers", fixed), ("env_http_headers", from_env)] {
        if !table.is_empty() {
            out.lines
                .push(format!("{key} = {}", toml::Value::Table(table)));
        }
    }
    Ok(out)
}

/// Where a header's value comes from in the converted table.
#[derive(Debug, PartialEq)]
enum Source {
    /// `http_headers`: a literal that is not a secret.
    Fixed,
    /// `bearer_token_env_var = VAR`; `true` when the token was moved out of the file.
    Bearer(String, bool),
    /// `env_http_headers`: the header's value is in VAR; `true` when it was moved there.
    Env(String, bool),
}

/// Decides where header `header` with (variable-converted) `value` of server `name` goes.
fn header_source(name: &str, header: &str, value: &str) -> Source {
    let moved_var = |suffix: &str| moved_var(name, suffix);
    let authorization = header.eq_ignore_ascii_case("authorization");
    let bearer = value
        .get(..7)
        .filter(|p| p.eq_ignore_ascii_case("bearer "))
        .map(|_| value[7..].trim());
    if let (true, Some(token)) = (authorization, bearer) {
        if let Some(var) = single_var(token) {
            return Source::Bearer(var.to_owned(), false);
        }
        if !token.contains("${") {
            return Source::Bearer(moved_var("TOKEN"), true);
        }
    }
    if let Some(var) = single_var(value) {
        return Source::Env(var.to_owned(), false);
    }
    let secret = authorization || header.eq_ignore_ascii_case("cookie") || key_is_secret(header);
    if secret || value.contains("${") {
        return Source::Env(moved_var(header), true);
    }
    Source::Fixed
}

/// The variable a secret of server `server` is moved to: `<SERVER>_<SUFFIX>`, upper case, every
/// character other than a letter or digit made `_` (`my-api`, `X-Api-Key` → `MY_API_X_API_KEY`).
pub(super) fn moved_var(server: &str, suffix: &str) -> String {
    upper_var(&format!("{server}_{suffix}"))
}

/// `VAR` when `text` is exactly one `${VAR}` reference.
pub(super) fn single_var(text: &str) -> Option<&str> {
    let var = text.strip_prefix("${")?.strip_suffix('}')?;
    let valid = !var.is_empty()
        && !var.starts_with(|c: char| c.is_ascii_digit())
        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(var)
}

/// Whether `text` holds nothing written literally but `${VAR}` references, after an HTTP
/// authentication scheme at most (`${A}`, `${A}${B}`, `Bearer ${TOKEN}`): a secret written
/// so is in variables already, and stays. Anything else that holds `${` (`pa${X}ss`, an
/// unterminated `${`) is a literal secret, partly or wholly, and moves whole.
pub(super) fn only_references(text: &str) -> bool {
    let scheme = text
        .split_once(' ')
        .filter(|(word, _)| ["bearer", "basic"].contains(&word.to_ascii_lowercase().as_str()));
    let mut rest = scheme.map_or(text, |(_, after)| after.trim_start());
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let end = rest.find('}').map_or(rest.len(), |i| i + 1);
        if single_var(&rest[..end]).is_none() {
            return false;
        }
        rest = &rest[end..];
    }
    true
}

/// `url` without literal credentials: the user info's password (or a user name alone, the
/// way tokens are often written) and secret-looking query parameters become `${NAME_...}`
/// references, with a note for each saying which variable to set ([`secret_query`]).
pub(super) fn secret_url(url: &str, name: &str, notes: &mut Vec<String>) -> String {
    secret_query(&secret_userinfo(url, name, notes), name, notes)
}

/// `url` with a literal password in its user info (or a user name without one) replaced by a
/// `${NAME_PASSWORD}` / `${NAME_USER}` reference; a note says to set the variable.
fn secret_userinfo(url: &str, name: &str, notes: &mut Vec<String>) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    let (user, password) = match rest[..at].split_once(':') {
        Some((user, password)) => (user, Some(password)),
        None => (&rest[..at], None),
    };
    let (secret, what, suffix) = match password {
        Some(p) => (p, "password", "PASSWORD"),
        None => (user, "user name", "USER"),
    };
    if secret.is_empty() || single_var(secret).is_some() {
        return url.to_owned();
    }
    let var = moved_var(name, suffix);
    notes.push(format!("set {var} in the proxy's environment to the {what} that was written in the url (not copied here)"));
    let userinfo = match password {
        Some(_) => format!("{user}:${{{var}}}"),
        None => format!("${{{var}}}"),
    };
    format!("{}{userinfo}{}", &url[..scheme_end], &rest[at..])
}

/// `url` with the literal values of secret-looking query parameters replaced by
/// `${NAME_PARAM}` references (a note for each says to set the variable).
fn secret_query(url: &str, name: &str, notes: &mut Vec<String>) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, value))
                if key_is_secret(&crate::redact::percent_decoded(key))
                    && single_var(value).is_none() =>
            {
                let var = moved_var(name, &crate::redact::percent_decoded(key));
                notes.push(format!("set {var} in the proxy's environment to the `{key}` parameter that was written in the url (not copied here)"));
                format!("{key}=${{{var}}}")
            }
            _ => pair.to_owned(),
        })
        .collect();
    let mut out = format!("{base}?{}", pairs.join("&"));
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_go_where_their_values_come_from() {
        let env = |var: &str, moved| Source::Env(var.into(), moved);
        let cases = [
            (
                "figma",
                "Authorization",
                "Bearer abc123",
                Source::Bearer("FIGMA_TOKEN".into(), true),
            ),
            (
                "f",
                "authorization",
                "bearer ${TOK}",
                Source::Bearer("TOK".into(), false),
            ),
            (
                "f",
                "Authorization",
                "Basic dXNlcg==",
                env("F_AUTHORIZATION", true),
            ),
            (
                "f",
                "Authorization",
                "Bearer ${A}${B}",
                env("F_AUTHORIZATION", true),
            ),
            ("my-api", "X-Api-Key", "k-1", env("MY_API_X_API_KEY", true)),
            ("f", "X-Api-Key", "${KEY}", env("KEY", false)),
            ("f", "X-Trace", "on-${X}", env("F_X_TRACE", true)),
            ("f", "X-MCP-Readonly", "true", Source::Fixed),
        ];
        for (server, header, value, want) in cases {
            assert_eq!(
                header_source(server, header, value),
                want,
                "{header}: {value}"
            );
        }
    }

    #[test]
    fn credentials_in_the_user_info_move_to_variables() {
        let mut notes = Vec::new();
        let cases = [
            (
                "https://alice:hunter2@h.example/mcp?x=1",
                "https://alice:${S_PASSWORD}@h.example/mcp?x=1",
            ),
            (
                "https://ghp_abc@h.example/mcp",
                "https://${S_USER}@h.example/mcp",
            ),
            (
                "https://alice:${PW}@h.example/mcp",
                "https://alice:${PW}@h.example/mcp",
            ),
            ("https://h.example/a@b?c=d@e", "https://h.example/a@b?c=d@e"),
            ("https://h.example/mcp", "https://h.example/mcp"),
        ];
        for (url, want) in cases {
            assert_eq!(secret_url(url, "s", &mut notes), want, "{url}");
        }
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes
            .iter()
            .all(|n| !n.contains("hunter2") && !n.contains("ghp_abc")));
        assert!(notes[0].contains("S_PASSWORD") && notes[1].contains("S_USER"));
    }

    #[test]
    fn secret_query_parameters_move_to_variables() {
        let mut notes = Vec::new();
        assert_eq!(
            secret_query(
                "https://h/mcp?profile=p&api_key=s3cret#x",
                "smith",
                &mut notes
            ),
            "https://h/mcp?profile=p&api_key=${SMITH_API_KEY}#x"
        );
        assert_eq!(notes.len(), 1);
        assert!(!notes[0].contains("s3cret"));
        assert_eq!(
            secret_query("https://h/mcp", "s", &mut notes),
            "https://h/mcp"
        );
        assert_eq!(
            secret_query("https://h/?token=${T}", "s", &mut notes),
            "https://h/?token=${T}"
        );
    }
}
