//! The HTTP client transport of a remote server: the lines queued in its [`super::Outbox`] are
//! POSTed, and the messages that come back (a JSON body, or the events of an SSE stream) go to
//! an [`Inbox`], the same peer dispatch as a stdio server's stdout lines.
//!
//! Source: MCP specification 2025-11-25, "Transports: Streamable HTTP":
//! * every JSON-RPC message is POSTed to the server's URL with
//!   `Accept: application/json, text/event-stream`; a request is answered by an
//!   `application/json` body or a `text/event-stream` of messages (server notifications and
//!   requests, then the response); a notification or response by `202 Accepted`;
//! * the `Mcp-Session-Id` the server gives with its `initialize` answer is sent on every later
//!   request, and `MCP-Protocol-Version` (the negotiated version) after `initialize`; a `404` to
//!   a request with a session id means the session is gone, and so does a `400` whose text
//!   names the session (a server restarted while we were idle answers "No valid session ID"):
//!   a new session is opened with the same `initialize` and the message is sent again, once
//!   (`http_client/renew.rs`); when that fails, the connection is reported lost and the
//!   supervisor connects again;
//! * after `notifications/initialized` a GET opens the stream of server-initiated messages when
//!   the server offers one (`405` means it does not); a `DELETE` ends the session on shutdown;
//! * "Backwards compatibility": when the POST of `initialize` is answered `400`, `404` or `405`,
//!   the older HTTP+SSE transport (2024-11-05) is tried: a GET of the same URL opens an SSE stream
//!   whose first `endpoint` event names the URL to POST messages to (same origin only); every
//!   answer then comes on that stream.
//!
//! MCP 2026-07-28 (`http_client/modern.rs`): a request whose `_meta` carries a 2026-07-28
//! protocol version is POSTed without session headers and with the request metadata headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`); an HTTP error answer whose body is a
//! JSON-RPC error for it is its answer; its cancellation closes its response stream.
//!
//! Faults become the calling request's [`Fault`]: a connection that cannot be made or breaks
//! is [`Fault::Connection`] (and the connection is reported lost, so the supervisor reconnects
//! with its backoff); an HTTP error status is [`Fault::HttpStatus`], with the `Retry-After`
//! header, and for `401`/`403` the credentials named (never their values).
//! A JSON body or an SSE event longer than `max_message_bytes` answers its request as too long.
//!
//! Crates: hyper's client connections for the POSTs to a plain `http://` server
//! (`http_client/plain.rs`), reqwest for everything else (HTTP/1.1 client, rustls with the
//! platform's and webpki's root certificates) and sse-stream (an incremental SSE parser: a
//! large event costs time linear in its size).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Method, RequestBuilder, StatusCode, Url};
use serde_json::Value;
use sse_stream::SseByteStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

use super::http_auth::{
    auth_detail, credential_headers, credential_redactor, same_origin_join, same_origin_redirects,
};
use super::Fault;
use crate::config::RemoteConfig;
use crate::server_tool::ServerTool;

const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// [`SESSION_ID`] and [`PROTOCOL_VERSION`] as header names, parsed once.
const SESSION_ID_HEADER: HeaderName = HeaderName::from_static(SESSION_ID);
const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static(PROTOCOL_VERSION);
/// Room for a POST's own headers beyond every POST's: the session id, the protocol version,
/// `Mcp-Method`, `Mcp-Name` and a few `Mcp-Param-*`.
const OWN_HEADERS: usize = 8;
const POST_ACCEPT: &str = "application/json, text/event-stream";
const EVENT_STREAM: &str = "text/event-stream";
const USER_AGENT: &str = concat!("mcp-envelope/", env!("CARGO_PKG_VERSION"));

