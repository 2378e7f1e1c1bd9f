//! Install into and uninstall from the JSON clients (Claude Code, Claude Desktop, Cursor,
//! VS Code, Gemini CLI). The document is edited as a `serde_json` value whose objects keep
//! their key order; it is written back over the file's own text so that only the changed
//! entries differ: everything else keeps its bytes (a compact object stays compact), and new
//! entries take the file's indentation (two spaces, four, a tab, or one line). A file with comments or trailing commas is refused (rewriting would drop them).

use serde_json::{json, Map, Value};

use super::{
    sort_servers, Client, InstallError, InstallInput, Launcher, MovedPart, Record, ENTRY_NAME,
};
use crate::import::{convert_servers, is_remote, strip_jsonc};

/// Parses a client's JSON; an empty or absent file is `{}`.
fn parse(text: &str, path: &str) -> Result<Value, InstallError> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    if strip_jsonc(text) != text {
        return Err(InstallError(format!(
            "{path} has comments or trailing commas, which rewriting it would drop; \
             nothing was changed. Move its servers by hand: `mcp-envelope import {path}` prints \
             them as mcp-envelope TOML; then replace them with the entry `mcp-envelope install \
             --dry-run` shows"
        )));
    }
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| InstallError(format!("{path} is not valid JSON: {e}")))?;
    if !doc.is_object() {
        return Err(InstallError(format!(
            "{path}: the top level is not an object"
        )));
    }
    Ok(doc)
}

/// The servers object (when there is one) and whether it was created.
type Found<'d> = (Option<&'d mut Map<String, Value>>, bool);

/// The object at `keys` in `doc`; created when `create` (then `.1` is true).
/// Errors: a step is not an object, or (not creating) a project is missing.
fn servers_object<'d>(
    doc: &'d mut Value,
    keys: &[String],
    create: bool,
) -> Result<Found<'d>, InstallError> {
    let mut here = doc;
    let mut created = false;
    for (i, key) in keys.iter().enumerate() {
        let path = keys[..=i].join(".");
        let Value::Object(map) = here else {
            return Err(InstallError(format!("{path}: the parent is not an object")));
        };
        if !map.contains_key(key) {
            if !create {
                return Ok((None, false));
            }
            if i + 1 < keys.len() && i > 0 {
                return Err(InstallError(format!(
                    "there is no project {key:?} in this file (start `claude` in that folder once, or leave out --project)"
                )));
            }
            map.insert(key.clone(), json!({}));
            created = true;
        }
        here = map.get_mut(key).expect("present");
    }
    match here {
        Value::Object(m) => Ok((Some(m), created)),
        other => Err(InstallError(format!(
            "{}: expected an object of servers, found {other}",
            keys.join(".")
        ))),
    }
}

/// The entry that starts the proxy, in the client's own shape. Gemini CLI's entry takes the
/// longest `timeout` of the moved servers, and `trust` when every moved server had it.
fn launcher_entry(client: Client, launcher: &Launcher, moved: &Map<String, Value>) -> Value {
    let mut entry = Map::new();
    if matches!(client, Client::ClaudeCode | Client::Vscode) {
        entry.insert("type".into(), json!("stdio"));
    }
    entry.insert("command".into(), json!(launcher.program));
    entry.insert("args".into(), json!(launcher.args()));
    if client == Client::Gemini {
        let timeout = moved
            .values()
            .filter_map(|e| e.get("timeout").and_then(Value::as_u64))
            .max();
        if let Some(ms) = timeout {
            entry.insert("timeout".into(), json!(ms));
        }
        if !moved.is_empty() && moved.values().all(|e| e.get("trust") == Some(&json!(true))) {
            entry.insert("trust".into(), json!(true));
        }
    }
    Value::Object(entry)
}

/// Puts the launcher entry in `servers`: added when missing, `command` and `args` updated when
/// they differ, left alone otherwise. Returns whether anything changed.
fn place_entry(servers: &mut Map<String, Value>, entry: Value) -> bool {
    match servers.get_mut(ENTRY_NAME) {
        Some(Value::Object(existing)) => {
            let mut changed = false;
            for key in ["command", "args"] {
                if existing.get(key) != entry.get(key) {
                    existing.insert(key.into(), entry[key].clone());
                    changed = true;
                }
            }
            changed
        }
        _ => {
            servers.insert(ENTRY_NAME.into(), entry);
            true
        }
    }
}

/// Each entry of a servers object as [`sort_servers`] sees it.
fn entry_views(servers: &Map<String, Value>) -> impl Iterator<Item = super::EntryView<'_>> {
    servers.iter().map(|(name, entry)| {
        let view = entry
            .as_object()
            .map(|obj| (obj.get("command").and_then(Value::as_str), is_remote(obj)));
        (name.as_str(), view)
    })
}

/// Claude Code's user scope (no `--project`) moves the top-level `mcpServers` only: when the
/// file's projects have local-scope servers (`projects.DIR.mcpServers`) that an install with
/// `--project DIR` would move, notes saying how many, where, and the command that moves them
/// (an install of a file with only such servers registered an empty proxy, without a word).
fn local_scope_notes(input: &InstallInput<'_>, doc: &Value) -> Vec<String> {
    let projects = doc.get("projects").and_then(Value::as_object);
    let (Client::ClaudeCode, None, Some(projects)) = (input.client, input.project, projects) else {
        return Vec::new();
    };
    let found: Vec<(&String, Vec<String>)> = projects
        .iter()
        .filter_map(|(dir, project)| {
            let servers = project.get("mcpServers")?.as_object()?;
            let (movable, _) = sort_servers(entry_views(servers), "object");
            (!movable.is_empty()).then_some((dir, movable))
        })
        .collect();
    if found.is_empty() {
        return Vec::new();
    }
    let total: usize = found.iter().map(|(_, names)| names.len()).sum();
    let mut notes = vec![format!(
        "note: found {total} local-scope server(s) in {} Claude Code project(s), which an install \
         without --project leaves where they are; to move a project's servers behind the proxy:",
        found.len()
    )];
    for (dir, names) in found {
        notes.push(format!(
            "  {dir} ({}): mcp-envelope install claude-code --project {} --config {}",
            names.join(", "),
            shell_word(dir),
            shell_word(&input.launcher.config)
        ));
    }
    notes
}

