//! `mcp-envelope install CLIENT` and `uninstall CLIENT`: move a client's stdio MCP servers
//! behind the proxy in one step, and undo it. Pure planning here and in the submodules (texts
//! in, texts out); [`files`] does the reading, writing and backups.
//!
//! Install, for one client config file (and, for Claude Code, optionally one project in it):
//! 1. every stdio server entry is converted as `mcp-envelope import` converts it and added to
//!    the proxy's config (merged: a server of the same name and the same settings is not added
//!    twice; a different one gets a `_2` suffix, noted in a comment);
//! 2. those entries are removed from the client's config, and one entry named
//!    [`ENTRY_NAME`] that starts this binary with `--config <the proxy's config>` is added;
//!    remote (url) entries, entries without a command and entries that already start
//!    mcp-envelope stay as they are;
//! 3. everything else in the client's file is kept: unknown keys, key order, and, in Codex's
//!    TOML, comments. A JSON file with comments or trailing commas (JSONC) is refused with
//!    a message saying what to change by hand, because rewriting it would drop them.
//!
//! Installing again changes nothing unless new servers appeared in the client's config (those
//! are moved too). Uninstall puts the moved entries back and removes the proxy's entry; when the
//! result is the same document as the backup taken before the first install, the backup's
//! bytes are written back exactly. It removes from the proxy's config the servers that install
//! added and that no other install still uses.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

mod codex;
mod envelope;
pub mod files;
mod json;
mod json_text;
mod records;

/// The name of the entry that starts mcp-envelope in a client's config.
pub const ENTRY_NAME: &str = "mcp-envelope";

