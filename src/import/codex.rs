//! Codex's `~/.codex/config.toml` → mcp-envelope TOML. Pure: no I/O.
//!
//! The proxy accepts Codex's server keys (see `config/codex.rs`), so each
//! `[mcp_servers.NAME]` table, stdio (`command`) or remote (`url`), is copied as written,
//! comments above and inside it included (`toml_edit` keeps them). Keys the proxy refuses
//! (`experimental_environment`, a literal `bearer_token`, the OAuth keys) are dropped with a
//! note that never repeats their values; a table with neither `command` nor `url` is listed in
//! a comment; a name containing `__` is renamed with a note.

use std::collections::BTreeSet;

use toml_edit::{DocumentMut, Item, Table};

use super::scalars::{converted_note, Slot};
use super::{comment_line, stdio_secrets, toml_key, unique_name, ImportError, Secrets};

/// Keys of a Codex table that the proxy refuses, and why; the import drops them and says so.
const DROPPED_KEYS: [(&str, &str); 5] = [
    (
        "experimental_environment",
        "the proxy starts its servers on its own machine",
    ),
    (
        "bearer_token",
        "put the token in an environment variable and name it in `bearer_token_env_var`",
    ),
    ("scopes", "OAuth is not supported yet"),
    ("oauth", "OAuth is not supported yet"),
    ("oauth_resource", "OAuth is not supported yet"),
];

/// Converts the text of a Codex `config.toml` into mcp-envelope TOML text (comments included);
/// `source` names the file in the header comment.
///
/// Errors: the text is not valid TOML (the message has the line and column), or it has no
/// `mcp_servers` table.
pub fn import_codex_config(text: &str, source: &str) -> Result<String, ImportError> {
    let doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let why = crate::config::toml_syntax_error(text, &e);
        ImportError(format!("not valid TOML: {why}"))
    })?;
    let Some(servers) = doc.get("mcp_servers").and_then(Item::as_table_like) else {
        return Err(ImportError(
            "no `mcp_servers` table (Codex's [mcp_servers.NAME])".into(),
        ));
    };
    let mut out = format!(
        "# Imported by `mcp-envelope import` from {source}.\n\
         # Check it with `mcp-envelope check --config <this file>`.\n"
    );
    let names: Vec<&str> = servers.iter().map(|(k, _)| k).collect();
    out.push_str(&tables_to_toml(servers, &names, Secrets::Move)?);
    Ok(out)
}

/// The mcp-envelope TOML (no header) for the Codex servers `names` of `servers` (the
/// `mcp_servers` table of a Codex config): stdio and remote tables copied, others listed in a
/// comment. For `install`: the secrets written in stdio tables are kept (the proxy's own
/// config receives them), while `import` moves them to variables.
///
/// Errors: an entry that is not a table.
pub fn codex_tables_to_toml(
    servers: &dyn toml_edit::TableLike,
    names: &[&str],
) -> Result<String, ImportError> {
    tables_to_toml(servers, names, Secrets::Keep)
}

