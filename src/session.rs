//! The upstream session: the MCP server side that the agent client talks to over stdio.
//!
//! One task reads the client's lines and dispatches them; every request is answered by its own
//! task (so a slow tool never blocks another) whose response goes through one writer task that
//! owns stdout. Downstream servers report notifications, server-to-client requests and tool-list
//! changes through one event channel.
//!
//! Protocol behaviour (MCP specification 2025-06-18 and 2025-11-25, "Lifecycle", "Tools",
//! "Utilities: Cancellation, Ping, Progress"; JSON-RPC 2.0 for errors and batches; issues 3 and 5
//! of the project):
//! - `initialize` starts every enabled server in parallel, forwards the client's capabilities and
//!   clientInfo to each, waits for each up to its `startup_timeout_sec`, and answers with our
//!   serverInfo, the negotiated protocolVersion, `tools.listChanged: true` plus the capabilities
//!   [`crate::passthrough`] proxies, and the servers' instructions; a second `initialize` is
//!   an error; other requests before it (except `ping`) are errors;
//! - resources, prompts, completion and logging requests go to [`crate::passthrough`], and
//!   server notifications pass through its filter (nothing for a capability not declared);
//! - `tools/list` answers the merged [`Catalog`] in one page (a `cursor` is -32602);
//!   `tools/call` is routed, forwarded with its arguments and `_meta`, and answered with the
//!   envelope ([`crate::outcome`]), except the URL-elicitation-required error (-32042), which
//!   the client gets as that JSON-RPC error;
//! - requests of MCP 2026-07-28 (per-request `_meta`, see [`crate::era`]) need no
//!   `initialize`: the first one starts the servers, `server/discover` and
//!   `subscriptions/listen` are answered by [`crate::modern`], every other one takes the same
//!   path as in a legacy session and its result is stamped with `resultType` (and the caching
//!   hints where the 2026-07-28 schema requires them); list changes go to the legacy session
//!   and to the listen streams that asked for them;
//! - input a server needs from the client during a `tools/call` (sampling, elicitation, roots)
//!   crosses the eras in [`multi_round`]: `input_required` rounds for modern clients, ordinary
//!   server-to-client requests for legacy ones;
//! - unknown methods get -32601, lines that are not JSON -32700 with id null, invalid requests
//!   -32600, a request whose id is still in flight -32600 (the first is not disturbed);
//! - `notifications/cancelled` from the client is forwarded downstream with the mapped id and
//!   the cancelled request is answered by nobody;
//! - server-to-client requests are forwarded to the client under fresh ids and the answers routed
//!   back; notifications pass through.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use jsonrpc_core::ErrorCode;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot, watch, Semaphore};
use tracing::{debug, info, warn};

use crate::catalog::{Catalog, ServerTools};
use crate::config::Config;
use crate::downstream::{
    CallError, ClientInit, Connection, Downstream, DownstreamEvent, RawResponse, ResultBody,
    ServerSpec, ServerState,
};
use crate::envelope::Status;
use crate::jsonrpc::{self, Frame, Incoming, LineReader, Message};
use crate::outcome::{map_outcome, map_raw_response, Mapped, MappingContext, Outcome};
use crate::passthrough::results::is_url_elicitation_required;
use crate::passthrough::NotificationAction;
use crate::settings::RecordedBudget;
use crate::transcript::{self, CallRecord, TranscriptWriter};

mod init_gate;
mod multi_round;
mod paging_hooks;
use init_gate::InitGate;

/// Protocol versions we speak, oldest first (MCP specification revisions).
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The start of our `instructions`; each server's own follow under its name.
pub const OUR_INSTRUCTIONS: &str = "Every tool result is a JSON envelope {call_id, tool, status, content, omitted, retryable}; status is ok, truncated (omitted rows were left out to fit the budget) or error (retryable says whether retrying could help).";
/// The version we answer with when the client asks for one we do not know.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";
/// Most client requests handled at once; reading stdin pauses beyond it (backpressure).
pub const MAX_CONCURRENT_REQUESTS: usize = 1024;
/// Queue of lines waiting for stdout; when full, request tasks wait (backpressure).
pub const OUTPUT_QUEUE: usize = 256;
/// How long in-flight requests get to finish after stdin closes or a signal arrives.
pub const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// The protocol version to answer a client that asked for `requested`: the same when we
/// support it, else [`LATEST_PROTOCOL_VERSION`] (MCP "Lifecycle: Version Negotiation").
pub fn negotiate_version(requested: Option<&str>) -> &'static str {
    SUPPORTED_PROTOCOL_VERSIONS
        .iter()
        .find(|v| Some(**v) == requested)
        .copied()
        .unwrap_or(LATEST_PROTOCOL_VERSION)
}

/// Whether JSON-RPC batches are part of `version`: they were added in 2025-03-26 and removed in
/// 2025-06-18; 2024-11-05 receivers must accept them too (JSON-RPC 2.0 "Batch").
pub fn batches_allowed(version: &str) -> bool {
    matches!(version, "2024-11-05" | "2025-03-26")
}

