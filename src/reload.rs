//! Hot reload of the config while `serve` runs: the file is looked at every second (its size,
//! modification time and inode, so an editor that replaces the file is seen too) and on
//! SIGHUP. A changed text is loaded and validated as at start; an invalid one leaves the
//! running config in place and logs a warning naming the file, line and key. An empty or
//! blank file (an editor mid-save) is not applied either: it is warned about, and the next
//! text with content is.
//!
//! A valid new config applies at once ([`crate::proxy::Core::apply_config`]): budgets,
//! timeouts, media, allow/deny lists, prefixes and tool tables from the next call and the next
//! `tools/list` on; a server whose launch changed (see [`server_changes`]) restarts; added (or
//! newly enabled) servers start, removed (or disabled) ones stop (a restarted or removed one
//! drains first: [`crate::downstream::Retirement`]); every connected client gets
//! `notifications/tools/list_changed` when the tools it sees changed (MCP 2025-11-25, "Server
//! Features: Tools: List Changed Notification"), and the prompts and resources ones when those
//! may have changed. `[transcript]` and `[paging]` changes need a restart of the proxy.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tracing::{info, warn};

use crate::config::{Config, ServerConfig};
use crate::proxy::Core;

/// How often the config file is looked at.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// What a new config changes about the running servers: names of the new config's order for
/// `start` and `restart`, of the old config's order for `stop`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Enabled now, not before (added or newly enabled).
    pub start: Vec<String>,
    /// Enabled before, not now (removed or disabled).
    pub stop: Vec<String>,
    /// Enabled in both, started differently.
    pub restart: Vec<String>,
    /// Enabled in both, started the same, with other settings changed (budgets, tool and
    /// prompt filters, `tool_prefix`, tool tables): applied without a restart.
    pub retuned: Vec<String>,
    /// Whether the `[defaults]`, `[transcript]` or `[paging]` tables changed.
    pub tables: bool,
}

impl Changes {
    /// Whether no server starts, stops or restarts (settings alone need none of that).
    pub fn is_empty(&self) -> bool {
        self.start.is_empty() && self.stop.is_empty() && self.restart.is_empty()
    }
}

/// Everything that decides how a server is started: `command`, `args`, `env`, `cwd`, `url`
/// with its headers and auth, `startup_timeout_sec`, `max_restarts`, `max_message_bytes`. A
/// change of any of them means a restart.
fn launch(config: &Config, s: &ServerConfig) -> impl PartialEq {
    (
        s.program.clone(),
        s.args.clone(),
        s.env.clone(),
        s.cwd.clone(),
        s.remote.clone(),
        config.startup_timeout(&s.name).value,
        config.max_restarts(&s.name).value,
        config.max_message_bytes(),
    )
}

/// Compares the enabled servers of `old` and `new` (pure): which to start, stop and restart.
pub fn server_changes(old: &Config, new: &Config) -> Changes {
    let mut c = Changes::default();
    for s in new.enabled_servers() {
        match old.server(&s.name).filter(|o| o.enabled) {
            None => c.start.push(s.name.clone()),
            Some(o) if launch(old, o) != launch(new, s) => c.restart.push(s.name.clone()),
            Some(o) if o != s => c.retuned.push(s.name.clone()),
            Some(_) => {}
        }
    }
    c.tables = (&old.defaults, &old.transcript, &old.paging)
        != (&new.defaults, &new.transcript, &new.paging);
    for o in old.enabled_servers() {
        if new.server(&o.name).filter(|s| s.enabled).is_none() {
            c.stop.push(o.name.clone());
        }
    }
    c
}

/// A file's size, modification time and inode; `None` when it cannot be read.
type Stamp = Option<(u64, SystemTime, u64)>;

/// The stamp of the file at `path` now.
fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?, m.ino()))
}

/// What the watcher knows of the file: its last stamp and text.
struct Seen {
    stamp: Stamp,
    text: Option<String>,
}