/// An agent client whose MCP config `install` can rewrite.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, PartialOrd, Ord,
)]
#[serde(rename_all = "kebab-case")]
pub enum Client {
    /// Claude Code: `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`), top-level
    /// `mcpServers` (user scope), or `projects.<DIR>.mcpServers` with `--project DIR` (local
    /// scope); a project's `.mcp.json` with `--client-config`.
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json`, `mcpServers`.
    ClaudeDesktop,
    /// Codex: `$CODEX_HOME/config.toml` (`~/.codex/config.toml`), `[mcp_servers.NAME]`.
    Codex,
    /// Cursor: `~/.cursor/mcp.json`, `mcpServers`.
    Cursor,
    /// VS Code: the user profile's `mcp.json`, `servers` (a workspace's `.vscode/mcp.json`
    /// with `--client-config`).
    Vscode,
    /// Gemini CLI: `~/.gemini/settings.json`, `mcpServers`.
    Gemini,
}

impl Client {
    /// The name on the command line (`claude-code`, `claude-desktop`, `codex`, `cursor`,
    /// `vscode`, `gemini`).
    pub fn id(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Codex => "codex",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::Gemini => "gemini",
        }
    }

    /// The client's user-level config file, from the environment (`HOME`, `XDG_CONFIG_HOME`,
    /// `CODEX_HOME`, `CLAUDE_CONFIG_DIR`), for this operating system (Linux and macOS paths).
    ///
    /// Errors: `HOME` is unset or empty (and the client's own variable is too).
    pub fn default_config_path(
        self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<PathBuf, InstallError> {
        let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = || {
            var("HOME").ok_or_else(|| {
                InstallError("HOME is not set; give the file with --client-config".into())
            })
        };
        let mac = cfg!(target_os = "macos");
        let config_home = || -> Result<PathBuf, InstallError> {
            Ok(match var("XDG_CONFIG_HOME").filter(|p| p.is_absolute()) {
                Some(p) => p,
                None => home()?.join(".config"),
            })
        };
        let support =
            || -> Result<PathBuf, InstallError> { Ok(home()?.join("Library/Application Support")) };
        Ok(match self {
            Client::ClaudeCode => match var("CLAUDE_CONFIG_DIR") {
                Some(dir) => dir.join(".claude.json"),
                None => home()?.join(".claude.json"),
            },
            Client::ClaudeDesktop if mac => support()?.join("Claude/claude_desktop_config.json"),
            Client::ClaudeDesktop => config_home()?.join("Claude/claude_desktop_config.json"),
            Client::Codex => match var("CODEX_HOME") {
                Some(dir) => dir.join("config.toml"),
                None => home()?.join(".codex/config.toml"),
            },
            Client::Cursor => home()?.join(".cursor/mcp.json"),
            Client::Vscode if mac => support()?.join("Code/User/mcp.json"),
            Client::Vscode => config_home()?.join("Code/User/mcp.json"),
            Client::Gemini => home()?.join(".gemini/settings.json"),
        })
    }

    /// The key path of the servers object in the client's JSON (`["mcpServers"]`,
    /// `["servers"]` for VS Code, `["projects", DIR, "mcpServers"]` for a Claude Code project).
    fn servers_path(self, project: Option<&str>) -> Vec<String> {
        match (self, project) {
            (Client::ClaudeCode, Some(dir)) => {
                vec!["projects".into(), dir.into(), "mcpServers".into()]
            }
            (Client::Vscode, _) => vec!["servers".into()],
            _ => vec!["mcpServers".into()],
        }
    }
}

/// Why install or uninstall cannot go ahead; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InstallError(pub String);

/// How the client starts the proxy: this binary's absolute path and the proxy config's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// Absolute path of the mcp-envelope binary.
    pub program: String,
    /// Absolute path of the proxy's config file (given as `--config`).
    pub config: String,
}

impl Launcher {
    /// The arguments of the entry: `["--config", <config>]`.
    fn args(&self) -> Vec<String> {
        vec!["--config".into(), self.config.clone()]
    }
}

/// What one client's install did, kept (as JSON, mode 0600) until uninstall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The client.
    pub client: Client,
    /// The client's config file.
    pub client_config: PathBuf,
    /// Claude Code project directory, when the servers came from `projects.<DIR>`.
    pub project: Option<String>,
    /// The client's file did not exist before the first install.
    pub original_absent: bool,
    /// The servers object (JSON) or `mcp_servers` table (Codex) was created by install.
    pub servers_created: bool,
    /// The server names in the client's servers object before the first install, in order.
    pub original_order: Vec<String>,
    /// Moved JSON entries, by their name in the client, as they were.
    pub moved_json: serde_json::Map<String, serde_json::Value>,
    /// Moved Codex tables as TOML text (`[mcp_servers.NAME]` tables), as they were.
    pub moved_toml: String,
    /// Servers that install added to the proxy's config.
    pub added: Vec<String>,
    /// Servers of the proxy's config that this install relies on (added or already there).
    pub uses: Vec<String>,
    /// The proxy's config file did not exist before the first install.
    pub envelope_created: bool,
    /// The proxy's config file the servers were moved into (`None` in a record made before
    /// records said it: the config beside the record's folder).
    #[serde(default)]
    pub envelope_config: Option<PathBuf>,
}

/// Everything `install` needs, as read by the caller.
#[derive(Debug, Clone)]
pub struct InstallInput<'a> {
    /// The client.
    pub client: Client,
    /// Claude Code project directory (`--project`).
    pub project: Option<&'a str>,
    /// The client's config file (for messages and the record).
    pub client_path: PathBuf,
    /// Its text; `None` when it does not exist.
    pub client_text: Option<&'a str>,
    /// The proxy's config text; `None` when it does not exist.
    pub envelope_text: Option<&'a str>,
    /// How the client is to start the proxy.
    pub launcher: &'a Launcher,
    /// The record of an earlier install of the same client file (and project).
    pub previous: Option<&'a Record>,
}

/// The result of planning an install: the new texts and what happened.
#[derive(Debug, Clone, PartialEq)]
pub struct InstallPlan {
    /// The client's config after install (equal to the input when nothing changes).
    pub client_after: String,
    /// The proxy's config after install.
    pub envelope_after: String,
    /// Names moved from the client this time.
    pub moved: Vec<String>,
    /// `(name in the client, name in the proxy's config)` for servers added this time;
    /// names differ when one of that name with other settings was already there.
    pub added: Vec<(String, String)>,
    /// Lines to show after the summary: servers elsewhere in the file that this install does
    /// not move, and how to move them (Claude Code's local scope).
    pub notes: Vec<String>,
    /// Entries left in the client, each `name: why`.
    pub left: Vec<String>,
    /// The record to keep.
    pub record: Record,
}

/// The result of planning an uninstall.
#[derive(Debug, Clone, PartialEq)]
pub struct UninstallPlan {
    /// The client's config after uninstall; `None`: delete the file (it did not exist before).
    pub client_after: Option<String>,
    /// The result is the backup, byte for byte.
    pub exact: bool,
    /// The proxy's config after uninstall; `None`: delete it (install created it and nothing
    /// else is left in it).
    pub envelope_after: Option<String>,
    /// Servers removed from the proxy's config.
    pub removed: Vec<String>,
}

/// Plans an install (pure). Errors: the client's file is not valid JSON/TOML, is JSONC, has a
/// servers object of the wrong type, or the proxy's config is not valid TOML.
pub fn plan_install(input: &InstallInput<'_>) -> Result<InstallPlan, InstallError> {
    let moved_part = match input.client {
        Client::Codex => codex::plan(input)?,
        _ => json::plan(input)?,
    };
    let header = format!(
        "# Moved from {} by `mcp-envelope install {}`.\n",
        input.client_path.display(),
        input.client.id()
    );
    let merged = envelope::merge(input.envelope_text, &moved_part.import_toml, &header)?;
    let mut record = match input.previous {
        Some(previous) => previous.clone(),
        None => Record {
            client: input.client,
            client_config: input.client_path.clone(),
            project: input.project.map(str::to_owned),
            original_absent: input.client_text.is_none(),
            servers_created: moved_part.servers_created,
            original_order: moved_part.original_order.clone(),
            moved_json: serde_json::Map::new(),
            moved_toml: String::new(),
            added: Vec::new(),
            uses: Vec::new(),
            envelope_created: input.envelope_text.is_none(),
            envelope_config: None,
        },
    };
    record
        .envelope_config
        .get_or_insert_with(|| PathBuf::from(&input.launcher.config));
    for (k, v) in moved_part.moved_json {
        record.moved_json.insert(k, v);
    }
    record.moved_toml.push_str(&moved_part.moved_toml);
    let mut uses: BTreeSet<String> = record.uses.iter().cloned().collect();
    for (_, name) in &merged.used {
        uses.insert(name.clone());
    }
    for (_, name) in &merged.added {
        if !record.added.contains(name) {
            record.added.push(name.clone());
        }
    }
    record.uses = uses.into_iter().collect();
    Ok(InstallPlan {
        client_after: keep_line_endings(input.client_text, moved_part.client_after),
        envelope_after: keep_line_endings(input.envelope_text, merged.text),
        moved: moved_part.moved,
        added: merged.added,
        left: moved_part.left,
        notes: moved_part.notes,
        record,
    })
}

/// Plans an uninstall (pure): `client_text` and `backup` are the client's file now and before
/// the first install (`None` when absent); `envelope_text` is the proxy's config now; `others`
/// are the servers other installs still use. Errors: a file is not valid JSON/TOML.
pub fn plan_uninstall(
    record: &Record,
    client_text: Option<&str>,
    backup: Option<&str>,
    envelope_text: Option<&str>,
    others: &BTreeSet<String>,
) -> Result<UninstallPlan, InstallError> {
    let (restored, same_as_backup) = match record.client {
        Client::Codex => codex::restore(record, client_text, backup)?,
        _ => json::restore(record, client_text, backup)?,
    };
    let (client_after, exact) = if same_as_backup {
        (backup.map(str::to_owned), true)
    } else {
        (Some(keep_line_endings(client_text, restored)), false)
    };
    let removable: Vec<String> = record
        .added
        .iter()
        .filter(|n| !others.contains(*n))
        .cloned()
        .collect();
    let (envelope_after, removed) = match envelope_text {
        None => (None, Vec::new()),
        Some(text) => {
            let (after, removed) = envelope::remove(text, &removable, record.envelope_created)?;
            (
                after.map(|after| keep_line_endings(Some(text), after)),
                removed,
            )
        }
    };
    Ok(UninstallPlan {
        client_after,
        exact,
        envelope_after,
        removed,
    })
}

/// After `record` is uninstalled, what another install into the same client file, made after
/// it, should keep as its backup: `record`'s `backup` bytes when undoing `record` in that later
/// install's backup (`later_backup`, which then holds `record`'s changes) gives the same
/// document; `None` when it does not (the later install came first, or the file changed in
/// between) or `record` had no backup. So two installs into one file (Claude Code's user scope
/// and a `--project`) come back byte for byte in either uninstall order. Pure.
pub fn handed_over_backup(
    record: &Record,
    backup: Option<&str>,
    later_backup: &str,
) -> Option<String> {
    let backup = backup?;
    let (_, same) = match record.client {
        Client::Codex => codex::restore(record, Some(later_backup), Some(backup)),
        _ => json::restore(record, Some(later_backup), Some(backup)),
    }
    .ok()?;
    (same && later_backup != backup).then(|| backup.to_owned())
}

/// `edited` (a file's new text, whose added lines end in LF) with the line endings of
/// `original`, the file's text before: when its first line ends in CRLF, every line of
/// `edited` does (a CRLF file written on Windows stayed CRLF only where install did not touch
/// it); otherwise `edited` as it is.
fn keep_line_endings(original: Option<&str>, edited: String) -> String {
    let crlf = original
        .and_then(|text| text.split_once('\n'))
        .is_some_and(|(first, _)| first.ends_with('\r'));
    if !crlf {
        return edited;
    }
    let mut out = String::with_capacity(edited.len() + edited.len() / 16);
    for (i, line) in edited.split('\n').enumerate() {
        if i > 0 {
            out.push_str("\r\n");
        }
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
    }
    out
}

/// The part of an install plan that depends on the client's format.
struct MovedPart {
    client_after: String,
    /// The moved servers as mcp-envelope TOML (`[mcp_servers.NAME]` tables).
    import_toml: String,
    moved: Vec<String>,
    left: Vec<String>,
    servers_created: bool,
    original_order: Vec<String>,
    moved_json: serde_json::Map<String, serde_json::Value>,
    moved_toml: String,
    /// What the user should know beyond what moved ([`InstallPlan::notes`]).
    notes: Vec<String>,
}

/// Whether a command starts mcp-envelope (its file name is `mcp-envelope`): such an entry is
/// never moved into the proxy's own config.
fn runs_envelope(command: &str) -> bool {
    std::path::Path::new(command)
        .file_name()
        .is_some_and(|n| n == "mcp-envelope")
}

/// One server entry of a client's config as [`sort_servers`] sees it: its name, and its
/// `command` and whether it is a remote (`url`) server, or `None` when the entry is not a
/// table / object.
type EntryView<'a> = (&'a str, Option<(Option<&'a str>, bool)>);

/// Sorts a client's server entries into the names to move behind the proxy (stdio servers, in
/// order) and a reason for each one that stays; the proxy's own entry is skipped. `shape`
/// names what an entry should have been (`table`, `object`).
fn sort_servers<'a>(
    entries: impl Iterator<Item = EntryView<'a>>,
    shape: &str,
) -> (Vec<String>, Vec<String>) {
    let (mut moved, mut left) = (Vec::new(), Vec::new());
    for (name, view) in entries.filter(|(name, _)| *name != ENTRY_NAME) {
        let Some((command, remote)) = view else {
            left.push(format!("{name}: not a {shape}"));
            continue;
        };
        match why_left(name, command, remote) {
            Some(why) => left.push(why),
            None => moved.push(name.to_string()),
        }
    }
    (moved, left)
}

/// Why an entry stays in the client, or `None` when it is a stdio server to move.
fn why_left(name: &str, command: Option<&str>, remote: bool) -> Option<String> {
    if remote {
        return Some(format!(
            "{name}: a remote (url) server stays in the client; `mcp-envelope import` converts it"
        ));
    }
    match command {
        None => Some(format!("{name}: no command")),
        Some(c) if runs_envelope(c) => Some(format!("{name}: already starts mcp-envelope")),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests;
