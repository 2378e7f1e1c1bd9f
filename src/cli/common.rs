//! What several subcommands share: the usage-error type (exit code 2), finding and loading the
//! config, the runtime, stop signals, and a proxy with no client for `call`, `check` and
//! `replay --live`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use serde_json::json;

use super::GlobalArgs;
use crate::config::{self, Config};
use crate::downstream::ClientInit;
use crate::proxy::{Core, LATEST_PROTOCOL_VERSION};
use crate::transcript::TranscriptWriter;

/// An error that exits with code 2 (usage, config or unreadable input).
#[derive(Debug)]
pub(super) struct UsageError(anyhow::Error);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}
impl std::error::Error for UsageError {}

/// `err` as a [`UsageError`] (exit code 2).
pub(super) fn usage(err: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(UsageError(err.into()))
}

/// Finds and loads the config (`--config`, `MCP_ENVELOPE_CONFIG`, `./mcp-envelope.toml`,
/// `$XDG_CONFIG_HOME/mcp-envelope/config.toml`).
pub(super) fn load_config(global: &GlobalArgs) -> anyhow::Result<Arc<Config>> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let env = |k: &str| std::env::var(k).ok();
    let path = config::discover(global.config.as_deref(), &env, &cwd, &|p: &Path| {
        p.is_file()
    })
    .map_err(usage)?;
    let config = Config::load(&path).map_err(usage)?;
    // `check` lists them in its table (and logs only errors unless asked).
    for line in config.warning_lines() {
        tracing::warn!("{line}");
    }
    Ok(Arc::new(config))
}

/// The transcript writer of `serve` and `call`: recording to `flag` (`--transcript`) or else
/// to the config's `[transcript] path`; `None` when neither names one. A path that cannot be
/// recorded to is a usage error (exit 2) naming the path, why, and where it was given, before
/// anything is served ([`TranscriptWriter::open`]).
pub(super) fn transcript_writer(
    config: &Config,
    flag: Option<PathBuf>,
) -> anyhow::Result<Option<TranscriptWriter>> {
    let from_flag = flag.is_some();
    let Some(path) = flag.or_else(|| config.transcript.path.clone()) else {
        return Ok(None);
    };
    let keys = config.transcript.redact_keys.clone();
    let writer = TranscriptWriter::open(path, keys).map_err(|e| {
        let given = match from_flag {
            true => "--transcript".to_owned(),
            false => format!("`[transcript] path` in {}", config.path.display()),
        };
        let (path, why) = (e.path, e.why);
        usage(anyhow::anyhow!(
            "cannot record the transcript at {path:?} (given by {given}): {why}"
        ))
    })?;
    Ok(Some(writer))
}

/// The async runtime: one thread for every task. Handing each message between worker threads
/// cost more than the work itself (issue 6, BENCHMARKS.md); parsing very large messages goes
/// to the blocking pool instead (`crate::runtime`).
/// Its log lines are held and written when it waits for I/O (`crate::runtime::log_lines`).
pub(super) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    crate::runtime::log_lines::hold_on_this_thread();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(crate::runtime::log_lines::flush)
        .build()
        .context("cannot start the async runtime")
}

/// Resolves on SIGTERM, SIGINT or SIGHUP (a closed terminal), the signals that end a session.
pub(super) async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) {
        (Ok(mut term), Ok(mut int), Ok(mut hup)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
                _ = hup.recv() => {}
            }
        }
        _ => std::future::pending::<()>().await,
    }
}

/// A proxy with no client (for `call` and `check`): no session, so a server's request is
/// refused. Start its servers with [`headless_client`].
pub(super) fn headless_proxy(
    config: &Arc<Config>,
    transcript: Option<TranscriptWriter>,
) -> Arc<Core> {
    Core::new(config.clone(), transcript)
}

/// The `initialize` details sent to servers when there is no client.
pub(super) fn headless_client(name: &str) -> ClientInit {
    ClientInit {
        protocol_version: LATEST_PROTOCOL_VERSION.to_owned(),
        capabilities: json!({}),
        client_info: json!({"name": name, "version": env!("CARGO_PKG_VERSION")}),
    }
}

/// Exit code for a command stopped by a signal (128 + SIGINT, the shell convention).
const EXIT_INTERRUPTED: u8 = 130;

/// Ends `command` stopped by a signal: says so on stderr; exit code 130.
pub(super) fn interrupted(command: &str) -> ExitCode {
    eprintln!("mcp-envelope {command}: interrupted; servers stopped");
    ExitCode::from(EXIT_INTERRUPTED)
}