impl Seen {
    /// Whether the file changed since last seen (`forced`: SIGHUP, look at the text anyway);
    /// remembers what it saw. A text that is empty or only whitespace (after a byte order
    /// mark), which an editor may leave for a moment while it saves, is not a change: it would
    /// apply a config with no servers and stop them all. It is warned about, and the last text
    /// with content is kept to compare the next one with.
    fn changed(&mut self, path: &Path, forced: bool) -> bool {
        let now = stamp(path);
        if !forced && now == self.stamp {
            return false;
        }
        self.stamp = now;
        let text = std::fs::read_to_string(path).ok();
        // A byte order mark alone is what an editor saving "UTF-8 with BOM" writes first.
        let blank = |t: &str| t.trim_start_matches('\u{feff}').trim().is_empty();
        if text.as_deref().is_some_and(blank) {
            warn!(
                config = %path.display(),
                "config file is empty or blank (an editor saving it?); not reloaded: the \
                 running config stays until the file holds a config again"
            );
            return false;
        }
        let changed = forced || text != self.text;
        self.text = text;
        changed
    }
}

/// Watches the config file of `core` (every [`POLL_INTERVAL`] and on SIGHUP) until the core
/// shuts down, and applies each valid change. Spawn it once per serving process.
pub async fn watch(core: Arc<Core>) {
    use tokio::signal::unix::{signal, SignalKind};
    let path = core.config().path.clone();
    let mut seen = Seen {
        stamp: stamp(&path),
        text: std::fs::read_to_string(&path).ok(),
    };
    let mut hup = signal(SignalKind::hangup()).ok();
    let mut stopping = core.stopping();
    let mut tick = tokio::time::interval(POLL_INTERVAL);
    loop {
        let hangup = async {
            match hup.as_mut() {
                Some(h) => h.recv().await,
                None => std::future::pending().await,
            }
        };
        let forced = tokio::select! {
            _ = stopping.wait_for(|s| *s) => return,
            _ = tick.tick() => false,
            Some(()) = hangup => true,
        };
        if forced {
            info!(config = %path.display(), "SIGHUP: reading the config again");
        }
        if seen.changed(&path, forced) {
            reload(&core, &path).await;
        }
    }
}

/// Resolves on SIGTERM or SIGINT, the signals that end `serve`: there SIGHUP reloads the
/// config ([`watch`]) instead of ending the process.
pub async fn serve_stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending::<()>().await,
    }
}

