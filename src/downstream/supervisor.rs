//! The supervisor of one server, whatever its transport: start (a child process or a remote
//! HTTP session, then the MCP handshake and every page of `tools/list`), watch, restart with
//! exponential backoff when it ends, give up after too many failures in a row, stop on shutdown.
//!
//! Restart policy: backoff from 1 s doubling to at most 30 s, at most `max_restarts` in a row,
//! then `unavailable`; a run that stayed ready for [`HEALTHY_RUN`] resets the count, so only a
//! crash loop gives up. A start that cannot succeed by retrying (a program that cannot be
//! executed, credentials refused) makes the server `unavailable` at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

use super::local::Running;
use super::remote::RemoteRunning;
use super::{handshake, ClientInit, Connection, Downstream, DownstreamEvent, ServerState};

/// First restart delay.
pub const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
/// Longest restart delay.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A run that stayed ready this long before it ended was not part of a crash loop: the count
/// of restarts in a row starts again, so a server that runs fine between crashes keeps being
/// restarted, and only one that fails to start or crashes within this time after every start
/// becomes `unavailable` after `max_restarts`.
pub const HEALTHY_RUN: Duration = Duration::from_secs(10);
pub(super) use super::tool_listing::{list_all_tools, store_tools};

/// The delay before restart number `attempt` (1-based): 1 s, 2 s, 4 s, … capped at 30 s.
pub fn backoff_delay(attempt: u32) -> Duration {
    let exp = attempt.saturating_sub(1).min(16);
    (BACKOFF_INITIAL * 2u32.pow(exp)).min(BACKOFF_MAX)
}

/// Why a start failed, and whether trying again could help.
pub(super) struct StartError {
    pub(super) reason: String,
    /// A start that will not succeed by itself on a retry (a program that cannot be executed,
    /// credentials refused): the server goes straight to `unavailable`.
    pub(super) fatal: bool,
}

impl From<String> for StartError {
    fn from(reason: String) -> Self {
        StartError {
            reason,
            fatal: false,
        }
    }
}

/// A started server: a child process, or a connection to a remote server.
#[allow(clippy::large_enum_variant)] // one per server, moved only when started
pub(super) enum Started {
    /// A stdio server's child process.
    Process(Running),
    /// A remote server's HTTP session.
    Remote(RemoteRunning),
}

impl Started {
    /// The connection requests go through.
    pub(super) fn conn(&self) -> &Arc<Connection> {
        match self {
            Started::Process(r) => r.conn(),
            Started::Remote(r) => r.conn(),
        }
    }

    /// Resolves when the server exited or the connection was lost; returns why.
    pub(super) async fn ended(&mut self) -> String {
        match self {
            Started::Process(r) => r.closed().await,
            Started::Remote(r) => r.closed().await,
        }
    }

    /// Stops the server or ends the session.
    async fn stop(&mut self) {
        match self {
            Started::Process(r) => r.stop().await,
            Started::Remote(r) => r.stop().await,
        }
    }
}

