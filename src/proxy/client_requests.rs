//! A session's requests to its client on behalf of a server (sampling, elicitation, roots,
//! ping), sent by the session's JSON-RPC [`crate::rpc::Peer`] (the same peer type that talks to
//! the servers): each goes out under a fresh integer id of the session's own, the client's
//! answer goes back to the server under the server's id, and a server's cancellation is passed
//! under ours (MCP 2025-11-25 "Client Features", "Utilities: Cancellation").

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jsonrpc_core::ErrorCode;
use serde_json::{json, Value};
use tracing::{debug, warn};

use super::round_events::{Answerer, InputAnswer};
use super::session::Session;
use crate::mrtr::{self, InputRequest};
use crate::passthrough::input_rounds::{ClientInput, InputFuture};
use crate::rpc::{CallError, Reply, ResultBody};
use crate::wire::jsonrpc;

/// What the client's peer gave back for one of our requests.
type Asked = Result<Result<ResultBody, Value>, CallError>;

impl Session {
    /// Forwards a server-to-client request under a fresh id and waits for the client's answer
    /// (at most the server's `tool_timeout_sec`; then the client gets `notifications/cancelled`
    /// and the server -32001, the MCP SDKs' request-timeout code). An error is the client's own
    /// error response ([`Answerer::Client`]) or the proxy's ([`Answerer::Proxy`]).
    pub(super) async fn ask_client(
        &self,
        server: &str,
        server_id: &Value,
        method: &str,
        params: Option<Value>,
    ) -> InputAnswer {
        if self.protocol_version.get().is_none() {
            let why = if self.listeners.seen() {
                "the client speaks MCP 2026-07-28, which has no requests from server to client"
            } else {
                "no client is connected to answer this request"
            };
            let refused = jsonrpc::error_object(ErrorCode::MethodNotFound, why, None);
            return Err((refused, Answerer::Proxy));
        }
        // The MCP lifecycle lets us send requests only once the client has finished initializing.
        if !self.until_ready().await {
            return Err(internal_error("the client went away"));
        }
        let key = (server.to_owned(), server_id.to_string());
        let timeout = self
            .core
            .config()
            .tool_settings(server, "")
            .tool_timeout
            .value;
        debug!(%server, method, "forwarding server request to the client");
        let ids = &self.server_request_ids;
        let sent = AtomicU64::new(NOT_SENT);
        let mut on_sent = |id| {
            ids.lock().unwrap().insert(key.clone(), id);
            sent.store(id, Ordering::Relaxed);
        };
        let unanswered = CancelUnanswered {
            session: self,
            sent: &sent,
            armed: true,
        };
        let asked = self
            .peer
            .request(method, params.as_ref(), timeout, &mut on_sent);
        let answer = self.unless_stopped(asked).await;
        unanswered.disarm();
        self.server_request_ids.lock().unwrap().remove(&key);
        match answer {
            Some(asked) => client_answer(asked, timeout).await,
            None => Err(internal_error("the proxy is shutting down")),
        }
    }

    /// Waits for `asked` unless the proxy stops or the session closes first (`None`): a client
    /// that never answers must not keep the proxy alive after shutdown.
    async fn unless_stopped(
        &self,
        asked: impl std::future::Future<Output = Asked>,
    ) -> Option<Asked> {
        let mut stopping = self.core.shutdown.subscribe();
        let mut closed = self.closed.subscribe();
        tokio::select! {
            asked = asked => Some(asked),
            _ = stopping.wait_for(|stop| *stop) => None,
            _ = closed.wait_for(|c| *c) => None,
        }
    }

    /// The client's answer to our request `id` (a JSON-RPC response it sent).
    pub(super) fn client_answered(&self, id: &Value, outcome: Result<Value, Value>) {
        let reply = Reply::Response(outcome.map(ResultBody::Value));
        if !self.peer.deliver(id, reply) {
            warn!(%id, "response from the client for an unknown id ignored");
        }
    }

