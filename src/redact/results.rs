//! Taking a server's known secret values out of what it answers ([`SecretValues`]): the
//! results and error objects the proxy passes to the client or records (tool results with
//! their `structuredContent`, `resources/read`, `prompts/get`, JSON-RPC errors) and what it
//! sends on its own (the params of its notifications and of its requests to the client).
//!
//! Unlike the stderr [`super::Redactor`], only the exact values the proxy itself gave the
//! server are replaced (never `KEY=value` patterns): a result is the server's data, and a
//! `password=` in a file a tool reads is no secret of ours. Every string in the JSON (member
//! names too) is searched, so the JSON stays valid; a server with no secrets costs one
//! emptiness check.

use super::spelling::{self, Alphabet};
use super::{key_is_secret, MIN_SECRET_VALUE_CHARS, REDACTED};
use serde_json::Value;

/// The secret values of one server, longest first (a value containing another is replaced
/// whole), with the characters they are made of ([`Alphabet`]: whether an escape in a text
/// could spell one). Values shorter than [`MIN_SECRET_VALUE_CHARS`] are left out.
#[derive(Debug, Clone, Default)]
pub struct SecretValues {
    values: Vec<String>,
    alphabet: Alphabet,
}

impl SecretValues {
    /// The set of `values`.
    pub fn new(values: impl IntoIterator<Item = String>) -> SecretValues {
        let mut values: Vec<String> = values
            .into_iter()
            .filter(|v| v.chars().count() >= MIN_SECRET_VALUE_CHARS)
            .collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        let alphabet = Alphabet::of(values.iter().map(String::as_str));
        SecretValues { values, alphabet }
    }

    /// The secrets of a local server: the values of the `env` the config gives it whose
    /// names look secret ([`key_is_secret`]), and the secrets in its `args`
    /// ([`super::secret_args`]).
    pub fn for_local(env: &[(String, String)], args: &[String]) -> SecretValues {
        let from_env = env
            .iter()
            .filter(|(k, _)| key_is_secret(k))
            .map(|(_, v)| v.clone());
        SecretValues::new(from_env.chain(super::secret_args(args)))
    }

    /// The secrets of a server as its config gives them: [`SecretValues::for_remote`] (the
    /// credential variables read from the proxy's environment) when `remote` is given, else
    /// [`SecretValues::for_local`] of its `env` and `args`.
    pub fn for_server(
        remote: Option<&crate::config::RemoteConfig>,
        env: &[(String, String)],
        args: &[String],
    ) -> SecretValues {
        match remote {
            Some(remote) => SecretValues::for_remote(remote, &|k| std::env::var(k).ok()),
            None => SecretValues::for_local(env, args),
        }
    }

