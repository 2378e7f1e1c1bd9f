//! One supervised task per configured downstream MCP server.
//!
//! The task owns the child process (spawned directly, never through a shell, in its own process
//! group), its stdin writer, its stdout reader, its stderr tail, its pending requests and its id
//! counter. It opens the server in its protocol era ([`handshake`]: `server/discover`, else
//! `initialize` and `notifications/initialized`), lists every page of `tools/list`, restarts
//! the server with exponential backoff when it exits, and stops it on
//! shutdown: stdin closed, then SIGTERM to its process group, then SIGKILL after a grace period.
//! A remote server (`url` in the config) is connected to over HTTP instead ([`remote`],
//! [`http`]) and supervised the same way: a lost connection counts as an exit.
//!
//! Sources: MCP specification 2025-06-18 "Lifecycle" (initialization, shutdown over stdio),
//! "Transports: stdio", "Utilities: Cancellation"; restart policy from issue 5 of the project
//! (backoff from 1 s doubling to at most 30 s, at most `max_restarts` in a row, then
//! `unavailable`) with issue 17's change: a run that stayed ready for [`HEALTHY_RUN`] resets
//! the count, so only a crash loop gives up.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::BufReader;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{debug, info, warn};

use crate::jsonrpc::{self, Frame, Incoming, LineReader, Message};
use crate::redact::Redactor;

mod coalesce;
pub mod handshake;
mod http;
mod remote;
mod server_requests;
mod stderr;

pub use handshake::ServerEra;

pub use server_requests::MAX_OUTSTANDING_SERVER_REQUESTS;

/// First restart delay (issue 5).
pub const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
/// Longest restart delay (issue 5).
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A run that stayed ready this long before it ended was not part of a crash loop: the count
/// of restarts in a row starts again, so a server that runs fine between crashes keeps being
/// restarted, and only one that fails to start or crashes within this time after every start
/// becomes `unavailable` after `max_restarts`.
pub const HEALTHY_RUN: Duration = Duration::from_secs(10);
/// How long a stopping child gets after stdin is closed, and again after SIGTERM.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);
/// How long the stdout reader gets, after a server's process exited, to read what is left in
/// the pipe before the processes holding the pipe open are stopped.
pub const EXIT_DRAIN: Duration = Duration::from_millis(250);
/// Lines of a server's stderr kept for error messages.
pub const STDERR_TAIL_LINES: usize = 20;
/// A message at least this long (bytes) asks for freed memory to be given back to the system
/// once the call it answered is done ([`release_memory_after_large_message`]).
pub const LARGE_MESSAGE_BYTES: usize = 1 << 20;

/// Set when a message of [`LARGE_MESSAGE_BYTES`] or more was read from any server.
static LARGE_MESSAGE_SEEN: AtomicBool = AtomicBool::new(false);

/// Gives freed heap memory back to the system if a large message was read since the last call.
///
/// A big result is parsed into many small allocations; once they are freed the allocator keeps
/// the pages (glibc trims only the top of the main heap automatically), so the proxy's RSS
/// would stay at its peak. `malloc_trim(0)` returns the free pages of every arena. Called by the
/// session when a request is answered; costs nothing when no large message was seen.
pub fn release_memory_after_large_message() {
    if LARGE_MESSAGE_SEEN.swap(false, Ordering::AcqRel) {
        trim_heap();
    }
}

/// Gives the allocator's free pages back to the system (`malloc_trim(0)` with glibc; nothing
/// elsewhere).
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Everything needed to start one server.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// The server's config name.
    pub name: String,
    /// The program to execute (no shell).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the inherited environment.
    pub env: Vec<(String, String)>,
    /// Working directory; `None` inherits ours.
    pub cwd: Option<PathBuf>,
    /// Limit for spawn + `initialize` + `tools/list` of one start.
    pub startup_timeout: Duration,
    /// Restarts in a row before the server is `unavailable` (until the proxy restarts).
    pub max_restarts: u32,
    /// Longest line accepted from the server's stdout, in bytes (for a remote server: the
    /// longest JSON body or SSE event).
    pub max_message_bytes: usize,
    /// A remote server to connect to instead of starting `program` (which is then unused).
    pub remote: Option<crate::config::RemoteConfig>,
    /// The client's output queue: while it is full, the server's stdout is not read.
    pub output_gate: Option<Arc<crate::backpressure::OutputGate>>,
}

/// What the client told us in its `initialize`, forwarded to every server.
#[derive(Debug, Clone)]
pub struct ClientInit {
    /// The protocol version to request from servers (the one negotiated with the client).
    pub protocol_version: String,
    /// The client's `capabilities` object.
    pub capabilities: Value,
    /// The client's `clientInfo` object.
    pub client_info: Value,
}

/// A server's lifecycle state.
#[derive(Debug, Clone)]
pub enum ServerState {
    /// The first start is in progress.
    Starting,
    /// Initialized and serving.
    Ready(Arc<Connection>),
    /// Exited or failed to start; the next start is `attempt` (1-based) of `max_restarts`.
    Restarting {
        /// Which restart in a row this is.
        attempt: u32,
        /// Why the previous run ended.
        reason: String,
    },
    /// Gave up after `max_restarts` restarts in a row, until the proxy restarts.
    Unavailable {
        /// Why.
        reason: String,
    },
    /// Stopped by shutdown.
    Stopped,
}

impl ServerState {
    /// A short name: `starting`, `ready`, `restarting`, `unavailable`, `stopped`.
    pub fn label(&self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Ready(_) => "ready",
            ServerState::Restarting { .. } => "restarting",
            ServerState::Unavailable { .. } => "unavailable",
            ServerState::Stopped => "stopped",
        }
    }
}

/// Something a server sent that the session must handle.
#[derive(Debug)]
pub enum DownstreamEvent {
    /// A notification to pass on to the client (progress, `notifications/message`, …).
    Notification {
        /// The server's config name.
        server: String,
        /// The notification's method.
        method: String,
        /// Its params.
        params: Option<Value>,
        /// Dropped or fired once the notification is queued for the client. The server's
        /// reader waits for it, so a notification always reaches the client before the
        /// response that followed it (progress before the result).
        queued: oneshot::Sender<()>,
    },
    /// A server-to-client request (`sampling/createMessage`, `elicitation/create`,
    /// `roots/list`, `ping`): forward it to the client and send the answer through `reply`
    /// (`Ok(result)` or `Err(error object)`).
    Request {
        /// The server's config name.
        server: String,
        /// The server's own id for the request (for mapping its cancellation).
        id: Value,
        /// The method.
        method: String,
        /// Its params.
        params: Option<Value>,
        /// Where the client's answer goes.
        reply: oneshot::Sender<Result<Value, Value>>,
    },
    /// The server's tool list or state changed: rebuild the catalog.
    ToolsChanged {
        /// The server's config name.
        server: String,
    },
}

