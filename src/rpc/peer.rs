//! One JSON-RPC 2.0 peer: our requests to the other side (ids, pending slots, timeouts,
//! cancellation) and the dispatch of what the other side sends.
//!
//! Used for every downstream server, whatever its transport; its API is shaped so the
//! upstream side (requests the proxy sends to its client) can use it as well: a [`Peer`] over
//! the client's output queue, [`Peer::request`] for the request, [`Peer::deliver`] for the
//! client's answer.
//!
//! Sources: JSON-RPC 2.0 specification (request, response, id); MCP specification 2025-06-18,
//! "Basic: Requests" (ids are strings or integers, never reused in a session) and "Utilities:
//! Cancellation" (`notifications/cancelled` with `requestId` and `reason`; the receiver of a
//! cancellation should not answer).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::oneshot;
use tracing::{debug, warn};

use super::body::{fast_response, ResultBody, RAW_RESULT_MIN_BYTES};
use crate::fast_hash::{HashMap, HashSet};
use crate::transport::backpressure::OutputGate;
use crate::transport::{Delivery, Fault, Outbox, Receive};
use crate::wire::jsonrpc::{self, Incoming, Message};
use crate::wire::surrogates::replace_lone_surrogates;

/// Why a request got no JSON-RPC answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No answer within the timeout (a `notifications/cancelled` was sent to the other side).
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// The other side (a server's process) exited or closed its output during the request.
    #[error("{0}")]
    Exited(String),
    /// The answer could not be used (e.g. longer than `max_message_bytes`).
    #[error("{0}")]
    Invalid(String),
    /// The other side is not running.
    #[error("{0}")]
    Unavailable(String),
    /// A remote server answered the request with an HTTP error status (MCP specification
    /// 2025-11-25, "Transports: Streamable HTTP"; RFC 9110 for the statuses).
    #[error("HTTP {status}: {detail}")]
    HttpStatus {
        /// The status code (401, 403, 429, 503, ...).
        status: u16,
        /// The `Retry-After` header as sent (seconds or an HTTP date), if any.
        retry_after: Option<String>,
        /// What it means here, naming credentials by key or variable, never by value.
        detail: String,
    },
    /// The connection to a remote server failed during the request (refused, reset, closed).
    #[error("{0}")]
    Connection(String),
}

impl From<Fault> for CallError {
    fn from(fault: Fault) -> CallError {
        match fault {
            Fault::Connection(detail) => CallError::Connection(detail),
            Fault::Invalid(detail) => CallError::Invalid(detail),
            Fault::TooLong(_) => CallError::Invalid(fault.to_string()),
            Fault::HttpStatus {
                status,
                retry_after,
                detail,
            } => CallError::HttpStatus {
                status,
                retry_after,
                detail,
            },
        }
    }
}

/// What fills a pending request's slot.
pub enum Reply {
    /// The JSON-RPC response: its `result` (maybe unparsed) or its error object.
    Response(Result<ResultBody, Value>),
    /// The connection closed before an answer came (why).
    Closed(String),
    /// The transport could not carry the answer, or the answer was unusable.
    Failed(CallError),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reply")
    }
}

/// Requests and notifications from the other side (answers are handled by the peer).
pub trait Handler: Send + Sync {
    /// A notification. When a receiver is returned, the next message is not dispatched before
    /// it fires (or is dropped): a notification reaches its destination before the response
    /// that followed it (progress before the result).
    fn notification(&self, method: String, params: Option<Value>) -> Option<oneshot::Receiver<()>>;
    /// A request; the handler answers it later with [`Peer::respond`].
    fn request(&self, id: Value, method: String, params: Option<Value>);
}

/// One JSON-RPC peer: the queue of lines to the other side, our pending requests by id, the
/// id counter (integers from 1, never reused), and whether the connection has closed.
#[derive(Debug)]
pub struct Peer {
    name: String,
    outbox: Outbox,
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    /// Our pending requests whose successful answer is wanted unparsed whatever its size
    /// ([`Peer::request_by`] with `raw`), and how many there are (read on every line, without the lock).
    raw_wanted: Mutex<HashSet<u64>>,
    raw_waiting: AtomicUsize,
    next_id: AtomicU64,
    closed: AtomicBool,
    /// Applied to text of the other side's that is logged (a line on its stdout that is not
    /// JSON: a banner may print the secrets the server was given).
    redactor: crate::redact::Redactor,
}

