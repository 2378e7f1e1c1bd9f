//! A stdio server under supervision: its child process ([`crate::transport::child`]), the
//! reader of its stdout feeding the peer, the reader of its stderr keeping a redacted tail,
//! and how its end is found out: its stdout closed or its process exited, whichever first (a
//! process it started may hold its stdout open after it died).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tracing::debug;

use super::inbound::{read_stdout, ServerInbound};
use super::supervisor::{run_handshake, settle_startup, StartError};
use super::{
    handshake, stderr, ClientInit, Connection, Downstream, DownstreamEvent, STDERR_TAIL_LINES,
};
use crate::transport::child::{self, ChildProcess, Program, StdoutLines};
use crate::transport::Close as _;

/// How long a stopping child gets after stdin is closed, and again after SIGTERM.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);
/// How long the stdout reader gets, after a server's process exited, to read what is left in
/// the pipe before the processes holding the pipe open are stopped.
pub const EXIT_DRAIN: Duration = Duration::from_millis(250);

/// Longest stderr line kept or logged (characters; longer ones are cut, ending in `…`).
pub const STDERR_LINE_CHARS: usize = 500;

/// A started child: its connection and what is needed to watch and stop it.
pub(super) struct Running {
    ds: Downstream,
    conn: Arc<Connection>,
    process: ChildProcess,
    reader_done: Option<oneshot::Receiver<String>>,
    /// Fires when the stderr reader has read to the end.
    stderr_done: Option<oneshot::Receiver<()>>,
}

impl Running {
    /// The connection requests go through.
    pub(super) fn conn(&self) -> &Arc<Connection> {
        &self.conn
    }

    /// Resolves when the child's stdout closes or the child exits, whichever comes first;
    /// returns why, with the exit status. Either way the child is reaped, what is left of its
    /// process group is sent SIGTERM, and every pending request fails with the reason, the
    /// exit status and a short tail of its stderr ([`Downstream::with_stderr_brief`]).
    pub(super) async fn closed(&mut self) -> String {
        // Polled by reference so that a caller racing this future (the handshake in `start`)
        // can drop it without losing the reader's signal; waiting for the exit is cancel-safe.
        let first = tokio::select! {
            reason = reader_finished(&mut self.reader_done) => Ok(reason),
            status = self.process.exited() => Err(status),
        };
        let (reason, status) = match first {
            Ok(reason) => {
                let status = self.status_after_stdout_closed(&reason).await;
                (reason, status)
            }
            Err(status) => {
                let status = status.map_or_else(|e| e, |s| s.to_string());
                (self.drain_after_exit(&status).await, status)
            }
        };
        let full = format!("{reason} ({status})");
        self.fail_pending(&full).await;
        full
    }

    /// The exit status once stdout has closed: a process that crashed is gone within
    /// [`EXIT_DRAIN`]; one still running is given [`SHUTDOWN_GRACE`] to exit by itself (calls
    /// in flight fail meanwhile), then stopped.
    async fn status_after_stdout_closed(&mut self, reason: &str) -> String {
        if let Some(status) = self.process.exit_within(EXIT_DRAIN).await {
            self.process.reap_leftovers();
            return status.to_string();
        }
        self.fail_pending(reason).await;
        match self.process.exit_within(SHUTDOWN_GRACE).await {
            Some(status) => {
                self.process.reap_leftovers();
                status.to_string()
            }
            None => {
                self.process.terminate(SHUTDOWN_GRACE).await;
                "killed after closing stdout".into()
            }
        }
    }

    /// Fails every pending request with `reason` and, once the server serves calls, its last
    /// stderr lines (waiting up to [`EXIT_DRAIN`] for the stderr reader to take the last of
    /// them). A failed start reports stderr in its own reason.
    async fn fail_pending(&mut self, reason: &str) {
        if let Some(done) = self.stderr_done.take() {
            let _ = tokio::time::timeout(EXIT_DRAIN, done).await;
        }
        let reason = if self.conn.is_serving() {
            self.ds.with_stderr_brief(reason)
        } else {
            reason.to_owned()
        };
        self.conn.peer().close(&reason);
    }

