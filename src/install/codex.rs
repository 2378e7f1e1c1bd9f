//! Install into and uninstall from Codex's `config.toml`, edited with `toml_edit`: the moved
//! `[mcp_servers.NAME]` tables leave with the comments above and inside them; everything else
//! (other settings, comments, order) stays as written.
//!
//! Codex passes only a few variables (HOME, PATH, USER, …) plus a server's `env` and
//! `env_vars` to the program it starts, so the proxy's entry lists in `env_vars` every
//! variable the moved servers had in theirs. Its `startup_timeout_sec` covers the slowest moved
//! server (the proxy answers `initialize` once its servers are up): the longest moved startup
//! timeout, or the proxy's 20 s default, plus 10 s. Its `tool_timeout_sec` is the longest moved
//! one when that exceeds Codex's 60 s default.

use toml_edit::{value, Array, DocumentMut, Item, Table, TableLike};

use super::envelope::{max_position, renumber, servers_table};
use super::{sort_servers, InstallError, InstallInput, Launcher, MovedPart, Record, ENTRY_NAME};
use crate::import::codex_tables_to_toml;

fn parse(text: &str, path: &str) -> Result<DocumentMut, InstallError> {
    text.parse::<DocumentMut>().map_err(|e| {
        let why = crate::config::toml_syntax_error(text, &e);
        InstallError(format!("{path} is not valid TOML: {why}"))
    })
}

/// A number of seconds from a TOML integer or float.
fn seconds(item: Option<&Item>) -> Option<f64> {
    let v = item?;
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}

/// What the proxy's entry needs to know of the moved tables.
#[derive(Default)]
struct Needs {
    env_vars: Vec<String>,
    startup_sec: Option<f64>,
    tool_sec: Option<f64>,
}