/// Why an answer matched no pending request ([`Peer::unmatched`]).
#[derive(Debug, PartialEq)]
enum Unmatched {
    /// The connection is closed: nothing waits any more.
    AfterClose,
    /// One of our ids whose request was given up (timed out or cancelled).
    Late,
    /// Not an id we sent (a larger number, zero, a string, …).
    Unknown,
}

/// Removes a pending entry when a request future is dropped (cancelled or finished).
struct PendingGuard<'a> {
    peer: &'a Peer,
    id: u64,
    /// Whether the id is in the peer's `raw_wanted`.
    raw: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.peer.pending.lock().unwrap().remove(&self.id);
        if self.raw {
            self.peer.raw_wanted.lock().unwrap().remove(&self.id);
            self.peer.raw_waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Peer {
    /// A peer named `name` (for logs: a server's config name, or `client`) writing to `outbox`.
    pub fn new(name: &str, outbox: Outbox) -> Peer {
        Peer {
            name: name.to_owned(),
            outbox,
            pending: Mutex::default(),
            raw_wanted: Mutex::default(),
            raw_waiting: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            redactor: crate::redact::Redactor::default(),
        }
    }

    /// This peer, with the other side's text it logs passed through `redactor` first (without
    /// one, only values of secret-looking keys are redacted).
    pub fn with_redactor(mut self, redactor: crate::redact::Redactor) -> Peer {
        self.redactor = redactor;
        self
    }

    /// The name given at creation.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the connection has closed (no new request is sent).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Sends a request and waits up to `timeout` (for the queue, then for the answer).
    /// `on_sent` gets our id once the request is queued (to map a cancellation to it). On
    /// timeout a `notifications/cancelled` for that id is sent. A large success `result` may
    /// come back unparsed ([`ResultBody::Raw`]).
    pub async fn request(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
        on_sent: &mut (dyn FnMut(u64) + Send),
    ) -> Result<Result<ResultBody, Value>, CallError> {
        let line = |id: u64| jsonrpc::request_line(&id, method, params);
        self.request_by(line, timeout, on_sent, false).await
    }

    /// Like [`Peer::request`], with the request's line (ending in `\n`) written by `line`
    /// from our id. With `raw`, a successful answer comes back unparsed ([`ResultBody::Raw`])
    /// whatever its size: for an answer the caller reads as raw text anyway (a `tools/list`
    /// page, whose tools are kept as text), so that no value tree is built and dropped; an
    /// error answer is parsed as usual.
    pub async fn request_by(
        &self,
        line: impl FnOnce(u64) -> Vec<u8>,
        timeout: Duration,
        on_sent: &mut (dyn FnMut(u64) + Send),
        raw: bool,
    ) -> Result<Result<ResultBody, Value>, CallError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock().unwrap();
            if self.is_closed() {
                return Err(CallError::Exited("the process has exited".into()));
            }
            pending.insert(id, tx);
        }
        if raw {
            self.raw_wanted.lock().unwrap().insert(id);
            self.raw_waiting.fetch_add(1, Ordering::Relaxed);
        }
        let _guard = PendingGuard {
            peer: self,
            id,
            raw,
        };
        let line = line(id);
        let closed = || CallError::Exited("its stdin is closed".into());
        // Queued at once when there is room, the usual case, without a timer (a timer read the
        // clock and was set up and dropped on every request).
        match self.outbox.try_queue(line) {
            Ok(()) => {}
            Err(None) => return Err(closed()),
            Err(Some(line)) => match tokio::time::timeout(timeout, self.outbox.send(line)).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(closed()),
                Err(_) => return Err(CallError::Timeout(timeout)),
            },
        }
        on_sent(id);
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Reply::Response(r))) => Ok(r),
            Ok(Ok(Reply::Closed(reason))) => Err(CallError::Exited(reason)),
            Ok(Ok(Reply::Failed(e))) => Err(e),
            Ok(Err(_)) => Err(CallError::Exited("the process has exited".into())),
            Err(_) => {
                self.notify(
                    "notifications/cancelled",
                    Some(json!({"requestId": id, "reason": "timed out in mcp-envelope"})),
                );
                Err(CallError::Timeout(timeout))
            }
        }
    }

    /// Queues a notification; dropped (with a log line) if the other side is gone or its
    /// queue is full.
    pub fn notify(&self, method: &str, params: Option<Value>) {
        let line = jsonrpc::to_line(&jsonrpc::notification(method, params));
        if self.outbox.try_send(line).is_err() {
            debug!(server = %self.name, method, "notification not delivered: peer gone or busy");
        }
    }

    /// Queues the answer to a request the other side sent.
    pub async fn respond(&self, id: Value, outcome: Result<Value, Value>) {
        let msg = match outcome {
            Ok(result) => jsonrpc::response(id, result),
            Err(error) => jsonrpc::error_response(id, error),
        };
        let _ = self.outbox.send(jsonrpc::to_line(&msg)).await;
    }

    /// Marks the connection closed and fails every pending request with `reason`
    /// ([`CallError::Exited`]).
    pub fn close(&self, reason: &str) {
        self.close_with(|| Reply::Closed(reason.to_owned()));
    }

    /// Marks the connection closed and answers every pending request with `reply()`.
    pub fn close_with(&self, reply: impl Fn() -> Reply) {
        let drained: Vec<_> = {
            let mut pending = self.pending.lock().unwrap();
            self.closed.store(true, Ordering::Release);
            pending.drain().collect()
        };
        for (_, tx) in drained {
            let _ = tx.send(reply());
        }
    }

    /// Marks the connection closed for new requests; those pending keep waiting (for
    /// [`Peer::close`] with a fuller reason).
    pub fn refuse_new(&self) {
        let _pending = self.pending.lock().unwrap();
        self.closed.store(true, Ordering::Release);
    }

    /// Whether our request `id` still waits for its answer.
    pub fn is_pending(&self, id: &Value) -> bool {
        jsonrpc::u64_id(id).is_some_and(|id| self.pending.lock().unwrap().contains_key(&id))
    }

    /// Whether our pending request `id` wants its answer unparsed ([`Peer::request_by`] with `raw`).
    fn wants_raw(&self, id: &Value) -> bool {
        jsonrpc::u64_id(id).is_some_and(|id| self.raw_wanted.lock().unwrap().contains(&id))
    }

    /// Fills the slot of pending request `id` with `reply`; `false` when none is pending.
    pub fn deliver(&self, id: &Value, reply: Reply) -> bool {
        let Some(id) = jsonrpc::u64_id(id) else {
            return false;
        };
        let tx = self.pending.lock().unwrap().remove(&id);
        match tx {
            Some(tx) => {
                let _ = tx.send(reply);
                true
            }
            None => false,
        }
    }

    /// Logs an answer whose id is not pending, by [`Peer::unmatched`]: a warning only for an id
    /// we never sent; a late answer to a request we gave up on (timed out or cancelled: MCP
    /// 2025-11-25 "Cancellation" says such answers are ignored) and answers after the
    /// connection closed are logged at debug level.
    fn unmatched_answer(&self, id: &Value) {
        match self.unmatched(id) {
            Unmatched::AfterClose => {
                debug!(server = %self.name, %id, "answer after the connection closed ignored")
            }
            Unmatched::Late => debug!(
                server = %self.name, %id,
                "late answer to a request no longer waited for (timed out or cancelled) ignored"
            ),
            Unmatched::Unknown => {
                warn!(server = %self.name, %id, "answer for an id that was never sent ignored")
            }
        }
    }

    /// Why an answer with `id` has no pending request: the connection closed, its request was
    /// given up (our ids are 1, 2, 3, …, so a lower id than the next one was sent), or `id` is
    /// not one of ours.
    fn unmatched(&self, id: &Value) -> Unmatched {
        if self.is_closed() {
            Unmatched::AfterClose
        } else if jsonrpc::u64_id(id)
            .is_some_and(|n| n >= 1 && n < self.next_id.load(Ordering::Relaxed))
        {
            Unmatched::Late
        } else {
            Unmatched::Unknown
        }
    }
}

