//! Hot reload of the config while `serve` runs: the file is looked at every second (its size,
//! modification time and inode, so an editor that replaces the file is seen too) and on
//! SIGHUP. A changed text is read again [`SETTLE_INTERVAL`] later and taken only when both
//! reads agree ([`next_step`]); otherwise it is read again after the same interval, until two
//! reads in a row agree: a save caught half-written, whose prefix may well be valid TOML (a
//! config with fewer servers), is not applied. The settled text is loaded and validated as at
//! start; an invalid one leaves the running config in place and logs a warning naming the
//! file, line and key. An empty or blank file (an editor mid-save) is not applied either: it
//! is warned about, and the next text with content is.
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

/// How long after reading a changed config file it is read again: the change applies only
/// when both reads give the same text ([`next_step`]), so that a save caught half-written (a
/// prefix that happens to be valid TOML) is not applied.
pub const SETTLE_INTERVAL: Duration = Duration::from_millis(250);

/// A read of the config file: its text, or `None` when it could not be read (missing, not
/// UTF-8).
type Read = Option<String>;

/// What to do after reading the config file ([`next_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing: the text is the one applied last.
    Unchanged,
    /// The file is empty or blank (an editor mid-save): warn, apply nothing, forget the read.
    Blank,
    /// A new text (or another text than the read before): read again after
    /// [`SETTLE_INTERVAL`], remembering this read.
    Settle,
    /// Two reads in a row gave this text: apply it.
    Apply,
}

/// Whether `text` is empty or only whitespace after a byte order mark (what an editor saving
/// "UTF-8 with BOM" writes first).
fn blank(text: &str) -> bool {
    text.trim_start_matches('\u{feff}').trim().is_empty()
}

/// The decision of the watcher (pure): `read` is what was just read, `pending` the read before
/// it still waiting to be confirmed (`None` when none is: this read found the change), `applied`
/// the text applied last, `forced` whether SIGHUP asked for this read or the pending one (apply
/// even an unchanged text). A blank text is never applied: it would stop every server. A text
/// applies only when it equals the pending read (content equal), so a file still being written
/// settles again; an unreadable file settles as a text does, and applying it reports why it
/// cannot load.
pub fn next_step(read: &Read, pending: Option<&Read>, applied: &Read, forced: bool) -> Step {
    if read.as_deref().is_some_and(blank) {
        return Step::Blank;
    }
    if pending != Some(read) {
        return Step::Settle;
    }
    if forced || read != applied {
        Step::Apply
    } else {
        Step::Unchanged
    }
}

/// A read waiting for the next one to confirm it ([`Step::Settle`]).
struct Pending {
    read: Read,
    /// Whether SIGHUP asked for it (or for a read since the change was seen).
    forced: bool,
}

/// What the watcher knows of the file: its last stamp, the text applied last, and the read
/// waiting to be confirmed.
struct Seen {
    stamp: Stamp,
    applied: Read,
    pending: Option<Pending>,
}

impl Seen {
    /// What the watcher knows of `path` as it is now, applied.
    fn new(path: &Path) -> Seen {
        Seen {
            stamp: stamp(path),
            applied: std::fs::read_to_string(path).ok(),
            pending: None,
        }
    }

    /// Looks at the file (`forced`: SIGHUP, read it even when its stamp is the same) and
    /// decides by [`next_step`]; remembers what it read. Returns [`Step::Settle`] when the
    /// file is to be looked at again after [`SETTLE_INTERVAL`] and [`Step::Apply`] when the
    /// text applied last is now the file's (the caller loads it); a blank file is warned
    /// about, and the text applied last is kept to compare the next one with.
    fn look(&mut self, path: &Path, forced: bool) -> Step {
        let now = stamp(path);
        if !forced && self.pending.is_none() && now == self.stamp {
            return Step::Unchanged;
        }
        self.stamp = now;
        let read = std::fs::read_to_string(path).ok();
        let pending = self.pending.take();
        let forced = forced || pending.as_ref().is_some_and(|p| p.forced);
        let step = next_step(
            &read,
            pending.as_ref().map(|p| &p.read),
            &self.applied,
            forced,
        );
        match step {
            Step::Blank => warn!(
                config = %path.display(),
                "config file is empty or blank (an editor saving it?); not reloaded: the \
                 running config stays until the file holds a config again"
            ),
            Step::Settle => self.pending = Some(Pending { read, forced }),
            Step::Apply => self.applied = read,
            Step::Unchanged => {}
        }
        step
    }
}

