//! What a server sends besides answers: its notifications (passed to the session in order,
//! `tools/list_changed` turned into a refresh of its tools, its own cancellations applied) and
//! its requests to the client (forwarded, at most [`MAX_OUTSTANDING_SERVER_REQUESTS`] at once);
//! and the loop that reads a server's messages from its transport into the peer.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

use super::server_requests::MAX_OUTSTANDING_SERVER_REQUESTS;
use super::{supervisor, Connection, Downstream, DownstreamEvent};
use crate::rpc::{peer, Handler};
use crate::transport::child::StdoutLines;
use crate::wire::jsonrpc;

/// The [`Handler`] of one server connection.
#[derive(Clone)]
pub(super) struct ServerInbound {
    pub(super) ds: Downstream,
    pub(super) conn: Arc<Connection>,
    pub(super) events: mpsc::UnboundedSender<DownstreamEvent>,
}

impl ServerInbound {
    /// `params` without the secrets the proxy gives the server
    /// ([`crate::redact::SecretValues`]), as its answers are in [`Downstream::request`]: what a
    /// server sends on its own (log messages, progress messages, an elicitation's text) reaches
    /// the client and the model just as a result does.
    fn redacted(&self, mut params: Option<Value>) -> Option<Value> {
        if let Some(p) = params.as_mut() {
            self.ds.inner.secrets.redact_json(p);
        }
        params
    }
}

impl Handler for ServerInbound {
    fn notification(&self, method: String, params: Option<Value>) -> Option<oneshot::Receiver<()>> {
        let server = self.ds.name();
        let params = self.redacted(params);
        if method == "notifications/subscriptions/acknowledged" {
            debug!(%server, ?params, "subscriptions/listen acknowledged");
            return None;
        }
        if method == "notifications/tools/list_changed" {
            if self.conn.tools_refresh.request() {
                tokio::spawn(refresh_tools(self.clone()));
            }
            return None;
        }
        if method == "notifications/cancelled" {
            if let Some(id) = params.as_ref().and_then(|p| p.get("requestId")) {
                self.conn.server_requests.cancel(id);
            }
        }
        let (queued, done) = oneshot::channel();
        let _ = self.events.send(DownstreamEvent::Notification {
            server: server.to_owned(),
            method,
            params,
            queued,
        });
        Some(done)
    }

    /// Passes a server-to-client request on to the session (its params redacted like a
    /// notification's) and answers the server with the client's answer; refused at once when the server already has
    /// [`MAX_OUTSTANDING_SERVER_REQUESTS`] waiting; never answered once the server cancels it.
    fn request(&self, id: Value, method: String, params: Option<Value>) {
        let (server, conn) = (self.ds.name(), &self.conn);
        let params = self.redacted(params);
        let cause = conn.server_requests.take_cause(&id);
        if !conn.server_requests.begin(&id) {
            warn!(%server, %id, %method, "server request refused: too many waiting for the client");
            let error = jsonrpc::error_object(
                jsonrpc_core::ErrorCode::ServerError(-32000),
                format!(
                    "too many requests waiting for the client (at most {MAX_OUTSTANDING_SERVER_REQUESTS})"
                ),
                None,
            );
            let conn = conn.clone();
            tokio::spawn(async move { conn.peer().respond(id, Err(error)).await });
            return;
        }
        let (tx, rx) = oneshot::channel();
        let sent = self.events.send(DownstreamEvent::Request {
            server: server.to_owned(),
            id: id.clone(),
            method,
            params,
            cause,
            reply: tx,
        });
        let (task_conn, task_id) = (conn.clone(), id.clone());
        let task = tokio::spawn(async move {
            let outcome = if sent.is_ok() {
                rx.await
                    .unwrap_or_else(|_| Err(internal("the client did not answer")))
            } else {
                Err(internal("no client connected"))
            };
            task_conn.server_requests.end(&task_id);
            task_conn.peer().respond(task_id, outcome).await;
        });
        conn.server_requests.attach(&id, task.abort_handle());
    }
}

fn internal(message: &str) -> Value {
    jsonrpc::error_object(jsonrpc_core::ErrorCode::InternalError, message, None)
}

/// Refreshes the server's tools, again as long as more `list_changed` notifications came in
/// meanwhile (see [`super::coalesce::Coalescer`]).
async fn refresh_tools(inbound: ServerInbound) {
    let ServerInbound { ds, conn, events } = inbound;
    loop {
        match supervisor::list_all_tools(&conn, ds.inner.spec.startup_timeout).await {
            Ok(listing) => {
                supervisor::store_tools(&ds, &conn, listing);
                let _ = events.send(DownstreamEvent::ToolsChanged {
                    server: ds.name().to_owned(),
                });
            }
            // Stopping the server ends the refresh too; that is no fault.
            Err(e) if conn.is_closed() => {
                debug!(server = %ds.name(), error = %e, "refreshing tools stopped")
            }
            Err(e) => warn!(server = %ds.name(), error = %e, "refreshing tools failed"),
        }
        if !conn.tools_refresh.finish() {
            break;
        }
    }
}

/// Reads a server's stdout until it closes, dispatching every line; waits while the client's
/// output queue is full (backpressure). Sends why it ended through `done`. During the handshake
/// every pending request fails with that reason at once; once the server serves calls, new
/// requests are refused and those pending are failed by the supervisor, which adds the exit
/// status and the last stderr lines.
pub(super) async fn read_stdout(
    inbound: ServerInbound,
    mut stdout: StdoutLines,
    done: oneshot::Sender<String>,
) {
    let gate = inbound.ds.inner.spec.output_gate.clone();
    let peer = inbound.conn.peer();
    let reason = peer::read_loop(peer, &inbound, &mut stdout, gate.as_ref()).await;
    if inbound.conn.is_serving() {
        inbound.conn.peer().refuse_new();
    } else {
        inbound.conn.peer().close(&reason);
    }
    let _ = done.send(reason);
}
