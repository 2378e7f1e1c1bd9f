//! The credentials of a remote server (headers from the config and the environment, a bearer
//! token), kept away from other hosts (same-origin redirects and legacy endpoints only) and out
//! of the text the server sends back, and named (never shown) when the server refuses them.
//!
//! Sources: MCP specification 2025-11-25, "Transports: Streamable HTTP" and "Authorization";
//! RFC 9110 (401, 403, `WWW-Authenticate`).

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use reqwest::Url;

use crate::config::RemoteConfig;

/// Redirects are followed (at most 5) only within the same origin, so the credentials, which
/// are sent with every request, never reach another host.
pub(super) fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if same && attempt.previous().len() <= 5 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// The `detail` of a 401/403: which credentials were refused, by key and variable name.
pub(super) fn auth_detail(status: u16, credentials: &str, oauth: bool) -> String {
    let mut detail = if credentials.starts_with("no credentials") {
        format!("it needs credentials and got {credentials}")
    } else if status == 401 {
        format!("it did not accept {credentials}")
    } else {
        format!("it refused access with {credentials}")
    };
    if oauth {
        detail.push_str("; it asks for OAuth, which mcp-envelope does not do: put a token from the provider in an environment variable named by bearer_token_env_var");
    }
    detail
}

/// `relative` (the legacy transport's `endpoint` event) against `base`, required to be on the
/// same origin (scheme, host, port), so credentials never go to another host.
pub(super) fn same_origin_join(base: &Url, relative: &str) -> Result<Url, String> {
    let url = base
        .join(relative)
        .map_err(|e| format!("the `endpoint` event is not a valid URL: {e}"))?;
    if url.origin() != base.origin() {
        return Err("the `endpoint` event names another origin; refused".into());
    }
    Ok(url)
}

/// A redactor for the values of `headers` (and of a bearer token without its `Bearer `).
pub(super) fn credential_redactor(headers: &HeaderMap) -> crate::redact::Redactor {
    let mut values: Vec<String> = Vec::new();
    for value in headers.values() {
        let Ok(text) = value.to_str() else { continue };
        if let Some(token) = text.strip_prefix("Bearer ") {
            values.push(token.to_owned());
        }
        values.push(text.to_owned());
    }
    crate::redact::Redactor::for_server(values.iter().map(|v| ("", v.as_str())), std::iter::empty())
}

/// The headers every request carries: `http_headers`, `env_http_headers` (read through `env`)
/// and `Authorization: Bearer` from `bearer_token_env_var`, all marked sensitive (kept out of
/// debug output). Errors name the key and the variable, never a value.
pub fn credential_headers(
    remote: &RemoteConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    let mut put = |name: &str, value: String, key: &str| -> Result<(), String> {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{key}: not a valid header name"))?;
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| format!("{key}: the value is not a valid HTTP header value"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
        Ok(())
    };
    let var = |var: &str, key: &str| {
        env(var)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("{key} names ${var}, which is not set"))
    };
    for (name, value) in &remote.http_headers {
        put(name, value.clone(), &format!("http_headers.{name}"))?;
    }
    for (name, v) in &remote.env_http_headers {
        let key = format!("env_http_headers.{name} (${v})");
        put(name, var(v, &format!("env_http_headers.{name}"))?, &key)?;
    }
    if let Some(v) = &remote.bearer_token_env_var {
        let token = var(v, "bearer_token_env_var")?;
        let key = format!("bearer_token_env_var (${v})");
        put(AUTHORIZATION.as_str(), format!("Bearer {token}"), &key)?;
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_values_are_redacted_from_server_text() {
        let mut r = remote();
        r.bearer_token_env_var = Some("TOK".into());
        r.http_headers = vec![("X-Team".into(), "team-secret-42".into())];
        r.env_http_headers = Vec::new();
        let env = |k: &str| (k == "TOK").then(|| "sk-LEAK-123456".to_owned());
        let headers = credential_headers(&r, &env).unwrap();
        let text = "upstream error; request had Authorization=Bearer sk-LEAK-123456 and x-team: team-secret-42, token sk-LEAK-123456";
        let clean = credential_redactor(&headers).redact(text);
        assert!(
            !clean.contains("sk-LEAK") && !clean.contains("team-secret"),
            "{clean}"
        );
        assert!(clean.starts_with("upstream error; request had "), "{clean}");
    }

    fn remote() -> RemoteConfig {
        RemoteConfig {
            url: "https://mcp.example.com/mcp".into(),
            bearer_token_env_var: Some("TOKEN".into()),
            http_headers: vec![("X-Team".into(), "t-1".into())],
            env_http_headers: vec![("X-Api-Key".into(), "KEY".into())],
        }
    }

    #[test]
    fn credential_headers_come_from_the_environment_and_are_sensitive() {
        let env = |name: &str| match name {
            "TOKEN" => Some("s3cret".to_owned()),
            "KEY" => Some("k3y".to_owned()),
            _ => None,
        };
        let headers = credential_headers(&remote(), &env).unwrap();
        assert_eq!(headers["authorization"], "Bearer s3cret");
        assert_eq!(headers["x-api-key"], "k3y");
        assert_eq!(headers["x-team"], "t-1");
        assert!(headers.values().all(HeaderValue::is_sensitive));
        assert!(!format!("{headers:?}").contains("s3cret"));
        let unset = |_: &str| None;
        assert_eq!(
            credential_headers(&remote(), &unset).unwrap_err(),
            "env_http_headers.X-Api-Key names $KEY, which is not set"
        );
        let bad = |name: &str| (name == "KEY").then(|| "a\nb".to_owned());
        let mut r = remote();
        r.bearer_token_env_var = None;
        let err = credential_headers(&r, &bad).unwrap_err();
        assert_eq!(
            err,
            "env_http_headers.X-Api-Key ($KEY): the value is not a valid HTTP header value"
        );
    }

    #[test]
    fn legacy_endpoints_stay_on_the_same_origin() {
        let base = Url::parse("http://127.0.0.1:3001/sse").unwrap();
        assert_eq!(
            same_origin_join(&base, "/message?sessionId=1")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:3001/message?sessionId=1"
        );
        assert!(same_origin_join(&base, "http://evil.example/m").is_err());
        assert!(same_origin_join(&base, "https://127.0.0.1:3001/m").is_err());
    }

    #[test]
    fn auth_details_name_credentials_and_oauth() {
        assert_eq!(
            auth_detail(
                401,
                "the bearer token from $T (bearer_token_env_var)",
                false
            ),
            "it did not accept the bearer token from $T (bearer_token_env_var)"
        );
        assert!(auth_detail(403, "header X (http_headers)", false)
            .starts_with("it refused access with header X"));
        let none = auth_detail(401, "no credentials (set bearer_token_env_var)", true);
        assert!(
            none.starts_with("it needs credentials and got no credentials"),
            "{none}"
        );
        assert!(none.contains("asks for OAuth"), "{none}");
    }
}