/// Reads from `receiver` until the other side closes, and returns why: every message is
/// dispatched ([`dispatch_line`]), every fault fills the slot of the request it names.
///
/// With a `gate` (the client's output count, see [`crate::transport::backpressure`]): nothing
/// is read while it is full; a large answer counts in it until the answer mapped from it is
/// queued ([`RawResponse::hold_in`](super::body::RawResponse::hold_in)); and after every
/// [`YIELD_EVERY_BYTES`] read the loop lets the tasks it woke run, so the smaller answers it
/// delivered are mapped and counted before it reads on (the reader would otherwise read as
/// much as the server's pipe holds, turn after turn, before any of them is).
pub async fn read_loop(
    peer: &Peer,
    handler: &dyn Handler,
    receiver: &mut impl Receive,
    gate: Option<&Arc<OutputGate>>,
) -> String {
    let mut since_yield = 0usize;
    loop {
        if let Some(gate) = gate {
            if since_yield >= YIELD_EVERY_BYTES {
                since_yield = 0;
                tokio::task::yield_now().await;
            }
            gate.room().await;
        }
        match receiver.receive().await {
            Ok(Delivery::Message(line)) => {
                since_yield += line.len();
                dispatch_line(peer, handler, line, gate).await
            }
            Ok(Delivery::Fault { id, fault }) => {
                let reply = || Reply::Failed(fault.clone().into());
                if !id.as_ref().is_some_and(|id| peer.deliver(id, reply())) {
                    warn!(server = %peer.name, error = %fault, "could not tell which request the answer was for");
                }
            }
            Err(reason) => return reason,
        }
    }
}

