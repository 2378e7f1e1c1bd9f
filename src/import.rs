//! `mcp-envelope import FILE`: an agent client's JSON MCP config → the equivalent mcp-envelope
//! TOML, so a user moves their servers behind the proxy in one step. Pure: no I/O.
//!
//! Accepted shapes (source: issue 7 of the project; each client's documented format):
//! - `{"mcpServers": {NAME: {command, args, env, cwd?, disabled?, type?, url?}}}`: Claude
//!   Desktop (`claude_desktop_config.json`), Cursor (`.cursor/mcp.json`), Claude Code
//!   (`.mcp.json`, entries may have `"type": "stdio"`);
//! - `{"servers": {NAME: {type, command, args, env, envFile?, cwd?}}, "inputs": [...]}`: VS Code
//!   (`.vscode/mcp.json`);
//! - Claude Code's `~/.claude.json`: servers of the user scope in the top-level `mcpServers`, of
//!   the local scope in `projects.<path>.mcpServers` (each project's servers are imported too,
//!   marked with a comment naming the project);
//! - Gemini CLI's `settings.json`: `mcpServers` entries with Gemini's keys: `timeout` (ms)
//!   becomes `tool_timeout_sec`, `includeTools` / `excludeTools` become `enabled_tools` /
//!   `disabled_tools`, `httpUrl` marks a remote server, `trust` is noted (it is the client's
//!   setting, so it belongs on the entry that starts mcp-envelope);
//! - Codex's `config.toml` ([`import_codex_config`]): its `[mcp_servers.NAME]` tables are kept
//!   as written (comments included), since the proxy accepts Codex's keys.
//!
//! Conversion rules:
//! - a stdio entry becomes `[mcp_servers.NAME]` with `command`, `args`, `env`, `cwd` when
//!   present; `"disabled": true` becomes `enabled = false`; secrets written in its `args` and
//!   `env` move into environment variables named in a comment (see `import/stdio_secrets.rs`;
//!   `install`, which writes into the proxy's own config, keeps them);
//! - a remote entry ([`is_remote`]: a `url` or `httpUrl`, or `type` `sse` / `http` /
//!   `streamable-http`) becomes a table with `url` and its headers as Codex's
//!   `bearer_token_env_var`, `http_headers` and `env_http_headers`; literal secrets are moved
//!   into environment variables named in a comment, never copied (see `import/remote.rs`);
//! - numbers and booleans in `args`, `env` and `headers` are written as strings, each with a
//!   note naming the key (not the value), and `null`, arrays and objects there are errors
//!   naming the key (see `import/scalars.rs`);
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

mod codex;
mod remote;
mod scalars;
mod stdio_secrets;
pub use codex::{codex_tables_to_toml, import_codex_config};
use scalars::{string_value, Slot};

/// Keys of a client entry that the conversion uses; anything else is noted as ignored.
const KNOWN_KEYS: [&str; 14] = [
    "command",
    "args",
    "env",
    "cwd",
    "disabled",
    "type",
    "url",
    "httpUrl",
    "headers",
    "envFile",
    "timeout",
    "includeTools",
    "excludeTools",
    "trust",
];

/// Whether a client's server entry is a remote (HTTP / SSE) server rather than a stdio one: it
/// has a `url` (Claude Desktop, Cursor, Claude Code, VS Code, Gemini CLI's SSE) or `httpUrl`
/// (Gemini CLI), or its `type` is `sse`, `http` or `streamable-http`.
pub fn is_remote(entry: &Map<String, Value>) -> bool {
    entry.contains_key("url")
        || entry.contains_key("httpUrl")
        || matches!(
            entry.get("type").and_then(Value::as_str),
            Some("sse" | "http" | "streamable-http")
        )
}

/// One object of servers in a client's JSON config and its dotted key path.
pub type Section<'a> = (String, &'a Map<String, Value>);

/// The server objects of a client's JSON config, each with its dotted path: the top-level
/// `mcpServers` and `servers`, and Claude Code's `projects.<path>.mcpServers`.
///
/// Errors: one of them is present but not an object.
pub fn server_sections(root: &Map<String, Value>) -> Result<Vec<Section<'_>>, ImportError> {
    let mut found: Vec<(String, &Value)> = Vec::new();
    for key in ["mcpServers", "servers"] {
        if let Some(v) = root.get(key) {
            found.push((key.to_string(), v));
        }
    }
    if let Some(Value::Object(projects)) = root.get("projects") {
        for (dir, project) in projects {
            if let Some(v) = project.get("mcpServers") {
                found.push((format!("projects.{}.mcpServers", json_str(dir)), v));
            }
        }
    }
    let mut sections = Vec::new();
    for (path, value) in found {
        match value {
            // Claude Code's projects carry `"mcpServers": {}` by default; those add nothing.
            Value::Object(m) if m.is_empty() && path.starts_with("projects.") => {}
            Value::Object(m) => sections.push((path, m)),
            other => {
                return Err(ImportError(format!(
                    "{path}: expected an object of servers, found {}",
                    kind(other)
                )))
            }
        }
    }
    Ok(sections)
}