fn larger(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

fn needs(servers: &dyn TableLike, moved: &[String]) -> Needs {
    let mut n = Needs::default();
    for name in moved {
        let Some(t) = servers.get(name).and_then(Item::as_table_like) else {
            continue;
        };
        if let Some(list) = t.get("env_vars").and_then(Item::as_array) {
            for v in list.iter() {
                let name = v
                    .as_str()
                    .or_else(|| v.as_inline_table()?.get("name")?.as_str());
                if let Some(name) = name.filter(|s| !n.env_vars.iter().any(|e| e == s)) {
                    n.env_vars.push(name.to_string());
                }
            }
        }
        let startup = seconds(t.get("startup_timeout_sec")).or_else(|| {
            t.get("startup_timeout_ms")
                .and_then(Item::as_integer)
                .map(|ms| ms as f64 / 1000.0)
        });
        n.startup_sec = larger(n.startup_sec, startup);
        n.tool_sec = larger(n.tool_sec, seconds(t.get("tool_timeout_sec")));
    }
    n
}

/// The proxy's Codex entry for a first install.
fn new_entry(launcher: &Launcher, needs: &Needs, config_note: &str) -> Table {
    let mut t = Table::new();
    t.decor_mut().set_prefix(format!(
        "\n# Starts mcp-envelope; {config_note}\n# `mcp-envelope uninstall codex` puts the servers back here.\n"
    ));
    t.insert("command", value(launcher.program.as_str()));
    t.insert("args", value(Array::from_iter(launcher.args())));
    let startup = needs.startup_sec.unwrap_or(20.0).max(20.0) + 10.0;
    t.insert("startup_timeout_sec", value(startup.ceil() as i64));
    if let Some(tool) = needs.tool_sec.filter(|s| *s > 60.0) {
        t.insert("tool_timeout_sec", value(tool.ceil() as i64));
    }
    if !needs.env_vars.is_empty() {
        t.insert("env_vars", value(Array::from_iter(needs.env_vars.iter())));
    }
    t
}

/// Updates an existing proxy entry: `command` and `args` when they differ, `env_vars` extended
/// with the ones missing. Returns whether anything changed.
fn update_entry(t: &mut dyn TableLike, launcher: &Launcher, needs: &Needs) -> bool {
    let mut changed = false;
    if t.get("command").and_then(Item::as_str) != Some(launcher.program.as_str()) {
        t.insert("command", value(launcher.program.as_str()));
        changed = true;
    }
    let args: Option<Vec<&str>> = t
        .get("args")
        .and_then(Item::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect());
    if args != Some(launcher.args().iter().map(String::as_str).collect()) {
        t.insert("args", value(Array::from_iter(launcher.args())));
        changed = true;
    }
    let mut have: Vec<String> = t
        .get("env_vars")
        .and_then(Item::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let missing: Vec<&String> = needs
        .env_vars
        .iter()
        .filter(|v| !have.contains(v))
        .collect();
    if !missing.is_empty() {
        have.extend(missing.into_iter().cloned());
        t.insert("env_vars", value(Array::from_iter(have)));
        changed = true;
    }
    changed
}

/// Plans the Codex side of an install (see the module doc).
pub(super) fn plan(input: &InstallInput<'_>) -> Result<MovedPart, InstallError> {
    let path = input.client_path.display().to_string();
    let text = input.client_text.unwrap_or("");
    let mut doc = parse(text, &path)?;
    let created = doc.get("mcp_servers").is_none();
    let end = max_position(&doc) + 1;
    let servers = servers_table(&mut doc, &path)?;
    let original_order: Vec<String> = servers.iter().map(|(k, _)| k.to_string()).collect();
    let entries = servers.iter().map(|(name, item)| {
        let view = item.as_table_like().map(|t| {
            let command = t.get("command").and_then(Item::as_str);
            (command, command.is_none() && t.contains_key("url"))
        });
        (name, view)
    });
    let (moved, left) = sort_servers(entries, "table");
    // The proxy's entry takes the place of the first server moved (or goes at the end).
    let mut next = moved
        .first()
        .and_then(|n| servers.get(n))
        .and_then(Item::as_table)
        .and_then(Table::position)
        .unwrap_or(end);
    let names: Vec<&str> = moved.iter().map(String::as_str).collect();
    let import_toml = if moved.is_empty() {
        String::new()
    } else {
        codex_tables_to_toml(servers, &names).map_err(|e| InstallError(format!("{path}: {e}")))?
    };
    let mut moved_doc = DocumentMut::new();
    let moved_servers = servers_table(&mut moved_doc, "moved")?;
    for name in &moved {
        if let Some(item) = servers.remove(name) {
            moved_servers.insert(name, item);
        }
    }
    let needs = needs(moved_servers, &moved);
    let note = format!("the servers it serves are in {}.", input.launcher.config);
    let entry_changed = match servers
        .get_mut(ENTRY_NAME)
        .and_then(Item::as_table_like_mut)
    {
        Some(existing) => update_entry(existing, input.launcher, &needs),
        None => {
            let mut item = Item::Table(new_entry(input.launcher, &needs, &note));
            renumber(&mut item, &mut next);
            servers.insert(ENTRY_NAME, item);
            true
        }
    };
    let client_after = if moved.is_empty() && !entry_changed {
        text.to_string()
    } else {
        doc.to_string()
    };
    Ok(MovedPart {
        client_after,
        import_toml,
        moved,
        left,
        servers_created: created,
        original_order,
        moved_json: serde_json::Map::new(),
        moved_toml: moved_doc.to_string(),
        notes: Vec::new(),
    })
}

/// Plans the Codex side of an uninstall: the proxy's entry removed, the moved tables back (at
/// the end), and whether the result is the same data as `backup` (`None`: no file before, same
/// means empty).
pub(super) fn restore(
    record: &Record,
    client_text: Option<&str>,
    backup: Option<&str>,
) -> Result<(String, bool), InstallError> {
    let path = record.client_config.display().to_string();
    let text = client_text.unwrap_or("");
    let mut doc = parse(text, &path)?;
    let moved = parse(&record.moved_toml, "the install record")?;
    let mut next = max_position(&doc) + 1;
    let servers = servers_table(&mut doc, &path)?;
    servers.remove(ENTRY_NAME);
    if let Some(moved) = moved.get("mcp_servers").and_then(Item::as_table) {
        for (name, item) in moved.iter() {
            if !servers.contains_key(name) {
                let mut item = item.clone();
                renumber(&mut item, &mut next);
                servers.insert(name, item);
            }
        }
    }
    if servers.is_empty() && (record.servers_created || record.original_absent) {
        doc.remove("mcp_servers");
    }
    let data = |t: &str| t.parse::<toml::Table>().ok();
    let after = doc.to_string();
    let same = match backup {
        Some(b) => data(b).is_some() && data(b) == data(&after),
        None => doc.iter().next().is_none(),
    };
    Ok((after, same))
}
