//! One client session of the proxy as the HTTP server sees it: the messages POSTed by the
//! client go in as JSON lines; every message the session sends comes out and is routed to the
//! HTTP response it belongs to.
//!
//! Routing (MCP 2025-11-25 "Transports: Streamable HTTP", "Sending Messages to the Server" and
//! "Listening for Messages from the Server"; 2026-07-28 "Streamable HTTP: Receiving Messages"):
//! - a JSON-RPC response goes to the POST that carried the request with its id, and ends it;
//! - `notifications/progress` goes to the POST whose request set that `progressToken`, and
//!   nowhere when no waiting request of the session set it;
//! - a notification tagged with `io.modelcontextprotocol/subscriptionId` goes to the
//!   `subscriptions/listen` POST with that id;
//! - anything else (server-to-client requests, log messages, list changes) is unrelated to a
//!   known request: in a legacy session it goes to the GET stream when one is open, else to
//!   the oldest POST still waiting for its answer, else it is kept (at most [`BACKLOG`]
//!   messages) for the next GET stream; the shared stateless channel has no GET stream and
//!   drops it.
//!
//! The stateless channel is shared by every 2026-07-28 client, whose request ids may collide:
//! a colliding one is replaced by a fresh value on the way in and restored on the way out.
//! The id of every `tools/call` there is replaced by 128 random bits ([`super::unguessable`]),
//! so that its envelope's `call_id`, the key of its kept pages, is known to that client only:
//! the clients share one session, and a client's own ids (1, 2, 3, ...) would let any other
//! page its truncated results. A legacy session keeps the client's ids as they are (its
//! `call_id`s are the same as over stdio). Every progress token is replaced by one unique in the process (all sessions share
//! the servers, which see the tokens) and restored on the way out.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use super::host::SessionIo;
pub use super::splice::one_line;
use super::splice::{with_id, with_member};
use crate::era::META_SUBSCRIPTION_ID;
use crate::small_map;

/// Unrelated messages kept for a legacy session's next GET stream while none is open.
pub const BACKLOG: usize = 256;
/// The number in the next progress token handed to a session.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);
/// Messages queued for one HTTP response before the session waits for the client to read.
const RESPONSE_QUEUE: usize = 64;

/// One message for an HTTP response: its JSON text, and whether it is the final JSON-RPC
/// response that ends the POST.
#[derive(Debug)]
pub struct Out {
    /// The message as JSON text (no newline).
    pub json: Vec<u8>,
    /// The JSON-RPC response to the POSTed request (nothing follows it).
    pub last: bool,
}

impl Out {
    /// The end of a request the client cancelled: no JSON-RPC response follows (MCP
    /// 2025-11-25 "Utilities: Cancellation": the receiver SHOULD NOT answer it), and its HTTP
    /// response ends ([`Channel::end_cancelled`]). Its `json` is empty, which no message is.
    fn cancelled() -> Out {
        Out {
            json: Vec::new(),
            last: true,
        }
    }

    /// Whether this is [`Out::cancelled`]: the request's HTTP response ends without an answer.
    pub fn is_cancelled(&self) -> bool {
        self.last && self.json.is_empty()
    }
}

/// Why a request could not be handed to the session.
#[derive(Debug, PartialEq)]
pub enum SubmitError {
    /// The session has ended (deleted, or the proxy is shutting down).
    Closed,
    /// A legacy session already has a request with this id in flight.
    DuplicateId,
}

/// What the routing needs of an outgoing message, read without building its JSON tree.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<HeadParams<'a>>,
}

#[derive(Deserialize)]
struct HeadParams<'a> {
    #[serde(rename = "progressToken", borrow)]
    progress_token: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow)]
    meta: Option<HeadMeta<'a>>,
}

#[derive(Deserialize)]
struct HeadMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/subscriptionId", borrow)]
    subscription_id: Option<&'a RawValue>,
}

/// A POSTed request waiting for its answer.
struct Waiter {
    seq: u64,
    /// The client's id, when the wire id was replaced.
    client_id: Option<Value>,
    /// The wire key and the client's token, when the request set a `progressToken`; the
    /// client's token is kept only when the wire token was replaced.
    token: Option<(String, Option<Value>)>,
    tx: mpsc::Sender<Out>,
    /// Whether the request is `initialize` (its answer names the session's protocol version).
    initialize: bool,
    /// Whether the request is `subscriptions/listen` (its closing answer names the stream in
    /// `result._meta` too).
    listen: bool,
}