/// [`codex_tables_to_toml`] with `secrets` deciding about the secrets of stdio tables.
fn tables_to_toml(
    servers: &dyn toml_edit::TableLike,
    names: &[&str],
    secrets: Secrets,
) -> Result<String, ImportError> {
    let mut doc = DocumentMut::new();
    let mut root = Table::new();
    root.set_implicit(true);
    let mut remote = Vec::new();
    let mut used = BTreeSet::new();
    for name in names {
        let Some(item) = servers.get(name) else {
            continue;
        };
        let mut table = match item.clone() {
            Item::Table(t) => t,
            Item::Value(toml_edit::Value::InlineTable(t)) => t.into_table(),
            _ => {
                return Err(ImportError(format!(
                    "mcp_servers.{}: expected a table",
                    toml_key(name)
                )))
            }
        };
        if !table.contains_key("command") && !table.contains_key("url") {
            remote.push(format!("{name} (no url, no command)"));
            continue;
        }
        let mut notes = Vec::new();
        for (key, why) in DROPPED_KEYS {
            if table.remove(key).is_some() {
                notes.push(format!("dropped `{key}`: {why}"));
            }
        }
        let new_name = unique_name(name, &mut used);
        if table.contains_key("command") {
            stringify_scalars(&new_name, &mut table, &mut notes);
        }
        if secrets == Secrets::Move && table.contains_key("command") {
            stdio_secrets::codex_table(&new_name, &mut table, &mut notes);
        }
        if let Some(url) = table.get("url").and_then(Item::as_str) {
            let safe = super::remote::secret_url(url, &new_name, &mut notes);
            if safe != url {
                table["url"] = toml_edit::value(safe);
            }
        }
        if new_name != *name {
            notes.push(format!(
                "renamed from {name:?} (names must be unique, non-empty and without `__`)"
            ));
        }
        if !notes.is_empty() {
            let old = table
                .decor()
                .prefix()
                .and_then(|p| p.as_str())
                .unwrap_or("")
                .to_string();
            let notes: String = notes.iter().map(|n| comment_line(n)).collect();
            table.decor_mut().set_prefix(format!("{old}{notes}"));
        }
        root.insert(&new_name, Item::Table(table));
    }
    doc.insert("mcp_servers", Item::Table(root));
    let mut out = doc.to_string();
    if !out.is_empty() && !out.starts_with('\n') {
        out.insert(0, '\n');
    }
    if !remote.is_empty() {
        out.push_str("\n# Servers with neither `command` nor `url`; not imported:\n");
        for r in remote {
            out.push_str(&comment_line(&format!("  {r}")));
        }
    }
    Ok(out)
}

/// Writes the numbers, booleans and dates in the `args` and the `env` values of stdio server
/// `server`'s table as strings (a process argument and an environment value are strings; the
/// proxy's config refuses anything else, so `check` would refuse the imported file), with one
/// note each naming the key, never the value: `converted mcp_servers.web.args[1] (an integer)
/// to a string: ...`. An integer is written in decimal (`0x1F` → `31`); a float and a date as
/// written (`1.50` stays `1.50`).
fn stringify_scalars(server: &str, table: &mut Table, notes: &mut Vec<String>) {
    let key = toml_key(server);
    if let Some(list) = table.get_mut("args").and_then(Item::as_array_mut) {
        for (i, value) in list.iter_mut().enumerate() {
            if let Some((text, kind)) = scalar_text(value) {
                let path = format!("mcp_servers.{key}.args[{i}]");
                notes.push(converted_note(&path, kind, Slot::Arg));
                *value = toml_edit::Value::from(text);
            }
        }
    }
    if let Some(env) = table.get_mut("env").and_then(Item::as_table_like_mut) {
        for (name, item) in env.iter_mut() {
            let Some((text, kind)) = item.as_value().and_then(scalar_text) else {
                continue;
            };
            let path = format!("mcp_servers.{key}.env.{}", toml_key(name.get()));
            notes.push(converted_note(&path, kind, Slot::Env));
            *item = toml_edit::value(text);
        }
    }
}