/// `word` as one shell word: as it is when it has no character the shell treats specially,
/// else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:=@%,~".contains(c);
    if !word.is_empty() && word.chars().all(plain) && !word.starts_with('~') {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Plans the JSON side of an install (see the module doc).
pub(super) fn plan(input: &InstallInput<'_>) -> Result<MovedPart, InstallError> {
    let path = input.client_path.display().to_string();
    let text = input.client_text.unwrap_or("");
    let mut doc = parse(text, &path)?;
    let notes = local_scope_notes(input, &doc);
    let inputs = doc.get("inputs").cloned();
    let keys = input.client.servers_path(input.project);
    let (servers, created) = servers_object(&mut doc, &keys, true)?;
    let servers = servers.expect("created");
    let original_order: Vec<String> = servers.keys().cloned().collect();
    let (names, left) = sort_servers(entry_views(servers), "object");
    let moved: Map<String, Value> = names
        .into_iter()
        .map(|name| {
            let entry = servers[&name].clone();
            (name, entry)
        })
        .collect();
    let import_toml = if moved.is_empty() {
        String::new()
    } else {
        let key = if input.client == Client::Vscode {
            "servers"
        } else {
            "mcpServers"
        };
        let mut d = Map::new();
        d.insert(key.into(), Value::Object(moved.clone()));
        if let Some(inputs) = inputs {
            d.insert("inputs".into(), inputs);
        }
        convert_servers(&Value::Object(d)).map_err(|e| InstallError(format!("{path}: {e}")))?
    };
    for name in moved.keys() {
        servers.shift_remove(name);
    }
    let entry = launcher_entry(input.client, input.launcher, &moved);
    let entry_changed = place_entry(servers, entry);
    let client_after = if moved.is_empty() && !entry_changed && !created {
        text.to_string()
    } else {
        write_edited(&doc, text)
    };
    Ok(MovedPart {
        client_after,
        import_toml,
        moved: moved.keys().cloned().collect(),
        left,
        servers_created: created,
        original_order,
        moved_json: moved,
        moved_toml: String::new(),
        notes,
    })
}

/// Plans the JSON side of an uninstall: the client's document with the proxy's entry removed
/// and the moved entries back in their old order, as text, and whether it is the same
/// document as `backup` (`None`: the file did not exist, same means `{}`).
pub(super) fn restore(
    record: &Record,
    client_text: Option<&str>,
    backup: Option<&str>,
) -> Result<(String, bool), InstallError> {
    let path = record.client_config.display().to_string();
    let text = client_text.unwrap_or("");
    let mut doc = parse(text, &path)?;
    let keys = record.client.servers_path(record.project.as_deref());
    let create = !record.moved_json.is_empty();
    if let (Some(servers), _) = servers_object(&mut doc, &keys, create)? {
        servers.shift_remove(ENTRY_NAME);
        let mut rest = std::mem::take(servers);
        for name in &record.original_order {
            if let Some(entry) = record.moved_json.get(name) {
                servers.insert(name.clone(), entry.clone());
                rest.shift_remove(name);
            } else if let Some(entry) = rest.shift_remove(name) {
                servers.insert(name.clone(), entry);
            }
        }
        servers.extend(rest);
        for (name, entry) in &record.moved_json {
            servers.entry(name.clone()).or_insert_with(|| entry.clone());
        }
        if record.servers_created && servers.is_empty() {
            remove_at(&mut doc, &keys);
        }
    }
    let same = match backup {
        Some(b) => parse(b, &path).is_ok_and(|original| original == doc),
        None => doc == json!({}),
    };
    Ok((write_edited(&doc, text), same))
}

/// Removes the key at `keys` from `doc`.
fn remove_at(doc: &mut Value, keys: &[String]) {
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut here = doc;
    for key in parents {
        match here.get_mut(key) {
            Some(next) => here = next,
            None => return,
        }
    }
    if let Value::Object(map) = here {
        map.shift_remove(last);
    }
}

/// `doc` written over `original` changing only what changed ([`super::json_text`]); the whole
/// document in the style of `original` ([`write_like`]) when `original` is empty.
fn write_edited(doc: &Value, original: &str) -> String {
    serde_json::from_str::<Value>(original)
        .ok()
        .and_then(|old| super::json_text::write_over(original, &old, doc))
        .unwrap_or_else(|| write_like(doc, original))
}

/// `doc` as text in the style of `original`: its indentation (the first indented line's
/// leading whitespace; two spaces for a new file), one line when `original` was one line, and
/// a final newline when `original` had one (or was empty).
pub(super) fn write_like(doc: &Value, original: &str) -> String {
    let trimmed = original.trim();
    let one_line = !trimmed.is_empty() && !trimmed.contains('\n');
    let unit = super::json_text::indent_unit(original);
    let mut out = super::json_text::serialize_at(doc, !one_line, "", unit);
    if original.is_empty() || original.ends_with('\n') {
        out.push('\n');
    }
    out
}