#[derive(Default)]
struct Routes {
    waiting: HashMap<String, Waiter>,
    /// Progress token (JSON text on the wire) → the request's id (JSON text on the wire).
    tokens: HashMap<String, String>,
    stream: Option<mpsc::Sender<Out>>,
    backlog: VecDeque<Vec<u8>>,
    seq: u64,
    closed: bool,
}

/// One client session: its input, and the routes of its output.
pub struct Channel {
    input: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    routes: Mutex<Routes>,
    shared: bool,
    /// The protocol version the session's `initialize` answer gave.
    version: std::sync::OnceLock<String>,
}

/// The compact JSON text of `value`: the key of an id or token.
fn key_of(value: &Value) -> String {
    serde_json::to_string(value).expect("a JSON value always serializes")
}

impl Channel {
    /// Wraps a newly opened session; `shared` for the stateless channel (colliding ids and
    /// tokens replaced). Its output is routed by a task that ends with the session.
    pub fn start(io: SessionIo, shared: bool) -> (Arc<Channel>, tokio::task::JoinHandle<()>) {
        let SessionIo {
            input,
            mut output,
            finished,
        } = io;
        let channel = Arc::new(Channel {
            input: Mutex::new(Some(input)),
            routes: Mutex::new(Routes::default()),
            shared,
            version: std::sync::OnceLock::new(),
        });
        let pump = channel.clone();
        tokio::spawn(async move {
            while let Some(mut line) = output.recv().await {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                pump.route(line).await;
            }
            pump.end();
        });
        (channel, finished)
    }

    fn sender(&self) -> Option<mpsc::Sender<Vec<u8>>> {
        self.input.lock().unwrap().clone()
    }

    /// The protocol version the session negotiated: `result.protocolVersion` of its answer to
    /// `initialize` (MCP 2025-03-26 "Lifecycle: Version Negotiation"), once that answer has
    /// passed; `None` before, after an error answer, and on the stateless channel.
    pub fn protocol_version(&self) -> Option<&str> {
        self.version.get().map(String::as_str)
    }

