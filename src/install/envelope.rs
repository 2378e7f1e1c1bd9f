//! Adding moved servers to the proxy's own config and removing them again, with `toml_edit`
//! so that everything else in the file (comments, order, other tables) stays as written.

use std::collections::BTreeSet;

use toml_edit::{DocumentMut, Item, Table};

use super::InstallError;

/// The proxy's config after a merge.
pub(super) struct Merged {
    /// The new text.
    pub text: String,
    /// `(name in the import, name in the config)` of the tables added.
    pub added: Vec<(String, String)>,
    /// `(name in the import, name in the config)` of every table the install relies on:
    /// the added ones and those that were already there with the same settings.
    pub used: Vec<(String, String)>,
}

/// The first lines of a config that install creates.
const NEW_CONFIG_HEADER: &str = "# mcp-envelope's config, written by `mcp-envelope install`. Check it with\n# `mcp-envelope check`; `mcp-envelope uninstall CLIENT` takes the servers back.\n\n";

fn parse(text: &str, what: &str) -> Result<DocumentMut, InstallError> {
    text.parse::<DocumentMut>().map_err(|e| {
        let why = crate::config::toml_syntax_error(text, &e);
        InstallError(format!("{what} is not valid TOML: {why}"))
    })
}

/// The `mcp_servers` table of `doc`, created (implicit, so no header line) when missing.
pub(super) fn servers_table<'d>(
    doc: &'d mut DocumentMut,
    what: &str,
) -> Result<&'d mut Table, InstallError> {
    let entry = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    if let Item::Value(toml_edit::Value::InlineTable(_)) = entry {
        let inline = std::mem::take(entry);
        if let Item::Value(toml_edit::Value::InlineTable(t)) = inline {
            *entry = Item::Table(t.into_table());
        }
    }
    entry
        .as_table_mut()
        .ok_or_else(|| InstallError(format!("{what}: `mcp_servers` is not a table")))
}

/// The value of a table as plain TOML data (comments and layout ignored), for comparing.
pub(super) fn plain(item: &Item) -> Option<toml::Value> {
    let mut doc = DocumentMut::new();
    doc.insert("x", item.clone());
    let table: toml::Table = toml::from_str(&doc.to_string()).ok()?;
    table.get("x").cloned()
}

/// The highest table position in `doc` (tables are printed in position order).
pub(super) fn max_position(doc: &DocumentMut) -> usize {
    fn walk(table: &Table, max: &mut usize) {
        if let Some(p) = table.position() {
            *max = (*max).max(p);
        }
        for (_, item) in table.iter() {
            match item {
                Item::Table(t) => walk(t, max),
                Item::ArrayOfTables(a) => a.iter().for_each(|t| walk(t, max)),
                _ => {}
            }
        }
    }
    let mut max = 0;
    walk(doc.as_table(), &mut max);
    max
}

/// Gives the tables in `item` the positions `*next`, `*next + 1`, … so they print after
/// every table numbered below `*next`, in their own order.
pub(super) fn renumber(item: &mut Item, next: &mut usize) {
    let visit = |t: &mut Table, next: &mut usize| {
        t.set_position(*next);
        *next += 1;
        for (_, child) in t.iter_mut() {
            renumber(child, next);
        }
    };
    match item {
        Item::Table(t) => visit(t, next),
        Item::ArrayOfTables(a) => a.iter_mut().for_each(|t| visit(t, next)),
        _ => {}
    }
}

/// Adds the `[mcp_servers.NAME]` tables of `import_toml` to the proxy's config `current`
/// (`None`: a new file). A table equal (as data) to one already there is not added again; a
/// name taken by a different table gets a `_2`, `_3`, … suffix and a comment. `header` goes
/// above the first table added.
pub(super) fn merge(
    current: Option<&str>,
    import_toml: &str,
    header: &str,
) -> Result<Merged, InstallError> {
    let mut doc = match current {
        Some(text) => parse(text, "the mcp-envelope config")?,
        None => DocumentMut::new(),
    };
    let import = parse(import_toml, "the converted servers")?;
    let mut next = max_position(&doc) + 1;
    let servers = servers_table(&mut doc, "the mcp-envelope config")?;
    let mut taken: BTreeSet<String> = servers.iter().map(|(k, _)| k.to_string()).collect();
    let (mut added, mut used) = (Vec::new(), Vec::new());
    let Some(incoming) = import.get("mcp_servers").and_then(Item::as_table) else {
        return Ok(Merged {
            text: doc.to_string(),
            added,
            used,
        });
    };
    for (name, item) in incoming.iter() {
        if let Some(existing) = servers.get(name) {
            if plain(existing).is_some() && plain(existing) == plain(item) {
                used.push((name.to_string(), name.to_string()));
                continue;
            }
        }
        let mut item = item.clone();
        let mut new_name = name.to_string();
        let mut n = 2;
        while taken.contains(&new_name) {
            new_name = format!("{name}_{n}");
            n += 1;
        }
        taken.insert(new_name.clone());
        let mut prefix = String::new();
        if added.is_empty() {
            if current.is_none() {
                prefix.push_str(NEW_CONFIG_HEADER);
            } else {
                prefix.push('\n');
            }
            prefix.push_str(header);
        }
        if new_name != name {
            prefix.push_str(&format!(
                "# renamed from {name:?}: a server of that name with other settings is already configured\n"
            ));
        }
        if let Some(t) = item.as_table_mut() {
            let old = t.decor().prefix().and_then(|p| p.as_str()).unwrap_or("");
            let old = old.trim_start_matches('\n').to_string();
            t.decor_mut().set_prefix(format!("{prefix}{old}"));
        }
        renumber(&mut item, &mut next);
        servers.insert(&new_name, item);
        added.push((name.to_string(), new_name.clone()));
        used.push((name.to_string(), new_name));
    }
    Ok(Merged {
        text: doc.to_string(),
        added,
        used,
    })
}