/// Where the messages a remote server sends go: the receiving half of this transport, pushed
/// (the downstream side queues them for the same reader loop a stdio server's stdout feeds).
pub trait Inbox: Clone + Send + Sync + 'static {
    /// Takes one message (a JSON body or an SSE event's data), in order; the transport reads
    /// no further on that stream until it has been taken. `caused` links a server request
    /// that came on the response stream of one of our requests to that request.
    fn dispatch(
        &self,
        line: Vec<u8>,
        caused: Option<Caused>,
    ) -> impl std::future::Future<Output = ()> + Send;
    /// Fails pending request `id` (if it is one and still waiting) with `fault`, after the
    /// messages dispatched before it.
    fn fail(
        &self,
        id: Option<&Value>,
        fault: Fault,
    ) -> impl std::future::Future<Output = ()> + Send;
    /// The protocol version negotiated in `initialize` (sent as `MCP-Protocol-Version`).
    fn protocol_version(&self) -> Option<String>;
    /// Whether the connection above has closed (the GET stream is then not reopened).
    fn is_closed(&self) -> bool;
    /// Whether our request `id` still waits for its answer (a stream is resumed only then).
    fn is_waiting(&self, id: &Value) -> bool;
    /// The server's tools as it last listed them (their `inputSchema`s give `Mcp-Param-*`).
    fn tools(&self) -> Option<Arc<Vec<ServerTool>>>;
    /// A new session replaced the one the server forgot: what was set up in the old one
    /// (logging level, subscriptions) must be set up again.
    fn renewed(&self);
}

mod answer;
mod error_answer;
mod modern;
mod param_headers;
mod plain;
mod renew;
mod resume;

pub use param_headers::exclude_invalid as exclude_invalid_header_marks;

use answer::{content_type, data_stream, from_reqwest, read_limited, Answer, BodyError};
use error_answer::ErrorAnswer;
use modern::Sent;
use plain::PlainHttp;
use resume::{Cursor, Seen};

/// A server request that arrived on the response stream of one of our requests: it belongs
/// to that request (MCP 2025-11-25 "Transports: Streamable HTTP": messages on a POST's SSE
/// stream relate to the request that opened it).
#[derive(Debug, Clone, PartialEq)]
pub struct Caused {
    /// The server's id for its request.
    pub request: Value,
    /// The id of our request whose stream it came on.
    pub by: Value,
}

/// One remote server's HTTP session: the client with its credentials, the URLs, the session
/// id and protocol version, and how a lost connection is reported.
pub struct HttpTransport {
    server: String,
    client: reqwest::Client,
    /// The POSTs' own path to a plain `http://` server (`None`: reqwest for every request).
    plain: Option<PlainHttp>,
    /// The configured URL (streamable HTTP endpoint, or where the legacy SSE stream is).
    endpoint: Url,
    /// Where messages are POSTed: `endpoint`, or the legacy transport's `endpoint` event.
    post_url: RwLock<Url>,
    session: RwLock<Option<HeaderValue>>,
    protocol_version: RwLock<Option<HeaderValue>>,
    legacy: AtomicBool,
    /// The credentials in words (for 401/403 messages).
    credentials: String,
    /// Removes the credential values from text the server sends back (an error page that
    /// echoes the request's headers must not carry the token into envelopes or logs).
    redactor: crate::redact::Redactor,
    max_message_bytes: usize,
    lost: Mutex<Option<oneshot::Sender<String>>>,
    /// Set when the server refused our credentials (401/403): a failed start is then final.
    refused: AtomicBool,
    /// Tasks reading SSE streams that are not a POST's (GET stream, legacy stream).
    readers: Mutex<Vec<tokio::task::AbortHandle>>,
    /// The body of the `initialize` that opened the session, to open a new one with.
    initialize_body: Mutex<Option<Bytes>>,
    /// Held while a new session is being opened (one at a time).
    renewing: tokio::sync::Mutex<()>,
    /// Whether the GET stream of server messages is being read.
    listening: AtomicBool,
    /// The tasks POSTing 2026-07-28 requests, by request id (JSON text): aborting one closes
    /// its response stream, which cancels the request.
    modern_posts: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// The tools' `x-mcp-header` annotations, read once per tool and tool list.
    param_marks: Mutex<param_headers::MarkCache>,
}