/// `call_id` for a JSON-RPC id: a string as itself, an integer in decimal.
pub fn call_id_of(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What the transcript keeps of a call while it runs: notifications and server-to-client
/// requests that belong to it.
struct CallTrack {
    server: String,
    progress_token: Option<String>,
    events: Vec<Value>,
}

/// Where a forwarded request went: the connection and the downstream id, filled in once the
/// request is sent (used to forward the client's `notifications/cancelled`).
pub type DownstreamSlot = Arc<Mutex<Option<(Arc<Connection>, u64)>>>;

/// A server's tool filter, borrowed from its config.
type ToolFilter<'a> = Box<dyn Fn(&str) -> bool + 'a>;

/// A response ready to be sent: its JSON text (without the newline) and, for a `tools/call`,
/// the call's log line, written once the response is queued.
struct Answer {
    json: Vec<u8>,
    call: Option<CallSummary>,
}

impl Answer {
    fn of(message: &Value) -> Answer {
        Answer {
            json: serde_json::to_vec(message).expect("a JSON value always serializes"),
            call: None,
        }
    }
}

/// The one info-level line logged per `tools/call` (issue 7): no argument values.
struct CallSummary {
    call_id: String,
    tool: String,
    server: String,
    status: Status,
    omitted: u64,
    duration: Duration,
    /// A large raw response, kept so that freeing it (unmapping tens of megabytes takes
    /// milliseconds) happens after the answer is on its way, when the summary is dropped.
    _payload: Option<RawResponse>,
}

impl CallSummary {
    fn log(&self) {
        info!(
            call_id = %self.call_id,
            tool = %self.tool,
            server = %self.server,
            status = self.status.as_str(),
            omitted = self.omitted,
            duration_ms = self.duration.as_millis() as u64,
            "tools/call"
        );
    }
}

/// See [`Proxy::admit`].
#[derive(Debug, Clone)]
struct Admission {
    initialized: bool,
    seq: Option<u64>,
    /// The request's per-request fields when it is an MCP 2026-07-28 request.
    modern: Option<Arc<crate::era::RequestMeta>>,
}

struct Inflight {
    task: Option<tokio::task::AbortHandle>,
    downstream: DownstreamSlot,
}

/// The proxy's shared state: config, servers, catalog, in-flight requests.
pub struct Proxy {
    config: Arc<Config>,
    servers: OnceLock<Vec<Downstream>>,
    server_tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    catalog: RwLock<Arc<Catalog>>,
    out: mpsc::Sender<Vec<u8>>,
    protocol_version: OnceLock<&'static str>,
    /// Set when the client has sent `notifications/initialized` (or any request after
    /// `initialize`): from then on server notifications and requests are passed to it.
    client_ready: watch::Sender<bool>,
    inflight: Mutex<HashMap<String, Inflight>>,
    client_requests: Mutex<HashMap<u64, oneshot::Sender<Result<Value, Value>>>>,
    next_client_request: AtomicU64,
    /// (server, the server's request id) → our id towards the client, for cancellations.
    server_request_ids: Mutex<HashMap<(String, String), u64>>,
    shutdown: watch::Sender<bool>,
    transcript: Option<TranscriptWriter>,
    call_counter: AtomicU64,
    /// Bytes queued for the client (set by [`serve`]): reading pauses while too many wait.
    output_gate: OnceLock<Arc<crate::backpressure::OutputGate>>,
    /// Every name given to a tool this session: a name stays with its tool.
    exposed_names: Mutex<crate::exposed_names::ExposedNames>,
    /// Set once the first start of every server has settled: from then on the catalog's
    /// names are kept in `exposed_names`.
    names_given: std::sync::atomic::AtomicBool,
    /// Catalog warnings already logged.
    catalog_warnings: Mutex<std::collections::HashSet<String>>,
    /// Calls in flight by start order, tracked only while recording a transcript.
    tracks: Mutex<HashMap<u64, CallTrack>>,
    /// Resources, prompts, completion and logging ([`crate::passthrough`]).
    passthrough: crate::passthrough::Passthrough,
    /// `serve --cassette`: recorded answers served instead of (or before) the servers'.
    cassette: OnceLock<crate::cassette::Playback>,
    /// The tool list last written to the transcript per server, to record only changes.
    recorded_tool_lists: Mutex<HashMap<String, Arc<Vec<Value>>>>,
    /// The page tool and this session's kept results (`None` when paging is off).
    pager: Option<crate::page_tool::Pager>,
    /// Modern clients: whether one spoke, their `subscriptions/listen` streams.
    listeners: crate::modern::Listeners,
    /// Calls waiting for input from the client across eras ([`multi_round`]).
    multi_round: multi_round::MultiRound,
}

impl Proxy {
    /// A proxy that writes client-bound lines (with their `\n`) to `out`.
    pub fn new(
        config: Arc<Config>,
        out: mpsc::Sender<Vec<u8>>,
        transcript: Option<TranscriptWriter>,
    ) -> Arc<Proxy> {
        let (shutdown, _) = watch::channel(false);
        Arc::new(Proxy {
            pager: crate::page_tool::Pager::new(&config.paging),
            config,
            servers: OnceLock::new(),
            server_tasks: Mutex::new(Vec::new()),
            catalog: RwLock::new(Arc::new(Catalog::default())),
            out,
            protocol_version: OnceLock::new(),
            client_ready: watch::channel(false).0,
            inflight: Mutex::new(HashMap::new()),
            client_requests: Mutex::new(HashMap::new()),
            next_client_request: AtomicU64::new(1),
            server_request_ids: Mutex::new(HashMap::new()),
            shutdown,
            transcript,
            call_counter: AtomicU64::new(0),
            tracks: Mutex::new(HashMap::new()),
            catalog_warnings: Mutex::new(std::collections::HashSet::new()),
            exposed_names: Mutex::default(),
            output_gate: OnceLock::new(),
            names_given: Default::default(),
            passthrough: Default::default(),
            cassette: OnceLock::new(),
            recorded_tool_lists: Mutex::default(),
            listeners: Default::default(),
            multi_round: Default::default(),
        })
    }

    /// Serves a cassette (before [`Proxy::start_servers`]): in strict mode no server is started
    /// and every tool comes from the recording; with `record-missing` the servers start as usual
    /// and answer the calls the cassette has no answer for.
    pub fn set_cassette(&self, playback: crate::cassette::Playback) {
        let _ = self.cassette.set(playback);
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().unwrap().clone()
    }

    /// The supervised servers (empty before [`Proxy::start_servers`]).
    pub fn servers(&self) -> &[Downstream] {
        self.servers.get().map(Vec::as_slice).unwrap_or(&[])
    }

    /// Starts every enabled server in parallel and waits for each to be ready, up to its own
    /// `startup_timeout_sec`; servers not ready by then go on starting (or restarting) in the
    /// background and their tools appear later. Calling it twice does nothing the second time.
    pub async fn start_servers(self: &Arc<Self>, client: ClientInit) {
        if self.cassette.get().is_some_and(|c| !c.record_missing) {
            if self.servers.set(Vec::new()).is_ok() {
                self.names_given.store(true, Ordering::Release);
                self.rebuild_catalog();
            }
            return;
        }
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let mut servers = Vec::new();
        let mut tasks = Vec::new();
        for server in self.config.enabled_servers() {
            let spec = ServerSpec {
                name: server.name.clone(),
                program: server.program.clone(),
                args: server.args.clone(),
                env: server.env.clone(),
                cwd: server.cwd.clone(),
                startup_timeout: self.config.startup_timeout(&server.name).value,
                max_restarts: self.config.max_restarts(&server.name).value,
                max_message_bytes: self.config.max_message_bytes(),
                remote: server.remote.clone(),
                output_gate: self.output_gate.get().cloned(),
            };
            let (ds, task) = Downstream::spawn(
                spec,
                client.clone(),
                events_tx.clone(),
                self.shutdown.subscribe(),
            );
            servers.push(ds);
            tasks.push(task);
        }
        if self.servers.set(servers).is_err() {
            return;
        }
        self.server_tasks.lock().unwrap().extend(tasks);
        tokio::spawn(self.clone().handle_events(events_rx));
        let started = tokio::time::Instant::now();
        for ds in self.servers() {
            let deadline = started + self.config.startup_timeout(ds.name()).value;
            if let Err(e) = ds.wait_started(deadline).await {
                let what = match ds.state() {
                    ServerState::Unavailable { .. } => "server unavailable; its tools are not offered",
                    ServerState::Stopped => "server stopped",
                    _ => "server not ready yet; it is retried and its tools will appear when it is ready",
                };
                warn!(server = %ds.name(), error = %e, stderr = %ds.stderr_tail().join(" | "), "{what}");
            }
        }
        self.names_given.store(true, Ordering::Release);
        self.rebuild_catalog();
    }

    /// Rebuilds the catalog from every server's last tool list; returns whether the exposed set
    /// of tools changed.
    fn rebuild_catalog(&self) -> bool {
        let mut lists: Vec<(String, Arc<Vec<Value>>)> = self
            .servers()
            .iter()
            .filter_map(|ds| ds.tools().map(|t| (ds.name().to_owned(), t)))
            .collect();
        self.record_tool_lists(&lists);
        if let Some(playback) = self.cassette.get() {
            for (server, tools) in playback.tool_lists() {
                if !lists.iter().any(|(s, _)| *s == server) {
                    lists.push((server, Arc::new(tools)));
                }
            }
            // Collisions resolve in config order; servers the config lacks come last.
            let servers = &self.config.servers;
            let rank = |name: &str| servers.iter().position(|s| s.name == name);
            lists.sort_by_key(|(name, _)| rank(name).unwrap_or(usize::MAX));
        }
        // A cassette may hold servers the config does not name: all their tools, no prefix.
        let filters: Vec<_> = lists
            .iter()
            .map(|(name, _)| self.config.server(name))
            .collect();
        let closures: Vec<ToolFilter<'_>> = filters
            .iter()
            .map(|s| {
                Box::new(move |t: &str| s.map_or(true, |s| s.exposes(t)))
                    as Box<dyn Fn(&str) -> bool>
            })
            .collect();
        let inputs: Vec<ServerTools<'_>> = lists
            .iter()
            .zip(filters.iter().zip(closures.iter()))
            .map(|((name, tools), (server, exposes))| ServerTools {
                server: name,
                prefix: server.map_or("", |s| s.tool_prefix.as_str()),
                tools,
                exposes: exposes.as_ref(),
            })
            .collect();
        let (catalog, mut warnings) = {
            // Names are given for good once the client can see them: after the first start of
            // every server, not while the first ones come up one by one.
            let mut names = self.exposed_names.lock().unwrap();
            if self.names_given.load(Ordering::Acquire) {
                Catalog::build_stable(&inputs, &mut names)
            } else {
                Catalog::build_stable(&inputs, &mut names.clone())
            }
        };
        for (name, tools) in &lists {
            let Some(server) = self.config.server(name) else {
                continue;
            };
            let offered: Vec<&str> = tools
                .iter()
                .filter_map(|t| t.get("name")?.as_str())
                .collect();
            for (key, tool) in server.unknown_tool_names(&offered) {
                warnings.push(format!(
                    "server '{name}': {key} names \"{tool}\", which the server does not offer (a typo?)"
                ));
            }
        }
        {
            // Each rebuild finds the same collisions again: log only new ones.
            let mut logged = self.catalog_warnings.lock().unwrap();
            for w in warnings {
                if logged.insert(w.clone()) {
                    warn!("{w}");
                }
            }
        }
        let mut current = self.catalog.write().unwrap();
        let changed = current.tools() != catalog.tools();
        *current = Arc::new(catalog);
        changed
    }

    /// Writes each server's tool list to the transcript when it is new or changed, so the
    /// recording can be served again as a cassette: the tools the config exposes (a cassette
    /// played without the config offers what the session offered, no more).
    fn record_tool_lists(&self, lists: &[(String, Arc<Vec<Value>>)]) {
        let Some(writer) = &self.transcript else {
            return;
        };
        let mut recorded = self.recorded_tool_lists.lock().unwrap();
        for (server, tools) in lists {
            if recorded.get(server).is_some_and(|r| r == tools) {
                continue;
            }
            let config = self.config.server(server);
            let exposed: Vec<Value> = tools
                .iter()
                .filter(|t| {
                    let name = t.get("name").and_then(Value::as_str).unwrap_or("");
                    config.map_or(true, |c| c.exposes(name))
                })
                .cloned()
                .collect();
            writer.record_tools(server, &exposed);
            recorded.insert(server.clone(), tools.clone());
        }
    }

    async fn handle_events(self: Arc<Self>, mut rx: mpsc::UnboundedReceiver<DownstreamEvent>) {
        while let Some(event) = rx.recv().await {
            match event {
                DownstreamEvent::ToolsChanged { server } => {
                    let proxy = self.clone();
                    let name = server.clone();
                    tokio::spawn(async move {
                        let up = proxy.upstream(None);
                        for method in proxy.passthrough.on_server_changed(&up, &name).await {
                            proxy.list_changed(method).await;
                        }
                    });
                    if self.rebuild_catalog() {
                        info!(%server, tools = self.catalog().len(), "tool list changed");
                        self.list_changed("notifications/tools/list_changed").await;
                    }
                }
                DownstreamEvent::Notification {
                    server,
                    method,
                    params,
                    queued,
                } => {
                    let params = if method == "notifications/cancelled" {
                        self.map_server_cancellation(&server, params)
                    } else {
                        params
                    };
                    let params = match self.passthrough.on_notification(&server, &method, params) {
                        NotificationAction::Forward(params) => params,
                        NotificationAction::Drop => {
                            let _ = queued.send(());
                            continue;
                        }
                        NotificationAction::RefreshThenForward(kind) => {
                            let _ = queued.send(());
                            let proxy = self.clone();
                            tokio::spawn(async move {
                                proxy
                                    .passthrough
                                    .refresh(&proxy.upstream(None), &server, kind)
                                    .await;
                                proxy.list_changed(&method).await;
                            });
                            continue;
                        }
                    };
                    if method == "notifications/progress" {
                        let token = params
                            .as_ref()
                            .and_then(|p| p.get("progressToken"))
                            .map(Value::to_string);
                        self.track(&server, token.as_deref(), || {
                            transcript::event(
                                "server_to_client",
                                jsonrpc::notification(&method, params.clone()),
                            )
                        });
                    }
                    // A cancellation of a request the client never saw (or already
                    // answered) means nothing to the client.
                    let unmapped = method == "notifications/cancelled" && params.is_none();
                    let modern_only = !self.is_client_ready() && self.listeners.seen();
                    let for_modern = crate::modern::passes_without_session(&method)
                        || method == "notifications/message"
                            && self.listeners.wants_log(params.as_ref());
                    if !unmapped && (self.is_client_ready() || modern_only && for_modern) {
                        self.send(&jsonrpc::notification(&method, params)).await;
                    }
                    let _ = queued.send(());
                }
                DownstreamEvent::Request {
                    server,
                    id,
                    method,
                    params,
                    reply,
                } => {
                    let proxy = self.clone();
                    tokio::spawn(async move {
                        let seq = proxy.track(&server, None, || {
                            transcript::event(
                                "server_to_client",
                                jsonrpc::request(id.clone(), &method, params.clone()),
                            )
                        });
                        let answer = match proxy.multi_round.waiter_for(&server) {
                            // A modern client's call takes it (as an input request).
                            Some(call) => multi_round::ask_call(call, method, params).await,
                            None => proxy.ask_client(&server, &id, &method, params).await,
                        };
                        if let Some(seq) = seq {
                            let response = match &answer {
                                Ok(r) => jsonrpc::response(id.clone(), r.clone()),
                                Err(e) => jsonrpc::error_response(id.clone(), e.clone()),
                            };
                            if let Some(t) = proxy.tracks.lock().unwrap().get_mut(&seq) {
                                t.events
                                    .push(transcript::event("client_to_server", response));
                            }
                        }
                        let _ = reply.send(answer);
                    });
                }
            }
        }
    }

    /// Attaches an event to the call it belongs to, when recording: a progress notification to
    /// the call with its `progressToken`; a server-to-client request to the oldest call in
    /// flight on that server (stdio carries no link between the two; documented heuristic).
    /// Returns the call's sequence number.
    fn track(
        &self,
        server: &str,
        progress_token: Option<&str>,
        event: impl FnOnce() -> Value,
    ) -> Option<u64> {
        self.transcript.as_ref()?;
        let mut tracks = self.tracks.lock().unwrap();
        let seq = match progress_token {
            Some(token) => tracks
                .iter()
                .find(|(_, t)| t.progress_token.as_deref() == Some(token))
                .map(|(seq, _)| *seq),
            None => tracks
                .iter()
                .filter(|(_, t)| t.server == server)
                .map(|(seq, _)| *seq)
                .min(),
        }?;
        tracks.get_mut(&seq)?.events.push(event());
        Some(seq)
    }

    fn map_server_cancellation(&self, server: &str, params: Option<Value>) -> Option<Value> {
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

    /// Forwards a server-to-client request under a fresh id and waits for the client's answer.
    async fn ask_client(
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
        let mut ready = self.client_ready.subscribe();
        if ready.wait_for(|r| *r).await.is_err() {
            return Err(jsonrpc::error_object(
                ErrorCode::InternalError,
                "the client went away",
                None,
            ));
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
        // A client that never answers must not keep the proxy alive after shutdown: this task
        // holds the proxy (and so the stdout writer) until it ends. Nor may it keep the
        // request forever: after the server's tool_timeout_sec it is cancelled.
        let mut stopping = self.shutdown.subscribe();
        let timeout = self.config.tool_settings(server, "").tool_timeout.value;
        let expired = tokio::time::sleep(timeout);
        let answer = tokio::select! {
            _ = expired => None,
            r = rx => Some(r.unwrap_or_else(|_| {
                Err(jsonrpc::error_object(
                    ErrorCode::InternalError,
                    "the client went away before answering",
                    None,
                ))
            })),
            _ = stopping.wait_for(|stop| *stop) => {
                self.client_requests.lock().unwrap().remove(&id);
                Some(Err(jsonrpc::error_object(
                    ErrorCode::InternalError,
                    "the proxy is shutting down",
                    None,
                )))
            }
        };
        let answer = match answer {
            Some(answer) => answer,
            None => self.expire_client_request(id, timeout).await,
        };
        self.server_request_ids.lock().unwrap().remove(&key);
        answer
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

    /// Queues one message for the client. Waits when the output queue is full.
    async fn send(&self, message: &Value) {
        self.send_line(jsonrpc::to_line(message)).await;
    }

    /// Queues one message, already serialized as JSON text without its newline.
    async fn send_json(&self, mut json: Vec<u8>) {
        json.push(b'\n');
        self.send_line(json).await;
    }

    /// Queues one line (with its newline), counted by the output gate while it waits.
    async fn send_line(&self, line: Vec<u8>) {
        let len = line.len();
        let gate = self.output_gate.get();
        if let Some(gate) = gate {
            gate.queue(len);
        }
        if self.out.send(line).await.is_err() {
            if let Some(gate) = gate {
                gate.written(len);
            }
        }
    }

    /// Answers a line that is not JSON with -32700, under its `id` when that could be read
    /// ([`crate::recover`]), else `null`.
    async fn answer_parse_error(&self, id: Option<Value>, error: &str) {
        let err =
            jsonrpc::error_object(ErrorCode::ParseError, format!("Parse error: {error}"), None);
        self.send(&jsonrpc::error_response(id.unwrap_or(Value::Null), err))
            .await;
    }

    /// Handles one line from the client: a parse error is answered, a message or a batch
    /// dispatched.
    async fn dispatch_incoming(self: &Arc<Self>, incoming: Incoming, permits: &Arc<Semaphore>) {
        match incoming {
            Incoming::ParseError(e) => self.answer_parse_error(None, &e).await,
            Incoming::Single(msg) => self.dispatch(msg, permits).await,
            Incoming::Batch(msgs) => self.dispatch_batch(msgs, permits).await,
        }
    }

    /// Dispatches one client message. Requests are answered by their own task.
    async fn dispatch(self: &Arc<Self>, msg: Message, permits: &Arc<Semaphore>) {
        match msg {
            Message::Request { id, method, params } => {
                if method == "initialize" {
                    let response = self.initialize(&id, params).await;
                    self.send(&response).await;
                    return;
                }
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
                let key = id.to_string();
                let slot = Arc::new(Mutex::new(None));
                let duplicate = {
                    let mut inflight = self.inflight.lock().unwrap();
                    let duplicate = inflight.contains_key(&key);
                    if !duplicate {
                        inflight.insert(
                            key.clone(),
                            Inflight {
                                task: None,
                                downstream: slot.clone(),
                            },
                        );
                    }
                    duplicate
                };
                if duplicate {
                    let err = jsonrpc::error_object(
                        ErrorCode::InvalidRequest,
                        format!("a request with id {key} is still in progress"),
                        None,
                    );
                    self.send(&jsonrpc::error_response(id, err)).await;
                    return;
                }
                let (permit, mut admission) = self.admit_when_free(&method, permits).await;
                if modern.is_some() {
                    admission.initialized = true;
                    admission.modern = modern;
                }
                let proxy = self.clone();
                let task_key = key.clone();
                let task = tokio::spawn(async move {
                    let stamp = admission.modern.is_some();
                    let _log = admission
                        .modern
                        .as_ref()
                        .and_then(|m| proxy.listeners.log_interest(m.log_level.as_deref()));
                    let mut answer = proxy
                        .handle_request(id, &method, params, slot, admission)
                        .await;
                    if stamp {
                        answer.json = crate::era::stamp_response_json(&method, answer.json);
                    }
                    let still_ours = proxy.inflight.lock().unwrap().remove(&task_key).is_some();
                    if still_ours {
                        proxy.send_json(answer.json).await;
                    }
                    if let Some(call) = answer.call {
                        // Let the stdout writer send the answer before the log line is made.
                        tokio::task::yield_now().await;
                        call.log();
                    }
                    crate::downstream::release_memory_after_large_message();
                    drop(permit);
                });
                if let Some(entry) = self.inflight.lock().unwrap().get_mut(&key) {
                    entry.task = Some(task.abort_handle());
                }
            }
            Message::Notification { method, params } => self.notification(&method, params),
            Message::Response { id, outcome } => {
                let tx = id
                    .as_u64()
                    .and_then(|n| self.client_requests.lock().unwrap().remove(&n));
                match tx {
                    Some(tx) => {
                        let _ = tx.send(outcome);
                    }
                    None => warn!(%id, "response from the client for an unknown id ignored"),
                }
            }
            Message::Invalid { id, reason } => {
                let err = jsonrpc::error_object(
                    ErrorCode::InvalidRequest,
                    format!("Invalid Request: {reason}"),
                    None,
                );
                self.send(&jsonrpc::error_response(id, err)).await;
            }
        }
    }

    /// Answers a JSON-RPC 2.0 batch: one array of the responses to its requests (none for
    /// notifications); an error when the negotiated protocol version has no batches.
    async fn dispatch_batch(self: &Arc<Self>, msgs: Vec<Message>, permits: &Arc<Semaphore>) {
        let version = self
            .protocol_version
            .get()
            .copied()
            .unwrap_or(LATEST_PROTOCOL_VERSION);
        if !batches_allowed(version) {
            let err = jsonrpc::error_object(
                ErrorCode::InvalidRequest,
                format!("JSON-RPC batches are not supported in protocol version {version}"),
                None,
            );
            self.send(&jsonrpc::error_response(Value::Null, err)).await;
            return;
        }
        let mut waits = Vec::new();
        let mut ids = std::collections::HashSet::new();
        for msg in msgs {
            match msg {
                // The same id twice in one batch (or an id still in flight): the second is
                // rejected, as for single requests.
                Message::Request { id, .. }
                    if !ids.insert(id.to_string())
                        || self.inflight.lock().unwrap().contains_key(&id.to_string()) =>
                {
                    let err = jsonrpc::error_object(
                        ErrorCode::InvalidRequest,
                        format!("a request with id {id} is already in this batch or in progress"),
                        None,
                    );
                    let answer = Answer::of(&jsonrpc::error_response(id, err));
                    waits.push(tokio::spawn(async move { answer }));
                }
                Message::Request { id, method, params } if method != "initialize" => {
                    let (permit, admission) = self.admit_when_free(&method, permits).await;
                    let proxy = self.clone();
                    waits.push(tokio::spawn(async move {
                        let slot = Arc::new(Mutex::new(None));
                        let r = proxy
                            .handle_request(id, &method, params, slot, admission)
                            .await;
                        drop(permit);
                        r
                    }));
                }
                Message::Request { id, .. } => {
                    let err = jsonrpc::error_object(
                        ErrorCode::InvalidRequest,
                        "`initialize` cannot be part of a batch",
                        None,
                    );
                    let answer = Answer::of(&jsonrpc::error_response(id, err));
                    waits.push(tokio::spawn(async move { answer }));
                }
                Message::Invalid { id, reason } => {
                    let err = jsonrpc::error_object(
                        ErrorCode::InvalidRequest,
                        format!("Invalid Request: {reason}"),
                        None,
                    );
                    let answer = Answer::of(&jsonrpc::error_response(id, err));
                    waits.push(tokio::spawn(async move { answer }));
                }
                other => Box::pin(self.dispatch(other, permits)).await,
            }
        }
        if waits.is_empty() {
            return;
        }
        let proxy = self.clone();
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
            proxy.send_json(array).await;
            for call in calls {
                call.log();
            }
        });
    }

    fn notification(self: &Arc<Self>, method: &str, params: Option<Value>) {
        match method {
            "notifications/initialized" => {
                debug!("client sent notifications/initialized");
                self.mark_client_ready();
            }
            "notifications/cancelled" => {
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
                    .remove(&request_id.to_string());
                let Some(entry) = entry else {
                    debug!(%request_id, "cancellation for a request not in flight ignored");
                    return;
                };
                if let Some(task) = entry.task {
                    task.abort();
                }
                if let Some((conn, downstream_id)) = entry.downstream.lock().unwrap().take() {
                    let reason = params.as_ref().and_then(|p| p.get("reason")).cloned();
                    let mut forwarded = json!({ "requestId": downstream_id });
                    if let Some(reason) = reason {
                        forwarded["reason"] = reason;
                    }
                    conn.notify("notifications/cancelled", Some(forwarded));
                }
                info!(%request_id, "request cancelled by the client");
            }
            "notifications/roots/list_changed" | "notifications/progress" => {
                for ds in self.servers() {
                    if let ServerState::Ready(conn) = ds.state() {
                        conn.notify(method, params.clone());
                    }
                }
            }
            other => debug!(method = other, "client notification ignored"),
        }
    }

    async fn initialize(self: &Arc<Self>, id: &Value, params: Option<Value>) -> Value {
        if self.protocol_version.get().is_some() {
            let err = jsonrpc::error_object(
                ErrorCode::InvalidRequest,
                "already initialized: `initialize` may be sent only once",
                None,
            );
            return jsonrpc::error_response(id.clone(), err);
        }
        let params = params.unwrap_or(Value::Null);
        let requested = params.get("protocolVersion");
        if let Some(r) = requested {
            if !r.is_string() {
                let err = jsonrpc::error_object(
                    ErrorCode::InvalidParams,
                    "`protocolVersion` must be a string",
                    None,
                );
                return jsonrpc::error_response(id.clone(), err);
            }
        }
        let version = negotiate_version(requested.and_then(Value::as_str));
        if self.protocol_version.set(version).is_err() {
            let err = jsonrpc::error_object(ErrorCode::InvalidRequest, "already initialized", None);
            return jsonrpc::error_response(id.clone(), err);
        }
        let capabilities = params
            .get("capabilities")
            .filter(|c| c.is_object())
            .cloned()
            .unwrap_or_else(|| json!({}));
        let _ = self
            .multi_round
            .legacy_capabilities
            .set(capabilities.clone());
        let client_info = params
            .get("clientInfo")
            .filter(|c| c.is_object())
            .cloned()
            .unwrap_or_else(|| json!({"name": "unknown-client", "version": "0"}));
        info!(protocol_version = version, client = %client_info, "client initialize");
        self.start_servers(ClientInit {
            protocol_version: version.to_owned(),
            capabilities,
            client_info,
        })
        .await;
        let capabilities = self.capabilities();
        let text = self.instructions();
        self.warn_client_about(crate::availability::down_servers(self.servers()));
        jsonrpc::response(
            id.clone(),
            json!({
                "protocolVersion": version,
                "capabilities": capabilities,
                "serverInfo": crate::era::server_info(),
                "instructions": text,
            }),
        )
    }

    /// Once the client is initialized, one `notifications/message` warning per server that is
    /// down, when we declared `logging` ([`crate::availability`]).
    fn warn_client_about(self: &Arc<Self>, down: Vec<crate::availability::Down>) {
        if down.is_empty() || !self.passthrough.declared().logging {
            return;
        }
        let proxy = self.clone();
        tokio::spawn(async move {
            let mut ready = proxy.client_ready.subscribe();
            let mut stopping = proxy.shutdown.subscribe();
            // A client that never finishes initializing must not keep the proxy alive.
            let ready = tokio::select! {
                r = ready.wait_for(|r| *r) => r.is_ok(),
                _ = stopping.wait_for(|stop| *stop) => false,
            };
            if ready {
                for d in &down {
                    let params = crate::availability::warning_params(d);
                    proxy
                        .send(&jsonrpc::notification(
                            "notifications/message",
                            Some(params),
                        ))
                        .await;
                }
            }
        });
    }

    /// Answers one request (other than `initialize`) with a whole JSON-RPC response.
    /// Decides, in the order requests are read from stdin, whether a request came after
    /// `initialize` and which start order (`seq`) a `tools/call` gets; the request's own task
    /// may run later. A client that sends requests after `initialize` has finished
    /// initializing, even if it never sent `notifications/initialized`.
    fn admit(&self, method: &str) -> Admission {
        let initialized = self.protocol_version.get().is_some();
        if initialized {
            self.mark_client_ready();
        }
        let seq =
            (method == "tools/call").then(|| self.call_counter.fetch_add(1, Ordering::Relaxed));
        Admission {
            initialized,
            seq,
            modern: None,
        }
    }

    /// Waits for a free request slot (backpressure: stdin is not read meanwhile), then admits
    /// the request (see [`Proxy::admit`]).
    async fn admit_when_free(
        &self,
        method: &str,
        permits: &Arc<Semaphore>,
    ) -> (tokio::sync::OwnedSemaphorePermit, Admission) {
        let permit = permits
            .clone()
            .acquire_owned()
            .await
            .expect("the request semaphore is never closed");
        (permit, self.admit(method))
    }

    async fn handle_request(
        self: &Arc<Self>,
        id: Value,
        method: &str,
        params: Option<Value>,
        slot: DownstreamSlot,
        admission: Admission,
    ) -> Answer {
        if let Some(err) = admission
            .modern
            .as_ref()
            .and_then(|_| crate::modern::removed_method(method))
        {
            return Answer::of(&jsonrpc::error_response(id, err));
        }
        if method == "ping" {
            return Answer::of(&jsonrpc::response(id, json!({})));
        }
        if !admission.initialized && self.listeners.seen() {
            // A client that spoke MCP 2026-07-28 sent a request without its `_meta`.
            let err = crate::era::parse_meta(None).expect_err("no `_meta` is never valid");
            return Answer::of(&jsonrpc::error_response(id, err));
        }
        if !admission.initialized {
            let err = jsonrpc::error_object(
                ErrorCode::InvalidRequest,
                format!("not initialized: send `initialize` before `{method}`"),
                None,
            );
            return Answer::of(&jsonrpc::error_response(id, err));
        }
        match method {
            "tools/list" => match crate::passthrough::check_cursor(params.as_ref()) {
                Ok(()) => Answer::of(&jsonrpc::response(
                    id,
                    json!({ "tools": self.listed_tools() }),
                )),
                Err(err) => Answer::of(&jsonrpc::error_response(id, err)),
            },
            "tools/call" => match self
                .call_tool_mapped(&id, params, slot, admission.seq, admission.modern.as_ref())
                .await
            {
                Ok((mapped, summary)) => Answer {
                    json: mapped.response_json(&id),
                    call: Some(summary),
                },
                Err(NotEnveloped::Error(err)) => Answer::of(&jsonrpc::error_response(id, err)),
                Err(NotEnveloped::Result(result)) => Answer::of(&jsonrpc::response(id, result)),
            },
            _ => {
                let up = self.upstream(Some(&slot));
                if let Some(answer) = self.passthrough.handle(&up, method, params).await {
                    return Answer::of(&match answer {
                        Ok(result) => jsonrpc::response(id, result),
                        Err(err) => jsonrpc::error_response(id, err),
                    });
                }
                let err = jsonrpc::error_object(
                    ErrorCode::MethodNotFound,
                    format!("Method not found: {method}"),
                    None,
                );
                Answer::of(&jsonrpc::error_response(id, err))
            }
        }
    }

    /// `tools/call`: routes, forwards, maps the outcome to the envelope and returns our
    /// CallToolResult (and logs the call). `Err` is a JSON-RPC error object for malformed params
    /// (-32602).
    pub async fn call_tool(
        self: &Arc<Self>,
        id: &Value,
        params: Option<Value>,
        slot: DownstreamSlot,
    ) -> Result<Value, Value> {
        match self.call_tool_mapped(id, params, slot, None, None).await {
            Ok((mapped, summary)) => {
                summary.log();
                Ok(mapped.into_call_tool_result())
            }
            Err(NotEnveloped::Error(err)) => Err(err),
            Err(NotEnveloped::Result(result)) => Ok(result),
        }
    }

    /// [`Proxy::call_tool`] with the start order already assigned (`None`: assign now),
    /// returning the mapped outcome and the call's log line, to be logged once the answer is
    /// on its way (logging is kept off the answer's path).
    async fn call_tool_mapped(
        self: &Arc<Self>,
        id: &Value,
        params: Option<Value>,
        slot: DownstreamSlot,
        seq: Option<u64>,
        modern: Option<&Arc<crate::era::RequestMeta>>,
    ) -> Result<(Mapped, CallSummary), NotEnveloped> {
        let invalid = |msg: &str| {
            NotEnveloped::Error(jsonrpc::error_object(ErrorCode::InvalidParams, msg, None))
        };
        let Some(Value::Object(mut params)) = params else {
            return Err(invalid("`tools/call` needs params with a `name`"));
        };
        let Some(Value::String(name)) = params.get("name").cloned() else {
            return Err(invalid("`name` must be a string"));
        };
        match params.get("arguments") {
            None | Some(Value::Object(_)) => {}
            Some(_) => return Err(invalid("`arguments` must be an object")),
        }
        let call_id = call_id_of(id);
        let started_at = std::time::SystemTime::now();
        let started = Instant::now();
        let seq = seq.unwrap_or_else(|| self.call_counter.fetch_add(1, Ordering::Relaxed));
        let paged = self.page_call(&name, &call_id, params.get("arguments"));
        let route = self.catalog().route(&name).cloned();
        let (server, own_name, settings, received) = match (paged, route) {
            (Some(page), _) => page,
            (None, None) => {
                let settings = self.config.tool_settings("", &name);
                let received = Received::Outcome(Outcome::NoSuchTool);
                (String::new(), name.clone(), settings, received)
            }
            (None, Some(route)) => {
                let settings = self.config.tool_settings(&route.server, &route.tool);
                params.insert("name".into(), Value::from(route.tool.clone()));
                if self.transcript.is_some() {
                    let token = params
                        .get("_meta")
                        .and_then(|m| m.get("progressToken"))
                        .map(Value::to_string);
                    self.tracks.lock().unwrap().insert(
                        seq,
                        CallTrack {
                            server: route.server.clone(),
                            progress_token: token,
                            events: Vec::new(),
                        },
                    );
                }
                let arguments = params.get("arguments").unwrap_or(&Value::Null);
                let recorded = self
                    .cassette
                    .get()
                    .and_then(|c| c.answer(&route.server, &route.tool, &name, arguments));
                let server = self.servers().iter().find(|d| d.name() == route.server);
                let received = match (recorded, server) {
                    (Some(outcome), _) => Received::Outcome(outcome),
                    (None, None) => Received::Outcome(Outcome::Unavailable {
                        reason: "not started".into(),
                    }),
                    (None, Some(ds)) => {
                        let timeout = settings.tool_timeout.value;
                        // Arguments whose numbers would not survive parsing go as written.
                        let parsed_arguments = crate::exact_args::take(&mut params)
                            .and_then(|text| crate::exact_args::mark(&mut params, &text));
                        let flow = self
                            .call_downstream(ds, &params, timeout, &slot, modern, &name)
                            .await;
                        if let Some(arguments) = parsed_arguments {
                            params.insert("arguments".into(), arguments);
                        }
                        let result = match flow {
                            multi_round::Flow::Done(result) => result,
                            multi_round::Flow::Interim(result) => {
                                self.tracks.lock().unwrap().remove(&seq);
                                return Err(NotEnveloped::Result(result));
                            }
                            multi_round::Flow::Refused(error) => {
                                self.tracks.lock().unwrap().remove(&seq);
                                return Err(NotEnveloped::Error(error));
                            }
                        };
                        match result {
                            // Without a transcript, nothing needs the whole result: map it
                            // from its text, parsing only what the budget can use.
                            Ok(Ok(ResultBody::Raw(raw))) => Received::Raw(raw),
                            Ok(Ok(ResultBody::Value(result))) => {
                                Received::Outcome(Outcome::Result { result })
                            }
                            // The client must see this one to open the URL (not enveloped).
                            Ok(Err(error)) if is_url_elicitation_required(&error) => {
                                self.tracks.lock().unwrap().remove(&seq);
                                return Err(NotEnveloped::Error(error));
                            }
                            Ok(Err(error)) => Received::Outcome(Outcome::RpcError { error }),
                            Err(e) => Received::Outcome(outcome_of(Err(e), timeout)),
                        }
                    }
                };
                (route.server, route.tool, settings, received)
            }
        };
        let owned = || OwnedContext {
            call_id: call_id.clone(),
            tool: name.clone(),
            server: server.clone(),
            settings,
        };
        let timeout = settings.tool_timeout.value;
        let (mapped, payload, outcome) = match received {
            Received::Raw(raw) => {
                let ctx = owned();
                let work = crate::offload::cpu_bound(raw.len(), move || {
                    let (mapped, parsed) = map_raw(&raw, &ctx.borrow(), timeout);
                    (mapped, parsed, raw)
                });
                let (mapped, parsed, raw) = work.await;
                (mapped, Some(raw), parsed)
            }
            Received::Outcome(outcome) => {
                let ctx = settings.mapping_context(&call_id, &name, &server);
                (map_outcome(&outcome, &ctx), None, Some(outcome))
            }
            Received::Mapped(mapped, outcome) => (mapped, None, Some(outcome)),
        };
        let duration = started.elapsed();
        let (o, p) = (outcome.as_ref(), payload.as_ref());
        self.keep_page_rows(
            &call_id, &name, &server, &own_name, &settings, &mapped, o, p,
        );
        let mut payload = payload;
        if let Some(writer) = &self.transcript {
            let events = self
                .tracks
                .lock()
                .unwrap()
                .remove(&seq)
                .map(|t| t.events)
                .unwrap_or_default();
            let arguments = params
                .get("arguments")
                .cloned()
                .unwrap_or(Value::Object(Map::new()));
            let record = |outcome| {
                CallRecord::new(
                    started_at,
                    seq,
                    &call_id,
                    &name,
                    &server,
                    &own_name,
                    arguments,
                    writer.redact_keys(),
                    settings.char_budget.value,
                    settings.tool_timeout.value,
                    settings.media.value,
                    outcome,
                    mapped.envelope.clone(),
                    duration,
                    events,
                )
                .with_budget(RecordedBudget::of(&settings))
            };
            match (outcome, payload.take()) {
                (Some(outcome), _) => writer.record(record(outcome)),
                // A large result mapped in one pass: the writer thread records its text
                // verbatim from the line, never as a tree.
                (None, Some(raw)) => {
                    let placeholder = Outcome::Result {
                        result: Value::Null,
                    };
                    writer.record_response_line(record(placeholder), raw.into_line());
                }
                (None, None) => {}
            }
        }
        let summary = CallSummary {
            call_id: call_id.clone(),
            tool: name.clone(),
            server: server.clone(),
            status: mapped.envelope.status,
            omitted: mapped.envelope.omitted,
            duration,
            _payload: payload,
        };
        Ok((mapped, summary))
    }

    /// Stops every server (stdin closed, SIGTERM, SIGKILL) and waits for their tasks.
    pub async fn shutdown(&self) {
        self.shutdown.send_replace(true);
        let tasks: Vec<_> = std::mem::take(&mut *self.server_tasks.lock().unwrap());
        for t in tasks {
            let _ = t.await;
        }
    }

    /// What each ready server offers besides tools (prompts, resources, templates), read
    /// from the servers now; for `check`.
    pub async fn offered(&self) -> HashMap<String, crate::passthrough::inventory::Offered> {
        crate::passthrough::inventory::offered(&self.upstream(None)).await
    }

    /// The servers and config for a passthrough request; `slot` records where it was sent.
    fn upstream<'a>(
        &'a self,
        slot: Option<&'a DownstreamSlot>,
    ) -> crate::passthrough::Upstream<'a> {
        crate::passthrough::Upstream {
            servers: self.servers(),
            config: &self.config,
            slot,
        }
    }

    /// Our `capabilities` (for `initialize` and `server/discover`): tools plus what
    /// [`crate::passthrough`] proxies for the ready servers.
    fn capabilities(&self) -> Value {
        self.passthrough.declare(self.servers())
    }

    /// Our `instructions` (for `initialize` and `server/discover`): ours, then each server's.
    fn instructions(&self) -> String {
        let instructions: Vec<(String, String)> = self
            .servers()
            .iter()
            .filter_map(|ds| {
                Some((
                    ds.name().to_owned(),
                    crate::passthrough::server_instructions(ds)?,
                ))
            })
            .collect();
        let instructions: Vec<(&str, &str)> = instructions
            .iter()
            .map(|(n, i)| (n.as_str(), i.as_str()))
            .collect();
        let mut text = crate::passthrough::merge_instructions(OUR_INSTRUCTIONS, &instructions);
        let down = crate::availability::down_servers(self.servers());
        text.push_str(&crate::availability::instructions_note(&down).unwrap_or_default());
        text
    }

    /// Tells the client a list changed: the plain notification to a legacy session, one per
    /// `subscriptions/listen` stream that asked for it to modern clients.
    async fn list_changed(&self, method: &str) {
        if self.is_client_ready() {
            self.send(&jsonrpc::notification(method, None)).await;
        }
        for notification in self.listeners.fan_out(method) {
            self.send(&notification).await;
        }
    }

    /// The first steps of a modern request, in the order requests are read: the servers are
    /// started on the first one (with its capabilities and clientInfo); `server/discover` and
    /// `subscriptions/listen` are answered here (returns `true`), everything else goes on to
    /// the ordinary request path.
    async fn modern_request(
        self: &Arc<Self>,
        id: &Value,
        method: &str,
        params: Option<&Value>,
        meta: &crate::era::RequestMeta,
    ) -> bool {
        self.listeners.mark_seen();
        if self.servers.get().is_none() {
            info!(protocol_version = %meta.protocol_version, client = ?meta.client_info, "first modern request");
            self.start_servers(ClientInit {
                protocol_version: LATEST_PROTOCOL_VERSION.to_owned(),
                capabilities: meta.capabilities.clone(),
                client_info: meta
                    .client_info
                    .clone()
                    .unwrap_or_else(|| json!({"name": "unknown-client", "version": "0"})),
            })
            .await;
            // What we declare is fixed once the first start settled, as for `initialize`.
            self.capabilities();
        }
        match method {
            "server/discover" => {
                let result =
                    crate::modern::discover_result(self.capabilities(), &self.instructions());
                self.send(&jsonrpc::response(id.clone(), result)).await;
                true
            }
            "subscriptions/listen" => {
                let declared = self.capabilities();
                let offered = |key: &str| match key {
                    "promptsListChanged" => declared.get("prompts").is_some(),
                    "resourcesListChanged" => declared.get("resources").is_some(),
                    _ => key == "toolsListChanged",
                };
                match self.listeners.open(id, params, offered) {
                    Ok(ack) => self.send(&ack).await,
                    Err(err) => self.send(&jsonrpc::error_response(id.clone(), err)).await,
                }
                true
            }
            _ => false,
        }
    }

    fn is_client_ready(&self) -> bool {
        *self.client_ready.borrow()
    }

    fn mark_client_ready(&self) {
        self.client_ready
            .send_if_modified(|r| !std::mem::replace(r, true));
    }

    fn inflight_count(&self) -> usize {
        self.inflight.lock().unwrap().len()
    }
}

