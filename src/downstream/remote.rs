//! Remote servers under the same supervision as stdio ones: a start is a connection (the HTTP
//! transport of [`super::http`] plus the MCP handshake) instead of a child process; a lost
//! connection is an exit (restarted with the same backoff and `max_restarts`); a stop ends the
//! HTTP session. A start that fails because the server refused the credentials (HTTP 401/403)
//! or because a credential's environment variable is not set is final: the server is
//! `unavailable` at once, with the reason naming the key and the variable.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};
use tracing::debug;

use super::http::{Sink, Transport};
use super::{
    run_handshake, settle_startup, start_once, CallError, ClientInit, Connection, Downstream,
    DownstreamEvent, Reply, Running, StartError, SHUTDOWN_GRACE,
};
use crate::config::RemoteConfig;

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
            Started::Process(r) => &r.conn,
            Started::Remote(r) => &r.conn,
        }
    }

    /// Resolves when the server exited or the connection was lost; returns why.
    pub(super) async fn closed(&mut self) -> String {
        match self {
            Started::Process(r) => r.closed().await,
            Started::Remote(r) => r.closed().await,
        }
    }

    /// Stops the server or ends the session.
    pub(super) async fn stop(&mut self) {
        match self {
            Started::Process(r) => r.stop().await,
            Started::Remote(r) => r.stop().await,
        }
    }
}

/// Starts a stdio server's process, or connects to a remote server, and performs the MCP
/// handshake within the server's startup timeout.
pub(super) async fn start(
    ds: &Downstream,
    client: &ClientInit,
    events: &mpsc::UnboundedSender<DownstreamEvent>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Started, StartError> {
    match ds.inner.spec.remote.clone() {
        None => Ok(Started::Process(
            start_once(ds, client, events, shutdown).await?,
        )),
        Some(remote) => Ok(Started::Remote(
            connect(ds, &remote, client, events, shutdown).await?,
        )),
    }
}

/// A connected remote server: its connection, its transport and the task sending messages.
pub(super) struct RemoteRunning {
    conn: Arc<Connection>,
    transport: Arc<Transport>,
    lost: Option<oneshot::Receiver<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl RemoteRunning {
    /// Resolves when the transport reports the connection lost; every request still waiting
    /// fails with [`CallError::Connection`] and the reason.
    async fn closed(&mut self) -> String {
        // Polled by reference: a caller racing this future may drop it without losing the
        // transport's signal.
        let reason = match self.lost.as_mut() {
            Some(rx) => rx.await.unwrap_or_else(|_| "the transport stopped".into()),
            None => std::future::pending().await,
        };
        self.lost = None;
        self.conn.close_with(|| {
            Reply::Failed(CallError::Connection(format!(
                "the connection was lost: {reason}"
            )))
        });
        reason
    }

    /// Fails what is in flight, ends the HTTP session (`DELETE`), stops the transport's tasks.
    async fn stop(&mut self) {
        self.conn
            .close("stopped because the proxy is shutting down");
        self.transport.end_session(SHUTDOWN_GRACE).await;
        self.task.abort();
        debug!(server = %self.conn.server, "remote session ended");
    }
}

impl Drop for RemoteRunning {
    fn drop(&mut self) {
        self.task.abort();
        self.transport.stop_readers();
    }
}

/// Connects to a remote server and performs the handshake (see [`start`]).
async fn connect(
    ds: &Downstream,
    remote: &RemoteConfig,
    client: &ClientInit,
    events: &mpsc::UnboundedSender<DownstreamEvent>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<RemoteRunning, StartError> {
    let spec = &ds.inner.spec;
    let (lost_tx, lost_rx) = oneshot::channel();
    let env = |name: &str| std::env::var(name).ok();
    let transport = Transport::new(&spec.name, remote, spec.max_message_bytes, &env, lost_tx)
        .map_err(|reason| StartError {
            reason,
            fatal: true,
        })?;
    let transport = Arc::new(transport);
    let (writer_tx, writer_rx) = mpsc::channel::<Vec<u8>>(1024);
    let conn = Arc::new(Connection::new(&spec.name, writer_tx));
    let sink = Sink {
        ds: ds.clone(),
        conn: conn.clone(),
        events: events.clone(),
    };
    let task = tokio::spawn(transport.clone().run(sink, writer_rx));
    let mut running = RemoteRunning {
        conn: conn.clone(),
        transport: transport.clone(),
        lost: Some(lost_rx),
        task,
    };
    debug!(server = %spec.name, url = %remote.display_url(), "connecting");
    // Remote servers are opened with `initialize` (the era probe runs on stdio only).
    let handshake = run_handshake(ds, &conn, client, false);
    let (outcome, _) =
        settle_startup(spec.startup_timeout, handshake, running.closed(), shutdown).await;
    match outcome {
        Ok(()) => Ok(running),
        Err(reason) => {
            running.stop().await;
            Err(StartError {
                reason,
                fatal: transport.was_refused(),
            })
        }
    }
}
