//! Logging: to stderr or `--log-file`, never to stdout (it carries the protocol).

use anyhow::Context;

use crate::runtime::log_format::{CachedSecondTime, EscapedMessageFields};
use crate::runtime::log_lines::LogWriter;

use super::{GlobalArgs, LogLevel};

/// Sets up logging at `--log-level` (else `default_level`; `RUST_LOG` overrides both): to
/// `--log-file` when given (appended to; refused when it is a symlink or not a regular file,
/// created or tightened to mode 0600, see `crate::private_file`), else to stderr (colours
/// only on a terminal without `NO_COLOR`); never to stdout (it carries the protocol). Returns
/// the guard that writes the lines still held when dropped. Errors when the log file cannot be
/// opened (naming it and why).
pub fn init_logging(global: &GlobalArgs, default_level: LogLevel) -> anyhow::Result<LogGuard> {
    use tracing_subscriber::EnvFilter;
    let level = global.log_level.unwrap_or(default_level);
    // The HTTP stack's own debug lines name request URLs, which may carry a secret: they are
    // shown only when asked for by name in RUST_LOG.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!(
            "{},reqwest=info,hyper=info,hyper_util=info,rustls=info",
            level.as_str()
        ))
    });
    // The default format's text, its timestamp and message escaping done cheaper
    // (`runtime::log_format`: the per-call line is on every call's path).
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_timer(CachedSecondTime)
        .fmt_fields(EscapedMessageFields);
    match &global.log_file {
        Some(path) => {
            // Opened as a transcript is (`crate::private_file`): no symlink, mode 0600.
            let (file, loose) = crate::private_file::open_for_append(path)
                .with_context(|| format!("cannot open log file {}", path.display()))?;
            builder
                .with_ansi(false)
                .with_writer(LogWriter::new(Box::new(file)))
                .init();
            if let Some(mode) = loose {
                tracing::warn!(path = %path.display(), mode = format!("{mode:o}"), "the log file could be read by others; its mode is now 0600");
            }
        }
        // Colours only on a terminal: clients capture stderr into log files (issue 7).
        None => {
            use std::io::IsTerminal;
            let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            builder
                .with_ansi(ansi)
                .with_writer(LogWriter::new(Box::new(std::io::stderr())))
                .init()
        }
    }
    Ok(LogGuard)
}

/// Writes the log lines still held (see `crate::runtime::log_lines`) when dropped: keep it
/// until the command has run, and drop it before printing the command's error.
pub struct LogGuard;

impl Drop for LogGuard {
    fn drop(&mut self) {
        crate::runtime::log_lines::flush();
    }
}