    /// Notes the protocol version of `line`, the session's answer to `initialize`.
    fn learn_version(&self, line: &[u8]) {
        #[derive(Deserialize)]
        struct Answer<'a> {
            #[serde(borrow)]
            result: Option<Init<'a>>,
        }
        #[derive(Deserialize)]
        struct Init<'a> {
            #[serde(rename = "protocolVersion", borrow)]
            protocol_version: Option<std::borrow::Cow<'a, str>>,
        }
        if let Ok(Answer {
            result: Some(Init {
                protocol_version: Some(version),
            }),
        }) = serde_json::from_slice(line)
        {
            let _ = self.version.set(version.into_owned());
        }
    }

    /// Whether the session has ended or is closing.
    pub fn is_closed(&self) -> bool {
        self.input.lock().unwrap().is_none() || self.routes.lock().unwrap().closed
    }

    /// Whether a request is waiting for its answer or the GET stream is open.
    pub fn is_busy(&self) -> bool {
        let routes = self.routes.lock().unwrap();
        !routes.waiting.is_empty() || routes.stream.as_ref().is_some_and(|s| !s.is_closed())
    }

    /// Hands a notification or a response (to a server-to-client request) to the session.
    pub async fn deliver(&self, json: Vec<u8>) -> Result<(), SubmitError> {
        let tx = self.sender().ok_or(SubmitError::Closed)?;
        tx.send(json).await.map_err(|_| SubmitError::Closed)
    }

    /// Hands a request to the session; its answer and related messages come through the
    /// returned [`Ticket`]. `cancel_on_drop`: dropping the ticket before the answer cancels the
    /// request (MCP 2026-07-28 "Streamable HTTP: Cancellation").
    ///
    /// `raw` is the request as the client wrote it (forwarded as written, so that numbers keep
    /// their exact text; a replaced id is set in the text as written, and only a replaced
    /// progress token makes it rewritten whole).
    pub async fn submit(
        self: &Arc<Self>,
        mut request: Value,
        raw: Vec<u8>,
        cancel_on_drop: bool,
    ) -> Result<Ticket, SubmitError> {
        let (tx, rx) = mpsc::channel(RESPONSE_QUEUE);
        let (key, id_replaced, token_replaced) = self.register(&mut request, tx)?;
        let ticket = Ticket {
            channel: self.clone(),
            key,
            rx,
            done: false,
            cancel_on_drop,
        };
        let line = if token_replaced {
            serde_json::to_vec(&request).expect("a JSON value always serializes")
        } else if id_replaced {
            let spliced = with_member(&raw, "id", &request["id"]);
            spliced.unwrap_or_else(|| serde_json::to_vec(&request).expect("JSON serializes"))
        } else {
            one_line(raw)
        };
        match self.sender() {
            Some(input) if input.send(line).await.is_ok() => Ok(ticket),
            _ => Err(SubmitError::Closed),
        }
    }

    /// Records the waiter of `request`, replacing a colliding id or token on a shared channel.
    /// Returns the wire key of its id, whether the id was replaced and whether a progress token
    /// was.
    fn register(
        &self,
        request: &mut Value,
        tx: mpsc::Sender<Out>,
    ) -> Result<(String, bool, bool), SubmitError> {
        let mut routes = self.routes.lock().unwrap();
        if routes.closed {
            return Err(SubmitError::Closed);
        }
        routes.seq += 1;
        let seq = routes.seq;
        let mut key = key_of(&request["id"]);
        let mut client_id = None;
        let private = self.shared && request["method"] == "tools/call";
        if private || routes.waiting.contains_key(&key) {
            if !self.shared {
                return Err(SubmitError::DuplicateId);
            }
            let taken = |k: &str| routes.waiting.contains_key(k);
            let fresh = if private {
                unguessable_value(taken)
            } else {
                fresh_value(taken, seq)
            };
            key = key_of(&fresh);
            client_id = Some(std::mem::replace(&mut request["id"], fresh));
        }
        // Progress tokens reach the shared servers as they are: every one is replaced by a
        // token unique in the process, so that two clients' tokens never meet there.
        let token =
            small_map::path_mut(request, &["params", "_meta", "progressToken"]).map(|token| {
                let n = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
                let fresh = json!(format!("mcp-envelope-http-progress-{n}"));
                let token_key = key_of(&fresh);
                routes.tokens.insert(token_key.clone(), key.clone());
                (token_key, Some(std::mem::replace(token, fresh)))
            });
        let id_replaced = client_id.is_some();
        let token_replaced = token.as_ref().is_some_and(|(_, t)| t.is_some());
        let waiter = Waiter {
            seq,
            client_id,
            token,
            tx,
            initialize: request["method"] == "initialize",
            listen: request["method"] == "subscriptions/listen",
        };
        routes.waiting.insert(key.clone(), waiter);
        Ok((key, id_replaced, token_replaced))
    }

    /// Removes the waiter `key` and its progress token.
    fn forget(routes: &mut Routes, key: &str) -> Option<Waiter> {
        let waiter = routes.waiting.remove(key)?;
        if let Some((token, _)) = &waiter.token {
            routes.tokens.remove(token);
        }
        Some(waiter)
    }

    /// Ends the HTTP response of the request `request_id` of a legacy session, which its
    /// client has just cancelled with `notifications/cancelled`: the session will not answer it
    /// (MCP 2025-11-25 "Utilities: Cancellation"), so the POST that carried it would otherwise
    /// stay open, and the session busy, for ever. Its ticket gets [`Out::cancelled`]. Nothing
    /// happens for an id no request of the session waits under, or on the shared stateless
    /// channel (its clients cancel by closing the response: MCP 2026-07-28).
    pub fn end_cancelled(&self, request_id: &Value) {
        if self.shared {
            return;
        }
        let waiter = Channel::forget(&mut self.routes.lock().unwrap(), &key_of(request_id));
        if let Some(waiter) = waiter {
            debug!(id = %request_id, "cancelled by the client: its response ends unanswered");
            let _ = waiter.tx.try_send(Out::cancelled());
        }
    }

    /// Opens the GET stream of a legacy session: the kept messages first. `None` when one is
    /// already open (MCP 2025-11-25: a message goes to one stream only).
    pub fn open_stream(&self) -> Option<mpsc::Receiver<Out>> {
        let mut routes = self.routes.lock().unwrap();
        if routes.stream.as_ref().is_some_and(|s| !s.is_closed()) || routes.closed {
            return None;
        }
        let (tx, rx) = mpsc::channel(BACKLOG + RESPONSE_QUEUE);
        for json in routes.backlog.drain(..) {
            let _ = tx.try_send(Out { json, last: false });
        }
        routes.stream = Some(tx);
        Some(rx)
    }

    /// Ends the client's side: no more input (the session finishes what is in flight and
    /// stops), and the GET stream closes.
    pub fn close(&self) {
        self.input.lock().unwrap().take();
        self.routes.lock().unwrap().stream = None;
    }

    /// The session has ended: every waiting response gets nothing more.
    fn end(&self) {
        let mut routes = self.routes.lock().unwrap();
        routes.closed = true;
        routes.waiting.clear();
        routes.tokens.clear();
        routes.stream = None;
        drop(routes);
        self.input.lock().unwrap().take();
    }

    /// Routes one message the session sent (see the module documentation).
    async fn route(&self, line: Vec<u8>) {
        let Ok(head) = serde_json::from_slice::<Head>(&line) else {
            debug!("the session sent a message that is not a JSON-RPC object; dropped");
            return;
        };
        let target = {
            let mut routes = self.routes.lock().unwrap();
            self.target(&mut routes, &head, &line)
        };
        match target {
            Target::Waiter(tx, fix, last) => {
                let json = match fix {
                    Some(fix) => fix.apply(&line),
                    None => line,
                };
                let _ = tx.send(Out { json, last }).await;
            }
            Target::Unrelated => self.unrelated(line).await,
            Target::Drop => {}
        }
    }

    /// Where the message `line` (read as `head`) goes; the answer to `initialize` is read for
    /// the session's protocol version on its way.
    fn target(&self, routes: &mut Routes, head: &Head, line: &[u8]) -> Target {
        let subscription = head
            .params
            .as_ref()
            .and_then(|p| p.meta.as_ref())
            .and_then(|m| m.subscription_id);
        match (head.method.as_deref(), head.id) {
            (None, Some(id)) => match Self::forget(routes, id.get()) {
                Some(w) => {
                    if w.initialize {
                        self.learn_version(line);
                    }
                    let fix = w.client_id.map(|id| match w.listen {
                        true => Fix::ListenId(id),
                        false => Fix::Id(id),
                    });
                    Target::Waiter(w.tx, fix, true)
                }
                None => {
                    debug!(id = id.get(), "an answer to no waiting request; dropped");
                    Target::Unrelated
                }
            },
            (Some("notifications/progress"), None) => {
                let token = head.params.as_ref().and_then(|p| p.progress_token);
                let waiter = token
                    .and_then(|t| routes.tokens.get(t.get()))
                    .and_then(|key| routes.waiting.get(key));
                match waiter {
                    Some(w) => {
                        let fix = w.token.as_ref().and_then(|(_, t)| t.clone());
                        Target::Waiter(w.tx.clone(), fix.map(Fix::Token), false)
                    }
                    // Progress is request-scoped (MCP 2025-11-25 "Utilities: Progress"): a
                    // token no request of this session set is another session's, or a
                    // finished request's.
                    None => {
                        debug!("progress for no active request of this session; dropped");
                        Target::Drop
                    }
                }
            }
            (Some(_), None) if subscription.is_some() => {
                let key = subscription.map(RawValue::get).unwrap_or_default();
                match routes.waiting.get(key) {
                    Some(w) => {
                        let fix = w.client_id.clone().map(Fix::Subscription);
                        Target::Waiter(w.tx.clone(), fix, false)
                    }
                    None => Target::Unrelated,
                }
            }
            _ => Target::Unrelated,
        }
    }

    /// A message related to no POST: the GET stream, else the oldest waiting POST, else kept.
    async fn unrelated(&self, json: Vec<u8>) {
        if self.shared {
            debug!("a message for no request of a stateless client; dropped");
            return;
        }
        let tx = {
            let mut routes = self.routes.lock().unwrap();
            match routes.stream.clone().filter(|s| !s.is_closed()) {
                Some(stream) => Some(stream),
                None => {
                    let oldest = routes.waiting.values().min_by_key(|w| w.seq);
                    match oldest.map(|w| w.tx.clone()) {
                        Some(tx) => Some(tx),
                        None => {
                            if routes.backlog.len() == BACKLOG {
                                routes.backlog.pop_front();
                                warn!("no GET stream open: the oldest kept server message dropped");
                            }
                            routes.backlog.push_back(json.clone());
                            None
                        }
                    }
                }
            }
        };
        if let Some(tx) = tx {
            let _ = tx.send(Out { json, last: false }).await;
        }
    }
}