/// Why a request to a server got no JSON-RPC answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No answer within the timeout (a `notifications/cancelled` was sent downstream).
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// The server exited or closed its stdout during the request.
    #[error("{0}")]
    Exited(String),
    /// The server's answer could not be used (e.g. longer than `max_message_bytes`).
    #[error("{0}")]
    Invalid(String),
    /// The server is not running.
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

enum Reply {
    Response(Result<ResultBody, Value>),
    Closed(String),
    TooLong(usize),
    Invalid(String),
    Failed(CallError),
}

/// One running child process of a server: its stdin queue and its pending requests.
#[derive(Debug)]
pub struct Connection {
    server: String,
    writer: mpsc::Sender<Vec<u8>>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    next_id: AtomicU64,
    closed: AtomicBool,
    /// Its requests to the client still waiting for an answer.
    server_requests: server_requests::ServerRequests,
    /// `tools/list` refreshes asked for by `notifications/tools/list_changed`.
    tools_refresh: coalesce::Coalescer,
    /// The server's `initialize` result (`serverInfo`, `capabilities`, `protocolVersion`), or
    /// for a modern server its `server/discover` result (`capabilities`, `supportedVersions`).
    pub initialize_result: RwLock<Value>,
    /// The era the server speaks, once [`handshake::open`] found it.
    era: std::sync::OnceLock<ServerEra>,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reply")
    }
}

/// Removes a pending entry when a request future is dropped (cancelled or finished).
struct PendingGuard<'a> {
    conn: &'a Connection,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.conn.pending.lock().unwrap().remove(&self.id);
    }
}

impl Connection {
    fn new(server: &str, writer: mpsc::Sender<Vec<u8>>) -> Connection {
        Connection {
            server: server.to_owned(),
            writer,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            server_requests: Default::default(),
            tools_refresh: Default::default(),
            initialize_result: RwLock::new(Value::Null),
            era: std::sync::OnceLock::new(),
        }
    }

    /// The era the server speaks (`None` during the handshake).
    pub fn era(&self) -> Option<&ServerEra> {
        self.era.get()
    }

    /// Whether the child behind this connection has gone away.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Sends a request and waits up to `timeout` for its answer. `on_sent` gets the downstream
    /// id once the request is queued (the session uses it to forward a client's cancellation).
    /// On timeout a `notifications/cancelled` for that id is sent to the server.
    pub async fn request(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
        on_sent: &mut (dyn FnMut(u64) + Send),
    ) -> Result<Result<Value, Value>, CallError> {
        match self.request_body(method, params, timeout, on_sent).await? {
            Ok(body) => body.into_result().await,
            Err(error) => Ok(Err(error)),
        }
    }

    /// Like [`Connection::request`], but a large `result` may come back unparsed
    /// ([`ResultBody::Raw`]).
    pub async fn request_body(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
        on_sent: &mut (dyn FnMut(u64) + Send),
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
        let _guard = PendingGuard { conn: self, id };
        let stamped = handshake::prepare_params(self.era(), params);
        let line = jsonrpc::request_line(&Value::from(id), method, stamped.as_ref().or(params));
        let send = tokio::time::timeout(timeout, self.writer.send(line));
        match send.await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return Err(CallError::Exited("its stdin is closed".into())),
            Err(_) => return Err(CallError::Timeout(timeout)),
        }
        on_sent(id);
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Reply::Response(r))) => Ok(r),
            Ok(Ok(Reply::Closed(reason))) => Err(CallError::Exited(reason)),
            Ok(Ok(Reply::Invalid(detail))) => Err(CallError::Invalid(detail)),
            Ok(Ok(Reply::Failed(e))) => Err(e),
            Ok(Ok(Reply::TooLong(len))) => Err(CallError::Invalid(format!(
                "the response is {len} bytes, more than max_message_bytes"
            ))),
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

    /// Queues a notification for the server; dropped (with a log line) if the server is gone
    /// or its stdin queue is full.
    pub fn notify(&self, method: &str, params: Option<Value>) {
        if !handshake::notification_allowed(self.era(), method) {
            return;
        }
        let line = jsonrpc::to_line(&jsonrpc::notification(method, params));
        if self.writer.try_send(line).is_err() {
            debug!(server = %self.server, method, "notification not delivered: server gone or busy");
        }
    }

    /// Queues a response to a server-to-client request.
    async fn respond(&self, id: Value, outcome: Result<Value, Value>) {
        let msg = match outcome {
            Ok(result) => jsonrpc::response(id, result),
            Err(error) => jsonrpc::error_response(id, error),
        };
        let _ = self.writer.send(jsonrpc::to_line(&msg)).await;
    }

    fn close(&self, reason: &str) {
        self.close_with(|| Reply::Closed(reason.to_owned()));
    }

    /// Marks the connection closed and answers every pending request with `reply()`.
    fn close_with(&self, reply: impl Fn() -> Reply) {
        let drained: Vec<_> = {
            let mut pending = self.pending.lock().unwrap();
            self.closed.store(true, Ordering::Release);
            pending.drain().collect()
        };
        for (_, tx) in drained {
            let _ = tx.send(reply());
        }
    }

    /// Logs an answer whose id is not pending: a warning while the connection is open, at
    /// debug level once it is closed (answers that arrive while the server is being stopped).
    fn unmatched_answer(&self, server: &str, id: &Value) {
        if self.closed.load(Ordering::Acquire) {
            debug!(%server, %id, "answer after the connection closed ignored");
        } else {
            warn!(%server, %id, "answer for an id that is not pending ignored");
        }
    }

    fn deliver(&self, id: &Value, reply: Reply) -> bool {
        let Some(id) = id.as_u64() else { return false };
        let tx = self.pending.lock().unwrap().remove(&id);
        match tx {
            Some(tx) => {
                let _ = tx.send(reply);
                true
            }
            None => false,
        }
    }
}

/// A handle on one supervised server. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Downstream {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    spec: ServerSpec,
    state: watch::Sender<ServerState>,
    tools: RwLock<Option<Arc<Vec<Value>>>>,
    stderr_tail: Mutex<VecDeque<String>>,
    startup: Mutex<Option<Duration>>,
    /// Applied to every stderr line before it is logged or kept.
    redactor: Redactor,
    /// Why tools of the last listing were dropped (malformed, too many, endless paging).
    tool_warnings: Mutex<Vec<String>>,
}

