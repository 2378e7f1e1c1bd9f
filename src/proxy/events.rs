//! What the servers report, routed to sessions: tool-list changes and notifications go to
//! every session (each applies its own era filter) — a progress notification only to the
//! session whose call carried its `progressToken`; a server's request goes to the session whose
//! call caused it (the call whose HTTP response stream it came on; on stdio, which carries no
//! link, the oldest call in flight on that server: see `calls_in_flight.rs`), else to a session
//! that declared the capability it needs, else it is refused (-32601).

use std::sync::Arc;

use jsonrpc_core::ErrorCode;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info};

use super::calls_in_flight::InputError;
use super::multi_round;
use super::round_events::{answer_event, request_event, Answerer, InputAnswer};
use super::session::Session;
use super::Core;
use crate::downstream::DownstreamEvent;
use crate::jsonrpc;
use crate::mrtr;
use crate::passthrough::NotificationAction;
use crate::transcript;

impl Core {
    /// Handles the servers' events until every server task has ended.
    pub(super) async fn handle_events(
        self: Arc<Self>,
        mut rx: mpsc::UnboundedReceiver<DownstreamEvent>,
    ) {
        while let Some(event) = rx.recv().await {
            match event {
                DownstreamEvent::ToolsChanged { server } => self.tools_changed(server).await,
                DownstreamEvent::Notification {
                    server,
                    method,
                    params,
                    queued,
                } => {
                    self.server_notification(server, method, params).await;
                    let _ = queued.send(());
                }
                DownstreamEvent::Request {
                    server,
                    id,
                    method,
                    params,
                    cause,
                    reply,
                } => {
                    let request = ServerRequest {
                        server,
                        id,
                        method,
                        params,
                        cause,
                    };
                    tokio::spawn(self.clone().server_request(request, reply));
                }
            }
        }
    }

    /// A server's tools (or state) changed: its resources and prompts are read again when it
    /// (re)started, the catalog is rebuilt, and every session is told what changed.
    async fn tools_changed(self: &Arc<Self>, server: String) {
        let core = self.clone();
        let name = server.clone();
        tokio::spawn(async move {
            let up = core.upstream(None);
            for method in core.passthrough.on_server_changed(&up, &name).await {
                core.list_changed(method).await;
            }
        });
        // While the servers first start, one rebuild once all settled serves (not one per server).
        if self.catalog_settled() && self.rebuild_catalog() {
            info!(%server, tools = self.catalog().len(), "tool list changed");
            self.list_changed("notifications/tools/list_changed").await;
        }
    }

    /// A server's notification, through the passthrough filter, to the sessions it concerns.
    pub(super) async fn server_notification(
        self: &Arc<Self>,
        server: String,
        method: String,
        params: Option<Value>,
    ) {
        let mut params = match self.passthrough.on_notification(&server, &method, params) {
            NotificationAction::Forward(params) => params,
            NotificationAction::Drop => return,
            NotificationAction::RefreshThenForward(kind) => {
                let core = self.clone();
                tokio::spawn(async move {
                    let up = core.upstream(None);
                    core.passthrough.refresh(&up, &server, kind).await;
                    core.list_changed(&method).await;
                });
                return;
            }
        };
        let mut owner = None;
        if method == "notifications/progress" {
            let (call, named) = self.progress_call(&server, params.as_mut());
            if named && call.is_none() {
                // "Progress notifications MUST only reference tokens that were provided in an
                // active request" (MCP 2025-11-25, "Utilities: Progress"): no call in flight
                // set this token, so no client is waiting for it.
                let token = params.as_ref().and_then(|p| p.get("progressToken"));
                // The token's JSON text: quotes and control characters escaped.
                let token = token.map(Value::to_string).unwrap_or_default();
                debug!(%server, %token, "progress for no request in flight dropped");
                return;
            }
            if let Some(key) = call.filter(|_| self.transcript.is_some()) {
                let event = jsonrpc::notification(&method, params.clone());
                self.calls
                    .push_event(key, transcript::event("server_to_client", event));
            }
            // Only a token names the call the notification is for.
            owner = call.filter(|_| named);
        }
        let sessions = match owner.and_then(|key| self.calls.session_of(key)) {
            Some(id) => self.session(id).into_iter().collect(),
            None => self.sessions(),
        };
        for session in sessions {
            session
                .server_notification(&server, &method, params.clone())
                .await;
        }
    }

    /// The call a progress notification of `server` belongs to: the one its `progressToken`
    /// names (then `true`; the token is put back to the call's own when the server knows the
    /// call by another), else the oldest call on `server` (`false`: recorded there, not routed).
    fn progress_call(&self, server: &str, params: Option<&mut Value>) -> (Option<u64>, bool) {
        let Some(token) = params.and_then(|p| p.get_mut("progressToken")) else {
            return (self.calls.oldest(server), false);
        };
        let Some((key, own)) = self.calls.progress_owner(server, &token.to_string()) else {
            return (None, true);
        };
        if let Some(own) = own {
            *token = own;
        }
        (Some(key), true)
    }