    /// After the process exited: answers it wrote just before may still be in the pipe, so
    /// the reader gets [`EXIT_DRAIN`] to take them; then the leftovers that hold stdout open
    /// are stopped (which ends the reader). One that escaped the group does not hold us.
    async fn drain_after_exit(&mut self, status: &str) -> String {
        let drained = tokio::time::timeout(EXIT_DRAIN, reader_finished(&mut self.reader_done));
        let reason = match drained.await {
            Ok(reason) => reason,
            Err(_) => {
                self.fail_pending(&format!("exited ({status})")).await;
                self.process.reap_leftovers();
                let rest = reader_finished(&mut self.reader_done);
                match tokio::time::timeout(SHUTDOWN_GRACE, rest).await {
                    Ok(reason) => reason,
                    Err(_) => "exited while a process it started kept its stdout open".into(),
                }
            }
        };
        self.process.reap_leftovers();
        reason
    }

    /// Stops the child: stdin closed, then SIGTERM to its group, then SIGKILL.
    pub(super) async fn stop(&mut self) {
        // Calls still in flight learn why before the child's exit closes its stdout.
        self.conn
            .peer()
            .close("stopped because the proxy is shutting down");
        self.process.close(SHUTDOWN_GRACE).await;
        debug!(server = %self.ds.name(), "server stopped");
    }
}

/// Waits for the stdout reader's end (its reason); `closed` once it has been taken.
async fn reader_finished(done: &mut Option<oneshot::Receiver<String>>) -> String {
    match done.as_mut() {
        Some(rx) => {
            let reason = rx.await.unwrap_or_else(|_| "reader stopped".into());
            *done = None;
            reason
        }
        None => "closed".into(),
    }
}

/// Spawns the child and performs the handshake within `startup_timeout`.
pub(super) async fn start(
    ds: &Downstream,
    client: &ClientInit,
    events: &mpsc::UnboundedSender<DownstreamEvent>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Running, StartError> {
    let spec = &ds.inner.spec;
    ds.inner.stderr_tail.lock().unwrap().clear();
    let program = Program {
        program: &spec.program,
        args: &spec.args,
        env: &spec.env,
        env_remove: &spec.env_remove,
        cwd: spec.cwd.as_deref(),
    };
    let spawned = child::spawn(&spec.name, program).map_err(|reason| StartError {
        reason,
        fatal: true,
    })?;
    let (stderr_done_tx, stderr_done_rx) = oneshot::channel();
    tokio::spawn(read_stderr(ds.clone(), spawned.stderr, stderr_done_tx));
    let conn = Arc::new(Connection::new(
        &spec.name,
        spawned.outbox,
        ds.inner.redactor.clone(),
    ));
    let (done_tx, done_rx) = oneshot::channel();
    let inbound = ServerInbound {
        ds: ds.clone(),
        conn: conn.clone(),
        events: events.clone(),
    };
    let stdout = StdoutLines::new(&spec.name, spawned.stdout, spec.max_message_bytes);
    tokio::spawn(read_stdout(inbound, stdout, done_tx));
    let mut running = Running {
        ds: ds.clone(),
        conn: conn.clone(),
        process: spawned.process,
        reader_done: Some(done_rx),
        stderr_done: Some(stderr_done_rx),
    };
    let handshake = run_handshake(ds, &conn, client);
    // A server that exits during the handshake fails the start at once (`check` reports its
    // exit status instead of waiting out startup_timeout_sec).
    let (outcome, ended_by_exit) =
        settle_startup(spec.startup_timeout, handshake, running.closed(), shutdown).await;
    match outcome {
        Ok(()) => {
            conn.set_serving();
            handshake::listen_for_changes(&conn);
            Ok(running)
        }
        Err(reason) => {
            // A handshake request that failed because the child went away: say how it ended
            // (the `closed` branch already does).
            let reason = if conn.is_closed() && !ended_by_exit {
                match running.process.exit_within(SHUTDOWN_GRACE).await {
                    Some(status) => format!("{reason} ({status})"),
                    None => reason,
                }
            } else {
                reason
            };
            running.stop().await;
            // Let the stderr reader catch the child's last words for the log.
            if let Some(done) = running.stderr_done.take() {
                let _ = tokio::time::timeout(Duration::from_millis(500), done).await;
            }
            Err(reason.into())
        }
    }
}

/// Reads the server's stderr: every line redacted, logged at debug level and kept in the tail
/// (at most [`STDERR_TAIL_LINES`] lines of at most [`STDERR_LINE_CHARS`] characters).
async fn read_stderr(
    ds: Downstream,
    stderr: tokio::process::ChildStderr,
    done: oneshot::Sender<()>,
) {
    stderr::read_lines(stderr, &mut |line| {
        let line = ds.inner.redactor.redact_within(&line, STDERR_LINE_CHARS);
        debug!(server = %ds.name(), stderr = %line, "server stderr");
        let mut tail = ds.inner.stderr_tail.lock().unwrap();
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    })
    .await;
    let _ = done.send(());
}
