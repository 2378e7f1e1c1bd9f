//! `mcp-envelope import FILE`: an agent client's JSON MCP config → the equivalent mcp-envelope
//! TOML, so a user moves their servers behind the proxy in one step. Pure: no I/O.
//!
//! Accepted shapes (source: issue 7 of the project; each client's documented format):
//! - `{"mcpServers": {NAME: {command, args, env, cwd?, disabled?, type?, url?}}}`: Claude
//!   Desktop (`claude_desktop_config.json`), Cursor (`.cursor/mcp.json`), Claude Code
//!   (`.mcp.json`, entries may have `"type": "stdio"`);
//! - `{"servers": {NAME: {type, command, args, env, envFile?, cwd?}}, "inputs": [...]}`: VS Code
//!   (`.vscode/mcp.json`).
//!
//! Conversion rules:
//! - a stdio entry becomes `[mcp_servers.NAME]` with `command`, `args`, `env`, `cwd` when
//!   present; `"disabled": true` becomes `enabled = false`;
//! - remote entries (a `url`, or `type` `sse` / `http` / `streamable-http`) are listed in a
//!   comment as not supported yet; they are never silently dropped;
//! - variables in `args` / `env`: `${env:NAME}` becomes `${NAME}`, `${input:ID}` (VS Code
//!   inputs) and other `${...}` forms that are not plain names become `${SANITIZED_NAME}`, noted
//!   in a comment, because the proxy expands `${NAME}` from its own environment;
//! - VS Code `envFile`, top-level `inputs` and keys we do not use are noted in a comment;
//! - a name containing `__` (reserved for collision renaming) has it replaced by `_`, noted.
//!
//! Values and keys are quoted by the `toml` crate, so the output always parses with
//! [`crate::config::Config::parse`] (given an environment that defines the variables it uses).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// Keys of a client entry that the conversion uses; anything else is noted as ignored.
const KNOWN_KEYS: [&str; 8] = [
    "command", "args", "env", "cwd", "disabled", "type", "url", "envFile",
];

/// Why a JSON document could not be converted; Display names the key path and what is wrong,
/// e.g. `mcpServers.git.args[1]: expected a string, found 3`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ImportError(pub String);

/// Makes JSON-with-comments (JSONC, as VS Code's `mcp.json` and other client configs allow)
/// plain JSON: `//` and `/* */` comments outside strings and commas before a closing `}` or
/// `]` become spaces. Newlines are kept, so line and column numbers in a later parse error still
/// point into the original file. Plain JSON passes through unchanged.
pub fn strip_jsonc(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = Vec::with_capacity(chars.len());
    let (mut i, mut in_string) = (0, false);
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            out.push(c);
            if c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 1;
            } else if c == '"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        match (c, chars.get(i + 1)) {
            ('"', _) => {
                in_string = true;
                out.push(c);
                i += 1;
            }
            ('/', Some('/')) => {
                while i < chars.len() && chars[i] != '\n' {
                    out.push(' ');
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                out.extend([' ', ' ']);
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    out.push(if chars[i] == '\n' { '\n' } else { ' ' });
                    i += 1;
                }
                if i < chars.len() {
                    out.extend([' ', ' ']);
                    i += 2;
                }
            }
            (']' | '}', _) => {
                // A comma before this closer, with only blanks between, is a trailing comma.
                if let Some(k) = out.iter().rposition(|ch| !ch.is_whitespace()) {
                    if out[k] == ',' {
                        out[k] = ' ';
                    }
                }
                out.push(c);
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out.into_iter().collect()
}