impl Downstream {
    /// Starts the supervisor task of one server. It runs until `shutdown` becomes true, then
    /// stops the child and returns.
    pub fn spawn(
        spec: ServerSpec,
        client: ClientInit,
        events: mpsc::UnboundedSender<DownstreamEvent>,
        shutdown: watch::Receiver<bool>,
    ) -> (Downstream, tokio::task::JoinHandle<()>) {
        let (state, _) = watch::channel(ServerState::Starting);
        let passed = spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let inherited = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        let redactor = Redactor::for_server(passed, inherited);
        let handle = Downstream {
            inner: Arc::new(Shared {
                redactor,
                tool_warnings: Mutex::new(Vec::new()),
                spec,
                state,
                tools: RwLock::new(None),
                stderr_tail: Mutex::new(VecDeque::new()),
                startup: Mutex::new(None),
            }),
        };
        let task = tokio::spawn(supervise(handle.clone(), client, events, shutdown));
        (handle, task)
    }

    /// The server's config name.
    pub fn name(&self) -> &str {
        &self.inner.spec.name
    }

    /// The current state.
    pub fn state(&self) -> ServerState {
        self.inner.state.borrow().clone()
    }

    /// A receiver that sees every state change.
    pub fn watch_state(&self) -> watch::Receiver<ServerState> {
        self.inner.state.subscribe()
    }

    /// The last tool list fetched (all pages), kept while the server restarts; `None` before
    /// the first successful start.
    pub fn tools(&self) -> Option<Arc<Vec<Value>>> {
        self.inner.tools.read().unwrap().clone()
    }

    /// The last lines the server wrote to stderr (at most [`STDERR_TAIL_LINES`]).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.inner
            .stderr_tail
            .lock()
            .unwrap()
            .iter()
            .cloned()
            .collect()
    }

    /// Why tools of the last `tools/list` were not offered (one line each, naming the server
    /// and the tool); empty when every tool was well-formed.
    pub fn tool_warnings(&self) -> Vec<String> {
        self.inner.tool_warnings.lock().unwrap().clone()
    }

    /// How long the last successful start took (spawn to tools listed).
    pub fn startup_duration(&self) -> Option<Duration> {
        *self.inner.startup.lock().unwrap()
    }

    /// Waits until the server is ready, unavailable or stopped, or until `deadline`.
    pub async fn wait_ready(
        &self,
        deadline: tokio::time::Instant,
    ) -> Result<Arc<Connection>, CallError> {
        let mut rx = self.inner.state.subscribe();
        loop {
            match &*rx.borrow_and_update() {
                ServerState::Ready(conn) if !conn.is_closed() => return Ok(conn.clone()),
                ServerState::Unavailable { reason } => {
                    return Err(CallError::Unavailable(reason.clone()))
                }
                ServerState::Stopped => {
                    return Err(CallError::Unavailable("the proxy is shutting down".into()))
                }
                _ => {}
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                Ok(Err(_)) => return Err(CallError::Unavailable("the server task ended".into())),
                // The caller knows its own timeout and reports it.
                Err(_) => return Err(CallError::Timeout(Duration::ZERO)),
            }
        }
    }

    /// Waits until the first start attempt has settled: ready (`Ok`), or failed — restarting,
    /// unavailable or stopped — (`Err` with the reason), or `deadline` passed (`Err`). Unlike
    /// [`Downstream::wait_ready`] it does not wait through restarts, so one broken server never
    /// holds up the client's `initialize` beyond its own first attempt.
    pub async fn wait_started(&self, deadline: tokio::time::Instant) -> Result<(), String> {
        let mut rx = self.inner.state.subscribe();
        loop {
            match &*rx.borrow_and_update() {
                ServerState::Ready(_) => return Ok(()),
                ServerState::Restarting { reason, .. } | ServerState::Unavailable { reason } => {
                    return Err(reason.clone())
                }
                ServerState::Stopped => return Err("stopped".into()),
                ServerState::Starting => {}
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                Ok(Err(_)) => return Err("the server task ended".into()),
                Err(_) => return Err("not ready within startup_timeout_sec".into()),
            }
        }
    }

    /// Sends a request once the server is ready; the whole wait (for readiness, then for the
    /// answer) is bounded by `timeout`. See [`Connection::request`] for `on_sent`.
    pub async fn request(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
        on_sent: &mut (dyn FnMut(&Arc<Connection>, u64) + Send),
    ) -> Result<Result<ResultBody, Value>, CallError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let conn = self.wait_ready(deadline).await.map_err(|e| match e {
            CallError::Timeout(_) => CallError::Timeout(timeout),
            other => other,
        })?;
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        let conn2 = conn.clone();
        conn.request_body(method, params, remaining, &mut |id| on_sent(&conn2, id))
            .await
            .map_err(|e| match e {
                CallError::Timeout(_) => CallError::Timeout(timeout),
                other => other,
            })
    }

    fn set_state(&self, state: ServerState) {
        info!(server = %self.name(), state = state.label(), "server state");
        self.inner.state.send_replace(state);
    }

    /// `reason` followed by the last lines of the server's stderr; just `reason` for a remote
    /// server (it has no stderr).
    fn with_stderr(&self, reason: String) -> String {
        if self.inner.spec.remote.is_some() {
            reason
        } else {
            format!("{reason}; last stderr: {}", self.stderr_summary())
        }
    }

    fn stderr_summary(&self) -> String {
        let tail = self.stderr_tail();
        if tail.is_empty() {
            "(no stderr output)".into()
        } else {
            let start = tail.len().saturating_sub(5);
            tail[start..].join(" | ")
        }
    }
}

/// The supervisor: start, watch, restart with backoff, give up, stop.
async fn supervise(
    ds: Downstream,
    client: ClientInit,
    events: mpsc::UnboundedSender<DownstreamEvent>,
    mut shutdown: watch::Receiver<bool>,
) {
    let spec = ds.inner.spec.clone();
    let mut failures_in_a_row: u32 = 0;
    loop {
        if *shutdown.borrow() {
            break;
        }
        let started = Instant::now();
        let reason = match remote::start(&ds, &client, &events, &mut shutdown).await {
            Ok(mut running) => {
                *ds.inner.startup.lock().unwrap() = Some(started.elapsed());
                info!(server = %spec.name, ms = started.elapsed().as_millis() as u64, "server ready");
                ds.set_state(ServerState::Ready(running.conn().clone()));
                let _ = events.send(DownstreamEvent::ToolsChanged {
                    server: spec.name.clone(),
                });
                let ran_since = Instant::now();
                tokio::select! {
                    reason = running.closed() => {
                        if ran_since.elapsed() >= HEALTHY_RUN {
                            // It ran fine between crashes: not a crash loop.
                            failures_in_a_row = 0;
                        }
                        let reason = ds.with_stderr(reason);
                        warn!(server = %spec.name, %reason, "server exited");
                        reason
                    }
                    _ = wait_true(&mut shutdown) => {
                        running.stop().await;
                        break;
                    }
                }
            }
            Err(_) if *shutdown.borrow() => break,
            Err(StartError { reason, fatal }) => {
                let reason = ds.with_stderr(reason);
                warn!(server = %spec.name, %reason, "server failed to start");
                if fatal {
                    ds.set_state(ServerState::Unavailable { reason });
                    let _ = events.send(DownstreamEvent::ToolsChanged {
                        server: spec.name.clone(),
                    });
                    wait_true(&mut shutdown).await;
                    break;
                }
                reason
            }
        };
        failures_in_a_row += 1;
        if failures_in_a_row > spec.max_restarts {
            let reason = format!(
                "gave up after {} restart(s) in a row: {reason}",
                spec.max_restarts
            );
            ds.set_state(ServerState::Unavailable { reason });
            let _ = events.send(DownstreamEvent::ToolsChanged {
                server: spec.name.clone(),
            });
            wait_true(&mut shutdown).await;
            break;
        }
        let backoff = backoff_delay(failures_in_a_row);
        ds.set_state(ServerState::Restarting {
            attempt: failures_in_a_row,
            reason,
        });
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = wait_true(&mut shutdown) => break,
        }
    }
    ds.set_state(ServerState::Stopped);
}