    /// A server's `notifications/cancelled` params with our id for its request to this
    /// session's client; `None` when the request is not one of ours (or already answered).
    pub(super) fn map_server_cancellation(
        &self,
        server: &str,
        params: Option<Value>,
    ) -> Option<Value> {
        let mut params = params?;
        let theirs = params.get("requestId")?.to_string();
        let ours = self
            .server_request_ids
            .lock()
            .unwrap()
            .remove(&(server.to_owned(), theirs))?;
        // Its waiting task ends (the server's side is never answered: it cancelled).
        let cancelled = Reply::Closed("cancelled by the server".into());
        self.peer.deliver(&Value::from(ours), cancelled);
        params["requestId"] = Value::from(ours);
        Some(params)
    }
}

/// No id sent yet (ours start at 0 and count up).
const NOT_SENT: u64 = u64::MAX;

/// Our request to the client, while it waits for the answer: dropped before (the request the
/// client was asked for is cancelled, say a bridged `resources/read`, and its task with it), it
/// tells the client the request is cancelled (MCP 2025-11-25 "Utilities: Cancellation"), so
/// that an elicitation dialog does not stay open for an answer nobody waits for.
struct CancelUnanswered<'a> {
    session: &'a Session,
    sent: &'a AtomicU64,
    armed: bool,
}

impl CancelUnanswered<'_> {
    /// The request was answered (or gave up): nothing to cancel.
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for CancelUnanswered<'_> {
    fn drop(&mut self) {
        let id = self.sent.load(Ordering::Relaxed);
        if !self.armed || id == NOT_SENT {
            return;
        }
        self.session
            .server_request_ids
            .lock()
            .unwrap()
            .retain(|_, ours| *ours != id);
        let reason = "the request it was asked for was cancelled";
        let params = json!({"requestId": id, "reason": reason});
        self.session
            .peer
            .notify("notifications/cancelled", Some(params));
    }
}

/// The answer a server gets for its request to the client.
async fn client_answer(asked: Asked, timeout: Duration) -> InputAnswer {
    match asked {
        Ok(Ok(body)) => match body.into_result().await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => Err((error, Answerer::Client)),
            Err(e) => Err(internal_error(&format!(
                "the client's answer is unusable: {e}"
            ))),
        },
        Ok(Err(error)) => Err((error, Answerer::Client)),
        Err(CallError::Timeout(_)) => {
            let reason = format!(
                "no answer within {}",
                envelope_core::mapping::seconds_text(timeout)
            );
            warn!("request to the client timed out");
            let error = jsonrpc::error_object(
                ErrorCode::ServerError(-32001),
                format!("the client did not answer: {reason}"),
                None,
            );
            Err((error, Answerer::Proxy))
        }
        Err(_) => Err(internal_error("the client went away before answering")),
    }
}

/// The proxy's -32603 error object with `message`.
fn internal_error(message: &str) -> (Value, Answerer) {
    let error = jsonrpc::error_object(ErrorCode::InternalError, message, None);
    (error, Answerer::Proxy)
}

/// A fresh JSON-RPC id for a modern server's input request put to a legacy client
/// (`input-` and a random state: no server's id can be it).
pub(super) fn input_id() -> Value {
    json!(format!("input-{}", mrtr::new_state()))
}

/// Puts one input request of a modern server to the legacy client under `id`, if it declared
/// the capability at `initialize` (else a -32601 error object naming it, from the proxy).
pub(super) async fn ask_legacy_session(
    session: Option<&Arc<Session>>,
    server: &str,
    id: &Value,
    request: &InputRequest,
) -> InputAnswer {
    let capability = mrtr::capability_for(&request.method).unwrap_or("?");
    let session = session.filter(|s| s.declares(capability));
    let Some(session) = session else {
        let why = format!("the client did not declare `{capability}` at initialize");
        return Err((mrtr::refused(&request.method, &why), Answerer::Proxy));
    };
    session
        .ask_client(server, id, &request.method, request.params.clone())
        .await
}

/// A legacy client's session as the answerer of a modern server's input requests to a
/// passthrough request (`prompts/get`, `resources/read`: [`crate::passthrough::input_rounds`]).
pub(super) struct SessionInput(pub Arc<Session>);

impl ClientInput for SessionInput {
    fn answer<'a>(&'a self, server: &'a str, request: &'a InputRequest) -> InputFuture<'a> {
        Box::pin(async move {
            let id = input_id();
            let answer = ask_legacy_session(Some(&self.0), server, &id, request).await;
            answer.map_err(|(error, _)| error)
        })
    }
}