/// Starts a stdio server's process, or connects to a remote server, and performs the MCP
/// handshake within the server's startup timeout.
async fn start(
    ds: &Downstream,
    client: &ClientInit,
    events: &mpsc::UnboundedSender<DownstreamEvent>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Started, StartError> {
    match ds.inner.spec.remote.clone() {
        None => Ok(Started::Process(
            super::local::start(ds, client, events, shutdown).await?,
        )),
        Some(remote) => Ok(Started::Remote(
            super::remote::connect(ds, &remote, client, events, shutdown).await?,
        )),
    }
}

/// What the supervisor does after a run or a failed start.
enum Next {
    /// Start again after the backoff, because of `reason`.
    Restart { reason: String },
    /// Shutdown: stop supervising.
    Stop,
}

/// The supervisor: start, watch, restart with backoff, give up, stop.
pub(super) async fn supervise(
    ds: Downstream,
    client: ClientInit,
    events: mpsc::UnboundedSender<DownstreamEvent>,
    mut shutdown: watch::Receiver<bool>,
) {
    let max_restarts = ds.inner.spec.max_restarts;
    let mut failures_in_a_row: u32 = 0;
    while !*shutdown.borrow() {
        let next = run_once(&ds, &client, &events, &mut shutdown, &mut failures_in_a_row).await;
        let Next::Restart { reason } = next else {
            break;
        };
        failures_in_a_row += 1;
        if failures_in_a_row > max_restarts {
            let reason = format!("gave up after {max_restarts} restart(s) in a row: {reason}");
            give_up(&ds, &events, &mut shutdown, reason).await;
            break;
        }
        ds.set_state(ServerState::Restarting {
            attempt: failures_in_a_row,
            reason,
        });
        tokio::select! {
            _ = tokio::time::sleep(backoff_delay(failures_in_a_row)) => {}
            _ = wait_true(&mut shutdown) => break,
        }
    }
    ds.set_state(ServerState::Stopped);
}

/// One start and, if it succeeded, the run until it ends; resets `failures_in_a_row` after a
/// healthy run.
async fn run_once(
    ds: &Downstream,
    client: &ClientInit,
    events: &mpsc::UnboundedSender<DownstreamEvent>,
    shutdown: &mut watch::Receiver<bool>,
    failures_in_a_row: &mut u32,
) -> Next {
    let started = Instant::now();
    let mut running = match start(ds, client, events, shutdown).await {
        Ok(running) => running,
        Err(_) if *shutdown.borrow() => return Next::Stop,
        Err(StartError { reason, fatal }) => {
            let reason = ds.with_stderr(reason);
            warn!(server = %ds.name(), %reason, "server failed to start");
            if fatal {
                give_up(ds, events, shutdown, reason).await;
                return Next::Stop;
            }
            return Next::Restart { reason };
        }
    };
    *ds.inner.startup.lock().unwrap() = Some(started.elapsed());
    info!(server = %ds.name(), ms = started.elapsed().as_millis() as u64, "server ready");
    ds.set_state(ServerState::Ready(running.conn().clone()));
    tools_changed(ds, events);
    let ran_since = Instant::now();
    tokio::select! {
        reason = running.ended() => {
            if ran_since.elapsed() >= HEALTHY_RUN {
                // It ran fine between crashes: not a crash loop.
                *failures_in_a_row = 0;
            }
            let reason = ds.with_stderr(reason);
            warn!(server = %ds.name(), %reason, "server exited");
            Next::Restart { reason }
        }
        _ = wait_true(shutdown) => {
            // Retired by a config reload: its requests in flight end first.
            if !super::retire::drain(ds, &mut running).await {
                running.stop().await;
            }
            Next::Stop
        }
    }
}

/// The server is `unavailable` until the proxy restarts (or stops).
async fn give_up(
    ds: &Downstream,
    events: &mpsc::UnboundedSender<DownstreamEvent>,
    shutdown: &mut watch::Receiver<bool>,
    reason: String,
) {
    ds.set_state(ServerState::Unavailable { reason });
    tools_changed(ds, events);
    wait_true(shutdown).await;
}

fn tools_changed(ds: &Downstream, events: &mpsc::UnboundedSender<DownstreamEvent>) {
    let _ = events.send(DownstreamEvent::ToolsChanged {
        server: ds.name().to_owned(),
    });
}

/// Waits until the shutdown flag is true (or its sender is gone).
pub(super) async fn wait_true(rx: &mut watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            // The sender is gone: treat it as shutdown.
            return;
        }
    }
}

/// Runs `handshake` within `timeout`, racing the server's end (`closed`, its reason) and
/// shutdown: the outcome, and whether the server ended or shutdown came first.
pub(super) async fn settle_startup(
    timeout: Duration,
    handshake: impl std::future::Future<Output = Result<(), String>>,
    closed: impl std::future::Future<Output = String>,
    shutdown: &mut watch::Receiver<bool>,
) -> (Result<(), String>, bool) {
    tokio::select! {
        r = tokio::time::timeout(timeout, handshake) => (match r {
            Ok(r) => r,
            Err(_) => Err(format!(
                "not ready within {} ms (startup_timeout_sec)",
                envelope_core::mapping::millis_text(timeout)
            )),
        }, false),
        reason = closed => (Err(format!("{reason} during startup")), true),
        _ = wait_true(shutdown) => (Err("stopped during startup: the proxy is shutting down".to_owned()), true),
    }
}

/// The MCP handshake on a new connection: the era probe ([`handshake::open`]: for a remote
/// server `server/discover`, else `initialize` and `notifications/initialized`; for a local
/// one `initialize` first), then every page of
/// `tools/list`, each request within the server's startup timeout.
pub(super) async fn run_handshake(
    ds: &Downstream,
    conn: &Connection,
    client: &ClientInit,
) -> Result<(), String> {
    let timeout = ds.inner.spec.startup_timeout;
    let order = match ds.inner.spec.remote {
        Some(_) => handshake::Order::ModernFirst,
        None => handshake::Order::LegacyFirst,
    };
    handshake::open(conn, client, timeout, order).await?;
    let listed = list_all_tools(conn, timeout).await?;
    store_tools(ds, conn, listed);
    super::tool_listing::log_task_only(ds);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_one_second_to_thirty() {
        let delays: Vec<u64> = (1..=7).map(|a| backoff_delay(a).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(backoff_delay(1000), BACKOFF_MAX);
    }
}