/// Bytes a gated [`read_loop`] reads before it lets the tasks it woke run.
pub const YIELD_EVERY_BYTES: usize = 1 << 20;

/// Handles one message line from the other side: a large plain success response is delivered
/// unparsed ([`ResultBody::Raw`], counted in `gate` while it lives); anything else is
/// classified (large lines off the runtime thread) and dispatched: answers to their slots,
/// requests and notifications to `handler`.
pub async fn dispatch_line(
    peer: &Peer,
    handler: &dyn Handler,
    line: Vec<u8>,
    gate: Option<&Arc<OutputGate>>,
) {
    crate::runtime::note_message_size(line.len());
    // While a request wants its answer unparsed at any size, every line's head is looked at.
    let min_bytes = match peer.raw_waiting.load(Ordering::Relaxed) {
        0 => RAW_RESULT_MIN_BYTES,
        _ => 0,
    };
    // A lone surrogate escape (Python's for an undecodable file name) would fail the whole
    // answer, and every retry of it: it becomes U+FFFD (`wire::surrogates`).
    let fast = crate::runtime::cpu_bound(line.len(), move || {
        fast_response(replace_lone_surrogates(line), min_bytes)
    });
    let line = match fast.await {
        Ok((id, body)) if body.len() < RAW_RESULT_MIN_BYTES && !peer.wants_raw(&id) => {
            body.into_line().into_bytes()
        }
        Ok((id, mut body)) => {
            if let Some(gate) = gate {
                body.hold_in(gate);
            }
            if !peer.deliver(&id, Reply::Response(Ok(ResultBody::Raw(body)))) {
                peer.unmatched_answer(&id);
            }
            return;
        }
        Err(line) => line,
    };
    let (incoming, line) =
        crate::runtime::cpu_bound(line.len(), move || (jsonrpc::classify(&line), line)).await;
    // A single message (nearly every line) is dispatched without a Vec around it.
    match incoming {
        Incoming::ParseError(error) => not_json(peer, &line, error),
        Incoming::Single(msg) => dispatch_in_order(peer, handler, msg).await,
        Incoming::Batch(msgs) => {
            for msg in msgs {
                dispatch_in_order(peer, handler, msg).await;
            }
        }
    }
}

/// [`dispatch_message`], waiting for the receiver it returns (see [`Handler::notification`]).
async fn dispatch_in_order(peer: &Peer, handler: &dyn Handler, msg: Message) {
    if let Some(queued) = dispatch_message(peer, handler, msg) {
        let _ = queued.await;
    }
}

/// Most characters (Unicode scalar values) of a line that is not JSON shown in its log line.
const NOT_JSON_SHOWN_CHARS: usize = 200;

