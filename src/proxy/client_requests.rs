//! A session's requests to its client on behalf of a server (sampling, elicitation, roots,
//! ping): each goes out under a fresh integer id of the session's own, the client's answer goes
//! back to the server under the server's id, and a server's cancellation is passed under ours
//! (MCP 2025-11-25 "Client Features", "Utilities: Cancellation").

use std::sync::atomic::Ordering;
use std::time::Duration;

use jsonrpc_core::ErrorCode;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tracing::{debug, warn};

use super::session::Session;
use crate::jsonrpc;

impl Session {
    /// Forwards a server-to-client request under a fresh id and waits for the client's answer
    /// (at most the server's `tool_timeout_sec`).
    pub(super) async fn ask_client(
        &self,
        server: &str,
        server_id: &Value,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, Value> {
        if self.protocol_version.get().is_none() {
            let why = if self.listeners.seen() {
                "the client speaks MCP 2026-07-28, which has no requests from server to client"
            } else {
                "no client is connected to answer this request"
            };
            return Err(jsonrpc::error_object(ErrorCode::MethodNotFound, why, None));
        }
        // The MCP lifecycle lets us send requests only once the client has finished initializing.
        if !self.until_ready().await {
            return Err(internal_error("the client went away"));
        }
        let id = self.next_client_request.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.client_requests.lock().unwrap().insert(id, tx);
        let key = (server.to_owned(), server_id.to_string());
        self.server_request_ids
            .lock()
            .unwrap()
            .insert(key.clone(), id);
        debug!(%server, method, id, "forwarding server request to the client");
        self.send(&jsonrpc::request(Value::from(id), method, params))
            .await;
        let timeout = self
            .core
            .config
            .tool_settings(server, "")
            .tool_timeout
            .value;
        let answer = self.client_answer_within(id, rx, timeout).await;
        self.server_request_ids.lock().unwrap().remove(&key);
        answer
    }

    /// Waits for the client's answer to our request `id`. A client that never answers must not
    /// keep the proxy alive after shutdown (this task holds the session and so its output),
    /// nor keep the request forever: after `timeout` it is cancelled.
    async fn client_answer_within(
        &self,
        id: u64,
        rx: oneshot::Receiver<Result<Value, Value>>,
        timeout: Duration,
    ) -> Result<Value, Value> {
        let mut stopping = self.core.shutdown.subscribe();
        let mut closed = self.closed.subscribe();
        let expired = tokio::time::sleep(timeout);
        let stopped = || {
            self.client_requests.lock().unwrap().remove(&id);
            Err(internal_error("the proxy is shutting down"))
        };
        let answer = tokio::select! {
            _ = expired => None,
            r = rx => Some(r.unwrap_or_else(|_| Err(internal_error("the client went away before answering")))),
            _ = stopping.wait_for(|stop| *stop) => Some(stopped()),
            _ = closed.wait_for(|c| *c) => Some(stopped()),
        };
        match answer {
            Some(answer) => answer,
            None => self.expire_client_request(id, timeout).await,
        }
    }

    /// Gives up on our request `id` to the client after `timeout`: forgotten, the client told
    /// with `notifications/cancelled`, and the error the server is answered with returned
    /// (-32001, the MCP SDKs' request-timeout code).
    async fn expire_client_request(&self, id: u64, timeout: Duration) -> Result<Value, Value> {
        self.client_requests.lock().unwrap().remove(&id);
        let reason = format!("no answer within {} s", timeout.as_secs_f64());
        warn!(id, "request to the client timed out");
        self.send(&jsonrpc::notification(
            "notifications/cancelled",
            Some(json!({ "requestId": id, "reason": reason })),
        ))
        .await;
        Err(jsonrpc::error_object(
            ErrorCode::ServerError(-32001),
            format!("the client did not answer: {reason}"),
            None,
        ))
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
        self.client_requests.lock().unwrap().remove(&ours);
        params["requestId"] = Value::from(ours);
        Some(params)
    }
}

/// A -32603 error object with `message`.
fn internal_error(message: &str) -> Value {
    jsonrpc::error_object(ErrorCode::InternalError, message, None)
}
