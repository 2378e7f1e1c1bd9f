//! One supervised task per configured downstream MCP server.
//!
//! | file | what it does |
//! |---|---|
//! | `mod.rs` | the handle ([`Downstream`]): state, tools, stderr tail, requests once ready |
//! | [`supervisor`] | start, watch, restart with backoff, give up, stop: over any transport |
//! | `local.rs` | a stdio server: its child process, stdout reader, stderr tail, exit |
//! | `remote.rs` | a remote server: its HTTP session (a lost session counts as an exit) |
//! | `retire.rs` | an instance a config reload restarted or removed: it drains, then stops |
//! | `tool_listing.rs` | every page of `tools/list`, each tool kept as its JSON text |
//! | [`handshake`] | the era probe (`server/discover`, else `initialize`), `_meta` stamping |
//! | `connection.rs` | one connection: the JSON-RPC peer plus era, `initialize` result |
//! | `inbound.rs` | what a server sends: notifications, its requests to the client |
//!
//! Sources: MCP specification 2025-06-18 "Lifecycle" (initialization, shutdown over stdio),
//! "Transports: stdio", "Utilities: Cancellation"; MCP 2025-11-25 "Transports: Streamable HTTP".

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::info;

use crate::redact::Redactor;
use crate::server_tool::ServerTool;

mod coalesce;
mod connection;
pub mod handshake;
mod inbound;
mod local;
mod remote;
mod retire;
mod server_requests;
mod stamped;
mod stderr;
pub mod supervisor;
#[cfg(test)]
mod tests;
mod tool_listing;

pub use connection::Connection;
pub use handshake::ServerEra;
pub use retire::Retirement;

pub use crate::rpc::{CallError, RawResponse, ResultBody};
pub use crate::runtime::{release_memory_after_large_message, trim_heap, LARGE_MESSAGE_BYTES};

/// Lines of a server's stderr kept for error messages.
pub const STDERR_TAIL_LINES: usize = 20;
/// Lines of stderr in the error of a call the server's exit cut short.
pub const CALL_STDERR_LINES: usize = 3;
/// Longest stderr tail in the error of a call the server's exit cut short (characters).
pub const CALL_STDERR_CHARS: usize = 300;

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
    /// Variables of ours the server does not inherit (remote servers' credentials:
    /// [`crate::config::Config::credential_variables_withheld_from`]).
    pub env_remove: Vec<String>,
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
    pub output_gate: Option<Arc<crate::transport::backpressure::OutputGate>>,
    /// Called each time a listing of the server's tools is kept.
    pub on_listed: Option<ListedHook>,
}

/// Called with a server's config name and its tools each time a listing of them is kept, in
/// the server's own task before it is reported ready: the proxy makes the server's share of
/// its first catalog there, while the other servers still start.
#[derive(Clone)]
pub struct ListedHook(pub Arc<ListedFn>);

/// The function of a [`ListedHook`]: the server's config name, its tools as kept.
pub type ListedFn = dyn Fn(&str, &Arc<Vec<ServerTool>>) + Send + Sync;

