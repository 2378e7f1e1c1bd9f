//! The secrets written in a config document (a client's JSON or JSONC file, Codex's or
//! mcp-envelope's TOML), so that a text showing the document, such as `install --dry-run`'s
//! diff, can hide them. Pure: no I/O.
//!
//! A secret is what the rest of [`crate::redact`] treats as one: the string value of a member
//! whose name looks secret ([`key_is_secret`]: `env.API_TOKEN`, `headers.Authorization`,
//! `bearer_token`), at any depth; what [`secret_args`] finds in an `args` list; and the
//! credentials of a URL (its user info's password, [`url_secrets`], and the values of
//! secret-looking query parameters such as `?api_key=…`, [`query_secrets`]).

use serde_json::Value;

use super::results::query_secrets;
use super::{key_is_secret, secret_args, url_secrets};

/// Every secret written in `doc` (see the module documentation), in document order, possibly
/// repeated. Values that are `${VAR}` references are left out: they name a variable, not its
/// value.
pub fn secrets_in_document(doc: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect(doc, &mut found);
    found.retain(|v| !is_reference(v));
    found
}

/// The document `text` (JSON, JSON with comments or trailing commas, or TOML) as a JSON value;
/// `None` when it is none of them. Only for finding secrets: a file that does not parse shows
/// no member names to go by.
pub fn parse_document(text: &str) -> Option<Value> {
    if let Ok(doc) = serde_json::from_str::<Value>(&crate::import::strip_jsonc(text)) {
        return Some(doc);
    }
    let table = toml::from_str::<toml::Table>(text).ok()?;
    serde_json::to_value(table).ok()
}

fn collect(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                match member {
                    Value::String(text) if key_is_secret(key) => found.push(text.clone()),
                    Value::String(text) if text.contains("://") => {
                        found.extend(url_secrets(text));
                        found.extend(query_secrets(text));
                    }
                    Value::Array(items) if key == "args" => {
                        let args: Vec<String> = items
                            .iter()
                            .filter_map(|a| a.as_str().map(str::to_owned))
                            .collect();
                        found.extend(secret_args(&args));
                        items.iter().for_each(|item| collect(item, found));
                    }
                    _ => collect(member, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect(item, found)),
        _ => {}
    }
}

/// Whether `text` is one `${NAME}` reference to an environment variable.
fn is_reference(text: &str) -> bool {
    text.strip_prefix("${")
        .and_then(|t| t.strip_suffix('}'))
        .is_some_and(|name| !name.is_empty() && !name.contains(['{', '}']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_found_by_member_name_in_args_and_in_urls() {
        let doc = json!({"mcpServers": {
            "time": {"command": "x", "env": {"API_TOKEN": "tok-claude-123456", "PAGER": "less"}},
            "remote": {
                "url": "https://u:pw-in-url@api.example.com/mcp?api_key=supersecretkey1&page=2",
                "headers": {"Authorization": "Bearer abcdefSECRET123", "Accept": "text/plain"}
            },
            "db": {"args": ["--password", "hunter2hunter2", "--verbose"]},
            "moved": {"env": {"GITHUB_TOKEN": "${GH_TOKEN}"}}
        }});
        let mut found = secrets_in_document(&doc);
        found.sort();
        found.dedup();
        for secret in [
            "tok-claude-123456",
            "pw-in-url",
            "supersecretkey1",
            "Bearer abcdefSECRET123",
            "hunter2hunter2",
        ] {
            assert!(found.iter().any(|f| f == secret), "{secret} in {found:?}");
        }
        for not_secret in ["less", "text/plain", "2", "${GH_TOKEN}", "--verbose"] {
            assert!(!found.iter().any(|f| f == not_secret), "{not_secret}");
        }
    }

    #[test]
    fn json_with_comments_and_toml_documents_parse() {
        let jsonc = "{\n // a comment\n \"env\": {\"TOKEN\": \"abcd1234\"},\n}\n";
        let toml = "[mcp_servers.a]\ncommand = \"x\"\nenv = { API_KEY = \"k-123456\" }\n";
        assert_eq!(
            secrets_in_document(&parse_document(jsonc).unwrap()),
            ["abcd1234"]
        );
        assert_eq!(
            secrets_in_document(&parse_document(toml).unwrap()),
            ["k-123456"]
        );
        assert!(parse_document("{ not [ a document").is_none());
    }
}