impl super::sessions::Live for Channel {
    fn is_busy(&self) -> bool {
        Channel::is_busy(self)
    }

    fn is_closed(&self) -> bool {
        Channel::is_closed(self)
    }
}

/// Where a message goes.
enum Target {
    Waiter(mpsc::Sender<Out>, Option<Fix>, bool),
    Unrelated,
    /// Nowhere: the message concerns no request of this session.
    Drop,
}

/// A replaced value put back before the client sees the message.
enum Fix {
    /// The response's `id`.
    Id(Value),
    /// The `id` of the answer that closes a listen stream, and the `subscriptionId` in its
    /// `result._meta`.
    ListenId(Value),
    /// A progress notification's `progressToken`.
    Token(Value),
    /// A listen notification's `subscriptionId`.
    Subscription(Value),
}

impl Fix {
    fn apply(self, line: &[u8]) -> Vec<u8> {
        if let Fix::Id(id) = &self {
            if let Some(spliced) = with_id(line, id) {
                return spliced;
            }
        }
        let Ok(mut message) = serde_json::from_slice::<Value>(line) else {
            return line.to_vec();
        };
        match self {
            Fix::Id(id) => message["id"] = id,
            Fix::ListenId(id) => {
                if let Some(meta) = message.pointer_mut("/result/_meta") {
                    if meta.get(META_SUBSCRIPTION_ID).is_some() {
                        meta[META_SUBSCRIPTION_ID] = id.clone();
                    }
                }
                message["id"] = id;
            }
            Fix::Token(token) => {
                if let Some(t) = message.pointer_mut("/params/progressToken") {
                    *t = token;
                }
            }
            Fix::Subscription(id) => {
                if let Some(meta) = message.pointer_mut("/params/_meta") {
                    meta[META_SUBSCRIPTION_ID] = id;
                }
            }
        }
        serde_json::to_vec(&message).expect("a JSON value always serializes")
    }
}