/// A line that is not JSON: when it starts exactly like the answer to a pending request (or
/// its outer members are readable: an error response nested too deep) it
/// answers that request as invalid rather than leaving it to time out; else it is logged,
/// redacted (secrets a server was given must not reach the log) and cut.
fn not_json(peer: &Peer, line: &[u8], error: String) {
    let id = crate::wire::head::response_head(&String::from_utf8_lossy(line));
    let id = id.or_else(|| {
        let top = crate::wire::recover::top_level(line);
        top.is_response().then_some(top.id).flatten()
    });
    let detail = format!("the response is not valid JSON: {error}");
    if let Some(id) = id {
        if peer.deliver(&id, Reply::Failed(CallError::Invalid(detail))) {
            warn!(server = %peer.name, %id, "answer that is not valid JSON");
            return;
        }
    }
    let text = String::from_utf8_lossy(line);
    let shown = peer.redactor.redact_within(&text, NOT_JSON_SHOWN_CHARS);
    warn!(server = %peer.name, line = %shown, "non-JSON line on stdout skipped");
}

/// Dispatches one classified message; see [`Handler::notification`] for the receiver.
fn dispatch_message(
    peer: &Peer,
    handler: &dyn Handler,
    msg: Message,
) -> Option<oneshot::Receiver<()>> {
    match msg {
        Message::Response { id, outcome } => {
            if !peer.deliver(&id, Reply::Response(outcome.map(ResultBody::Value))) {
                peer.unmatched_answer(&id);
            }
            None
        }
        Message::Notification { method, params } => handler.notification(method, params),
        Message::Request { id, method, params } => {
            handler.request(id, method, params);
            None
        }
        // Well-formed JSON that is not a valid message: when it names a pending request it
        // answers that request (as an invalid response), large or small alike.
        Message::Invalid { id, reason } => {
            let detail = format!("the answer is not a valid JSON-RPC response: {reason}");
            if peer.deliver(&id, Reply::Failed(CallError::Invalid(detail))) {
                warn!(server = %peer.name, %id, %reason, "invalid answer");
            } else {
                warn!(server = %peer.name, %reason, "invalid JSON-RPC message from server ignored");
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex as StdMutex;

    use super::*;
    use crate::rpc::body::RAW_RESULT_MIN_BYTES;

    /// Records what the other side sent that is not an answer.
    #[derive(Default)]
    struct Recorder(StdMutex<Vec<String>>);

    impl Handler for Recorder {
        fn notification(
            &self,
            method: String,
            _params: Option<Value>,
        ) -> Option<oneshot::Receiver<()>> {
            self.0
                .lock()
                .unwrap()
                .push(format!("notification {method}"));
            None
        }

        fn request(&self, id: Value, method: String, _params: Option<Value>) {
            self.0
                .lock()
                .unwrap()
                .push(format!("request {id} {method}"));
        }
    }

    fn peer() -> (Peer, tokio::sync::mpsc::Receiver<Vec<u8>>) {
        let (outbox, rx) = Outbox::channel();
        (Peer::new("t", outbox), rx)
    }

    fn sent(line: &[u8]) -> Value {
        serde_json::from_slice(line).unwrap()
    }

    #[tokio::test]
    async fn requests_get_fresh_ids_and_their_answers() {
        let mut noop = |_| {};
        let (peer, mut out) = peer();
        let handler = Recorder::default();
        let ask = peer.request("ping", None, Duration::from_secs(5), &mut noop);
        let answer = async {
            let first = sent(&out.recv().await.unwrap());
            assert_eq!(first, json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
            let line = br#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#.to_vec();
            dispatch_line(&peer, &handler, line, None).await;
        };
        let (result, ()) = tokio::join!(ask, answer);
        assert_eq!(
            result.unwrap().unwrap(),
            ResultBody::Value(json!({"ok": true}))
        );
        let mut ids = Vec::new();
        let mut record = |id| ids.push(id);
        let second = peer.request("x", None, Duration::from_millis(1), &mut record);
        let _ = second.await;
        assert_eq!(ids, [2]);
    }

    #[tokio::test]
    async fn a_timeout_cancels_the_request_on_the_other_side() {
        let mut noop = |_| {};
        let (peer, mut out) = peer();
        let params = json!({"a": 1});
        let outcome = peer
            .request("slow", Some(&params), Duration::from_millis(20), &mut noop)
            .await;
        assert_eq!(outcome, Err(CallError::Timeout(Duration::from_millis(20))));
        assert_eq!(sent(&out.recv().await.unwrap())["method"], "slow");
        let cancel = sent(&out.recv().await.unwrap());
        assert_eq!(cancel["method"], "notifications/cancelled");
        assert_eq!(cancel["params"]["requestId"], 1);
        // A late answer is no longer pending, and is known as late (logged at debug level);
        // an id we never sent is not.
        assert!(!peer.is_pending(&json!(1)));
        assert_eq!(peer.unmatched(&json!(1)), Unmatched::Late);
        for never_sent in [json!(2), json!(0), json!("1"), json!(-1)] {
            assert_eq!(
                peer.unmatched(&never_sent),
                Unmatched::Unknown,
                "{never_sent}"
            );
        }
        let late = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec();
        dispatch_line(&peer, &Recorder::default(), late, None).await;
        peer.close("gone");
        assert_eq!(peer.unmatched(&json!(1)), Unmatched::AfterClose);
    }

    #[tokio::test]
    async fn a_request_waits_for_room_in_a_full_queue_within_its_timeout() {
        let mut noop = |_| {};
        let (tx, mut out) = tokio::sync::mpsc::channel(1);
        let peer = Peer::new("t", Outbox::from_sender(tx, None));
        peer.notify("fill", None);
        let short = Duration::from_millis(20);
        let outcome = peer.request("m", None, short, &mut noop).await;
        assert_eq!(outcome, Err(CallError::Timeout(short)));
        // Room made while it waits: the request goes out and gets its answer.
        let ask = peer.request("n", None, Duration::from_secs(5), &mut noop);
        let drain = async {
            assert_eq!(sent(&out.recv().await.unwrap())["method"], "fill");
            let line = sent(&out.recv().await.unwrap());
            assert_eq!(line["method"], "n");
            let answer = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, line["id"]);
            dispatch_line(&peer, &Recorder::default(), answer.into_bytes(), None).await;
        };
        let (result, ()) = tokio::join!(ask, drain);
        assert_eq!(result.unwrap().unwrap(), ResultBody::Value(json!({})));
    }

    #[tokio::test]
    async fn closing_fails_what_waits_and_refuses_what_comes() {
        let mut noop = |_| {};
        let (peer, _out) = peer();
        let ask = peer.request("wait", None, Duration::from_secs(5), &mut noop);
        let close = async {
            tokio::task::yield_now().await;
            peer.close("it exited (exit status: 3)");
        };
        let (outcome, ()) = tokio::join!(ask, close);
        assert_eq!(
            outcome,
            Err(CallError::Exited("it exited (exit status: 3)".into()))
        );
        assert!(peer.is_closed());
        let again = peer.request("x", None, Duration::from_secs(1), &mut noop);
        assert!(matches!(again.await, Err(CallError::Exited(_))));
    }

    #[tokio::test]
    async fn requests_and_notifications_go_to_the_handler_and_large_results_stay_raw() {
        let mut noop = |_| {};
        let (peer, mut out) = peer();
        let handler = Recorder::default();
        let batch = br#"[{"jsonrpc":"2.0","id":"s1","method":"roots/list"},
            {"jsonrpc":"2.0","method":"notifications/progress","params":{}}]"#;
        dispatch_line(&peer, &handler, batch.to_vec(), None).await;
        assert_eq!(
            *handler.0.lock().unwrap(),
            [
                "request \"s1\" roots/list",
                "notification notifications/progress"
            ]
        );
        peer.respond(json!("s1"), Ok(json!({"roots": []}))).await;
        assert_eq!(sent(&out.recv().await.unwrap())["id"], "s1");
        let ask = peer.request("big", None, Duration::from_secs(5), &mut noop);
        let pad = "x".repeat(RAW_RESULT_MIN_BYTES);
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"text":"{pad}"}}}}"#);
        let answer = dispatch_line(&peer, &handler, line.clone().into_bytes(), None);
        let (result, ()) = tokio::join!(ask, answer);
        match result.unwrap().unwrap() {
            ResultBody::Raw(raw) => assert_eq!(raw.as_str(), line),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn an_answer_that_is_not_json_answers_its_request_as_invalid() {
        let mut noop = |_| {};
        let (peer, _out) = peer();
        let ask = peer.request("m", None, Duration::from_secs(5), &mut noop);
        let broken = br#"{"jsonrpc":"2.0","id":1,"result":{"a": tru"#.to_vec();
        let handler = Recorder::default();
        let answer = dispatch_line(&peer, &handler, broken, None);
        let (outcome, ()) = tokio::join!(ask, answer);
        assert!(
            matches!(outcome, Err(CallError::Invalid(ref d)) if d.contains("not valid JSON")),
            "{outcome:?}"
        );
    }
}