impl HttpTransport {
    /// A transport for `remote`, reading its credentials from the environment through `env`;
    /// `lost` is sent why once the connection is gone. Errors name a missing or unusable
    /// variable (never a value).
    pub fn new(
        server: &str,
        remote: &RemoteConfig,
        max_message_bytes: usize,
        env: &dyn Fn(&str) -> Option<String>,
        lost: oneshot::Sender<String>,
    ) -> Result<HttpTransport, String> {
        let endpoint = Url::parse(&remote.url).map_err(|e| format!("url: {e}"))?;
        let headers = credential_headers(remote, env)?;
        // The password of user info in `url` is sent too (as HTTP Basic): a secret like the
        // headers' values.
        let redactor =
            credential_redactor(&headers).with_values(crate::redact::url_secrets(&remote.url));
        let plain = PlainHttp::new(&endpoint, &headers, USER_AGENT, &|v| std::env::var_os(v));
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .user_agent(USER_AGENT)
            .redirect(same_origin_redirects())
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
        Ok(HttpTransport {
            server: server.to_owned(),
            client,
            plain,
            post_url: RwLock::new(endpoint.clone()),
            endpoint,
            session: RwLock::new(None),
            protocol_version: RwLock::new(None),
            legacy: AtomicBool::new(false),
            credentials: remote.credentials(),
            redactor,
            max_message_bytes,
            lost: Mutex::new(Some(lost)),
            refused: AtomicBool::new(false),
            readers: Mutex::new(Vec::new()),
            initialize_body: Mutex::new(None),
            renewing: tokio::sync::Mutex::new(()),
            listening: AtomicBool::new(false),
            modern_posts: Mutex::new(HashMap::new()),
            param_marks: Mutex::default(),
        })
    }

    /// Whether the server refused our credentials (HTTP 401 or 403) at some point.
    pub fn was_refused(&self) -> bool {
        self.refused.load(Ordering::Acquire)
    }

    fn legacy(&self) -> bool {
        self.legacy.load(Ordering::Acquire)
    }

    /// Reports the connection lost (once).
    fn lose(&self, reason: String) {
        if let Some(tx) = self.lost.lock().unwrap().take() {
            let _ = tx.send(reason);
        }
    }

    /// Stops the SSE readers and, in a streamable HTTP session, ends it with `DELETE` (waiting
    /// at most `grace`; a server that does not allow it answers 405, which is fine).
    async fn end_session(&self, grace: Duration) {
        self.stop_readers();
        if self.legacy() || self.session.read().unwrap().is_none() {
            return;
        }
        let delete = self.request(Method::DELETE, self.endpoint.clone()).send();
        match tokio::time::timeout(grace, delete).await {
            Ok(Ok(r)) => debug!(server = %self.server, status = %r.status(), "session ended"),
            Ok(Err(e)) => debug!(server = %self.server, error = %describe(&e), "DELETE failed"),
            Err(_) => debug!(server = %self.server, "DELETE timed out"),
        }
    }

    /// Stops the tasks reading the GET stream or the legacy SSE stream.
    pub fn stop_readers(&self) {
        for reader in self.readers.lock().unwrap().drain(..) {
            reader.abort();
        }
    }

    /// A request with the session headers (streamable HTTP only); credentials are the
    /// client's default headers.
    fn request(&self, method: Method, url: Url) -> RequestBuilder {
        let mut b = self.client.request(method, url);
        if !self.legacy() {
            if let Some(id) = self.session.read().unwrap().clone() {
                b = b.header(SESSION_ID, id);
            }
            if let Some(v) = self.protocol_version.read().unwrap().clone() {
                b = b.header(PROTOCOL_VERSION, v);
            }
        }
        b
    }