/// A fresh string value whose key `taken` does not know.
fn fresh_value(taken: impl Fn(&str) -> bool, seq: u64) -> Value {
    (0u64..)
        .map(|n| json!(format!("mcp-envelope-http-{seq}-{n}")))
        .find(|v| !taken(&key_of(v)))
        .expect("an unbounded range always has a free value")
}

/// A fresh string value of 128 random bits ([`super::unguessable`]) whose key `taken` does
/// not know: the wire id of a stateless client's `tools/call`.
fn unguessable_value(taken: impl Fn(&str) -> bool) -> Value {
    std::iter::repeat_with(|| json!(super::unguessable()))
        .find(|v| !taken(&key_of(v)))
        .expect("an endless iterator always has a free value")
}

/// The answer and related messages of one POSTed request. Dropping it before the answer
/// forgets the request, and cancels it when it was submitted with `cancel_on_drop`.
pub struct Ticket {
    channel: Arc<Channel>,
    key: String,
    rx: mpsc::Receiver<Out>,
    done: bool,
    cancel_on_drop: bool,
}

impl Ticket {
    /// The next message for this request; `None` when the session ended without answering.
    pub async fn next(&mut self) -> Option<Out> {
        if self.done {
            return None;
        }
        let out = self.rx.recv().await;
        self.done = out.as_ref().is_none_or(|o| o.last);
        out
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let forgotten = Channel::forget(&mut self.channel.routes.lock().unwrap(), &self.key);
        if forgotten.is_some() && self.cancel_on_drop {
            let Ok(id) = serde_json::from_str::<Value>(&self.key) else {
                return;
            };
            let cancel = crate::wire::jsonrpc::notification(
                "notifications/cancelled",
                Some(json!({"requestId": id, "reason": "the client closed the HTTP response"})),
            );
            if let Some(input) = self.channel.sender() {
                let _ = input.try_send(serde_json::to_vec(&cancel).expect("JSON serializes"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_id_is_put_back_in_the_answer() {
        // An answer ending a listen stream has its subscription id put back as well.
        let listen =
            br#"{"id":"x","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"x"}}}"#;
        // An answer of the session's own form: the id's text replaced, the rest as written.
        let answer = br#"{"jsonrpc":"2.0","id":"w-1","result":{"x":"\"q\"","n":1.50}}"#;
        assert_eq!(
            String::from_utf8(Fix::Id(json!(5)).apply(answer)).unwrap(),
            r#"{"jsonrpc":"2.0","id":5,"result":{"x":"\"q\"","n":1.50}}"#
        );
        let fixed = Fix::ListenId(json!(3)).apply(listen);
        let fixed: Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(fixed["result"]["_meta"][META_SUBSCRIPTION_ID], 3);
        assert_eq!(fixed["id"], 3);
    }
}
