//! Remote servers under the same supervision as stdio ones: a start is a connection (the HTTP
//! transport of [`crate::transport::http_client`] plus the MCP handshake) instead of a child
//! process; a lost connection is an exit (restarted with the same backoff and `max_restarts`);
//! a stop ends the HTTP session. A start that fails because the server refused the credentials
//! (HTTP 401/403) or because a credential's environment variable is not set is final: the
//! server is `unavailable` at once, with the reason naming the key and the variable.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::debug;

use super::inbound::ServerInbound;
use super::local::SHUTDOWN_GRACE;
use super::supervisor::{run_handshake, settle_startup, StartError};
use super::{ClientInit, Connection, Downstream, DownstreamEvent};
use crate::config::RemoteConfig;
use crate::rpc::{peer, CallError, Reply};
use crate::transport::http_client::{Caused, HttpTransport, Inbox};
use crate::transport::Close as _;
use crate::transport::{Delivery, Fault, Outbox};

/// Messages queued for the remote connection's reader.
pub const INBOX_MESSAGES: usize = 64;

/// The [`Inbox`] of a remote server: what the transport receives is queued, in order, for the
/// connection's reader ([`crate::rpc::peer::read_loop`], the same as a stdio server's).
#[derive(Clone)]
struct RemoteInbox {
    queue: mpsc::Sender<Delivery>,
    conn: Arc<Connection>,
    ds: Downstream,
    events: mpsc::UnboundedSender<DownstreamEvent>,
}

impl Inbox for RemoteInbox {
    async fn dispatch(&self, line: Vec<u8>, caused: Option<Caused>) {
        if let Some(caused) = caused {
            self.conn.server_requests.link(&caused.request, &caused.by);
        }
        let _ = self.queue.send(Delivery::Message(line)).await;
    }

    async fn fail(&self, id: Option<&Value>, fault: Fault) {
        if let Some(id) = id {
            let id = Some(id.clone());
            let _ = self.queue.send(Delivery::Fault { id, fault }).await;
        }
    }

    fn protocol_version(&self) -> Option<String> {
        let init = self.conn.initialize_result.read().unwrap();
        init["protocolVersion"].as_str().map(str::to_owned)
    }

    fn is_closed(&self) -> bool {
        self.conn.is_closed()
    }

    fn is_waiting(&self, id: &Value) -> bool {
        self.conn.peer().is_pending(id)
    }

    fn tools(&self) -> Option<Arc<Vec<crate::server_tool::ServerTool>>> {
        self.ds.tools()
    }

    /// Counted on the connection, and reported like a restart: the proxy sets the new
    /// session up again ([`crate::passthrough::Passthrough::on_server_changed`]).
    fn renewed(&self) {
        self.conn.renewed();
        let server = self.ds.name().to_owned();
        let _ = self.events.send(DownstreamEvent::ToolsChanged { server });
    }
}

/// `tools` of a server reached over streamable HTTP in MCP 2026-07-28 without those whose
/// `x-mcp-header` annotations are invalid, a warning for each in `warnings`
/// ([`crate::transport::http_client::exclude_invalid_header_marks`]); all of `tools` for a
/// stdio server or a server in the 2025 era, which get no `Mcp-Param-*` headers.
pub(super) fn without_invalid_header_marks(
    ds: &Downstream,
    conn: &Connection,
    tools: Vec<crate::server_tool::ServerTool>,
    warnings: &mut Vec<String>,
) -> Vec<crate::server_tool::ServerTool> {
    let modern = matches!(conn.era(), Some(super::ServerEra::Modern(_)));
    if ds.inner.spec.remote.is_none() || !modern {
        return tools;
    }
    crate::transport::http_client::exclude_invalid_header_marks(ds.name(), tools, warnings)
}

/// A connected remote server: its connection, its transport, the task sending messages and
/// the one reading what comes back.
pub(super) struct RemoteRunning {
    conn: Arc<Connection>,
    transport: Arc<HttpTransport>,
    lost: Option<oneshot::Receiver<String>>,
    task: tokio::task::JoinHandle<()>,
    reader: tokio::task::JoinHandle<()>,
}