/// Why a config could not be converted; Display names the key path and what is wrong,
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
/// strings/numbers/booleans, `env` not an object of those, `cwd` not a string). Numbers and
/// booleans in `args`, `env` and `headers` are written as strings with a note
/// (`import/scalars.rs`).
pub fn import_client_config(doc: &Value, source: &str) -> Result<String, ImportError> {
    let body = convert(doc, Secrets::Move)?;
    Ok(format!(
        "# Imported by `mcp-envelope import` from {source}.\n\
         # Check it with `mcp-envelope check --config <this file>`.\n{body}"
    ))
}

/// The body of [`import_client_config`] (no header comment): the `[mcp_servers.NAME]` tables
/// and their notes, for `install`, which writes them into the proxy's own config: the secrets
/// of stdio entries are kept there as written (the servers must keep working), those of remote
/// entries move to variables as in `import`. Errors: as [`import_client_config`].
pub fn convert_servers(doc: &Value) -> Result<String, ImportError> {
    convert(doc, Secrets::Keep)
}

/// What becomes of the secrets written in a stdio entry's `args` and `env`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Secrets {
    /// Moved to environment variables, a note saying which to set (`import`:
    /// [`stdio_secrets`]).
    Move,
    /// Copied as written (`install`).
    Keep,
}

/// [`convert_servers`] with `secrets` deciding about the secrets of stdio entries.
fn convert(doc: &Value, secrets: Secrets) -> Result<String, ImportError> {
    let Some(root) = doc.as_object() else {
        return Err(ImportError(format!(
            "the top level is {}, not an object",
            kind(doc)
        )));
    };
    let sections = server_sections(root)?;
    if sections.is_empty() && !root.contains_key("projects") {
        return Err(ImportError(
            "no `mcpServers` (Claude Desktop, Cursor, Claude Code, Gemini CLI) or `servers` (VS Code) object at the top level"
                .into(),
        ));
    }
    let mut out = String::new();
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
    let mut used_names = BTreeSet::new();
    for (section, servers) in sections {
        if let Some(project) = section.strip_prefix("projects.") {
            let project = project.trim_end_matches(".mcpServers");
            out.push_str(&format!(
                "\n# Claude Code local-scope servers of project {project}:\n"
            ));
        }
        for (name, entry) in servers {
            let path = format!("{section}.{name}");
            let Some(entry) = entry.as_object() else {
                return Err(ImportError(format!(
                    "{path}: expected an object, found {}",
                    kind(entry)
                )));
            };
            out.push('\n');
            out.push_str(&server_table(name, entry, &path, &mut used_names, secrets)?);
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
    secrets: Secrets,
) -> Result<String, ImportError> {
    let mut notes = Vec::new();
    let mut vars = BTreeSet::new();
    let table_name = unique_name(name, used_names);
    if table_name != name {
        notes.push(format!(
            "renamed from {} (names must be unique, non-empty and without `__`)",
            json_str(name)
        ));
    }
    let mut lines = Vec::new();
    if is_remote(entry) {
        if !entry.contains_key("url") && !entry.contains_key("httpUrl") {
            return Ok(format!(
                "# {} is a remote server without a `url`; not imported.\n",
                json_str(name)
            ));
        }
        let converted = remote::convert(&table_name, entry, path, &mut vars)?;
        lines = converted.lines;
        notes.extend(converted.notes);
        if entry.contains_key("oauth") || entry.contains_key("authProviderType") {
            notes.push("OAuth is not supported yet: put a token from the provider in an environment variable and name it in `bearer_token_env_var`".into());
        }
    } else {
        let Some(command) = entry.get("command") else {
            return Ok(format!(
                "# {} has no `command` (and no `url`); not imported.\n",
                json_str(name)
            ));
        };
        let stdio = Stdio {
            path,
            server: (secrets == Secrets::Move).then_some(table_name.as_str()),
        };
        stdio.lines(command, entry, &mut lines, &mut notes, &mut vars)?;
    }
    if entry.get("disabled") == Some(&Value::Bool(true)) {
        lines.push("enabled = false".into());
    }
    gemini_keys(entry, path, &mut lines, &mut notes)?;
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

/// How one stdio entry is converted.
struct Stdio<'a> {
    /// The entry's key path, for errors.
    path: &'a str,
    /// The server's table name when its secrets move to variables ([`Secrets::Move`]).
    server: Option<&'a str>,
}

impl Stdio<'_> {
    /// The stdio keys of an entry (`command`, `args`, `env`, `cwd`) as table lines.
    fn lines(
        &self,
        command: &Value,
        entry: &Map<String, Value>,
        lines: &mut Vec<String>,
        notes: &mut Vec<String>,
        vars: &mut BTreeSet<String>,
    ) -> Result<(), ImportError> {
        let path = self.path;
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
                    "{path}.args: expected an array of strings, numbers or booleans, found {}",
                    kind(args)
                )));
            };
            let mut converted = Vec::new();
            for (i, a) in items.iter().enumerate() {
                let s = string_value(a, &format!("{path}.args[{i}]"), Slot::Arg, notes)?;
                converted.push(convert_vars(&s, vars));
            }
            if let Some(server) = self.server {
                converted = stdio_secrets::args(server, converted, notes);
            }
            let converted = converted.into_iter().map(toml::Value::String).collect();
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
                let s = string_value(v, &format!("{path}.env.{k}"), Slot::Env, notes)?;
                let mut s = convert_vars(&s, vars);
                if let Some(server) = self.server {
                    s = stdio_secrets::env_value(server, k, s, notes);
                }
                table.insert(k.clone(), toml::Value::String(s));
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
        Ok(())
    }
}