/// The delay before restart number `attempt` (1-based): 1 s, 2 s, 4 s, … capped at 30 s.
pub fn backoff_delay(attempt: u32) -> Duration {
    let exp = attempt.saturating_sub(1).min(16);
    (BACKOFF_INITIAL * 2u32.pow(exp)).min(BACKOFF_MAX)
}

async fn wait_true(rx: &mut watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            // The sender is gone: treat it as shutdown.
            return;
        }
    }
}

/// A started child: its connection and what is needed to watch and stop it.
struct Running {
    conn: Arc<Connection>,
    child: Child,
    /// The child's process group (its pid at spawn), for cleaning up what it started.
    pgid: Option<i32>,
    stdin_close: Option<oneshot::Sender<()>>,
    reader_done: Option<oneshot::Receiver<String>>,
    name: String,
}

impl Running {
    /// Resolves when the child's stdout closes or the child exits, whichever comes first
    /// (a process it started may hold its stdout open after it died); returns why. Either
    /// way the child is reaped, what is left of its process group is sent SIGTERM, and every
    /// pending request fails with the reason.
    async fn closed(&mut self) -> String {
        // Polled by reference so that a caller racing this future (the handshake in
        // `start_once`) can drop it without losing the reader's signal; `Child::wait` is
        // cancel-safe.
        let first = tokio::select! {
            reason = reader_finished(&mut self.reader_done) => Ok(reason),
            status = self.child.wait() => Err(status),
        };
        let (reason, status) = match first {
            Ok(reason) => {
                // Give it a moment to exit by itself, then make sure it is gone.
                let status = match tokio::time::timeout(SHUTDOWN_GRACE, self.child.wait()).await {
                    Ok(Ok(status)) => {
                        reap_group_leftovers(self.pgid);
                        status.to_string()
                    }
                    _ => {
                        terminate_group(&mut self.child, SHUTDOWN_GRACE).await;
                        "killed after closing stdout".into()
                    }
                };
                (reason, status)
            }
            Err(status) => {
                let status = status.map_or_else(|e| format!("wait failed: {e}"), |s| s.to_string());
                // Answers it wrote just before exiting may still be in the pipe: let the
                // reader take them, then stop the leftovers that hold stdout open (which ends
                // the reader). One that escaped the group does not hold us.
                let drained =
                    tokio::time::timeout(EXIT_DRAIN, reader_finished(&mut self.reader_done));
                let reason = match drained.await {
                    Ok(reason) => reason,
                    Err(_) => {
                        self.conn.close(&format!("exited ({status})"));
                        reap_group_leftovers(self.pgid);
                        let rest = reader_finished(&mut self.reader_done);
                        match tokio::time::timeout(SHUTDOWN_GRACE, rest).await {
                            Ok(reason) => reason,
                            Err(_) => {
                                "exited while a process it started kept its stdout open".into()
                            }
                        }
                    }
                };
                reap_group_leftovers(self.pgid);
                (reason, status)
            }
        };
        let full = format!("{reason} ({status})");
        self.conn.close(&full);
        full
    }

    /// Stops the child: stdin closed, then SIGTERM to its group, then SIGKILL.
    async fn stop(&mut self) {
        // Calls still in flight learn why before the child's exit closes its stdout.
        self.conn
            .close("stopped because the proxy is shutting down");
        if let Some(tx) = self.stdin_close.take() {
            let _ = tx.send(());
        }
        match tokio::time::timeout(SHUTDOWN_GRACE, self.child.wait()).await {
            Ok(_) => reap_group_leftovers(self.pgid),
            Err(_) => terminate_group(&mut self.child, SHUTDOWN_GRACE).await,
        }
        debug!(server = %self.name, "server stopped");
    }
}

/// Makes the child receive SIGKILL when the proxy dies, even by SIGKILL, when nothing else
/// could stop it (Linux `prctl(PR_SET_PDEATHSIG)`; through `libc`, already a dependency, rather
/// than adding `nix` or `rustix` for one call). The signal is tied to the thread that spawned
/// the child: the proxy's runtime is one thread that lives as long as the process. A child
/// whose parent died before the call exits at once. Processes the child starts itself are
/// not covered (the setting is not inherited); those in its process group are stopped on
/// every other kind of exit.
fn die_with_the_proxy(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before exec and calls only
        // async-signal-safe functions (prctl, getppid, _exit); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// Waits for the stdout reader's end (its reason); `closed` once it has been taken.
async fn reader_finished(done: &mut Option<oneshot::Receiver<String>>) -> String {
    match done.as_mut() {
        Some(rx) => {
            let reason = rx.await.unwrap_or_else(|_| "reader stopped".into());
            *done = None;
            reason
        }
        None => "closed".into(),
    }
}

/// After a server's main process has exited and been reaped: SIGTERM to what is left of its
/// process group (processes it started and did not stop). Sent at once, while the group id
/// cannot have been reused (pids are allocated cyclically); an empty group makes kill(2) fail
/// with ESRCH, which is ignored.
fn reap_group_leftovers(pgid: Option<i32>) {
    if let Some(pgid) = pgid {
        // SAFETY: kill(2) on a process group id; it touches no memory of ours.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        }
    }
}

/// SIGTERM to the child's process group, then SIGKILL after `grace`; reaps the child.
async fn terminate_group(child: &mut Child, grace: Duration) {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) with a negative pid signals the process group the child leads (it was
        // spawned with process_group(0)); it touches no memory of ours.
        unsafe {
            libc::kill(-(pid as i32), libc::SIGTERM);
        }
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
        unsafe {
            libc::kill(-(pid as i32), libc::SIGKILL);
        }
    }
    let _ = child.kill().await;
}

/// Spawns the child and performs the handshake within `startup_timeout`.
/// Why a start failed, and whether trying again could help.
struct StartError {
    reason: String,
    /// A program that cannot be executed (not found, not executable) will not start by
    /// itself on a retry: the server goes straight to `unavailable`.
    fatal: bool,
}

