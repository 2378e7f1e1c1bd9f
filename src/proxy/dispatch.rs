//! A session's dispatch of what its client sends: single messages, batches, notifications
//! (JSON-RPC 2.0 "Request object", "Batch"; MCP "Utilities: Cancellation").

use std::collections::HashSet;
use std::sync::Arc;

use futures_util::FutureExt;
use jsonrpc_core::ErrorCode;
use serde_json::Value;
use tracing::{debug, info};

use super::requests::{Admission, Answer};
use super::session::{Inflight, Session};
use super::unanswered::Unstarted;
use super::{batches_allowed, LATEST_PROTOCOL_VERSION};
use crate::downstream::ServerState;
use crate::era::RequestMeta;
use crate::jsonrpc::{self, Message};

impl Session {
    /// Dispatches one client message. Requests are answered by their own task.
    pub(super) async fn dispatch(self: &Arc<Self>, msg: Message) {
        match msg {
            Message::Request { id, method, params } => {
                if method == "initialize" {
                    let response = self.initialize(&id, params).await;
                    self.send(&response).await;
                    return;
                }
                self.dispatch_request(id, method, params).await;
            }
            Message::Notification { method, params } => self.notification(&method, params),
            Message::Response { id, outcome } => self.client_answered(&id, outcome),
            Message::Invalid { id, reason } => {
                let err = invalid_request(format!("Invalid Request: {reason}"));
                self.send(&jsonrpc::error_response(id, err)).await;
            }
        }
    }

    /// A request other than `initialize`: its era checked, a 2026-07-28 `server/discover` or
    /// `subscriptions/listen` answered at once, anything else admitted (a duplicate id in
    /// flight is -32600) and answered by its own task.
    async fn dispatch_request(self: &Arc<Self>, id: Value, method: String, params: Option<Value>) {
        let modern = match crate::era::classify_request(&method, params.as_ref()) {
            crate::era::RequestEra::Legacy => None,
            crate::era::RequestEra::Modern(meta) => Some(Arc::new(meta)),
            crate::era::RequestEra::Invalid(err) => {
                self.send(&jsonrpc::error_response(id, err)).await;
                return;
            }
        };
        if let Some(meta) = &modern {
            if self
                .modern_request(&id, &method, params.as_ref(), meta)
                .await
            {
                return;
            }
        }
        let key = super::id_key(&id);
        let slot = super::DownstreamSlot::default();
        let duplicate = {
            let mut inflight = self.inflight.lock().unwrap();
            let duplicate = inflight.contains_key(&key);
            if !duplicate {
                self.cancelled_tokens.request_started(params.as_ref());
                let entry = Inflight {
                    task: None,
                    downstream: slot.clone(),
                    progress_token: super::cancelled_progress::progress_token_of_request(
                        params.as_ref(),
                    ),
                };
                inflight.insert(key.clone(), entry);
            }
            duplicate
        };
        if duplicate {
            let err = invalid_request(format!("a request with id {key} is still in progress"));
            self.send(&jsonrpc::error_response(id, err)).await;
            return;
        }
        let (permit, mut admission) = self.admit_when_free(&method).await;
        if modern.is_some() {
            admission.initialized = true;
            admission.modern = modern;
        }
        let session = self.clone();
        let task_key = key.clone();
        // Boxed: an unboxed task moves its future on every spawn and when it completes
        // (memmove was the proxy's top symbol under load). `answer_request` itself, not an
        // async block around it, which would hold every argument twice.
        let refusal =
            |params: Option<&Value>| self.refused_before_handling(&method, params, &admission);
        let request = Unstarted::new(&self.core, (id, &method, params), admission.key, refusal);
        let answer = session.answer_request(request, method, slot, (admission, permit), task_key);
        let task = tokio::spawn(Box::pin(answer));
        match self.inflight.lock().unwrap().get_mut(&key) {
            Some(entry) => entry.task = Some(task.abort_handle()),
            // Cancelled while it waited for admission: nobody answers it (a `tools/call` is
            // recorded as cancelled when its task is dropped).
            None => task.abort(),
        }
    }