    /// Sends every message the connection queues until its queue closes: requests each in a
    /// task of their own (answers may take long), notifications and responses in order.
    pub async fn run<S: Inbox>(self: Arc<Self>, sink: S, mut rx: mpsc::Receiver<Vec<u8>>) {
        let mut posts = JoinSet::new();
        while let Some(mut body) = rx.recv().await {
            while posts.try_join_next().is_some() {}
            if body.last() == Some(&b'\n') {
                body.pop();
            }
            let sent = Sent::of(&body);
            let body = Bytes::from(body);
            if sent.request_id().is_some() {
                self.post_request(&mut posts, body, sent, &sink);
                continue;
            }
            if let Some(id) = sent.cancelled_request() {
                if let Some(post) = self.modern_posts.lock().unwrap().remove(&id) {
                    debug!(server = %self.server, request = %id, "request cancelled: its response stream closed");
                    post.abort();
                    continue;
                }
            }
            let initialized = sent.is("notifications/initialized");
            if initialized {
                let version = sink
                    .protocol_version()
                    .and_then(|v| HeaderValue::from_str(&v).ok());
                *self.protocol_version.write().unwrap() = version;
            }
            self.send(body, sent, &sink).await;
            if initialized && !self.legacy() {
                self.start_listening(&sink);
            }
        }
    }

    /// POSTs request `sent` in a task of its own; a 2026-07-28 request's task is kept by id,
    /// so that its cancellation closes its response stream instead of being POSTed (MCP
    /// 2026-07-28 "Transports: Streamable HTTP", cancellation).
    fn post_request<S: Inbox>(
        self: &Arc<Self>,
        posts: &mut JoinSet<()>,
        body: Bytes,
        sent: Sent,
        sink: &S,
    ) {
        let (me, sink) = (self.clone(), sink.clone());
        let key = sent
            .modern_version()
            .and(sent.request_id())
            .map(Value::to_string);
        // The POST's future is boxed: it is several kilobytes (hyper's request and the SSE
        // reader inside), and a task's future is moved by value into the task when spawned.
        let Some(key) = key else {
            posts.spawn(async move { Box::pin(me.send(body, sent, &sink)).await });
            return;
        };
        let mut modern_posts = self.modern_posts.lock().unwrap();
        let post = posts.spawn({
            let key = key.clone();
            async move {
                Box::pin(me.send(body, sent, &sink)).await;
                me.modern_posts.lock().unwrap().remove(&key);
            }
        });
        modern_posts.insert(key, post);
    }

    /// The `Mcp-Param-*` headers of a 2026-07-28 `tools/call` whose tool's `inputSchema`
    /// annotates properties with `x-mcp-header` (`http_client/param_headers.rs`); none when
    /// the annotations are invalid (said in a warning).
    fn param_headers<S: Inbox>(&self, sent: &Sent, body: &[u8], sink: &S) -> Vec<(String, String)> {
        let Some(tool) = sent.modern_tool() else {
            return Vec::new();
        };
        let Some(tools) = sink.tools() else {
            return Vec::new();
        };
        let marks = self.param_marks.lock().unwrap().marks(&tools, tool);
        let annotations = match marks {
            Ok(found) if !found.is_empty() => found,
            Ok(_) => return Vec::new(),
            Err(why) => {
                warn!(server = %self.server, %tool, %why, "invalid x-mcp-header annotation: no Mcp-Param headers sent");
                return Vec::new();
            }
        };
        let arguments = modern::arguments_of(body);
        param_headers::param_headers(&annotations, &arguments)
    }