impl std::fmt::Debug for ListedHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListedHook")
    }
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
        /// Our request (its id on this connection) on whose response stream it came, when the
        /// transport links them (streamable HTTP); `None` on stdio, which has no such link.
        cause: Option<u64>,
        /// Where the client's answer goes.
        reply: oneshot::Sender<Result<Value, Value>>,
    },
    /// The server's tool list or state changed: rebuild the catalog.
    ToolsChanged {
        /// The server's config name.
        server: String,
    },
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
    /// The server's tools as it listed them (each its JSON text, see [`ServerTool`]).
    tools: RwLock<Option<Arc<Vec<ServerTool>>>>,
    stderr_tail: Mutex<VecDeque<String>>,
    startup: Mutex<Option<Duration>>,
    /// Applied to every stderr line before it is logged or kept.
    redactor: Redactor,
    /// The secrets the proxy gives the server, taken out of every answer to
    /// [`Downstream::request`].
    secrets: crate::redact::SecretValues,
    /// Why tools of the last listing were dropped (malformed, too many, endless paging).
    tool_warnings: Mutex<Vec<String>>,
    /// The tools of the last listing dropped for their definitions (usually none).
    dropped_tools: RwLock<Vec<crate::tool_validation::DroppedTool>>,
    /// Set when a config reload retired this instance ([`retire`]).
    retired: std::sync::OnceLock<Retirement>,
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
        let in_args = crate::redact::secret_args(&spec.args);
        let redactor = Redactor::for_server(passed, inherited).with_values(in_args);
        let remote = spec.remote.as_ref();
        let secrets = crate::redact::SecretValues::for_server(remote, &spec.env, &spec.args);
        let handle = Downstream {
            inner: Arc::new(Shared {
                redactor,
                secrets,
                tool_warnings: Mutex::new(Vec::new()),
                dropped_tools: RwLock::new(Vec::new()),
                retired: Default::default(),
                spec,
                state,
                tools: RwLock::new(None),
                stderr_tail: Mutex::new(VecDeque::new()),
                startup: Mutex::new(None),
            }),
        };
        let task = tokio::spawn(supervisor::supervise(
            handle.clone(),
            client,
            events,
            shutdown,
        ));
        (handle, task)
    }

    /// The server's config name.
    pub fn name(&self) -> &str {
        &self.inner.spec.name
    }

    /// The secret values the proxy gives this server, to be taken out of what it sends
    /// ([`crate::redact::SecretValues`]).
    pub fn secrets(&self) -> &crate::redact::SecretValues {
        &self.inner.secrets
    }

    /// The current state.
    pub fn state(&self) -> ServerState {
        self.inner.state.borrow().clone()
    }

    /// Whether the server, when ready, speaks MCP 2026-07-28 (its handshake found the modern
    /// era: [`ServerEra::Modern`]); `None` while it is not ready. Read from its era without
    /// copying it (a copy was an allocation per call).
    pub fn speaks_modern(&self) -> Option<bool> {
        match &*self.inner.state.borrow() {
            ServerState::Ready(conn) => conn.era().map(|era| matches!(era, ServerEra::Modern(_))),
            _ => None,
        }
    }

    /// A receiver that sees every state change.
    #[cfg(test)]
    pub fn watch_state(&self) -> watch::Receiver<ServerState> {
        self.inner.state.subscribe()
    }

    /// The last tool list fetched (all pages), kept while the server restarts; `None` before
    /// the first successful start.
    pub fn tools(&self) -> Option<Arc<Vec<ServerTool>>> {
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

    /// The tool whose own name is `tool` when the last `tools/list` listed it but its
    /// definition broke the rules ([`crate::tool_validation`]), so it is not offered; `None`
    /// for a tool offered or never listed.
    pub fn dropped_tool(&self, tool: &str) -> Option<crate::tool_validation::DroppedTool> {
        let dropped = self.inner.dropped_tools.read().unwrap();
        dropped.iter().find(|d| d.tool == tool).cloned()
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
        // A config reload may retire the instance waited for: its successor is waited for.
        let mut target = self.clone();
        loop {
            target = target.current().map_err(CallError::Unavailable)?;
            match target.wait_ready_here(deadline).await {
                r if !target.is_retired() => return r,
                _ => continue,
            }
        }
    }

    /// [`Downstream::wait_ready`] for this instance alone.
    async fn wait_ready_here(
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
        let mut target = self.clone();
        loop {
            target = target.current()?;
            match target.wait_started_here(deadline).await {
                r if !target.is_retired() => return r,
                _ => continue,
            }
        }
    }

    /// [`Downstream::wait_started`] for this instance alone.
    async fn wait_started_here(&self, deadline: tokio::time::Instant) -> Result<(), String> {
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
    /// answer) is bounded by `timeout`. See [`Connection::request`] for `on_sent`. The answer
    /// (result or error object) comes without the secrets the proxy gives the server
    /// ([`crate::redact::SecretValues`]).
    pub async fn request(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
        on_sent: &mut (dyn FnMut(&Arc<Connection>, u64) + Send),
    ) -> Result<Result<ResultBody, Value>, CallError> {
        self.request_with(method, params, timeout, on_sent, false)
            .await
    }

    /// [`Downstream::request`]; with `raw`, a successful answer of any size comes back
    /// unparsed ([`ResultBody::Raw`]) unless it holds a secret of the server's (then it is
    /// parsed to take them out): for a `tools/call`, whose result is mapped from its text
    /// (`envelope_core::mapping::fast`, or in one pass when large) and recorded verbatim.
    pub async fn request_with(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
        on_sent: &mut (dyn FnMut(&Arc<Connection>, u64) + Send),
        raw: bool,
    ) -> Result<Result<ResultBody, Value>, CallError> {
        // Boxed: see `answer_request` (src/proxy/dispatch.rs).
        let unredacted = self.request_unredacted(method, params, timeout, on_sent, raw);
        let answer = Box::pin(unredacted).await?;
        let secrets = &self.inner.secrets;
        if secrets.is_empty() {
            return Ok(answer);
        }
        Ok(match answer {
            Ok(ResultBody::Raw(raw)) if secrets.found_in(raw.as_str()) => {
                match ResultBody::Raw(raw).into_result().await? {
                    Ok(mut result) => {
                        secrets.redact_json(&mut result);
                        Ok(ResultBody::Value(result))
                    }
                    Err(mut error) => {
                        secrets.redact_json(&mut error);
                        Err(error)
                    }
                }
            }
            Ok(ResultBody::Value(mut result)) => {
                secrets.redact_json(&mut result);
                Ok(ResultBody::Value(result))
            }
            Err(mut error) => {
                secrets.redact_json(&mut error);
                Err(error)
            }
            raw => raw,
        })
    }

    /// [`Downstream::request`] with the answer as the server sent it.
    async fn request_unredacted(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
        on_sent: &mut (dyn FnMut(&Arc<Connection>, u64) + Send),
        raw: bool,
    ) -> Result<Result<ResultBody, Value>, CallError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let conn = self.wait_ready(deadline).await.map_err(|e| match e {
            CallError::Timeout(_) => CallError::Timeout(timeout),
            other => other,
        })?;
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        // Counted while it runs: a retired instance drains until its count is 0.
        let _in_flight = conn.in_flight.enter();
        let conn2 = conn.clone();
        conn.request_body(
            method,
            params,
            remaining,
            &mut |id| on_sent(&conn2, id),
            raw,
        )
        .await
        .map_err(|e| match e {
            CallError::Timeout(_) => CallError::Timeout(timeout),
            other => other,
        })
    }

    pub(crate) fn set_state(&self, state: ServerState) {
        info!(server = %self.name(), state = state.label(), "server state");
        self.inner.state.send_replace(state);
    }

    /// `reason` followed by the last lines of the server's stderr; just `reason` for a remote
    /// server (it has no stderr).
    pub(crate) fn with_stderr(&self, reason: String) -> String {
        if self.inner.spec.remote.is_some() {
            return reason;
        }
        let summary = self.stderr_summary(5, usize::MAX);
        let summary = summary.unwrap_or_else(|| "(no stderr output)".into());
        format!("{reason}; last stderr: {summary}")
    }

    /// `reason` followed by a short tail of the server's stderr (its last
    /// [`CALL_STDERR_LINES`] lines, at most [`CALL_STDERR_CHARS`] characters, redacted like
    /// every stderr line): what a call that the server's end cut short is told.
    pub(crate) fn with_stderr_brief(&self, reason: &str) -> String {
        match self.stderr_summary(CALL_STDERR_LINES, CALL_STDERR_CHARS) {
            Some(summary) => format!("{reason}; last stderr: {summary}"),
            None => reason.to_owned(),
        }
    }

    /// The last `lines` lines of stderr joined with ` | `, cut to `max_chars` characters;
    /// `None` when the server wrote nothing to stderr.
    fn stderr_summary(&self, lines: usize, max_chars: usize) -> Option<String> {
        let tail = self.stderr_tail();
        if tail.is_empty() {
            return None;
        }
        let start = tail.len().saturating_sub(lines);
        Some(crate::redact::cut_chars(
            tail[start..].join(" | "),
            max_chars,
        ))
    }
}