impl From<String> for StartError {
    fn from(reason: String) -> Self {
        StartError {
            reason,
            fatal: false,
        }
    }
}

async fn start_once(
    ds: &Downstream,
    client: &ClientInit,
    events: &mpsc::UnboundedSender<DownstreamEvent>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Running, StartError> {
    let spec = &ds.inner.spec;
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .envs(
            spec.env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    die_with_the_proxy(&mut cmd);
    ds.inner.stderr_tail.lock().unwrap().clear();
    if let Some(cwd) = spec.cwd.as_ref().filter(|c| !c.is_dir()) {
        return Err(StartError {
            reason: format!(
                "its working directory (cwd) `{}` is not a directory",
                cwd.display()
            ),
            fatal: true,
        });
    }
    let mut child = cmd.spawn().map_err(|e| StartError {
        reason: format!("cannot start `{}`: {e}", spec.program.display()),
        fatal: true,
    })?;
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    enlarge_pipe(&stdout);
    let stderr = child.stderr.take().expect("piped stderr");

    let (stderr_done_tx, stderr_done_rx) = oneshot::channel();
    tokio::spawn(read_stderr(ds.clone(), stderr, stderr_done_tx));
    let (writer_tx, writer_rx) = mpsc::channel::<Vec<u8>>(1024);
    let (close_tx, close_rx) = oneshot::channel();
    tokio::spawn(write_stdin(spec.name.clone(), stdin, writer_rx, close_rx));
    let conn = Arc::new(Connection::new(&spec.name, writer_tx));
    let (done_tx, done_rx) = oneshot::channel();
    tokio::spawn(read_stdout(
        ds.clone(),
        conn.clone(),
        stdout,
        events.clone(),
        done_tx,
    ));
    let mut running = Running {
        conn: conn.clone(),
        pgid: child.id().map(|p| p as i32),
        child,
        stdin_close: Some(close_tx),
        reader_done: Some(done_rx),
        name: spec.name.clone(),
    };
    let handshake = run_handshake(ds, &conn, client, true);
    // A server that exits during the handshake fails the start at once (issue 7: `check`
    // reports its exit status instead of waiting out startup_timeout_sec).
    let (outcome, ended_by_exit) =
        settle_startup(spec.startup_timeout, handshake, running.closed(), shutdown).await;
    match outcome {
        Ok(()) => {
            handshake::listen_for_changes(&conn);
            Ok(running)
        }
        Err(reason) => {
            // A handshake request that failed because the child went away: say how it ended
            // (the `closed` branch already does).
            let reason = if conn.is_closed() && !ended_by_exit {
                match tokio::time::timeout(SHUTDOWN_GRACE, running.child.wait()).await {
                    Ok(Ok(status)) => format!("{reason} ({status})"),
                    _ => reason,
                }
            } else {
                reason
            };
            running.stop().await;
            // Let the stderr reader catch the child's last words for the log.
            let _ = tokio::time::timeout(Duration::from_millis(500), stderr_done_rx).await;
            Err(reason.into())
        }
    }
}

/// Runs `handshake` within `timeout`, racing the server's end (`closed`, its reason) and
/// shutdown: the outcome, and whether the server ended or shutdown came first.
async fn settle_startup(
    timeout: Duration,
    handshake: impl std::future::Future<Output = Result<(), String>>,
    closed: impl std::future::Future<Output = String>,
    shutdown: &mut watch::Receiver<bool>,
) -> (Result<(), String>, bool) {
    tokio::select! {
        r = tokio::time::timeout(timeout, handshake) => (match r {
            Ok(r) => r,
            Err(_) => Err(format!(
                "not ready within {} ms (startup_timeout_sec)",
                timeout.as_millis()
            )),
        }, false),
        reason = closed => (Err(format!("{reason} during startup")), true),
        _ = wait_true(shutdown) => (Err("stopped during startup: the proxy is shutting down".to_owned()), true),
    }
}

/// The MCP handshake on a new connection: the era probe when `probe_era` ([`handshake::open`]:
/// `server/discover`, else `initialize` and `notifications/initialized`), then every page of
/// `tools/list`, each request within the server's startup timeout.
async fn run_handshake(
    ds: &Downstream,
    conn: &Connection,
    client: &ClientInit,
    probe_era: bool,
) -> Result<(), String> {
    let timeout = ds.inner.spec.startup_timeout;
    handshake::open(conn, client, timeout, probe_era).await?;
    store_tools(ds, list_all_tools(conn, timeout).await?);
    Ok(())
}

/// Most `tools/list` pages fetched from one server (MCP "Utilities: Pagination" sets no limit;
/// a server that never stops paging must not hold the proxy).
pub const MAX_TOOL_PAGES: usize = 100;

/// Fetches every page of `tools/list` (MCP "Utilities: Pagination"): stops early, keeping the
/// tools listed so far and saying why, on a cursor seen before, after [`MAX_TOOL_PAGES`] pages,
/// or once more tools than a server may offer were listed.
async fn list_all_tools(
    conn: &Connection,
    timeout: Duration,
) -> Result<(Vec<Value>, Option<String>), String> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut seen = std::collections::HashSet::new();
    for _page in 0..MAX_TOOL_PAGES {
        let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
        let result = conn
            .request("tools/list", params.as_ref(), timeout, &mut |_| {})
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?
            .map_err(|e| format!("tools/list was refused: {e}"))?;
        match result.get("tools") {
            Some(Value::Array(page)) => tools.extend(page.iter().cloned()),
            _ => return Err("tools/list answer has no `tools` array".into()),
        }
        let next = match result.get("nextCursor") {
            Some(c) if !c.is_null() => c,
            _ => return Ok((tools, None)),
        };
        if !seen.insert(next.to_string()) {
            let why = format!("tools/list repeated the cursor {next}; stopped paging");
            return Ok((tools, Some(why)));
        }
        if tools.len() > crate::tool_validation::MAX_TOOLS_PER_SERVER {
            return Ok((
                tools,
                Some("tools/list offers too many tools; stopped paging".into()),
            ));
        }
        cursor = Some(next.clone());
    }
    let why = format!("tools/list has more than {MAX_TOOL_PAGES} pages; stopped paging");
    Ok((tools, Some(why)))
}

/// Keeps the well-formed tools of a listing ([`crate::tool_validation::admit`]) as the
/// server's tools; logs the warnings when they differ from the last listing's.
fn store_tools(ds: &Downstream, (tools, paging): (Vec<Value>, Option<String>)) {
    let (tools, mut warnings) = crate::tool_validation::admit(ds.name(), tools);
    if let Some(why) = paging {
        warnings.insert(0, format!("server '{}': {why}", ds.name()));
    }
    let mut last = ds.inner.tool_warnings.lock().unwrap();
    if *last != warnings {
        for w in &warnings {
            warn!(server = %ds.name(), "{w}");
        }
        *last = warnings;
    }
    drop(last);
    *ds.inner.tools.write().unwrap() = Some(Arc::new(tools));
}

async fn write_stdin(
    server: String,
    stdin: ChildStdin,
    rx: mpsc::Receiver<Vec<u8>>,
    close: oneshot::Receiver<()>,
) {
    let close = async {
        let _ = close.await;
    };
    if let Err(e) = jsonrpc::write_lines(stdin, rx, close).await {
        debug!(%server, error = %e, "writing to server stdin failed");
    }
}

async fn read_stderr(
    ds: Downstream,
    stderr: tokio::process::ChildStderr,
    done: oneshot::Sender<()>,
) {
    stderr::read_lines(stderr, &mut |line| {
        let line = ds.inner.redactor.redact(&line);
        debug!(server = %ds.name(), stderr = %line, "server stderr");
        let mut tail = ds.inner.stderr_tail.lock().unwrap();
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(truncate_chars(&line, 500));
    })
    .await;
    let _ = done.send(());
}

fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

async fn read_stdout(
    ds: Downstream,
    conn: Arc<Connection>,
    stdout: tokio::process::ChildStdout,
    events: mpsc::UnboundedSender<DownstreamEvent>,
    done: oneshot::Sender<String>,
) {
    let server = ds.name().to_owned();
    let mut reader = LineReader::new(
        BufReader::with_capacity(256 * 1024, stdout),
        ds.inner.spec.max_message_bytes,
    );
    let gate = ds.inner.spec.output_gate.clone();
    let reason = loop {
        if let Some(gate) = &gate {
            gate.room().await;
        }
        match reader.next_frame().await {
            Ok(None) => break "closed its stdout".to_owned(),
            Err(e) => break format!("stdout read failed: {e}"),
            Ok(Some(Frame::TooLong { len, head })) => {
                warn!(%server, bytes = len, "message longer than max_message_bytes rejected");
                match jsonrpc::id_from_head(&head) {
                    Some(id) if conn.deliver(&id, Reply::TooLong(len)) => {}
                    _ => {
                        warn!(%server, "could not tell which request the over-long message answered")
                    }
                }
            }
            Ok(Some(Frame::Line(line))) => dispatch_line(&ds, &conn, line, &events).await,
        }
    };
    // Fail every pending request now, and make new ones wait for the restart, rather than
    // after the child has been reaped (which can take the shutdown grace period).
    conn.close(&reason);
    let _ = done.send(reason);
}

/// Handles one message line from a server (a stdout line, or a remote server's JSON body or
/// SSE event): a large plain success response is delivered unparsed ([`ResultBody::Raw`]),
/// anything else is classified and dispatched ([`handle_line`]), parsing large lines off the
/// runtime thread.
async fn dispatch_line(
    ds: &Downstream,
    conn: &Arc<Connection>,
    line: Vec<u8>,
    events: &mpsc::UnboundedSender<DownstreamEvent>,
) {
    let server = ds.name();
    if line.len() >= LARGE_MESSAGE_BYTES {
        LARGE_MESSAGE_SEEN.store(true, Ordering::Release);
    }
    let fast = crate::offload::cpu_bound(line.len(), move || fast_response(line));
    let line = match fast.await {
        Ok((id, body)) => {
            if !conn.deliver(&id, Reply::Response(Ok(ResultBody::Raw(body)))) {
                conn.unmatched_answer(server, &id);
            }
            return;
        }
        Err(line) => line,
    };
    let (incoming, line) =
        crate::offload::cpu_bound(line.len(), move || (jsonrpc::classify(&line), line)).await;
    handle_line(ds, conn, incoming, &line, events).await;
}

/// Pipe capacity asked for on a server's stdout (bytes). Linux pipes hold 64 KiB by default:
/// a server writing a result of many megabytes then stops and waits for us every 64 KiB. Linux
/// grants up to `/proc/sys/fs/pipe-max-size` (1 MiB by default) to unprivileged processes.
pub const SERVER_STDOUT_PIPE_BYTES: libc::c_int = 1 << 20;

/// Asks for a larger pipe buffer on a server's stdout; a refusal (older kernels, a lower
/// `pipe-max-size`) only costs speed and is ignored.
fn enlarge_pipe(pipe: &impl std::os::fd::AsRawFd) {
    #[cfg(target_os = "linux")]
    // SAFETY: fcntl(F_SETPIPE_SZ) on a descriptor we own; it passes no memory.
    unsafe {
        libc::fcntl(
            pipe.as_raw_fd(),
            libc::F_SETPIPE_SZ,
            SERVER_STDOUT_PIPE_BYTES,
        );
    }
}

/// Lines at least this long that look like plain successful responses (see
/// [`response_head`]) are delivered unparsed ([`ResultBody::Raw`]).
pub const RAW_RESULT_MIN_BYTES: usize = 64 * 1024;

/// A response's `result`: parsed, or (for a large line) the whole line, not yet parsed past
/// its `result` key, to be parsed only as far as the budget needs.
#[derive(Debug, Clone, PartialEq)]
pub enum ResultBody {
    /// The parsed `result`.
    Value(Value),
    /// The unparsed response.
    Raw(RawResponse),
}

impl ResultBody {
    /// The parsed `result` or error object; parses a raw response in full (off the async
    /// runtime when it is large). `Err(CallError::Invalid)` when a raw line turns out not to be
    /// valid JSON or not a valid response.
    pub async fn into_result(self) -> Result<Result<Value, Value>, CallError> {
        match self {
            ResultBody::Value(v) => Ok(Ok(v)),
            ResultBody::Raw(raw) => {
                let len = raw.len();
                crate::offload::cpu_bound(len, move || raw.parse()).await
            }
        }
    }
}

/// A large response line whose head (the members before `result`) says it is a plain success
/// response; the rest has not been parsed or validated.
#[derive(Debug, Clone, PartialEq)]
pub struct RawResponse {
    line: String,
}

impl RawResponse {
    /// The whole line's text.
    pub fn as_str(&self) -> &str {
        &self.line
    }

    /// Length of the line in bytes.
    pub fn len(&self) -> usize {
        self.line.len()
    }

    /// Whether the line is empty (never, for a line that was delivered).
    pub fn is_empty(&self) -> bool {
        self.line.is_empty()
    }

    /// The whole line, given up.
    pub fn into_line(self) -> String {
        self.line
    }

    /// Parses the whole line: the `result` (`Ok`) or the error object (`Err`) of the response;
    /// `CallError::Invalid` when it is not valid JSON or not a response.
    pub fn parse(&self) -> Result<Result<Value, Value>, CallError> {
        let value: Value = serde_json::from_str(&self.line)
            .map_err(|e| CallError::Invalid(format!("the response is not valid JSON: {e}")))?;
        match jsonrpc::classify_value(value) {
            Message::Response { outcome, .. } => Ok(outcome),
            Message::Invalid { reason, .. } => Err(CallError::Invalid(format!(
                "the response is not a valid JSON-RPC response: {reason}"
            ))),
            _ => Err(CallError::Invalid(
                "the answer is not a JSON-RPC response".into(),
            )),
        }
    }
}

/// A large line that starts like a plain successful JSON-RPC response: its id and the line,
/// unparsed past the head. Any other line is given back, to be classified as usual.
fn fast_response(line: Vec<u8>) -> Result<(Value, RawResponse), Vec<u8>> {
    if line.len() < RAW_RESULT_MIN_BYTES {
        return Err(line);
    }
    let line = match String::from_utf8(line) {
        Ok(l) => l,
        Err(e) => return Err(e.into_bytes()),
    };
    match response_head(&line) {
        Some(id) => Ok((id, RawResponse { line })),
        None => Err(line.into_bytes()),
    }
}

/// The id of a line that looks like a success response: its members other than `result` are
/// exactly `"jsonrpc":"2.0"` and a valid `id` (in either order, unescaped keys), all before
/// `result` (as Python servers write it) or all after it (as the TypeScript SDK writes it:
/// `{"result":…,"jsonrpc":"2.0","id":1}`). Reads only those members, so it costs nothing for a
/// result of any size; whether the rest is valid JSON is found out when the result is mapped.
fn response_head(line: &str) -> Option<Value> {
    leading_members(line).or_else(|| trailing_members(line))
}

/// [`response_head`] when `jsonrpc` and `id` come first.
fn leading_members(line: &str) -> Option<Value> {
    let mut rest = line.trim_start().strip_prefix('{')?;
    let (mut version, mut id) = (false, None);
    loop {
        let after_quote = rest.trim_start().strip_prefix('"')?;
        let key_end = after_quote.find('"')?;
        let key = &after_quote[..key_end];
        rest = after_quote[key_end + 1..].trim_start().strip_prefix(':')?;
        match key {
            "result" => break,
            "jsonrpc" | "id" => {
                let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
                let value = values.next()?.ok()?;
                rest = rest[values.byte_offset()..]
                    .trim_start()
                    .strip_prefix(',')?;
                if key == "jsonrpc" {
                    if version || value != "2.0" {
                        return None;
                    }
                    version = true;
                } else {
                    if id.is_some() || !jsonrpc::is_valid_id(&value) {
                        return None;
                    }
                    id = Some(value);
                }
            }
            _ => return None,
        }
    }
    if version {
        id
    } else {
        None
    }
}

/// [`response_head`] when `jsonrpc` and `id` come last: read backwards from the final `}`
/// (which, in a valid line, closes the top-level object, so the members just before it are
/// top-level ones). Only a number or an escape-free string is accepted as a value.
fn trailing_members(line: &str) -> Option<Value> {
    if !line.trim_start().starts_with("{\"result\"") {
        return None;
    }
    let mut rest = line.trim_end().strip_suffix('}')?;
    let (mut version, mut id) = (false, None);
    for _ in 0..2 {
        rest = rest.trim_end();
        let value_start = if let Some(body) = rest.strip_suffix('"') {
            body.rfind('"')?
        } else {
            rest.rfind(|c: char| !matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E'))? + 1
        };
        let text = &rest[value_start..];
        if text.is_empty() || text.contains('\\') {
            return None;
        }
        let value: Value = serde_json::from_str(text).ok()?;
        let before = rest[..value_start].trim_end().strip_suffix(':')?.trim_end();
        let key_body = before.strip_suffix('"')?;
        let key_start = key_body.rfind('"')?;
        let key = &key_body[key_start + 1..];
        rest = key_body[..key_start].trim_end().strip_suffix(',')?;
        match key {
            "jsonrpc" if !version && value == "2.0" => version = true,
            "id" if id.is_none() && jsonrpc::is_valid_id(&value) => id = Some(value),
            _ => return None,
        }
    }
    id.filter(|_| version)
}

/// Handles one classified line from a server's stdout: non-JSON lines are logged and skipped; messages
/// (single or batched) are dispatched, waiting for each notification to be queued for the
/// client before reading on.
async fn handle_line(
    ds: &Downstream,
    conn: &Arc<Connection>,
    incoming: Incoming,
    line: &[u8],
    events: &mpsc::UnboundedSender<DownstreamEvent>,
) {
    let server = ds.name();
    let messages = match incoming {
        Incoming::ParseError(error) => {
            // A line that starts exactly like the answer to a pending request but is not valid
            // JSON answers that request (as an invalid response) rather than leaving it to time
            // out; the same rule as for large lines, whose validity is found out later.
            let id = response_head(&String::from_utf8_lossy(line));
            let detail = format!("the response is not valid JSON: {error}");
            // Also an answer (an error response, say) whose outer members are readable but
            // whose content is not (nested too deep, a lone surrogate).
            let id = id.or_else(|| {
                let top = crate::recover::top_level(line);
                top.is_response().then_some(top.id).flatten()
            });
            if let Some(id) = id {
                if conn.deliver(&id, Reply::Invalid(detail)) {
                    warn!(%server, %id, "answer that is not valid JSON");
                    return;
                }
            }
            let text = String::from_utf8_lossy(line);
            warn!(%server, line = %truncate_chars(&text, 200), "non-JSON line on stdout skipped");
            return;
        }
        Incoming::Single(msg) => vec![msg],
        Incoming::Batch(msgs) => msgs,
    };
    for msg in messages {
        if let Some(queued) = handle_server_message(ds, conn, msg, events) {
            let _ = queued.await;
        }
    }
}

fn handle_server_message(
    ds: &Downstream,
    conn: &Arc<Connection>,
    msg: Message,
    events: &mpsc::UnboundedSender<DownstreamEvent>,
) -> Option<oneshot::Receiver<()>> {
    let server = ds.name();
    match msg {
        Message::Response { id, outcome } => {
            if !conn.deliver(&id, Reply::Response(outcome.map(ResultBody::Value))) {
                conn.unmatched_answer(server, &id);
            }
        }
        Message::Notification { method, params } => {
            if method == "notifications/subscriptions/acknowledged" {
                debug!(%server, ?params, "subscriptions/listen acknowledged");
            } else if method == "notifications/tools/list_changed" {
                if conn.tools_refresh.request() {
                    tokio::spawn(refresh_tools(ds.clone(), conn.clone(), events.clone()));
                }
            } else {
                if method == "notifications/cancelled" {
                    if let Some(id) = params.as_ref().and_then(|p| p.get("requestId")) {
                        conn.server_requests.cancel(id);
                    }
                }
                let (queued, done) = oneshot::channel();
                let _ = events.send(DownstreamEvent::Notification {
                    server: server.to_owned(),
                    method,
                    params,
                    queued,
                });
                return Some(done);
            }
        }
        Message::Request { id, method, params } => {
            forward_server_request(ds, conn, id, method, params, events)
        }
        // Well-formed JSON that is not a valid message: when it names a pending request it
        // answers that request (as an invalid response), large or small alike.
        Message::Invalid { id, reason } => {
            let detail = format!("the answer is not a valid JSON-RPC response: {reason}");
            if conn.deliver(&id, Reply::Invalid(detail)) {
                warn!(%server, %id, %reason, "invalid answer");
            } else {
                warn!(%server, %reason, "invalid JSON-RPC message from server ignored");
            }
        }
    }
    None
}

/// Passes a server-to-client request on to the session and answers the server with the
/// client's answer; refused at once when the server already has
/// [`MAX_OUTSTANDING_SERVER_REQUESTS`] waiting; never answered once the server cancels it.
fn forward_server_request(
    ds: &Downstream,
    conn: &Arc<Connection>,
    id: Value,
    method: String,
    params: Option<Value>,
    events: &mpsc::UnboundedSender<DownstreamEvent>,
) {
    let server = ds.name();
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
        tokio::spawn(async move { conn.respond(id, Err(error)).await });
        return;
    }
    let (tx, rx) = oneshot::channel();
    let sent = events.send(DownstreamEvent::Request {
        server: server.to_owned(),
        id: id.clone(),
        method,
        params,
        reply: tx,
    });
    let task_conn = conn.clone();
    let task_id = id.clone();
    let task = tokio::spawn(async move {
        let outcome = if sent.is_ok() {
            rx.await.unwrap_or_else(|_| {
                Err(jsonrpc::error_object(
                    jsonrpc_core::ErrorCode::InternalError,
                    "the client did not answer",
                    None,
                ))
            })
        } else {
            Err(jsonrpc::error_object(
                jsonrpc_core::ErrorCode::InternalError,
                "no client connected",
                None,
            ))
        };
        task_conn.server_requests.end(&task_id);
        task_conn.respond(task_id, outcome).await;
    });
    conn.server_requests.attach(&id, task.abort_handle());
}

/// Refreshes the server's tools, again as long as more `list_changed` notifications came in
/// meanwhile (see [`coalesce::Coalescer`]).
async fn refresh_tools(
    ds: Downstream,
    conn: Arc<Connection>,
    events: mpsc::UnboundedSender<DownstreamEvent>,
) {
    loop {
        match list_all_tools(&conn, ds.inner.spec.startup_timeout).await {
            Ok(listing) => {
                store_tools(&ds, listing);
                let _ = events.send(DownstreamEvent::ToolsChanged {
                    server: ds.name().to_owned(),
                });
            }
            // Stopping the server ends the refresh too; that is no fault.
            Err(e) if conn.closed.load(Ordering::Acquire) => {
                debug!(server = %ds.name(), error = %e, "refreshing tools stopped")
            }
            Err(e) => warn!(server = %ds.name(), error = %e, "refreshing tools failed"),
        }
        if !conn.tools_refresh.finish() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_one_second_to_thirty() {
        let delays: Vec<u64> = (1..=7).map(|a| backoff_delay(a).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(backoff_delay(1000), BACKOFF_MAX);
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate_chars("éééé", 2), "éé…");
        assert_eq!(truncate_chars("ab", 2), "ab");
    }

    #[test]
    fn fast_response_only_for_large_plain_responses() {
        let pad = "x".repeat(RAW_RESULT_MIN_BYTES);
        let line = |s: String| s.into_bytes();
        let ok = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{pad}"}}]}}}}"#
        );
        let (id, raw) = fast_response(line(ok.clone())).unwrap();
        assert_eq!(id, json!(7));
        assert_eq!(
            raw.parse().unwrap().unwrap(),
            serde_json::from_str::<Value>(&ok).unwrap()["result"]
        );
        let (id, _) = fast_response(line(format!(
            r#" {{ "id" : "a" , "jsonrpc":"2.0", "result":"{pad}"}}"#
        )))
        .unwrap();
        assert_eq!(id, json!("a"));
        // The TypeScript SDK's order: result first.
        for (text, want) in [
            (
                format!(r#"{{"result":"{pad}","jsonrpc":"2.0","id":7}}"#),
                json!(7),
            ),
            (
                format!(r#"{{"result":"{pad}" , "id" : "a b" , "jsonrpc" : "2.0" }} "#),
                json!("a b"),
            ),
            (
                format!(
                    r#"{{"result":{{"p":"{pad}","x":{{"jsonrpc":"2.0","id":1}}}},"jsonrpc":"2.0","id":-3}}"#
                ),
                json!(-3),
            ),
        ] {
            let (id, raw) = fast_response(line(text.clone())).unwrap();
            assert_eq!(id, want, "{text}");
            assert!(raw.parse().unwrap().is_ok());
        }
        let rejected = [
            format!(r#"{{"jsonrpc":"2.0","id":7,"error":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"m","result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","jsonrpc":"2.0","id":7,"result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"id":8,"result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"1.0","id":7,"result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":null,"result":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","i\"d":7,"result":"{pad}"}}"#),
            format!(r#"[{{"jsonrpc":"2.0","id":7,"result":"{pad}"}}]"#),
            format!(r#"{{"result":"{pad}","id":7}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0"}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0","id":7,"x":1}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0","id":"a\"b"}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0","id":null}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0","id":1.5}}"#),
            format!(r#"{{"result":"{pad}","jsonrpc":"2.0","jsonrpc":"2.0"}}"#),
            format!(r#"{{"x":1,"result":"{pad}","jsonrpc":"2.0","id":7}}"#),
            r#"{"jsonrpc":"2.0","id":7,"result":1}"#.to_owned(),
        ];
        for text in rejected {
            assert_eq!(
                fast_response(line(text.clone())).unwrap_err(),
                text.into_bytes()
            );
        }
    }

    #[test]
    fn raw_responses_that_are_not_valid_json_are_invalid_answers() {
        let pad = "x".repeat(RAW_RESULT_MIN_BYTES);
        for text in [
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":"{pad}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":["{pad}", tru]}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":"{pad}"}} x"#),
        ] {
            let (_, raw) = fast_response(text.into_bytes()).unwrap();
            assert!(
                matches!(raw.parse(), Err(CallError::Invalid(ref d)) if d.contains("not valid JSON")),
                "{:?}",
                raw.parse()
            );
        }
        let both = format!(r#"{{"jsonrpc":"2.0","id":7,"result":"{pad}","error":{{}}}}"#);
        let (_, raw) = fast_response(both.into_bytes()).unwrap();
        assert!(matches!(raw.parse(), Err(CallError::Invalid(_))));
    }
}