/// Gemini CLI's keys: `timeout` (ms per request) → `tool_timeout_sec`, `includeTools` /
/// `excludeTools` → `enabled_tools` / `disabled_tools`, `trust` noted.
fn gemini_keys(
    entry: &Map<String, Value>,
    path: &str,
    lines: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<(), ImportError> {
    if let Some(t) = entry.get("timeout") {
        match t.as_f64() {
            Some(ms) if ms > 0.0 && ms.is_finite() => {
                let secs = toml::Value::Float(ms / 1000.0);
                let secs = if ms % 1000.0 == 0.0 {
                    toml::Value::Integer((ms / 1000.0) as i64)
                } else {
                    secs
                };
                lines.push(format!("tool_timeout_sec = {secs}"));
            }
            _ => {
                return Err(ImportError(format!(
                    "{path}.timeout: expected a positive number of milliseconds, found {t}"
                )))
            }
        }
    }
    for (from, to) in [
        ("includeTools", "enabled_tools"),
        ("excludeTools", "disabled_tools"),
    ] {
        let Some(list) = entry.get(from) else {
            continue;
        };
        let names: Option<Vec<toml::Value>> = list.as_array().and_then(|items| {
            items
                .iter()
                .map(|v| v.as_str().map(|s| toml::Value::String(s.to_string())))
                .collect()
        });
        let Some(names) = names else {
            return Err(ImportError(format!(
                "{path}.{from}: expected an array of strings, found {}",
                kind(list)
            )));
        };
        lines.push(format!("{to} = {}", toml::Value::Array(names)));
    }
    if entry.get("trust") == Some(&Value::Bool(true)) {
        notes.push(
            "`trust` (Gemini CLI: no confirmation before calls) is the client's setting: set it on the entry that starts mcp-envelope"
                .into(),
        );
    }
    Ok(())
}

/// `name` without `__` and not yet in `used` (suffix `_2`, `_3`, …); records the result.
fn unique_name(name: &str, used: &mut BTreeSet<String>) -> String {
    let mut base = if name.is_empty() {
        "server".to_string()
    } else {
        name.to_string()
    };
    while base.contains("__") {
        base = base.replace("__", "_");
    }
    let mut candidate = base.clone();
    let mut n = 2;
    while !used.insert(candidate.clone()) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    candidate
}

/// Rewrites `${...}` references into the proxy's `${NAME}` form (`${env:NAME}`, `${input:ID}`,
/// `${NAME:-default}` without its default); records every NAME used.
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
            // A shell-style default (`${VAR:-default}`, Claude Code's `.mcp.json`): the proxy's
            // config has no defaults, so the variable must be set; it is listed with the others.
            Some((var, default)) if default.starts_with('-') => sanitize_var(var),
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
    upper_var(text)
}

/// `text` as a variable name: upper case, every character other than an ASCII letter or digit
/// made `_`, and a leading `_` when it would start with a digit.
fn upper_var(text: &str) -> String {
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
mod tests;