/// Converts a client's parsed JSON config into mcp-envelope TOML text (comments included).
/// `source` names the file in the header comment.
///
/// Errors: the document is not an object, has neither an `mcpServers` nor a `servers` object,
/// or an entry has a field of the wrong type (`command` not a string, `args` not an array of
/// strings, `env` not an object of strings/numbers/booleans, `cwd` not a string).
pub fn import_client_config(doc: &Value, source: &str) -> Result<String, ImportError> {
    let Some(root) = doc.as_object() else {
        return Err(ImportError(format!(
            "the top level is {}, not an object",
            kind(doc)
        )));
    };
    let mut sections: Vec<(&str, &Map<String, Value>)> = Vec::new();
    for key in ["mcpServers", "servers"] {
        match root.get(key) {
            None => {}
            Some(Value::Object(m)) => sections.push((key, m)),
            Some(other) => {
                return Err(ImportError(format!(
                    "{key}: expected an object of servers, found {}",
                    kind(other)
                )))
            }
        }
    }
    if sections.is_empty() {
        return Err(ImportError(
            "no `mcpServers` (Claude Desktop, Cursor, Claude Code) or `servers` (VS Code) object at the top level"
                .into(),
        ));
    }
    let mut out = format!(
        "# Imported by `mcp-envelope import` from {source}.\n\
         # Check it with `mcp-envelope check --config <this file>`.\n"
    );
    if let Some(Value::Array(inputs)) = root.get("inputs") {
        if !inputs.is_empty() {
            out.push_str("#\n# VS Code `inputs` are prompts the editor shows; the proxy cannot prompt. Each\n# `${input:ID}` below became `${ID}` (upper case, `_` for other characters): set those\n# variables in the environment that starts the proxy. Inputs declared:\n");
            for input in inputs {
                let id = input.get("id").and_then(Value::as_str).unwrap_or("?");
                let desc = input
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                out.push_str(&comment_line(&format!(
                    "  {id} -> ${{{}}}{}{desc}",
                    sanitize_var(id),
                    if desc.is_empty() { "" } else { ": " }
                )));
            }
        }
    }
    let mut remote = Vec::new();
    let mut used_names = BTreeSet::new();
    for (section, servers) in sections {
        for (name, entry) in servers {
            let path = format!("{section}.{name}");
            let Some(entry) = entry.as_object() else {
                return Err(ImportError(format!(
                    "{path}: expected an object, found {}",
                    kind(entry)
                )));
            };
            let kind_field = entry.get("type").and_then(Value::as_str);
            let is_remote = entry.contains_key("url")
                || matches!(kind_field, Some("sse" | "http" | "streamable-http"));
            if is_remote {
                let url = entry
                    .get("url")
                    .and_then(Value::as_str)
                    .unwrap_or("(no url)");
                remote.push(format!(
                    "{name} ({}, {url})",
                    kind_field.unwrap_or("remote")
                ));
                continue;
            }
            out.push('\n');
            out.push_str(&server_table(name, entry, &path, &mut used_names)?);
        }
    }
    if !remote.is_empty() {
        out.push_str(
            "\n# Remote servers (url / sse / http) are not supported yet; not imported:\n",
        );
        for r in remote {
            out.push_str(&comment_line(&format!("  {r}")));
        }
    }
    Ok(out)
}