    /// POSTs one message and handles what comes back.
    async fn send<S: Inbox>(self: &Arc<Self>, body: Bytes, sent: Sent, sink: &S) {
        let initialize = sent.is("initialize");
        let again = (initialize && !self.legacy()).then(|| body.clone());
        let session = self
            .session
            .read()
            .unwrap()
            .clone()
            .filter(|_| !self.legacy());
        let own = |headers: &mut HeaderMap| self.own_headers(&sent, &body, sink, headers);
        let resp = match self.post(own, body.clone()).await {
            Ok(r) => r,
            Err(detail) => return self.broken(&sent, detail, sink).await,
        };
        let status = resp.status();
        if let Some(body) = again.filter(|_| matches!(status.as_u16(), 400 | 404 | 405)) {
            info!(server = %self.server, %status, "streamable HTTP refused; trying the HTTP+SSE transport");
            drop(resp);
            return Box::pin(self.fall_back(body, sent, sink)).await;
        }
        if initialize {
            if let Some(id) = resp.headers().get(SESSION_ID) {
                *self.session.write().unwrap() = Some(id.clone());
            }
            if status.is_success() {
                *self.initialize_body.lock().unwrap() = Some(body.clone());
            }
        }
        if status.is_success() {
            if !self.legacy() {
                self.read_answer(resp, &sent, sink).await;
            }
            return;
        }
        let answer = ErrorAnswer::read(resp).await;
        if sent.modern_version().is_some() {
            let text = answer.text.as_deref().unwrap_or_default();
            if let Some(rpc_error) = modern::rpc_error_for(text, sent.request_id()) {
                return sink.dispatch(rpc_error, None).await;
            }
        }
        match session {
            Some(old) if answer.names_the_session() => {
                Box::pin(self.session_gone(old, body, sent, answer, sink)).await
            }
            _ => self.refused(&sent, answer, sink).await,
        }
    }

    /// The server no longer knows session `old` (see the module doc): a new session, and the
    /// message sent again in it, once; else the connection is lost (a 404) or the message
    /// refused (a 400).
    async fn session_gone<S: Inbox>(
        self: &Arc<Self>,
        old: HeaderValue,
        body: Bytes,
        mut sent: Sent,
        answer: ErrorAnswer,
        sink: &S,
    ) {
        if !sent.again && !sent.is("initialize") {
            match self.renew_session(&old, sink).await {
                Ok(()) => {
                    sent.again = true;
                    return self.send(body, sent, sink).await;
                }
                Err(why) => warn!(server = %self.server, %why, "could not open a new session"),
            }
        }
        if answer.status == StatusCode::NOT_FOUND {
            let detail = "the server ended the session (HTTP 404)".to_owned();
            self.broken(&sent, detail, sink).await;
        } else {
            self.refused(&sent, answer, sink).await;
        }
    }

    /// An HTTP error status for a message: its request (if any) fails with it.
    async fn refused<S: Inbox>(&self, sent: &Sent, answer: ErrorAnswer, sink: &S) {
        let fault = self.status_fault(answer);
        match sent.request_id() {
            Some(id) => sink.fail(Some(id), fault).await,
            None => warn!(server = %self.server, error = %fault, "message not accepted"),
        }
    }

    /// A connection that cannot be made or broke: the request (if any) fails, and the
    /// connection is reported lost.
    async fn broken<S: Inbox>(&self, sent: &Sent, detail: String, sink: &S) {
        debug!(server = %self.server, %detail, "connection lost");
        sink.fail(sent.request_id(), Fault::Connection(detail.clone()))
            .await;
        self.lose(detail);
    }