    /// The task of one request: handles it and sends the answer unless it was cancelled
    /// meanwhile; then logs a `tools/call`. The admission's permit is held until it ends.
    ///
    /// Its future is kept small: an `async fn` holds the largest state of every path it may
    /// take, so the rarer paths' states (a modern server for a legacy client, a resumed
    /// multi-round call, the passthrough methods: kilobytes each) made every small
    /// `tools/call` one 5.4 kB allocation. glibc serves blocks above 1,032 bytes from its
    /// bins, not its per-thread cache, and merges its fast bins first (`malloc_consolidate`):
    /// about 4,000 instructions per call (callgrind, 2026-12-02). With many calls in flight the
    /// cache runs dry and the limit is 1,000 bytes (a small bin's largest block). So the
    /// `tools/call` path is boxed at a few awaits (`call_tool_mapped`, `call_routed`,
    /// `call_downstream`, `request_unredacted`), each box under that size, and the rarer paths
    /// on their own. This task's own future is 992 bytes (dhat, 2026-12-03): add state across
    /// its awaits only boxed (`src/proxy/tests_future_sizes.rs` checks `call_tool_mapped`).
    async fn answer_request(
        self: Arc<Self>,
        request: Unstarted,
        method: String,
        slot: super::DownstreamSlot,
        (admission, permit): (Admission, tokio::sync::OwnedSemaphorePermit),
        key: String,
    ) {
        let (id, params) = request.start();
        let stamp = admission.modern.is_some();
        let _log = admission
            .modern
            .as_ref()
            .and_then(|m: &Arc<RequestMeta>| self.listeners.log_interest(m.log_level.as_deref()));
        // Taken apart at once: an `Answer` kept whole would hold its room (176 bytes) across
        // the awaits below, beside the call summary taken out of it.
        let Answer {
            mut json,
            call,
            stamped,
        } = self
            .handle_caught(&key, id, &method, params, slot, admission)
            .await;
        if stamp && !stamped {
            json = crate::era::stamp_response_json(&method, json);
        }
        let still_ours = self.inflight.lock().unwrap().remove(&key).is_some();
        if still_ours {
            Box::pin(self.send_json(json)).await;
        }
        if let Some(call) = call {
            // Let the writer send the answer before the log line is made.
            tokio::task::yield_now().await;
            call.log();
        }
        crate::downstream::release_memory_after_large_message();
        drop(permit);
    }

    /// [`Session::handle_request`], its panic (a bug of the proxy's) caught and answered
    /// ([`panicked`]) to the request's id, whose JSON text `key` is ([`super::id_key`]): for a
    /// request alone and for each request of a batch.
    async fn handle_caught(
        self: &Arc<Self>,
        key: &str,
        id: Value,
        method: &str,
        params: Option<Value>,
        slot: super::DownstreamSlot,
        admission: Admission,
    ) -> Answer {
        let handled = self.handle_request(id, method, params, slot, admission);
        match std::panic::AssertUnwindSafe(handled).catch_unwind().await {
            Ok(answer) => answer,
            Err(panic) => Answer::of(&panicked(key, method, panic.as_ref())),
        }
    }

    /// Answers a JSON-RPC 2.0 batch: one array of the responses to its requests (none for
    /// notifications); an error when the negotiated protocol version has no batches.
    pub(super) async fn dispatch_batch(self: &Arc<Self>, msgs: Vec<Message>) {
        let version = self.protocol_version().unwrap_or(LATEST_PROTOCOL_VERSION);
        if !batches_allowed(version) {
            let err = invalid_request(format!(
                "JSON-RPC batches are not supported in protocol version {version}"
            ));
            self.send(&jsonrpc::error_response(Value::Null, err)).await;
            return;
        }
        let mut waits = Vec::new();
        let mut ids = HashSet::new();
        for msg in msgs {
            match self.batch_member(msg, &mut ids).await {
                BatchMember::Answered(answer) => waits.push(tokio::spawn(async move { answer })),
                BatchMember::Pending(task) => waits.push(task),
                BatchMember::NoAnswer => {}
            }
        }
        if waits.is_empty() {
            return;
        }
        let session = self.clone();
        tokio::spawn(async move {
            // The batch's answer is the array of the responses' JSON texts.
            let mut array = vec![b'['];
            let mut calls = Vec::new();
            for w in waits {
                if let Ok(answer) = w.await {
                    if array.len() > 1 {
                        array.push(b',');
                    }
                    array.extend_from_slice(&answer.json);
                    calls.extend(answer.call);
                }
            }
            array.push(b']');
            session.send_json(array).await;
            for call in calls {
                call.log();
            }
        });
    }