/// A `tools/call` answer that is not an envelope: a JSON-RPC error object, or a result the
/// client gets as it is (an `InputRequiredResult`).
enum NotEnveloped {
    Error(Value),
    Result(Value),
}

/// What came back for a call: an [`Outcome`], or a large success response still unparsed
/// (mapped by [`map_raw`]; with a transcript, recorded from its text).
enum Received {
    Outcome(Outcome),
    Raw(RawResponse),
    /// Answered by the proxy itself (the page tool), with the outcome to record.
    Mapped(Mapped, Outcome),
}

/// A [`MappingContext`] that owns its strings, to move into work on the blocking pool.
struct OwnedContext {
    call_id: String,
    tool: String,
    server: String,
    settings: crate::config::ToolSettings,
}

impl OwnedContext {
    fn borrow(&self) -> MappingContext<'_> {
        self.settings
            .mapping_context(&self.call_id, &self.tool, &self.server)
    }
}

/// Maps a raw response ([`RawResponse`]): lazily when it is a valid success response (no
/// outcome returned), else parsed in full and returned with the [`Outcome`] it gave (an invalid
/// one becomes `Outcome::InvalidResponse`).
fn map_raw(
    raw: &RawResponse,
    ctx: &MappingContext<'_>,
    timeout: Duration,
) -> (Mapped, Option<Outcome>) {
    if let Some(mapped) = map_raw_response(raw.as_str(), ctx) {
        return (mapped, None);
    }
    let outcome = outcome_of(raw.parse(), timeout);
    (map_outcome(&outcome, ctx), Some(outcome))
}