/// The string form of a TOML number, boolean or date, and what it was; `None` for a string,
/// an array or a table.
fn scalar_text(value: &toml_edit::Value) -> Option<(String, &'static str)> {
    use toml_edit::Value as V;
    let written =
        |repr: Option<&toml_edit::Repr>| repr.and_then(|r| r.as_raw().as_str()).map(str::to_owned);
    match value {
        V::Integer(n) => Some((n.value().to_string(), "an integer")),
        V::Float(f) => Some((
            written(f.as_repr()).unwrap_or_else(|| f.value().to_string()),
            "a float",
        )),
        V::Boolean(b) => Some((b.value().to_string(), "a boolean")),
        V::Datetime(d) => Some((d.value().to_string(), "a date")),
        V::String(_) | V::Array(_) | V::InlineTable(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::path::Path;
    use std::time::Duration;

    const CODEX: &str = r#"model = "o4"

# Docs lookup, keep it fast
[mcp_servers.docs]
command = "docs-mcp" # the binary
args = ["--stdio"]
env_vars = ["DOCS_TOKEN"]
startup_timeout_ms = 4000
enabled_tools = ["search"]

[mcp_servers.docs.env]
MODE = "fast"

[mcp_servers.figma]
url = "https://mcp.figma.invalid/mcp"
bearer_token_env_var = "FIGMA_TOKEN"

[mcp_servers.old]
url = "https://old.invalid/mcp"
bearer_token = "lit-s3cret"

[mcp_servers.a__b]
command = "ab"
experimental_environment = "remote"

[profiles.x]
model = "y"
"#;

    #[test]
    fn codex_tables_are_kept_with_comments() {
        let text = import_codex_config(CODEX, "config.toml").unwrap();
        assert!(text.contains("# Docs lookup, keep it fast\n[mcp_servers.docs]\ncommand = \"docs-mcp\" # the binary\n"), "{text}");
        assert!(
            text.contains("[mcp_servers.docs.env]\nMODE = \"fast\""),
            "{text}"
        );
        assert!(
            text.contains("[mcp_servers.figma]\nurl = \"https://mcp.figma.invalid/mcp\"\nbearer_token_env_var = \"FIGMA_TOKEN\""),
            "{text}"
        );
        assert!(!text.contains("lit-s3cret"), "{text}");
        assert!(
            text.contains("# dropped `bearer_token`: put the token in an environment variable"),
            "{text}"
        );
        assert!(!text.contains("profiles"), "{text}");
        assert!(
            text.contains("# dropped `experimental_environment`"),
            "{text}"
        );
        assert!(text.contains("renamed from \"a__b\""), "{text}");
        let config = Config::parse(&text, Path::new("/c/x.toml"), &|_| None)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let docs = config.server("docs").unwrap();
        assert_eq!(docs.startup_timeout, Some(Duration::from_secs(4)));
        assert_eq!(docs.env, [("MODE".to_string(), "fast".to_string())]);
        assert_eq!(config.server("a_b").unwrap().command, "ab");
        let figma = config.server("figma").unwrap().remote.clone().unwrap();
        assert_eq!(figma.bearer_token_env_var.as_deref(), Some("FIGMA_TOKEN"));
        assert_eq!(config.servers.len(), 4);
    }

    #[test]
    fn scalars_in_args_and_env_are_written_as_strings_with_a_note_and_secrets_still_move() {
        let codex = "[mcp_servers.s]\ncommand = \"x\"\nargs = [1, 0x1F, 1.50, false, \"--token\", 4242]\n\n[mcp_servers.s.env]\nN = 2\nAPI_KEY = 777\nL = [1]\n";
        let text = import_codex_config(codex, "c").unwrap();
        assert!(
            text.contains(
                "args = [\"1\", \"31\", \"1.50\", \"false\", \"--token\", \"${S_TOKEN}\"]"
            ),
            "{text}"
        );
        assert!(
            text.contains("N = \"2\"\nAPI_KEY = \"${S_API_KEY}\"\nL = [1]"),
            "{text}"
        );
        assert!(!text.contains("4242") && !text.contains("777"), "{text}");
        let note = "# converted mcp_servers.s.args[2] (a float) to a string: a process argument";
        assert!(text.contains(note), "{text}");
        assert!(
            text.contains("# converted mcp_servers.s.env.N (an integer)"),
            "{text}"
        );
        let installed = codex_tables_to_toml(
            codex.parse::<DocumentMut>().unwrap()["mcp_servers"]
                .as_table_like()
                .unwrap(),
            &["s"],
        )
        .unwrap();
        assert!(installed.contains("API_KEY = \"777\""), "{installed}");
    }

    #[test]
    fn inline_tables_and_errors() {
        let text = import_codex_config(
            "mcp_servers = { t = { command = \"t\", args = [\"1\"] } }\n",
            "c",
        )
        .unwrap();
        let config = Config::parse(&text, Path::new("/c/x.toml"), &|_| None).unwrap();
        assert_eq!(config.server("t").unwrap().args, ["1"]);
        assert!(import_codex_config("model = 1\n", "c")
            .unwrap_err()
            .0
            .contains("no `mcp_servers`"));
        assert!(import_codex_config("[a\n", "c")
            .unwrap_err()
            .0
            .contains("not valid TOML"));
        assert!(import_codex_config("[mcp_servers]\nx = 3\n", "c")
            .unwrap_err()
            .0
            .contains("mcp_servers.x: expected a table"));
    }
}