    /// One member of a batch: a request gets a task (or an error at once), anything else is
    /// dispatched as if it came alone. `ids` are the request ids seen so far in the batch.
    async fn batch_member(
        self: &Arc<Self>,
        msg: Message,
        ids: &mut HashSet<String>,
    ) -> BatchMember {
        let error = |id: Value, message: String| {
            BatchMember::Answered(Answer::of(&jsonrpc::error_response(
                id,
                invalid_request(message),
            )))
        };
        match msg {
            // The same id twice in one batch (or an id still in flight): the second is
            // rejected, as for single requests.
            Message::Request { id, .. }
                if !ids.insert(super::id_key(&id))
                    || self
                        .inflight
                        .lock()
                        .unwrap()
                        .contains_key(&super::id_key(&id)) =>
            {
                error(
                    id.clone(),
                    format!("a request with id {id} is already in this batch or in progress"),
                )
            }
            Message::Request { id, method, params } if method != "initialize" => {
                let (permit, admission) = self.admit_when_free(&method).await;
                let session = self.clone();
                BatchMember::Pending(tokio::spawn(Box::pin(async move {
                    let slot = super::DownstreamSlot::default();
                    let key = super::id_key(&id);
                    let r = session
                        .handle_caught(&key, id, &method, params, slot, admission)
                        .await;
                    drop(permit);
                    r
                })))
            }
            Message::Request { id, .. } => {
                error(id, "`initialize` cannot be part of a batch".into())
            }
            Message::Invalid { id, reason } => error(id, format!("Invalid Request: {reason}")),
            other => {
                Box::pin(self.dispatch(other)).await;
                BatchMember::NoAnswer
            }
        }
    }

    /// A notification from the client.
    fn notification(self: &Arc<Self>, method: &str, params: Option<Value>) {
        match method {
            "notifications/initialized" => {
                debug!("client sent notifications/initialized");
                self.mark_client_ready();
            }
            "notifications/cancelled" => self.cancelled(params),
            "notifications/roots/list_changed" | "notifications/progress" => {
                for ds in self.core.servers().iter() {
                    if let ServerState::Ready(conn) = ds.state() {
                        conn.notify(method, params.clone());
                    }
                }
            }
            other => debug!(method = other, "client notification ignored"),
        }
    }

    /// The client's `notifications/cancelled`: a listen stream closed, or a request in flight
    /// aborted and its downstream request cancelled under the server's id.
    fn cancelled(&self, params: Option<Value>) {
        let Some(request_id) = params.as_ref().and_then(|p| p.get("requestId")) else {
            return;
        };
        if self.listeners.cancel(request_id) {
            info!(%request_id, "subscriptions/listen stream closed by the client");
            return;
        }
        let entry = self
            .inflight
            .lock()
            .unwrap()
            .remove(&super::id_key(request_id));
        let Some(entry) = entry else {
            debug!(%request_id, "cancellation for a request not in flight ignored");
            return;
        };
        if let Some(task) = entry.task {
            task.abort();
        }
        // A token another request in flight still uses (a client should not, but may) stays live.
        if let Some(token) = entry.progress_token {
            let inflight = self.inflight.lock().unwrap();
            if !inflight
                .values()
                .any(|e| e.progress_token.as_ref() == Some(&token))
            {
                self.cancelled_tokens.cancelled(token);
            }
        }
        // Each server asked that has not answered gets its own cancellation.
        let reason = params.as_ref().and_then(|p| p.get("reason")).cloned();
        entry.downstream.cancel(reason);
        info!(%request_id, "request cancelled by the client");
    }
}

/// The answer to a request whose handling panicked: a -32603 error (JSON-RPC 2.0 "Internal
/// error") to the request's id (`key` is its JSON text, see [`super::id_key`]), and an error log
/// line. A panic is a bug of the proxy's; caught, it costs that one request its answer's
/// content, not the answer itself, and every other request goes on (a lost answer left the
/// client waiting forever).
fn panicked(key: &str, method: &str, panic: &(dyn std::any::Any + Send)) -> Value {
    let what = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic");
    tracing::error!(
        method,
        panic = what,
        "handling a request panicked; answered with -32603"
    );
    let id = serde_json::from_str(key).unwrap_or(Value::Null);
    let message = format!(
        "mcp-envelope failed while handling `{method}` ({what}); this is a bug in mcp-envelope, \
         please report it; other requests are not affected"
    );
    let error = jsonrpc::error_object(ErrorCode::InternalError, message, None);
    jsonrpc::error_response(id, error)
}

/// What a batch member contributes to the batch's answer.
enum BatchMember {
    Answered(Answer),
    Pending(tokio::task::JoinHandle<Answer>),
    NoAnswer,
}

/// A -32600 error object with `message`.
pub(super) fn invalid_request(message: impl Into<String>) -> Value {
    jsonrpc::error_object(ErrorCode::InvalidRequest, message.into(), None)
}