impl RemoteRunning {
    /// The connection requests go through.
    pub(super) fn conn(&self) -> &Arc<Connection> {
        &self.conn
    }

    /// Resolves when the transport reports the connection lost (polled by reference: a caller
    /// racing this future may drop it without losing the signal); every request still waiting
    /// fails with [`CallError::Connection`] and the reason.
    pub(super) async fn closed(&mut self) -> String {
        let reason = match self.lost.as_mut() {
            Some(rx) => rx.await.unwrap_or_else(|_| "the transport stopped".into()),
            None => std::future::pending().await,
        };
        self.lost = None;
        self.conn.peer().close_with(|| {
            Reply::Failed(CallError::Connection(format!(
                "the connection was lost: {reason}"
            )))
        });
        reason
    }

    /// Fails what is in flight, ends the HTTP session (`DELETE`), stops the transport's tasks.
    pub(super) async fn stop(&mut self) {
        self.conn
            .peer()
            .close("stopped because the proxy is shutting down");
        self.transport.close(SHUTDOWN_GRACE).await;
        self.task.abort();
        self.reader.abort();
        debug!(server = %self.conn.server(), "remote session ended");
    }
}

impl Drop for RemoteRunning {
    fn drop(&mut self) {
        self.task.abort();
        self.reader.abort();
        self.transport.stop_readers();
    }
}

/// Connects to a remote server and performs the handshake: the era probe (`server/discover`
/// with the 2026-07-28 request headers; a 2025-era server refuses it and is opened with
/// `initialize`), then `tools/list`; a modern server that announces list changes gets a
/// `subscriptions/listen` stream.
pub(super) async fn connect(
    ds: &Downstream,
    remote: &RemoteConfig,
    client: &ClientInit,
    events: &mpsc::UnboundedSender<DownstreamEvent>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<RemoteRunning, StartError> {
    let spec = &ds.inner.spec;
    let (lost_tx, lost_rx) = oneshot::channel();
    let env = |name: &str| std::env::var(name).ok();
    let transport = HttpTransport::new(&spec.name, remote, spec.max_message_bytes, &env, lost_tx)
        .map_err(|reason| StartError {
        reason,
        fatal: true,
    })?;
    let transport = Arc::new(transport);
    let (outbox, writer_rx) = Outbox::channel();
    let conn = Arc::new(Connection::new(
        &spec.name,
        outbox,
        ds.inner.redactor.clone(),
    ));
    let inbound = ServerInbound {
        ds: ds.clone(),
        conn: conn.clone(),
        events: events.clone(),
    };
    let (queue, mut received) = mpsc::channel(INBOX_MESSAGES);
    let reader = tokio::spawn(async move {
        let gate = inbound.ds.inner.spec.output_gate.clone();
        let peer = inbound.conn.peer();
        peer::read_loop(peer, &inbound, &mut received, gate.as_ref()).await;
    });
    let inbox = RemoteInbox {
        queue,
        conn: conn.clone(),
        ds: ds.clone(),
        events: events.clone(),
    };
    let task = tokio::spawn(transport.clone().run(inbox, writer_rx));
    let mut running = RemoteRunning {
        conn: conn.clone(),
        transport: transport.clone(),
        lost: Some(lost_rx),
        task,
        reader,
    };
    debug!(server = %spec.name, url = %remote.display_url(), "connecting");
    let handshake = run_handshake(ds, &conn, client);
    let (outcome, _) =
        settle_startup(spec.startup_timeout, handshake, running.closed(), shutdown).await;
    match outcome {
        Ok(()) => {
            super::handshake::listen_for_changes(&conn);
            Ok(running)
        }
        Err(reason) => {
            running.stop().await;
            Err(StartError {
                reason,
                fatal: transport.was_refused(),
            })
        }
    }
}