/// Watches the config file of `core` (every [`POLL_INTERVAL`] and on SIGHUP) until the core
/// shuts down, and applies each valid change once it has settled (read twice, the second time
/// [`SETTLE_INTERVAL`] after the first, with the same text). Spawn it once per serving
/// process.
pub async fn watch(core: Arc<Core>) {
    use tokio::signal::unix::{signal, SignalKind};
    let path = core.config().path.clone();
    let mut seen = Seen::new(&path);
    let mut hup = signal(SignalKind::hangup()).ok();
    let mut stopping = core.stopping();
    let mut tick = tokio::time::interval(POLL_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut settling = false;
    loop {
        let hangup = async {
            match hup.as_mut() {
                Some(h) => h.recv().await,
                None => std::future::pending().await,
            }
        };
        let forced = tokio::select! {
            _ = stopping.wait_for(|s| *s) => return,
            _ = tick.tick(), if !settling => false,
            _ = tokio::time::sleep(SETTLE_INTERVAL), if settling => false,
            Some(()) = hangup => true,
        };
        if forced {
            info!(config = %path.display(), "SIGHUP: reading the config again");
        }
        let step = seen.look(&path, forced);
        settling = step == Step::Settle;
        if step == Step::Apply {
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

    /// Looks at `path` until its text settles: the steps seen, the last one being what the
    /// settled text gives (each look is one tick of the watcher, with no time in between).
    fn settle(seen: &mut Seen, path: &Path, forced: bool) -> Vec<Step> {
        let mut steps = vec![seen.look(path, forced)];
        while steps.last() == Some(&Step::Settle) && steps.len() < 10 {
            steps.push(seen.look(path, false));
        }
        steps
    }

    #[test]
    fn a_replaced_file_is_seen_and_an_unchanged_text_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "a").unwrap();
        let mut seen = Seen::new(&path);
        assert_eq!(seen.look(&path, false), Step::Unchanged);
        let tmp = dir.path().join("c.tmp");
        std::fs::write(&tmp, "b").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert_eq!(
            settle(&mut seen, &path, false),
            [Step::Settle, Step::Apply],
            "a new inode is a change, applied once read twice"
        );
        assert_eq!(seen.look(&path, false), Step::Unchanged);
        assert_eq!(
            settle(&mut seen, &path, true),
            [Step::Settle, Step::Apply],
            "SIGHUP reloads anyway"
        );
    }

    /// An editor mid-save leaves the file empty (or blank) for a moment: that is no change to
    /// apply (the old watcher reloaded it, stopping every server), SIGHUP included; the next
    /// text with content is compared with the last one applied.
    #[test]
    fn an_empty_or_blank_file_is_not_a_change_and_the_next_real_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "a").unwrap();
        let mut seen = Seen::new(&path);
        for blank in ["", " \n\t\n", "\n", "\u{feff}", "\u{feff}\n"] {
            std::fs::write(&path, blank).unwrap();
            seen.stamp = None;
            assert_eq!(seen.look(&path, false), Step::Blank, "{blank:?}");
            assert_eq!(seen.look(&path, true), Step::Blank, "SIGHUP: {blank:?}");
        }
        std::fs::write(&path, "a").unwrap();
        seen.stamp = None;
        let steps = settle(&mut seen, &path, false);
        assert_eq!(
            steps,
            [Step::Settle, Step::Unchanged],
            "the text applied before"
        );
        std::fs::write(&path, "").unwrap();
        seen.stamp = None;
        assert_eq!(seen.look(&path, false), Step::Blank);
        std::fs::write(&path, "b").unwrap();
        seen.stamp = None;
        let steps = settle(&mut seen, &path, false);
        assert_eq!(
            steps,
            [Step::Settle, Step::Apply],
            "the next real change applies"
        );
    }

    /// A save caught half-written: the watcher read a prefix of the new config that is valid
    /// TOML itself (a config with the first server only) and applied it at once, stopping the
    /// other servers until the next look. Now a text applies only when the next read, a
    /// settle interval later, gives the same text; a text still growing settles again.
    #[test]
    fn a_config_read_mid_save_applies_only_once_two_reads_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, OLD).unwrap();
        let mut seen = Seen::new(&path);
        let prefix = &NEW[..NEW.find("[mcp_servers.b]").unwrap()];
        parse(prefix);
        std::fs::write(&path, prefix).unwrap();
        assert_eq!(
            seen.look(&path, false),
            Step::Settle,
            "the prefix is not applied"
        );
        std::fs::write(&path, NEW).unwrap();
        assert_eq!(
            seen.look(&path, false),
            Step::Settle,
            "the text grew: settle again"
        );
        assert_eq!(seen.look(&path, false), Step::Apply, "two reads agree");
        assert_eq!(seen.applied.as_deref(), Some(NEW));
        assert_eq!(seen.look(&path, false), Step::Unchanged);
    }

    /// The decision alone, case by case.
    #[test]
    fn the_watchers_next_step_settles_applies_or_waits() {
        let text = |t: &str| Some(t.to_owned());
        let (a, b) = (text("a"), text("b"));
        let cases = [
            // (read, pending, applied, forced, step)
            (&b, None, &a, false, Step::Settle),
            (&b, Some(&a), &a, false, Step::Settle),
            (&b, Some(&b), &a, false, Step::Apply),
            (&a, Some(&a), &a, false, Step::Unchanged),
            (&a, Some(&a), &a, true, Step::Apply),
            (&a, None, &a, true, Step::Settle),
            (&None, None, &a, false, Step::Settle),
            (&None, Some(&None), &a, false, Step::Apply),
            (&text(" \n"), Some(&text(" \n")), &a, true, Step::Blank),
            (&text("\u{feff}"), None, &a, false, Step::Blank),
        ];
        for (read, pending, applied, forced, step) in cases {
            assert_eq!(
                next_step(read, pending, applied, forced),
                step,
                "{read:?} after {pending:?}, {applied:?} applied, forced {forced}"
            );
        }
    }
}