    /// POSTs one message with the session headers and those `own` appends (the message's own,
    /// [`HttpTransport::own_headers`]): on the plain path when there is one, with every header
    /// in one map built for it (a 3xx answer there is sent again through reqwest, which
    /// follows redirects), else through reqwest. `Err` says why no answer came.
    async fn post(&self, own: impl Fn(&mut HeaderMap), body: Bytes) -> Result<Answer, String> {
        if let Some(plain) = self.plain.as_ref().filter(|_| !self.legacy()) {
            let mut headers = plain.headers(OWN_HEADERS);
            own(&mut headers);
            if let Some(id) = self.session.read().unwrap().clone() {
                headers.insert(SESSION_ID_HEADER, id);
            }
            if let Some(v) = self.protocol_version.read().unwrap().clone() {
                headers.entry(PROTOCOL_VERSION_HEADER).or_insert(v);
            }
            let resp = plain.post(headers, body.clone()).await?;
            if !resp.status().is_redirection() {
                return Ok(resp.map(http_body_util::Either::Left));
            }
        }
        let mut extra = HeaderMap::new();
        own(&mut extra);
        let url = self.post_url.read().unwrap().clone();
        let resp = self
            .request(Method::POST, url)
            .headers(extra)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, POST_ACCEPT)
            .body(body)
            .send()
            .await;
        resp.map(from_reqwest).map_err(|e| describe(&e))
    }

    /// Appends the headers message `sent` (JSON text `body`) needs of its own to `headers`:
    /// a 2026-07-28 request's metadata headers and its `Mcp-Param-*` headers.
    fn own_headers<S: Inbox>(&self, sent: &Sent, body: &[u8], sink: &S, headers: &mut HeaderMap) {
        sent.modern_headers(headers);
        for (name, value) in self.param_headers(sent, body, sink) {
            let name = HeaderName::try_from(name);
            if let (Ok(name), Ok(value)) = (name, HeaderValue::try_from(value)) {
                headers.append(name, value);
            }
        }
    }

    /// Reads a successful POST's answer: a JSON body or an SSE stream; a request not answered
    /// by it fails (a 202 leaves it to the GET stream).
    async fn read_answer<S: Inbox>(&self, mut resp: Answer, sent: &Sent, sink: &S) {
        let id = sent.request_id();
        if resp.status() == StatusCode::ACCEPTED {
            return;
        }
        match content_type(&resp).as_str() {
            EVENT_STREAM => {
                let resumable = sent.modern_version().is_none();
                return self.follow_stream(resp, id, resumable, sink).await;
            }
            "application/json" => match read_limited(&mut resp, self.max_message_bytes).await {
                Ok(body) if body.trim_ascii().is_empty() => {}
                Ok(body) => {
                    let answers = id.is_some_and(|id| resume::answers(&body, id));
                    // Not the answer's head: a body that is not JSON at all is said so, not
                    // handed on as a line nobody can read.
                    if !answers {
                        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
                            let detail = format!("the answer is not valid JSON: {e}");
                            return sink.fail(id, Fault::Invalid(detail)).await;
                        }
                    }
                    sink.dispatch(body, None).await;
                    if answers {
                        return;
                    }
                }
                Err(BodyError::TooLong(len)) => return sink.fail(id, Fault::TooLong(len)).await,
                Err(BodyError::Http(detail)) => {
                    return sink.fail(id, Fault::Connection(detail)).await;
                }
            },
            _ if id.is_none() => return,
            other => {
                let detail = format!("the answer has content type `{other}`, not JSON or SSE");
                return sink.fail(id, Fault::Invalid(detail)).await;
            }
        }
        let unanswered = "the server ended its answer without a response to the request";
        sink.fail(id, Fault::Connection(unanswered.into())).await;
    }

    /// Feeds the `message` events of a response's SSE stream to the sink ([`HttpTransport::pump`]).
    async fn read_events<S: Inbox>(
        &self,
        resp: Answer,
        owner: Option<&Value>,
        cursor: &mut Cursor,
        sink: &S,
    ) -> Result<(), String> {
        let events = std::pin::pin!(SseByteStream::new(data_stream(resp)));
        self.pump(events, owner, cursor, sink).await
    }

    /// Feeds the `message` events of an SSE stream to the sink until it ends (`Ok`) or breaks
    /// (`Err` with why), noting event ids, `retry` and whether `owner`'s response came in
    /// `cursor`. An event longer than `max_message_bytes` answers `owner` as too long; a
    /// server request on `owner`'s stream is dispatched as caused by it.
    async fn pump<E, S: Inbox>(
        &self,
        mut events: E,
        owner: Option<&Value>,
        cursor: &mut Cursor,
        sink: &S,
    ) -> Result<(), String>
    where
        E: futures_util::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Unpin,
    {
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| format!("the SSE stream broke: {e}"))?;
            cursor.saw(&event);
            let Some(data) = event.data.filter(|d| !d.is_empty()) else {
                continue;
            };
            match event.event.as_deref() {
                None | Some("message") => {}
                Some(other) => {
                    debug!(server = %self.server, event = other, "SSE event of another type skipped");
                    continue;
                }
            }
            if data.len() > self.max_message_bytes {
                warn!(server = %self.server, bytes = data.len(), "message longer than max_message_bytes rejected");
                sink.fail(owner, Fault::TooLong(data.len())).await;
                cursor.answered = owner.is_some();
                continue;
            }
            let caused = match owner.map(|o| (o, resume::seen(&data, o))) {
                Some((_, Seen::Answer)) => {
                    cursor.answered = true;
                    None
                }
                Some((_, Seen::NotJson(e))) => {
                    let detail = format!("an event of its answer stream is not valid JSON: {e}");
                    sink.fail(owner, Fault::Invalid(detail)).await;
                    cursor.answered = true;
                    continue;
                }
                Some((by, Seen::Request(request))) => Some(Caused {
                    request,
                    by: by.clone(),
                }),
                _ => None,
            };
            sink.dispatch(data.into_bytes(), caused).await;
        }
        Ok(())
    }

    /// The [`Fault::HttpStatus`] of an error answer; 401 and 403 name the credentials.
    fn status_fault(&self, answer: ErrorAnswer) -> Fault {
        let status = answer.status.as_u16();
        let detail = match status {
            401 | 403 => {
                self.refused.store(true, Ordering::Release);
                auth_detail(status, &self.credentials, answer.oauth)
            }
            _ => match answer.text {
                Ok(text) => self.redactor.redact_within(text.trim(), 200),
                Err(e) => e,
            },
        };
        Fault::HttpStatus {
            status,
            retry_after: answer.retry_after,
            detail,
        }
    }

    /// The HTTP+SSE transport: GET the configured URL, take the POST URL from its `endpoint`
    /// event, read the rest of the stream in a task of its own, and POST `initialize` again.
    async fn fall_back<S: Inbox>(self: &Arc<Self>, body: Bytes, sent: Sent, sink: &S) {
        let resp = self
            .client
            .get(self.endpoint.clone())
            .header(ACCEPT, EVENT_STREAM)
            .send()
            .await;
        let resp = match resp.map(from_reqwest) {
            Ok(r) if r.status().is_success() && content_type(&r) == EVENT_STREAM => r,
            Ok(r) => return self.refused(&sent, ErrorAnswer::read(r).await, sink).await,
            Err(e) => return self.broken(&sent, describe(&e), sink).await,
        };
        let mut events = Box::pin(SseByteStream::new(data_stream(resp)));
        let endpoint = loop {
            match events.next().await {
                Some(Ok(e)) if e.event.as_deref() == Some("endpoint") => {
                    break e.data.unwrap_or_default();
                }
                Some(Ok(_)) => continue,
                _ => {
                    let why = "the SSE stream ended before its `endpoint` event";
                    return self.broken(&sent, why.into(), sink).await;
                }
            }
        };
        let post_url = match same_origin_join(&self.endpoint, endpoint.trim()) {
            Ok(u) => u,
            Err(why) => return self.broken(&sent, why, sink).await,
        };
        *self.post_url.write().unwrap() = post_url;
        self.legacy.store(true, Ordering::Release);
        let (me, reader_sink) = (self.clone(), sink.clone());
        let reader = tokio::spawn(async move {
            let mut cursor = Cursor::default();
            let why = match me.pump(events, None, &mut cursor, &reader_sink).await {
                Ok(()) => "the server closed its SSE stream".to_owned(),
                Err(e) => e,
            };
            me.lose(why);
        });
        self.readers.lock().unwrap().push(reader.abort_handle());
        self.send(body, sent, sink).await;
    }
}

/// A reqwest error in plain words, without the URL (which may hold a secret): the innermost
/// cause, e.g. `cannot connect: Connection refused (os error 111)`.
pub fn describe(e: &reqwest::Error) -> String {
    let inner = answer::innermost(e);
    if e.is_connect() {
        format!("cannot connect: {inner}")
    } else if e.is_timeout() {
        format!("timed out: {inner}")
    } else {
        inner
    }
}

/// The supervisor holds the transport shared with the task that sends its messages; closing
/// through any handle ends the one session.
impl super::Close for Arc<HttpTransport> {
    async fn close(&mut self, grace: Duration) {
        self.end_session(grace).await;
    }
}