    /// The secrets of a remote server, its credential variables read through `env`: the
    /// bearer token, the values of `env_http_headers`, the `http_headers` values whose names
    /// look secret (`X-Api-Key`, `Authorization`; not `Accept`), and the password of the
    /// URL's user info and the values of its secret-looking query parameters
    /// ([`super::url_secrets`]).
    pub fn for_remote(
        remote: &crate::config::RemoteConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> SecretValues {
        let variables = remote
            .bearer_token_env_var
            .iter()
            .chain(remote.env_http_headers.iter().map(|(_, var)| var));
        let fixed = remote
            .http_headers
            .iter()
            .filter(|(name, _)| key_is_secret(name))
            .map(|(_, v)| v.clone());
        let values = variables
            .filter_map(|var| env(var))
            .chain(fixed)
            .chain(super::url_secrets(&remote.url))
            .chain(query_secrets(&remote.url));
        SecretValues::new(values)
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether `json` (a JSON text) holds one of the values, as written or in any JSON
    /// spelling, at any depth of JSON held in its strings ([`super::spelling`]): a text whose
    /// escapes could spell part of a secret is unescaped and searched again; one whose escapes
    /// cannot (an ordinary `\n` or `\"`) is searched as written only.
    pub fn found_in(&self, json: &str) -> bool {
        self.holds(json)
    }

    /// Replaces every value in the strings and member names of `value` with [`REDACTED`];
    /// returns whether anything was replaced.
    pub fn redact_json(&self, value: &mut Value) -> bool {
        if self.is_empty() {
            return false;
        }
        match value {
            Value::String(s) => self.redact_string(s),
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, item| self.redact_json(item) | changed),
            Value::Object(members) => {
                let renamed = members.keys().any(|k| self.holds(k));
                if renamed {
                    let old = std::mem::take(members);
                    for (k, v) in old {
                        let mut k = k;
                        self.redact_string(&mut k);
                        members.insert(k, v);
                    }
                }
                members
                    .values_mut()
                    .fold(renamed, |changed, v| self.redact_json(v) | changed)
            }
            _ => false,
        }
    }

    /// Whether `text` holds one of the values, as written or in a JSON spelling.
    fn holds(&self, text: &str) -> bool {
        if self.alphabet.suspicious(text) {
            spelling::holds_spelled(text, &self.values)
        } else {
            self.values.iter().any(|v| text.contains(v.as_str()))
        }
    }

    /// Replaces the values in `text`, as written or in a JSON spelling (the spelling goes,
    /// the rest of the text stays as it is); returns whether anything was replaced.
    fn redact_string(&self, text: &mut String) -> bool {
        if !self.holds(text) {
            return false;
        }
        if let Some(clean) = spelling::replace_spelled(text, &self.values, REDACTED) {
            *text = clean;
        }
        true
    }
}

/// The values of a URL's query parameters whose names look secret (`?api_key=…`, or
/// percent-encoded, `?api%5Fkey=…`), as written.
pub(super) fn query_secrets(url: &str) -> Vec<String> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    let query = query.split('#').next().unwrap_or_default();
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(k, v)| key_is_secret(&super::percent_decoded(k)) && !v.is_empty())
        .map(|(_, v)| v.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_go_from_every_string_and_name_and_nothing_else() {
        let s = SecretValues::new([
            "ghp_patSecretBBB222".into(),
            "acme\"Q\\1".into(),
            "ab".into(),
        ]);
        let mut v = json!({
            "content": [{"type": "text", "text": "authorization: Bearer ghp_patSecretBBB222; x: acme\"Q\\1"}],
            "structuredContent": {"ghp_patSecretBBB222": ["acme\"Q\\1", 7, "password=ab"]},
            "isError": true
        });
        let text = v.to_string();
        assert!(s.found_in(&text), "escaped forms are seen in JSON text");
        assert!(s.redact_json(&mut v));
        assert_eq!(
            v,
            json!({
                "content": [{"type": "text", "text": "authorization: Bearer [redacted]; x: [redacted]"}],
                "structuredContent": {"[redacted]": ["[redacted]", 7, "password=ab"]},
                "isError": true
            })
        );
        assert!(!s.found_in(&v.to_string()));
        assert!(!s.redact_json(&mut v), "nothing left to replace");
    }

    /// A server that writes a secret with `\u` escapes (Python's `json.dumps` for non-ASCII)
    /// or escapes its quote, in a tool description or in JSON inside a tool's text, gets
    /// nothing through.
    #[test]
    fn escaped_spellings_of_a_secret_are_found_and_go() {
        let s = SecretValues::new(["Pässword1234".into(), "pa\"ss1234word".into()]);
        for raw in [
            r#"{"name":"env","description":"print env P\u00e4ssword1234"}"#,
            r#"{"content":[{"type":"text","text":"{\"T\": \"P\\u00E4ssword1234\"}"}]}"#,
            r#"{"content":[{"type":"text","text":"{\"T\": \"pa\\\"ss1234word\"}"}]}"#,
            r#"{"content":[{"type":"text","text":"\u0070a\"ss1234word \/"}]}"#,
        ] {
            assert!(s.found_in(raw), "{raw}");
            let mut v: Value = serde_json::from_str(raw).unwrap();
            assert!(s.redact_json(&mut v), "{raw}");
            let shown = v.to_string();
            assert!(shown.contains(REDACTED), "{shown}");
            assert!(!s.found_in(&shown), "{shown}");
        }
        let mut v: Value =
            serde_json::from_str(r#"{"text":"{\"T\": \"P\\u00e4ssword1234\", \"n\": \"a\\nb\"}"}"#)
                .unwrap();
        assert!(s.redact_json(&mut v));
        assert_eq!(v, json!({"text": r#"{"T": "[redacted]", "n": "a\nb"}"#}));
        assert!(!s.found_in(r#"{"text":"line\nline \"q\" \u00e9"}"#));
    }

    #[test]
    fn a_local_servers_secrets_are_its_secret_looking_env_values_and_args() {
        let env = [
            ("API_TOKEN".to_owned(), "sk-live-123456".to_owned()),
            ("PAGER".to_owned(), "less-is-more".to_owned()),
        ];
        let args = ["--password".to_owned(), "hunter22".to_owned()];
        let s = SecretValues::for_local(&env, &args);
        let mut v = json!("sk-live-123456 hunter22 less-is-more");
        assert!(s.redact_json(&mut v));
        assert_eq!(v, json!("[redacted] [redacted] less-is-more"));
        assert!(SecretValues::for_local(&env[1..], &[]).is_empty());
    }

    #[test]
    fn a_remote_servers_secrets_are_its_credentials() {
        let remote = crate::config::RemoteConfig {
            url: "https://bob:pw-1234@mcp.example.com/mcp?api_key=qk-5678&page=2222".into(),
            bearer_token_env_var: Some("GITHUB_PAT".into()),
            http_headers: vec![
                ("Accept".into(), "application/json".into()),
                ("X-Api-Token".into(), "fixed-9999".into()),
            ],
            env_http_headers: vec![("X-Api-Key".into(), "ACME_AUTH".into())],
        };
        let env = |k: &str| match k {
            "GITHUB_PAT" => Some("ghp_patSecretBBB222".to_owned()),
            "ACME_AUTH" => Some("acmeSecretCCC333".to_owned()),
            _ => None,
        };
        let s = SecretValues::for_remote(&remote, &env);
        let mut v = json!(
            "x-api-key: acmeSecretCCC333; authorization: Bearer ghp_patSecretBBB222; \
             fixed-9999 pw-1234 qk-5678 page 2222 application/json"
        );
        assert!(s.redact_json(&mut v));
        assert_eq!(
            v,
            json!(
                "x-api-key: [redacted]; authorization: Bearer [redacted]; \
                 [redacted] [redacted] [redacted] page 2222 application/json"
            )
        );
    }
}