    /// A server's request: to the modern call that takes it (as an input request), else to a
    /// session's client; the answer goes back to the server.
    async fn server_request(
        self: Arc<Self>,
        request: ServerRequest,
        reply: oneshot::Sender<Result<Value, Value>>,
    ) {
        let ServerRequest {
            server,
            id,
            method,
            params,
            cause,
        } = request;
        let caller = self.calls.caller(&server, cause);
        let event =
            (self.transcript.is_some()).then(|| request_event(id.clone(), &method, params.clone()));
        let in_flight = self.calls.count_on(&server);
        let waiter = self.multi_round.waiter_for(&server, cause, in_flight);
        let linked = waiter.is_some() && cause.is_some();
        let taken = match waiter {
            // A modern client's call takes it (as an input request) and records its event.
            Some(call) => multi_round::ask_call(call, &method, params.clone(), event.clone()).await,
            None => Err(multi_round::Untaken),
        };
        let (answer, key): (InputAnswer, _) = match taken {
            // A modern client's answers are results; an error there is the proxy's (no response
            // for the request in the retry, or a capability the request did not declare).
            Ok((answer, key)) => (answer.map_err(|e| (e, Answerer::Proxy)), Some(key)),
            Err(_) => {
                if let (Some(key), Some(event)) = (caller, event) {
                    self.calls.push_event(key, event);
                }
                let answer = if linked {
                    // The call the transport linked it to ended before taking it.
                    let refused = mrtr::refused(&method, "the call it belongs to has ended");
                    Err((refused, Answerer::Proxy))
                } else {
                    // No modern call takes it, or the one guessed for it (a stdio server's
                    // request names no call) ended before taking it: a session's client answers.
                    let guess = self.calls.caller(&server, cause);
                    match self.session_for_request(&method, guess) {
                        Ok(session) => session.ask_client(&server, &id, &method, params).await,
                        Err(refusal) => Err((refusal, Answerer::Proxy)),
                    }
                };
                (answer, caller)
            }
        };
        let answer = answer.and_then(|r| object_result(r).map_err(|e| (e, Answerer::Proxy)));
        if let (Some(key), Err((error, by))) = (key, &answer) {
            self.calls
                .note_input_error(key, input_error(&method, error, *by));
        }
        if let Some(key) = key.filter(|_| self.transcript.is_some()) {
            self.calls.push_event(key, answer_event(id, &answer));
        }
        let _ = reply.send(answer.map_err(|(error, _)| error));
    }

    /// The session to put a server's request `method` to: the one that made call `caller` (the call
    /// it belongs to, when it may be asked), else the first legacy session that declared
    /// the capability the method needs, else the only session there is (it answers as a lone
    /// client always has). `Err` is the -32601 error object the server gets.
    fn session_for_request(
        &self,
        method: &str,
        caller: Option<u64>,
    ) -> Result<Arc<Session>, Value> {
        let capability = mrtr::capability_for(method);
        let may_ask = |s: &Session| {
            capability.is_none_or(|c| s.declares(c)) || s.protocol_version().is_none()
        };
        let caller = caller
            .and_then(|key| self.calls.session_of(key))
            .and_then(|id| self.session(id));
        if let Some(session) = caller {
            if may_ask(&session) {
                return Ok(session);
            }
            let why = format!(
                "the client did not declare `{}` at initialize",
                capability.unwrap_or("?")
            );
            return Err(mrtr::refused(method, &why));
        }
        let sessions = self.sessions();
        let declared = sessions
            .iter()
            .find(|s| s.protocol_version().is_some() && may_ask(s));
        if let Some(session) = declared {
            return Ok(session.clone());
        }
        match sessions.as_slice() {
            [only] => Ok(only.clone()),
            [] => Err(jsonrpc::error_object(
                ErrorCode::MethodNotFound,
                "no client is connected to answer this request",
                None,
            )),
            _ => Err(mrtr::refused(
                method,
                "no connected client declared the capability it needs",
            )),
        }
    }
}

/// The [`InputError`] of a server's request `method` answered with `error` made `by`.
pub(super) fn input_error(method: &str, error: &Value, by: Answerer) -> InputError {
    InputError {
        method: method.to_owned(),
        error: error.clone(),
        by_client: by == Answerer::Client,
    }
}

/// A client's `result` for a server's request as the server gets it: `Ok(result)` when it is a
/// JSON object, else `Err` with a -32603 error object. Every MCP `Result` is an object (MCP
/// 2025-11-25 schema, `Result`); a server (the Python SDK's) drops any other answer and waits
/// for ever, so the call would hang until its tool timeout. This is the one place the answers
/// of clients of both eras (a legacy client's response, a 2026-07-28 client's `inputResponses`
/// entry) go back to a server's request.
fn object_result(result: Value) -> Result<Value, Value> {
    if result.is_object() {
        return Ok(result);
    }
    let kind = match result {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        _ => "an array",
    };
    let why = format!("the client's result is not a JSON object (it is {kind})");
    Err(jsonrpc::error_object(ErrorCode::InternalError, why, None))
}

/// A server-to-client request as the server sent it.
struct ServerRequest {
    server: String,
    id: Value,
    method: String,
    params: Option<Value>,
    cause: Option<u64>,
}
