//! Logging: to stderr or `--log-file`, never to stdout (it carries the protocol).

use anyhow::Context;

use crate::runtime::log_format::{CachedSecondTime, EscapedMessageFields};
use crate::runtime::log_lines::LogWriter;

use super::{GlobalArgs, LogLevel};

/// Sets up logging at `--log-level` (else `default_level`; `RUST_LOG` overrides both): to
/// `--log-file` when given, else to stderr (colours only on a terminal without `NO_COLOR`);
/// never to stdout (it carries the protocol). Returns the guard that writes the lines still
/// held when dropped. Errors when the log file cannot be opened.
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
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open log file {}", path.display()))?;
            builder
                .with_ansi(false)
                .with_writer(LogWriter::new(Box::new(file)))
                .init();
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
