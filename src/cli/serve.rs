//! `serve` (the default): the proxy on stdin/stdout, with an optional transcript and cassette.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use super::common::{load_config, runtime, transcript_writer, usage};
use super::{CassetteMode, GlobalArgs};
use crate::config::Config;
use crate::proxy;
use crate::transcript;

/// `serve --cassette`: the transcript, the mode and the ignored argument keys.
pub(super) type CassetteArgs = (PathBuf, CassetteMode, Vec<String>);

/// Reads the cassette for `serve --cassette` (a bad transcript is a usage error naming its
/// line); with `record-missing` it is also where new calls are recorded unless `--transcript`
/// says otherwise.
pub(super) fn load_cassette(
    args: Option<CassetteArgs>,
    transcript: &mut Option<PathBuf>,
) -> anyhow::Result<Option<crate::cassette::Playback>> {
    let Some((path, mode, ignored)) = args else {
        return Ok(None);
    };
    let record_missing = mode == CassetteMode::RecordMissing;
    // Recording into a cassette that does not exist yet starts it (the first run of a test).
    let t = if record_missing && !path.exists() {
        transcript::Transcript::default()
    } else {
        transcript::read_transcript(&path).map_err(usage)?
    };
    if let Some(w) = &t.broken_last_line {
        tracing::warn!("{w}");
    }
    if record_missing && transcript.is_none() {
        *transcript = Some(path.clone());
    }
    let cassette = crate::cassette::Cassette::new(&t, ignored);
    let playback = crate::cassette::Playback::new(cassette, record_missing);
    // Recording into the cassette itself: what it already answers is not appended again.
    let same_file = |t: &PathBuf| t == &path || same_existing_file(t, &path);
    Ok(Some(if transcript.as_ref().is_some_and(same_file) {
        playback.recording_into_itself()
    } else {
        playback
    }))
}

/// Whether `a` and `b` name the same existing file (another spelling of its path).
fn same_existing_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

pub(super) fn run_serve(
    global: &GlobalArgs,
    mut transcript: Option<PathBuf>,
    cassette: Option<CassetteArgs>,
) -> anyhow::Result<ExitCode> {
    let strict_cassette = cassette
        .as_ref()
        .is_some_and(|(_, mode, _)| *mode == CassetteMode::Strict);
    let config = match load_config(global) {
        // A strict cassette starts no server: it needs no config file (budgets are recorded).
        Err(_) if strict_cassette && global.config.is_none() => {
            let none = Path::new("(no config file)");
            Arc::new(Config::parse("", none, &|k: &str| std::env::var(k).ok()).map_err(usage)?)
        }
        other => other?,
    };
    let mut cassette = load_cassette(cassette, &mut transcript)?;
    if global.config.is_none() {
        // As `replay`: without --config, recorded calls map with the settings recorded.
        cassette = cassette.map(crate::cassette::Playback::with_recorded_settings);
    }
    // Before anything is served: a transcript that cannot be recorded is an error.
    let writer = transcript_writer(&config, transcript)?;
    let rt = runtime()?;
    rt.block_on(async {
        // SIGHUP reloads the config while serving (see crate::reload).
        let stop = crate::reload::serve_stop_signal();
        let (stdio, _restore_flags) = crate::stdio::open()?;
        tracing::debug!(reactor_driven = stdio.reactor_driven, "stdin/stdout opened");
        proxy::serve(config, stdio.input, stdio.output, writer, cassette, stop).await
    })?;
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(ExitCode::SUCCESS)
}

/// Why `serve --http` cannot listen on `addr`, as one line naming it (a usage error: exit 2).
fn cannot_listen(addr: std::net::SocketAddr, err: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let why = match err.kind() {
        ErrorKind::AddrInUse => "the address is already in use (another program listens there: stop it, or choose another port)".to_owned(),
        ErrorKind::AddrNotAvailable => "the address is not one of this machine's".to_owned(),
        ErrorKind::PermissionDenied => "permission denied (ports below 1024 need privileges)".to_owned(),
        _ => err.to_string(),
    };
    format!("cannot listen on {addr}: {why}")
}

/// `serve --http`: the proxy over streamable HTTP until a signal; an address it cannot listen
/// on is a usage error naming it.
pub(super) fn run_serve_http(
    global: &GlobalArgs,
    transcript: Option<PathBuf>,
    (addr, options): (std::net::SocketAddr, crate::serve_http::HttpOptions),
) -> anyhow::Result<ExitCode> {
    let config = load_config(global)?;
    // Before anything is served: a transcript that cannot be recorded is an error.
    let writer = transcript_writer(&config, transcript)?;
    let rt = runtime()?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(|e| usage(anyhow::anyhow!(cannot_listen(addr, &e))))?;
    rt.block_on(async {
        let stop = crate::reload::serve_stop_signal();
        crate::serve_http::run(listener, options, config, writer, stop).await
    })
    .with_context(|| format!("serving HTTP at {addr}"))?;
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(ExitCode::SUCCESS)
}