/// Maps a downstream request's result to the raw [`Outcome`].
fn outcome_of(result: Result<Result<Value, Value>, CallError>, timeout: Duration) -> Outcome {
    match result {
        Ok(Ok(result)) => Outcome::Result { result },
        Ok(Err(error)) => Outcome::RpcError { error },
        Err(CallError::Timeout(_)) => Outcome::Timeout {
            timeout_ms: timeout.as_millis() as u64,
        },
        Err(CallError::Exited(detail)) => Outcome::ServerExited { detail },
        Err(CallError::Invalid(detail)) => Outcome::InvalidResponse { detail },
        Err(CallError::Unavailable(reason)) => Outcome::Unavailable { reason },
        Err(CallError::HttpStatus {
            status,
            retry_after,
            detail,
        }) => Outcome::HttpStatus {
            status,
            retry_after,
            detail,
        },
        Err(CallError::Connection(detail)) => Outcome::ConnectionFailed { detail },
    }
}

/// Runs the proxy on `input` / `output` until `input` ends or `stop` resolves, then shuts every
/// server down and returns. Never returns an error for bad client input: that is answered.
pub async fn serve<R, W, S>(
    config: Arc<Config>,
    input: R,
    output: W,
    transcript: Option<TranscriptWriter>,
    cassette: Option<crate::cassette::Playback>,
    stop: S,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    S: Future<Output = ()> + Send,
{
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(OUTPUT_QUEUE);
    // A client that closed our stdout can read no answer: that ends the session like a signal.
    let (stdout_gone, stdout_gone_rx) = oneshot::channel::<()>();
    let gate = crate::backpressure::OutputGate::new();
    let output = crate::backpressure::CountingWriter::new(output, gate.clone());
    let writer = tokio::spawn(async move {
        if let Err(e) = jsonrpc::write_lines(output, out_rx, std::future::pending()).await {
            warn!(error = %e, "writing stdout failed; shutting down");
            let _ = stdout_gone.send(());
        }
    });
    let stop = async move {
        tokio::select! {
            _ = stop => info!("signal received; shutting down"),
            Ok(()) = stdout_gone_rx => {}
        }
    };
    let proxy = Proxy::new(config.clone(), out_tx, transcript);
    if let Some(playback) = cassette {
        proxy.set_cassette(playback);
    }
    let _ = proxy.output_gate.set(gate.clone());
    let permits = Arc::new(Semaphore::new(MAX_CONCURRENT_REQUESTS));
    let mut reader = LineReader::new(
        BufReader::with_capacity(256 * 1024, input),
        config.max_message_bytes(),
    );
    tokio::pin!(stop);
    let mut init = InitGate::default();
    'read: loop {
        // A client that does not read its answers gets no more requests read meanwhile.
        if gate.is_full() {
            tokio::select! {
                _ = gate.room() => {}
                _ = &mut stop => break,
            }
        }
        let frame = tokio::select! {
            frame = reader.next_frame(), if !init.is_full() => frame,
            held = init.finished() => {
                for incoming in held {
                    tokio::select! {
                        biased;
                        _ = proxy.dispatch_incoming(incoming, &permits) => {}
                        _ = &mut stop => break 'read,
                    }
                }
                continue;
            }
            _ = &mut stop => break,
        };
        match frame {
            Ok(None) => {
                info!("stdin closed; shutting down");
                // Requests read while `initialize` ran are still handled.
                if init.is_running() {
                    tokio::select! {
                        biased;
                        _ = async {
                            for incoming in init.finished().await {
                                proxy.dispatch_incoming(incoming, &permits).await;
                            }
                        } => {}
                        _ = &mut stop => {}
                    }
                }
                break;
            }
            Err(e) => {
                warn!(error = %e, "reading stdin failed; shutting down");
                break;
            }
            Ok(Some(Frame::TooLong { len, head })) => {
                let id = jsonrpc::id_from_head(&head).unwrap_or(Value::Null);
                let err = jsonrpc::error_object(
                    ErrorCode::InvalidRequest,
                    format!(
                        "message of {len} bytes is longer than max_message_bytes ({})",
                        config.max_message_bytes()
                    ),
                    None,
                );
                proxy.send(&jsonrpc::error_response(id, err)).await;
            }
            Ok(Some(Frame::Line(line))) => {
                let (incoming, id) = crate::offload::cpu_bound(line.len(), move || {
                    let mut incoming = jsonrpc::classify(&line);
                    crate::exact_args::capture(&line, &mut incoming);
                    // Not JSON (too deep, a lone surrogate…): answer with its id if readable.
                    let id = matches!(incoming, Incoming::ParseError(_))
                        .then(|| crate::recover::top_level(&line).id)
                        .flatten();
                    (incoming, id)
                })
                .await;
                if let Incoming::ParseError(e) = &incoming {
                    proxy.answer_parse_error(id, e).await;
                    continue;
                }
                if InitGate::is_initialize(&incoming) && !init.is_running() {
                    let (proxy, permits) = (proxy.clone(), permits.clone());
                    init.start(tokio::spawn(async move {
                        proxy.dispatch_incoming(incoming, &permits).await;
                    }));
                } else if init.is_running() && !InitGate::may_pass(&incoming) {
                    init.hold(incoming);
                } else {
                    tokio::select! {
                        biased;
                        _ = proxy.dispatch_incoming(incoming, &permits) => {}
                        _ = &mut stop => break,
                    }
                }
            }
        }
    }
    // Let in-flight requests finish (their servers are still up), then stop everything.
    let deadline = tokio::time::Instant::now() + DRAIN_GRACE;
    while proxy.inflight_count() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for closing in proxy.listeners.close_all() {
        proxy.send(&closing).await;
    }
    proxy.shutdown().await;
    // Requests still running got their error envelopes when their servers stopped.
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        permits.acquire_many(MAX_CONCURRENT_REQUESTS as u32),
    )
    .await;
    if let Some(t) = &proxy.transcript {
        t.flush();
    }
    drop(proxy);
    // The writer ends when the last sender is gone; a stuck grandchild must not keep us here.
    let _ = tokio::time::timeout(Duration::from_secs(3), writer).await;
    Ok(())
}