/// Loads `path` and applies it to `core`, or logs why not (the running config stays).
async fn reload(core: &Arc<Core>, path: &Path) {
    match Config::load(path) {
        Err(e) => warn!("config not reloaded; the running config stays: {e}"),
        Ok(new) => {
            let old = core.config();
            for (table, changed) in [
                ("[transcript]", old.transcript != new.transcript),
                ("[paging]", old.paging != new.paging),
            ] {
                if changed {
                    warn!("{table} changed: it applies when the proxy next starts, not now");
                }
            }
            let c = core.apply_config(new).await;
            info!(
                started = ?c.start,
                stopped = ?c.stop,
                restarted = ?c.restart,
                settings_changed = ?c.retuned,
                tables_changed = c.tables,
                "config reloaded"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Config {
        Config::parse(text, Path::new("/c/x.toml"), &|_| None).unwrap()
    }

    const OLD: &str = "[mcp_servers.a]\ncommand = \"a\"\n[mcp_servers.b]\ncommand = \"b\"\n[mcp_servers.c]\ncommand = \"c\"\n[mcp_servers.d]\ncommand = \"d\"\nenabled = false\n[mcp_servers.e]\ncommand = \"e\"\n";
    const NEW: &str = "[mcp_servers.a]\ncommand = \"a\"\nchar_budget = 5\ndisabled_tools = [\"x\"]\ntool_timeout_sec = 3\n[mcp_servers.b]\ncommand = \"b\"\nargs = [\"--new\"]\n[mcp_servers.d]\ncommand = \"d\"\n[mcp_servers.e]\ncommand = \"e\"\nenabled = false\n[mcp_servers.f]\ncommand = \"f\"\n";

    #[test]
    fn servers_sort_into_start_stop_restart_and_settings_restart_nothing() {
        let changes = server_changes(&parse(OLD), &parse(NEW));
        assert_eq!(
            changes,
            Changes {
                start: vec!["d".into(), "f".into()],
                stop: vec!["c".into(), "e".into()],
                restart: vec!["b".into()],
                retuned: vec!["a".into()],
                tables: false,
            }
        );
        assert!(!changes.is_empty());
        assert!(server_changes(&parse(NEW), &parse(NEW)).is_empty());
        let budget = server_changes(
            &parse(OLD),
            &parse(&format!("[defaults]\nchar_budget = 9\n{OLD}")),
        );
        assert!(
            budget.is_empty() && budget.tables && budget.retuned.is_empty(),
            "{budget:?}"
        );
    }

    #[test]
    fn every_launch_key_restarts() {
        let base = "[mcp_servers.a]\ncommand = \"a\"\n";
        for edit in [
            "[mcp_servers.a]\ncommand = \"a2\"\n",
            "[mcp_servers.a]\ncommand = \"a\"\nargs = [\"x\"]\n",
            "[mcp_servers.a]\ncommand = \"a\"\nenv = { K = \"v\" }\n",
            "[mcp_servers.a]\ncommand = \"a\"\ncwd = \"/tmp\"\n",
            "[mcp_servers.a]\ncommand = \"a\"\nstartup_timeout_sec = 99\n",
            "[defaults]\nstartup_timeout_sec = 99\n[mcp_servers.a]\ncommand = \"a\"\n",
            "[mcp_servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\n",
        ] {
            let c = server_changes(&parse(base), &parse(edit));
            assert_eq!(c.restart, ["a"], "{edit}");
        }
        let remote = "[mcp_servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\n";
        let headers =
            "[mcp_servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\nhttp_headers = { X = \"1\" }\n";
        assert_eq!(
            server_changes(&parse(remote), &parse(headers)).restart,
            ["a"]
        );
    }

    #[test]
    fn a_replaced_file_is_seen_and_an_unchanged_text_is_not() {
        let dir = std::env::temp_dir().join(format!("reload-seen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        std::fs::write(&path, "a").unwrap();
        let mut seen = Seen {
            stamp: stamp(&path),
            text: Some("a".into()),
        };
        assert!(!seen.changed(&path, false));
        let tmp = dir.join("c.tmp");
        std::fs::write(&tmp, "b").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert!(seen.changed(&path, false), "a new inode is a change");
        assert!(!seen.changed(&path, false));
        assert!(seen.changed(&path, true), "SIGHUP reloads anyway");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An editor mid-save leaves the file empty (or blank) for a moment: that is no change to
    /// apply (the old watcher reloaded it, stopping every server), SIGHUP included; the next
    /// text with content is compared with the last one applied.
    #[test]
    fn an_empty_or_blank_file_is_not_a_change_and_the_next_real_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "a").unwrap();
        let mut seen = Seen {
            stamp: stamp(&path),
            text: Some("a".into()),
        };
        for blank in ["", " \n\t\n", "\n", "\u{feff}", "\u{feff}\n"] {
            std::fs::write(&path, blank).unwrap();
            seen.stamp = None;
            assert!(!seen.changed(&path, false), "{blank:?}");
            assert!(!seen.changed(&path, true), "SIGHUP: {blank:?}");
        }
        std::fs::write(&path, "a").unwrap();
        seen.stamp = None;
        assert!(!seen.changed(&path, false), "the text applied before");
        std::fs::write(&path, "").unwrap();
        seen.stamp = None;
        assert!(!seen.changed(&path, false));
        std::fs::write(&path, "b").unwrap();
        seen.stamp = None;
        assert!(seen.changed(&path, false), "the next real change applies");
    }
}