/// Removes the tables `names` from the proxy's config `text`. Returns the new text (`None`:
/// delete the file, because install created it and no server is left in it) and the names
/// removed.
pub(super) fn remove(
    text: &str,
    names: &[String],
    created: bool,
) -> Result<(Option<String>, Vec<String>), InstallError> {
    let mut doc = parse(text, "the mcp-envelope config")?;
    let mut removed = Vec::new();
    if let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_like_mut) {
        for name in names {
            if servers.remove(name).is_some() {
                removed.push(name.clone());
            }
        }
    }
    let empty_servers = doc
        .get("mcp_servers")
        .and_then(Item::as_table_like)
        .is_none_or(|t| t.is_empty());
    let text = doc.to_string();
    let nothing_left = created && empty_servers && doc.iter().all(|(k, _)| k == "mcp_servers");
    if nothing_left || text.trim().is_empty() {
        return Ok((None, removed));
    }
    Ok((Some(text), removed))
}

#[cfg(test)]
mod tests {
    use super::*;

    const IMPORT: &str = "# git notes\n[mcp_servers.git]\ncommand = \"uvx\"\nargs = [\"mcp-server-git\"]\n\n[mcp_servers.time]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\n[mcp_servers.time.env]\nTZ = \"UTC\"\n";

    #[test]
    fn merge_into_nothing_then_into_itself() {
        let m = merge(None, IMPORT, "# Moved from x.\n").unwrap();
        assert!(m.text.starts_with(NEW_CONFIG_HEADER), "{}", m.text);
        assert!(
            m.text
                .contains("# Moved from x.\n# git notes\n[mcp_servers.git]"),
            "{}",
            m.text
        );
        assert!(
            m.text.contains("[mcp_servers.time.env]\nTZ = \"UTC\""),
            "{}",
            m.text
        );
        assert_eq!(m.added.len(), 2);
        // The same servers again: nothing added, both used, text unchanged.
        let again = merge(Some(&m.text), IMPORT, "# Moved from y.\n").unwrap();
        assert_eq!(again.text, m.text);
        assert!(again.added.is_empty());
        assert_eq!(again.used.len(), 2);
    }

    #[test]
    fn merge_keeps_existing_text_and_renames_a_different_server() {
        let existing = "# my config\n[defaults]\nchar_budget = 100 # small\n\n[mcp_servers.git]\ncommand = \"other\"\n\n[mcp_servers.git.tools.git_log]\nchar_budget = 5\n";
        let m = merge(Some(existing), IMPORT, "# Moved from x.\n").unwrap();
        assert!(m.text.starts_with(existing), "{}", m.text);
        assert!(m.text.contains("# renamed from \"git\""), "{}", m.text);
        assert!(
            m.text.contains("[mcp_servers.git_2]\ncommand = \"uvx\""),
            "{}",
            m.text
        );
        assert_eq!(
            m.added,
            [
                ("git".into(), "git_2".into()),
                ("time".into(), "time".into())
            ]
        );
        let config =
            crate::config::Config::parse(&m.text, std::path::Path::new("/c.toml"), &|_| None)
                .unwrap();
        assert_eq!(config.servers.len(), 3);
        // Removing what was added gives the original text back.
        let (text, removed) = remove(&m.text, &["git_2".into(), "time".into()], false).unwrap();
        assert_eq!(text.as_deref(), Some(existing));
        assert_eq!(removed, ["git_2", "time"]);
    }

    #[test]
    fn remove_deletes_a_created_file_left_empty() {
        let m = merge(None, IMPORT, "# Moved from x.\n").unwrap();
        let (text, _) = remove(&m.text, &["git".into(), "time".into()], true).unwrap();
        assert_eq!(text, None);
        let (text, _) = remove(&m.text, &["git".into()], true).unwrap();
        assert!(text.unwrap().contains("[mcp_servers.time]"));
    }
}
