//! One connected client: its negotiated protocol era, its requests in flight (by its ids), its
//! requests from servers (under ids of its own) and its output queue. Open one with
//! [`Core::open_session`], feed it the client's messages ([`Session::feed_line`]), read what it
//! answers from the [`SessionOutput`] queue, and [`Session::close`] it when the client goes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use jsonrpc_core::ErrorCode;
use serde_json::Value;
use tokio::sync::{mpsc, watch, Semaphore};

use super::{Core, DownstreamSlot, DRAIN_GRACE, MAX_CONCURRENT_REQUESTS};
use crate::backpressure::OutputGate;
use crate::jsonrpc::{self, Incoming};

/// Where a session's messages for its client go: `lines` gets each JSON-RPC message (or batch
/// array) as JSON text followed by `\n`, in the order they are to be sent; while `lines` is full
/// the session's request tasks wait. `gate`, when given, counts the bytes queued and written
/// (see [`crate::backpressure`]).
pub struct SessionOutput {
    /// The client-bound lines.
    pub lines: mpsc::Sender<Vec<u8>>,
    /// Counts the bytes queued for a client whose reading is followed (stdio).
    pub gate: Option<Arc<OutputGate>>,
}

/// A request of this session in flight: its task, and where it went downstream.
pub(super) struct Inflight {
    pub task: Option<tokio::task::AbortHandle>,
    pub downstream: DownstreamSlot,
    /// The request's `_meta.progressToken` (JSON text), if it set one.
    pub progress_token: Option<String>,
}

/// One connected client's state over a shared [`Core`].
pub struct Session {
    pub(super) core: Arc<Core>,
    id: u64,
    out: mpsc::Sender<Vec<u8>>,
    gate: Option<Arc<OutputGate>>,
    /// The version negotiated at `initialize` (legacy clients only).
    pub(super) protocol_version: OnceLock<&'static str>,
    /// Set when the client has sent `notifications/initialized` (or any request after
    /// `initialize`): from then on server notifications and requests are passed to it.
    client_ready: watch::Sender<bool>,
    pub(super) inflight: Mutex<crate::fast_hash::HashMap<String, Inflight>>,
    /// Our requests to the client (ids, pending answers, timeouts).
    pub(super) peer: crate::rpc::Peer,
    /// (server, the server's request id) → our id towards the client, for cancellations.
    pub(super) server_request_ids: Mutex<HashMap<(String, String), u64>>,
    /// Modern clients: whether one spoke, their `subscriptions/listen` streams.
    pub(super) listeners: crate::modern::Listeners,
    /// The capabilities a legacy client declared at `initialize`.
    pub(super) legacy_capabilities: OnceLock<Value>,
    /// The page tool with this session's key into the core's store.
    pager: Option<crate::page_tool::Pager>,
    /// Requests handled at once ([`MAX_CONCURRENT_REQUESTS`]).
    pub(super) permits: Arc<Semaphore>,
    /// Set by [`Session::close`].
    pub(super) closed: watch::Sender<bool>,
    /// The progress tokens of requests the client cancelled: their late progress is dropped.
    pub(super) cancelled_tokens: super::cancelled_progress::CancelledTokens,
}

impl Core {
    /// Opens a session for one client over this core; its messages for the client go to
    /// `output`. The servers are shared: the first session's `initialize` (or first MCP
    /// 2026-07-28 request) starts them unless [`Core::start_servers`] already did.
    pub fn open_session(self: &Arc<Self>, output: SessionOutput) -> Arc<Session> {
        Arc::new_cyclic(|me| Session {
            id: self.register(me.clone()),
            pager: self.session_pager(),
            core: self.clone(),
            peer: crate::rpc::Peer::new(
                "client",
                crate::transport::Outbox::from_sender(output.lines.clone(), output.gate.clone()),
            ),
            out: output.lines,
            gate: output.gate,
            protocol_version: OnceLock::new(),
            client_ready: watch::channel(false).0,
            inflight: Mutex::default(),
            server_request_ids: Mutex::default(),
            listeners: Default::default(),
            legacy_capabilities: OnceLock::new(),
            permits: Arc::new(Semaphore::new(MAX_CONCURRENT_REQUESTS)),
            closed: watch::channel(false).0,
            cancelled_tokens: Default::default(),
        })
    }
}