/// One `[mcp_servers.NAME]` table with its notes as comments.
fn server_table(
    name: &str,
    entry: &Map<String, Value>,
    path: &str,
    used_names: &mut BTreeSet<String>,
) -> Result<String, ImportError> {
    let mut notes = Vec::new();
    let mut vars = BTreeSet::new();
    let mut table_name = if name.is_empty() {
        "server".to_string()
    } else {
        name.to_string()
    };
    while table_name.contains("__") {
        table_name = table_name.replace("__", "_");
    }
    let base = table_name.clone();
    let mut n = 2;
    while !used_names.insert(table_name.clone()) {
        table_name = format!("{base}_{n}");
        n += 1;
    }
    if table_name != name {
        notes.push(format!(
            "renamed from {} (names must be unique, non-empty and without `__`)",
            json_str(name)
        ));
    }
    let mut lines = Vec::new();
    let Some(command) = entry.get("command") else {
        return Ok(format!(
            "# {} has no `command` (and no `url`); not imported.\n",
            json_str(name)
        ));
    };
    let command = command.as_str().ok_or_else(|| {
        ImportError(format!(
            "{path}.command: expected a string, found {}",
            kind(command)
        ))
    })?;
    lines.push(format!("command = {}", toml_str(command)));
    if let Some(args) = entry.get("args") {
        let Some(items) = args.as_array() else {
            return Err(ImportError(format!(
                "{path}.args: expected an array of strings, found {}",
                kind(args)
            )));
        };
        let mut converted = Vec::new();
        for (i, a) in items.iter().enumerate() {
            let s = a.as_str().ok_or_else(|| {
                ImportError(format!(
                    "{path}.args[{i}]: expected a string, found {}",
                    kind(a)
                ))
            })?;
            converted.push(toml::Value::String(convert_vars(s, &mut vars)));
        }
        lines.push(format!("args = {}", toml::Value::Array(converted)));
    }
    if let Some(env) = entry.get("env") {
        let Some(map) = env.as_object() else {
            return Err(ImportError(format!(
                "{path}.env: expected an object, found {}",
                kind(env)
            )));
        };
        let mut table = toml::Table::new();
        for (k, v) in map {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => {
                    return Err(ImportError(format!(
                        "{path}.env.{k}: expected a string, found {}",
                        kind(other)
                    )))
                }
            };
            table.insert(k.clone(), toml::Value::String(convert_vars(&s, &mut vars)));
        }
        if !table.is_empty() {
            lines.push(format!("env = {}", toml::Value::Table(table)));
        }
    }
    if let Some(cwd) = entry.get("cwd") {
        let s = cwd.as_str().ok_or_else(|| {
            ImportError(format!(
                "{path}.cwd: expected a string, found {}",
                kind(cwd)
            ))
        })?;
        if s.contains("${") {
            notes.push(
                "`cwd` is used as written (no `${...}` expansion there): replace the variable with a path"
                    .into(),
            );
        }
        lines.push(format!("cwd = {}", toml_str(s)));
    }
    if entry.get("disabled") == Some(&Value::Bool(true)) {
        lines.push("enabled = false".into());
    }
    if let Some(file) = entry.get("envFile") {
        notes.push(format!(
            "`envFile` {} is not read by the proxy: copy its variables into `env`",
            file
        ));
    }
    let ignored: Vec<&str> = entry
        .keys()
        .map(String::as_str)
        .filter(|k| !KNOWN_KEYS.contains(k))
        .collect();
    if !ignored.is_empty() {
        notes.push(format!("ignored keys: {}", ignored.join(", ")));
    }
    if !vars.is_empty() {
        notes.push(format!(
            "needs these variables in the proxy's environment: {}",
            vars.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut out = String::new();
    for n in notes {
        out.push_str(&comment_line(&n));
    }
    out.push_str(&format!("[mcp_servers.{}]\n", toml_key(&table_name)));
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    Ok(out)
}

/// Rewrites `${...}` references into the proxy's `${NAME}` form; records every NAME used.
fn convert_vars(text: &str, vars: &mut BTreeSet<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            // Unterminated: keep the rest, the proxy will report it.
            out.push_str(&rest[i..]);
            return out;
        };
        let inner = &after[..end];
        let name = match inner.split_once(':') {
            Some(("env", var)) => sanitize_var(var),
            Some((_, id)) => sanitize_var(id),
            None => match inner {
                "userHome" => "HOME".to_string(),
                other => sanitize_var(other),
            },
        };
        vars.insert(name.clone());
        out.push_str("${");
        out.push_str(&name);
        out.push('}');
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// A valid variable name (`[A-Za-z_][A-Za-z0-9_]*`) from anything: kept when already valid,
/// else upper-cased with every other character replaced by `_` (and a leading `_` before a
/// digit).
fn sanitize_var(text: &str) -> String {
    let valid = |s: &str| {
        let mut chars = s.chars();
        matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if valid(text) {
        return text.to_string();
    }
    let mut s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if !s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        s.insert(0, '_');
    }
    s
}

/// A TOML string literal.
fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A TOML key: bare when it can be, else a one-line basic string (JSON's escapes are valid TOML
/// basic-string escapes; a multi-line string is not allowed as a key).
fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        json_str(k)
    }
}

fn json_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// `# text` lines (one per line of `text`).
fn comment_line(text: &str) -> String {
    text.lines().map(|l| format!("# {l}\n")).collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_server_names_stay_valid_toml_keys() {
        for name in ["new\nline", "quote\"d", "sp ace", "é"] {
            let key = toml_key(name);
            let doc = format!("[mcp_servers.{key}]\ncommand = \"x\"\n");
            let parsed: toml::Table = toml::from_str(&doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
            assert!(
                parsed["mcp_servers"].as_table().unwrap().contains_key(name),
                "{doc}"
            );
        }
    }

    #[test]
    fn jsonc_comments_and_trailing_commas_are_removed() {
        let text = "{\n  // servers\n  \"servers\": { /* one */ \"a\": {\"command\": \"x//y\", \"args\": [\"/*k*/\", \"q\\\"//\",],},\n  },\n}\n";
        let plain = strip_jsonc(text);
        let v: Value = serde_json::from_str(&plain).unwrap();
        assert_eq!(v["servers"]["a"]["command"], "x//y");
        assert_eq!(
            v["servers"]["a"]["args"],
            serde_json::json!(["/*k*/", "q\"//"])
        );
        assert_eq!(plain.lines().count(), text.lines().count());
        let plain_json = "{\"a\": [1, 2]}";
        assert_eq!(strip_jsonc(plain_json), plain_json);
    }
    use crate::config::Config;
    use serde_json::json;
    use std::path::Path;

    /// Converts and parses with an environment that defines every variable.
    fn convert(doc: Value) -> (String, Config) {
        let text = import_client_config(&doc, "test.json").unwrap();
        let config = Config::parse(&text, Path::new("/cfg/x.toml"), &|_| Some("v".into()))
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        (text, config)
    }

    #[test]
    fn claude_desktop() {
        let (text, config) = convert(json!({"mcpServers": {
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]},
            "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_PAGER": "cat", "N": 3}}
        }}));
        assert!(
            text.contains("[mcp_servers.filesystem]\ncommand = \"npx\"\n"),
            "{text}"
        );
        let fs = config.server("filesystem").unwrap();
        assert_eq!(fs.args[2], "/Users/me/Desktop");
        assert!(fs.enabled);
        let git = config.server("git").unwrap();
        assert_eq!(
            git.env,
            [("GIT_PAGER".into(), "cat".into()), ("N".into(), "3".into())]
        );
    }

    #[test]
    fn cursor_and_claude_code_with_type_disabled_and_env_vars() {
        let (text, config) = convert(json!({"mcpServers": {
            "gh": {"type": "stdio", "command": "/opt/gh-mcp", "args": ["--token=${env:GITHUB_TOKEN}"],
                   "env": {"HOME_DIR": "${userHome}"}, "disabled": true, "autoApprove": ["x"]},
            "weird name": {"command": "x\"y", "cwd": "/srv/a b"}
        }}));
        let gh = config.server("gh").unwrap();
        assert!(!gh.enabled);
        assert_eq!(gh.args, ["--token=v"]);
        assert!(text.contains("--token=${GITHUB_TOKEN}"), "{text}");
        assert!(text.contains("${HOME}"), "{text}");
        assert!(text.contains("# ignored keys: autoApprove"), "{text}");
        assert!(text.contains("variables in the proxy's environment: GITHUB_TOKEN, HOME"));
        let w = config.server("weird name").unwrap();
        assert_eq!(w.command, "x\"y");
        assert_eq!(w.cwd.as_deref(), Some(Path::new("/srv/a b")));
    }

    #[test]
    fn vscode_servers_inputs_and_env_file() {
        let (text, config) = convert(json!({
            "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
            "servers": {
                "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"],
                          "env": {"KEY": "${input:api-key}"}, "envFile": "${workspaceFolder}/.env"}
            }
        }));
        assert!(text.contains("api-key -> ${API_KEY}: API key"), "{text}");
        assert!(
            text.contains("`envFile` \"${workspaceFolder}/.env\" is not read"),
            "{text}"
        );
        assert!(text.contains("KEY = \"${API_KEY}\""), "{text}");
        assert_eq!(config.server("fetch").unwrap().args, ["mcp-server-fetch"]);
    }

    #[test]
    fn remote_entries_are_listed_not_dropped() {
        let (text, config) = convert(json!({"mcpServers": {
            "local": {"command": "srv"},
            "remote": {"url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer x"}},
            "sse": {"type": "sse", "url": "https://example.invalid/sse"}
        }}));
        assert_eq!(config.servers.len(), 1);
        assert!(text.contains("not supported yet"), "{text}");
        assert!(
            text.contains("#   remote (remote, https://example.invalid/mcp)"),
            "{text}"
        );
        assert!(
            text.contains("#   sse (sse, https://example.invalid/sse)"),
            "{text}"
        );
        assert!(!text.contains("Bearer"), "headers are not copied: {text}");
    }

    #[test]
    fn names_with_double_underscore_are_renamed() {
        let (text, config) =
            convert(json!({"mcpServers": {"a__b": {"command": "x"}, "a_b": {"command": "y"}}}));
        assert!(text.contains("renamed from \"a__b\""), "{text}");
        let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a_b", "a_b_2"]);
    }

    #[test]
    fn entry_without_command_is_noted() {
        let (text, config) = convert(json!({"mcpServers": {"x": {"args": []}}}));
        assert!(config.servers.is_empty());
        assert!(text.contains("\"x\" has no `command`"), "{text}");
    }

    #[test]
    fn errors_name_the_key() {
        let err = |doc: Value| import_client_config(&doc, "f").unwrap_err().0;
        assert!(err(json!([])).contains("not an object"));
        assert!(err(json!({"other": {}})).contains("no `mcpServers`"));
        assert_eq!(
            err(json!({"mcpServers": []})),
            "mcpServers: expected an object of servers, found an array"
        );
        assert_eq!(
            err(json!({"mcpServers": {"g": {"command": "x", "args": ["a", 3]}}})),
            "mcpServers.g.args[1]: expected a string, found a number"
        );
        assert_eq!(
            err(json!({"servers": {"g": {"command": 1}}})),
            "servers.g.command: expected a string, found a number"
        );
        assert!(
            err(json!({"servers": {"g": {"command": "x", "env": {"A": []}}}}))
                .contains("servers.g.env.A")
        );
    }

    #[test]
    fn var_conversion() {
        let mut vars = BTreeSet::new();
        assert_eq!(convert_vars("a${HOME}b", &mut vars), "a${HOME}b");
        assert_eq!(convert_vars("${env:X_Y}", &mut vars), "${X_Y}");
        assert_eq!(convert_vars("${input:my.key}", &mut vars), "${MY_KEY}");
        assert_eq!(
            convert_vars("${workspaceFolder}/x", &mut vars),
            "${workspaceFolder}/x"
        );
        assert_eq!(convert_vars("$HOME ${", &mut vars), "$HOME ${");
        assert_eq!(sanitize_var("1abc"), "_1ABC");
        assert_eq!(
            vars.into_iter().collect::<Vec<_>>(),
            ["HOME", "MY_KEY", "X_Y", "workspaceFolder"]
        );
    }
}