impl Session {
    /// This session's number (unique within the process).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The protocol version negotiated at `initialize`; `None` before it and for clients that
    /// speak MCP 2026-07-28 (no `initialize`).
    pub fn protocol_version(&self) -> Option<&'static str> {
        self.protocol_version.get().copied()
    }

    /// Whether a request in MCP 2026-07-28 form has arrived in this session.
    #[cfg(test)]
    pub fn is_modern(&self) -> bool {
        self.listeners.seen()
    }

    /// The page tool with this session's key into the store.
    pub(super) fn pager(&self) -> Option<&crate::page_tool::Pager> {
        self.pager.as_ref()
    }

    /// Whether the legacy client declared capability `name` (`sampling`, `elicitation`,
    /// `roots`) at `initialize`.
    pub(super) fn declares(&self, name: &str) -> bool {
        self.legacy_capabilities
            .get()
            .is_some_and(|caps| crate::mrtr::declares(caps, name))
    }

    /// Reads one message the client sent (a JSON-RPC message or batch as JSON text, without
    /// framing) and handles it: a request is answered on the output queue by its own task, an
    /// answer to our request reaches the server that asked, a notification takes effect. Returns
    /// once the message is admitted; for `initialize`, once it is answered. Text that is not
    /// JSON is answered with -32700 (under its `id` when it can be read).
    pub async fn feed_line(self: &Arc<Self>, line: Vec<u8>) {
        match parse_line(line).await {
            Ok(incoming) => self.feed(incoming).await,
            Err((id, error)) => self.answer_parse_error(id, &error).await,
        }
    }

    /// [`Session::feed_line`] for a message already read by [`parse_line`].
    pub async fn feed(self: &Arc<Self>, incoming: Incoming) {
        match incoming {
            Incoming::ParseError(e) => self.answer_parse_error(None, &e).await,
            Incoming::Single(msg) => self.dispatch(msg).await,
            Incoming::Batch(msgs) => self.dispatch_batch(msgs).await,
        }
    }

    /// Answers a message that was longer than `max_message_bytes` (`len` bytes, its start in
    /// `head`) with -32600, under its `id` when the head shows it.
    pub async fn reject_too_long(&self, len: usize, head: &[u8]) {
        let id = jsonrpc::id_from_head(head).unwrap_or(Value::Null);
        let err = jsonrpc::error_object(
            ErrorCode::InvalidRequest,
            format!(
                "message of {len} bytes is longer than max_message_bytes ({})",
                self.core.config().max_message_bytes()
            ),
            None,
        );
        self.send(&jsonrpc::error_response(id, err)).await;
    }

    /// Closes the session: requests in flight get up to [`DRAIN_GRACE`] to finish, open
    /// `subscriptions/listen` streams are completed, our requests waiting for the client fail,
    /// and the core stops routing to it.
    pub async fn close(&self) {
        let deadline = tokio::time::Instant::now() + DRAIN_GRACE;
        while self.inflight_count() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for closing in self.listeners.close_all() {
            self.send(&closing).await;
        }
        self.closed.send_replace(true);
        self.peer.close("the session closed");
        self.core.unregister(self.id);
        self.core.release_subscriptions(self.id);
        self.core.release_log_level(self.id);
    }

    /// Waits (at most `limit`) for request tasks still running to end.
    pub async fn settle(&self, limit: Duration) {
        let all = MAX_CONCURRENT_REQUESTS as u32;
        let _ = tokio::time::timeout(limit, self.permits.acquire_many(all)).await;
    }

    /// Requests in flight.
    pub fn inflight_count(&self) -> usize {
        self.inflight.lock().unwrap().len()
    }

    /// Queues one message for the client. Waits when the output queue is full.
    pub(super) async fn send(&self, message: &Value) {
        self.send_line(jsonrpc::to_line(message)).await;
    }

    /// Queues one message, already serialized as JSON text without its newline.
    pub(super) async fn send_json(&self, mut json: Vec<u8>) {
        json.push(b'\n');
        self.send_line(json).await;
    }

    /// Queues one line (with its newline), counted by the output gate while it waits.
    async fn send_line(&self, line: Vec<u8>) {
        let len = line.len();
        if let Some(gate) = &self.gate {
            gate.queue(len);
        }
        if self.out.send(line).await.is_err() {
            if let Some(gate) = &self.gate {
                gate.written(len);
            }
        }
    }

    /// Answers a line that is not JSON with -32700, under its `id` when that could be read
    /// ([`crate::recover`]), else `null`.
    pub(super) async fn answer_parse_error(&self, id: Option<Value>, error: &str) {
        let err =
            jsonrpc::error_object(ErrorCode::ParseError, format!("Parse error: {error}"), None);
        self.send(&jsonrpc::error_response(id.unwrap_or(Value::Null), err))
            .await;
    }

    /// Tells the client a list changed: the plain notification to a legacy client, one per
    /// `subscriptions/listen` stream that asked for it to a modern one.
    pub(super) async fn list_changed(&self, method: &str) {
        if self.is_client_ready() {
            self.send(&jsonrpc::notification(method, None)).await;
        }
        for notification in self.listeners.fan_out(method) {
            self.send(&notification).await;
        }
    }

    /// Passes a server's notification (already through the passthrough filter) to the client
    /// when it may have it: a legacy client once ready; a modern one only what needs no
    /// session and the log messages a request in flight asked for. A server's cancellation is
    /// passed under our id for its request, and only when it is ours.
    pub(super) async fn server_notification(
        &self,
        server: &str,
        method: &str,
        params: Option<Value>,
    ) {
        let params = if method == "notifications/cancelled" {
            self.map_server_cancellation(server, params)
        } else {
            params
        };
        // A cancellation of a request the client never saw (or already answered) means
        // nothing to the client; nor does progress of a request it cancelled.
        let unmapped = method == "notifications/cancelled" && params.is_none()
            || method == "notifications/progress"
                && self.cancelled_tokens.is_cancelled(params.as_ref());
        let modern_only = !self.is_client_ready() && self.listeners.seen();
        let for_modern = crate::modern::passes_without_session(method)
            || method == "notifications/message" && self.listeners.wants_log(params.as_ref());
        let wanted = self.wants_update(method, params.as_ref())
            && self.wants_log_message(method, params.as_ref());
        if !unmapped && wanted && (self.is_client_ready() || modern_only && for_modern) {
            self.send(&jsonrpc::notification(method, params)).await;
        }
    }

    /// Whether the client has finished initializing.
    pub(super) fn is_client_ready(&self) -> bool {
        *self.client_ready.borrow()
    }

    /// Resolves once the client has finished initializing; `false` when the session closed or
    /// the proxy stopped first.
    pub(super) async fn until_ready(&self) -> bool {
        let mut ready = self.client_ready.subscribe();
        let mut stopping = self.core.shutdown.subscribe();
        let mut closed = self.closed.subscribe();
        tokio::select! {
            r = ready.wait_for(|r| *r) => r.is_ok(),
            _ = stopping.wait_for(|stop| *stop) => false,
            _ = closed.wait_for(|c| *c) => false,
        }
    }

    pub(super) fn mark_client_ready(&self) {
        self.client_ready
            .send_if_modified(|r| !std::mem::replace(r, true));
    }

    /// Once the client is initialized, one `notifications/message` warning per server that is
    /// down, when we declared `logging` ([`crate::availability`]).
    pub(super) fn warn_client_about(self: &Arc<Self>, down: Vec<crate::availability::Down>) {
        if down.is_empty() || !self.core.passthrough.declared().logging {
            return;
        }
        let session = self.clone();
        tokio::spawn(async move {
            // A client that never finishes initializing must not keep the proxy alive.
            if session.until_ready().await {
                for d in &down {
                    let params = crate::availability::warning_params(d);
                    let warning = jsonrpc::notification("notifications/message", Some(params));
                    session.send(&warning).await;
                }
            }
        });
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.core.unregister(self.id);
        self.core.release_subscriptions(self.id);
        self.core.release_log_level(self.id);
    }
}

/// Reads one client message (JSON text without framing): `Ok` with what it is, or `Err` with
/// the `id` that could be read from text that is not JSON (too deep, a lone surrogate…) and
/// why it is not. Large messages are parsed on the blocking pool.
pub async fn parse_line(line: Vec<u8>) -> Result<Incoming, (Option<Value>, String)> {
    crate::offload::cpu_bound(line.len(), move || {
        let mut incoming = jsonrpc::classify(&line);
        crate::exact_args::capture(&line, &mut incoming);
        match incoming {
            Incoming::ParseError(e) => Err((crate::recover::top_level(&line).id, e)),
            other => Ok(other),
        }
    })
    .await
}
