//! The state every session shares: config, servers, catalog, transcript, paging store, the
//! registry of calls in flight and of open sessions.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};
use tracing::warn;

use super::calls_in_flight::CallsInFlight;
use super::multi_round::MultiRound;
use super::session::Session;
use super::{LATEST_PROTOCOL_VERSION, OUR_INSTRUCTIONS};
use crate::catalog::{Catalog, ServerTools};
use crate::config::Config;
use crate::downstream::{ClientInit, Downstream, DownstreamEvent, ServerSpec, ServerState};
use crate::server_tool::ServerTool;
use crate::transcript::TranscriptWriter;

use super::catalog_inputs::{
    listing_shapes, unknown_tool_warnings, with_listed_servers_down, CatalogInputs, ToolList,
};

/// A running server's name, its own stop switch and its supervising task.
pub(super) type ServerTask = (String, watch::Sender<bool>, tokio::task::JoinHandle<()>);

/// The proxy's shared state: config, servers, catalog, transcript, paging store, the calls in
/// flight and the open sessions. Create one per process with [`Core::new`], start its servers
/// once with [`Core::start_servers`], open a [`Session`] per client with
/// [`Core::open_session`], and stop with [`Core::shutdown`].
pub struct Core {
    /// This core, for what the servers' tasks call back ([`Core::listed_hook`]).
    pub(super) me: Weak<Core>,
    /// The running config; a reload replaces it ([`crate::reload`]).
    config: RwLock<Arc<Config>>,
    /// The supervised servers in config order; a reload replaces the list.
    servers: RwLock<Arc<Vec<Downstream>>>,
    /// Set once the first start of every server has settled.
    first_start: tokio::sync::OnceCell<()>,
    /// The only servers the first start starts (config names; `None`: every enabled server),
    /// for a one-shot `call` ([`Core::start_only`]).
    start_only: OnceLock<Vec<String>>,
    /// What a server started later (by a reload) needs: the events channel and the client
    /// declared to the servers. Unset before the first start and when no server may start.
    started: OnceLock<(mpsc::UnboundedSender<DownstreamEvent>, ClientInit)>,
    /// Each server's name, its own stop switch and its supervising task.
    pub(super) server_tasks: Mutex<Vec<ServerTask>>,
    catalog: RwLock<Arc<Catalog>>,
    pub(super) shutdown: watch::Sender<bool>,
    pub(super) transcript: Option<TranscriptWriter>,
    /// Start order of `tools/call` requests across sessions, `input_required` rounds included:
    /// each call's key among the calls in flight. Not the transcript's `seq`: the transcript
    /// writer numbers the records it is given ([`TranscriptWriter::record`]).
    pub(super) call_counter: AtomicU64,
    /// Bytes queued for a stdio client: servers' output is paused while too many wait.
    output_gate: OnceLock<Arc<crate::backpressure::OutputGate>>,
    /// Every name given to a tool: a name stays with its tool.
    exposed_names: Mutex<crate::exposed_names::ExposedNames>,
    /// Set once the first start of every server has settled: from then on the catalog's
    /// names are kept in `exposed_names`.
    names_given: AtomicBool,
    /// Catalog warnings already logged.
    catalog_warnings: Mutex<HashSet<String>>,
    /// What the current catalog was built from: a rebuild from the same inputs is skipped.
    catalog_inputs: Mutex<Option<CatalogInputs>>,
    /// The servers' shares of the first catalog made as their lists arrived
    /// ([`Core::prepare_part`]); taken by the first catalog.
    pub(super) ready_parts: Mutex<Vec<super::first_parts::ReadyPart>>,
    /// `tools/call`s in flight: their server, session, progress token and transcript events.
    pub(super) calls: CallsInFlight,
    /// Resources, prompts, completion and logging ([`crate::passthrough`]).
    pub(super) passthrough: crate::passthrough::Passthrough,
    /// Which session subscribed to which resource URI.
    pub(super) subscriptions: super::subscriptions::Subscriptions,
    /// The logging level each session set.
    pub(super) log_levels: super::log_levels::LogLevels,
    /// `serve --cassette`: recorded answers served instead of (or before) the servers'.
    pub(super) cassette: OnceLock<crate::cassette::Playback>,
    /// The tool list last written to the transcript per server, to record only changes.
    recorded_tool_lists: Mutex<HashMap<String, (ToolList, String)>>,
    /// The page tool and the process's store (`None` when paging is off); each session pages
    /// with its own key into the store.
    pager: Option<crate::page_tool::Pager>,
    /// Calls parked for a modern client's input, and the calls that take a server's requests.
    pub(super) multi_round: MultiRound,
    /// Open sessions, oldest first.
    sessions: Mutex<Vec<(u64, Weak<Session>)>>,
    next_session: AtomicU64,
}

impl Core {
    /// A core for `config`, recording calls with `transcript` when given. No server runs yet.
    pub fn new(config: Arc<Config>, transcript: Option<TranscriptWriter>) -> Arc<Core> {
        let (shutdown, _) = watch::channel(false);
        Arc::new_cyclic(|me| Core {
            me: me.clone(),
            pager: crate::page_tool::Pager::new(&config.paging),
            config: RwLock::new(config),
            servers: RwLock::default(),
            first_start: tokio::sync::OnceCell::new(),
            start_only: OnceLock::new(),
            started: OnceLock::new(),
            server_tasks: Mutex::new(Vec::new()),
            catalog: RwLock::new(Arc::new(Catalog::default())),
            shutdown,
            transcript,
            call_counter: AtomicU64::new(0),
            output_gate: OnceLock::new(),
            exposed_names: Mutex::default(),
            names_given: AtomicBool::new(false),
            catalog_warnings: Mutex::default(),
            catalog_inputs: Mutex::default(),
            ready_parts: Mutex::default(),
            calls: CallsInFlight::default(),
            passthrough: Default::default(),
            subscriptions: Default::default(),
            log_levels: Default::default(),
            cassette: OnceLock::new(),
            recorded_tool_lists: Mutex::default(),
            multi_round: Default::default(),
            sessions: Mutex::default(),
            next_session: AtomicU64::new(1),
        })
    }

    /// Serves a cassette (set before [`Core::start_servers`]): in strict mode no server is
    /// started and every tool comes from the recording; with `record-missing` the servers start
    /// as usual and answer the calls the cassette has no answer for.
    pub fn set_cassette(&self, playback: crate::cassette::Playback) {
        let _ = self.cassette.set(playback);
    }

    /// Makes the first start ([`Core::start_servers`]) start only the enabled servers named in
    /// `servers` (set before it): the others are left down, which changes no name of a server
    /// whose `enabled_tools` lists its tools ([`crate::config::Config::servers_for_call`]).
    pub fn start_only(&self, servers: Vec<String>) {
        let _ = self.start_only.set(servers);
    }

    /// Makes servers pause their output while `gate` is full (set before
    /// [`Core::start_servers`]; for a single stdio client whose reading we follow).
    pub fn set_output_gate(&self, gate: Arc<crate::backpressure::OutputGate>) {
        let _ = self.output_gate.set(gate);
    }

    /// The running config (a reload may replace it: settings apply from the next call on).
    pub fn config(&self) -> Arc<Config> {
        self.config.read().unwrap().clone()
    }

    /// The settings a call of `tool` of `server` is mapped with: the running config's, or the
    /// cassette's recorded ones when it is served with them ([`crate::cassette::Playback::settings`]).
    pub(super) fn tool_settings(&self, server: &str, tool: &str) -> crate::settings::ToolSettings {
        let recorded = self.cassette.get().and_then(|c| c.settings(server, tool));
        recorded.unwrap_or_else(|| self.config().tool_settings(server, tool))
    }

    /// Replaces the running config (see [`crate::reload`]).
    pub(super) fn set_config(&self, config: Arc<Config>) {
        *self.config.write().unwrap() = config;
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().unwrap().clone()
    }

    /// The supervised servers in config order (empty before [`Core::start_servers`]).
    pub fn servers(&self) -> Arc<Vec<Downstream>> {
        self.servers.read().unwrap().clone()
    }

    /// Replaces the list of supervised servers (after a reload started or stopped some).
    pub(super) fn set_servers(&self, servers: Vec<Downstream>) {
        *self.servers.write().unwrap() = Arc::new(servers);
    }

    /// Whether servers may be started now (after the first start began; never when a strict
    /// cassette answers instead of servers).
    pub(super) fn can_start_later(&self) -> bool {
        self.started.get().is_some()
    }

    /// Whether the first start of the servers has settled ([`Core::start_servers`]).
    pub fn servers_started(&self) -> bool {
        self.first_start.initialized()
    }

    /// What the proxy declares to its servers when no single client's capabilities apply
    /// (HTTP serving, several clients): every client capability it can route a server's
    /// request to — `sampling`, `elicitation` (form and URL modes), `roots` with
    /// `listChanged` (MCP 2025-11-25 `ClientCapabilities`) — our own clientInfo and the latest
    /// protocol version. A server's request reaches only a client that declared the capability.
    pub fn routable_client_init() -> ClientInit {
        ClientInit {
            protocol_version: LATEST_PROTOCOL_VERSION.to_owned(),
            capabilities: json!({
                "sampling": {},
                "elicitation": {"form": {}, "url": {}},
                "roots": {"listChanged": true},
            }),
            client_info: crate::era::server_info(),
        }
    }

    /// Starts every enabled server in parallel, declaring `client` to them (version,
    /// capabilities, clientInfo), and waits for each to be ready, up to its own
    /// `startup_timeout_sec`; servers not ready by then go on starting (or restarting) in the
    /// background and their tools appear later. Only the first call starts anything; a call
    /// made while the first one runs waits for it (two clients initializing at once).
    pub async fn start_servers(self: &Arc<Self>, client: ClientInit) {
        self.first_start
            .get_or_init(|| self.start_once(client))
            .await;
    }

    /// The first start of every server (see [`Core::start_servers`]).
    async fn start_once(self: &Arc<Self>, client: ClientInit) {
        if self.cassette.get().is_some_and(|c| !c.record_missing) {
            self.names_given.store(true, Ordering::Release);
            self.rebuild_catalog();
            return;
        }
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        if self.started.set((events_tx, client)).is_err() {
            return;
        }
        let config = self.config();
        let only = self.start_only.get();
        let servers = config
            .enabled_servers()
            .filter(|server| only.is_none_or(|only| only.contains(&server.name)))
            .filter_map(|server| self.spawn_server(&config, server))
            .collect();
        self.set_servers(servers);
        tokio::spawn(self.clone().handle_events(events_rx));
        self.wait_first_start().await;
        self.names_given.store(true, Ordering::Release);
        self.rebuild_catalog();
    }

    /// Spawns one server of `config` with its own stop switch (thrown too by
    /// [`Core::shutdown`]); `None` before the first start.
    pub(super) fn spawn_server(
        &self,
        config: &Config,
        server: &crate::config::ServerConfig,
    ) -> Option<Downstream> {
        let (events_tx, client) = self.started.get()?;
        let spec = ServerSpec {
            name: server.name.clone(),
            program: server.program.clone(),
            args: server.args.clone(),
            env: server.env.clone(),
            env_remove: config.credential_variables_withheld_from(server),
            cwd: server.cwd.clone(),
            startup_timeout: config.startup_timeout(&server.name).value,
            max_restarts: config.max_restarts(&server.name).value,
            max_message_bytes: config.max_message_bytes(),
            remote: server.remote.clone(),
            output_gate: self.output_gate.get().cloned(),
            on_listed: Some(self.listed_hook()),
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut core_stop = self.shutdown.subscribe();
        let switch = stop_tx.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = core_stop.wait_for(|s| *s) => { let _ = switch.send(true); }
                _ = switch.closed() => {}
            }
        });
        let (ds, task) = Downstream::spawn(spec, client.clone(), events_tx.clone(), stop_rx);
        let entry = (server.name.clone(), stop_tx, task);
        self.server_tasks.lock().unwrap().push(entry);
        Some(ds)
    }

    /// Waits for each server's first start, up to its own `startup_timeout_sec`; servers a
    /// config reload starts meanwhile are waited for too (a restarted one's new instance, up to
    /// the old one's deadline; an added one from when it is seen).
    async fn wait_first_start(&self) {
        let mut since = tokio::time::Instant::now();
        let mut waited: Vec<Downstream> = Vec::new();
        loop {
            let servers = self.servers();
            let new: Vec<&Downstream> = servers
                .iter()
                .filter(|ds| !waited.iter().any(|w| w.is_same_instance(ds)))
                .collect();
            if new.is_empty() {
                return;
            }
            let config = self.config();
            for ds in new {
                let deadline = since + config.startup_timeout(ds.name()).value;
                if let Err(e) = ds.wait_started(deadline).await {
                    warn_not_started(ds, &e);
                }
                waited.push(ds.clone());
            }
            since = tokio::time::Instant::now();
        }
    }

    /// Every server's last tool list, then the cassette's for servers without one, in config
    /// order (collisions resolve in config order; servers the config lacks come last).
    fn tool_lists(&self, config: &Config) -> Vec<(String, ToolList)> {
        // A server that a reload removed and is stopping has no table any more: skipped.
        let mut lists: Vec<(String, ToolList)> = self
            .servers()
            .iter()
            .filter(|ds| config.server(ds.name()).is_some())
            .filter_map(|ds| ds.tools().map(|t| (ds.name().to_owned(), t)))
            .collect();
        self.record_tool_lists(config, &lists);
        if let Some(playback) = self.cassette.get() {
            for (server, tools) in playback.tool_lists() {
                if !lists.iter().any(|(s, _)| *s == server) {
                    lists.push((server, Arc::new(tools)));
                }
            }
            let servers = &config.servers;
            let rank = |name: &str| servers.iter().position(|s| s.name == name);
            lists.sort_by_key(|(name, _)| rank(name).unwrap_or(usize::MAX));
        }
        lists
    }

    /// Whether the first start of every server has settled and its catalog was built: before
    /// that, a server's tool change needs no rebuild (the first start ends with one).
    pub(super) fn catalog_settled(&self) -> bool {
        self.names_given.load(Ordering::Acquire)
    }

    /// Rebuilds the catalog from every server's last tool list; returns whether the exposed set
    /// of tools changed.
    pub(super) fn rebuild_catalog(&self) -> bool {
        let config = self.config();
        let lists = self.tool_lists(&config);
        let inputs = CatalogInputs {
            config: config.clone(),
            names_given: self.names_given.load(Ordering::Acquire),
            lists: lists.clone(),
        };
        let mut built_from = self.catalog_inputs.lock().unwrap();
        if built_from.as_ref().is_some_and(|b| b.same_as(&inputs)) {
            // The same config and the same lists (a server's tools that did not change, the
            // event of a server whose start the first catalog already covered).
            return false;
        }
        *built_from = Some(inputs);
        drop(built_from);
        let unknown = unknown_tool_warnings(&config, &lists);
        let lists = with_listed_servers_down(&config, lists);
        let shapes = listing_shapes(&config, &lists, self.cassette.get());
        let inputs: Vec<ServerTools<'_, ServerTool>> = lists
            .iter()
            .zip(&shapes)
            .map(|((name, tools), shape)| shape.of(name, tools))
            .collect();
        let (catalog, mut warnings) = {
            // Names are given for good once clients can see them: after the first start of
            // every server, not while the first ones come up one by one.
            let mut names = self.exposed_names.lock().unwrap();
            if self.names_given.load(Ordering::Acquire) && names.is_empty() {
                // The first catalog: the parts made as the lists arrived are joined.
                let parts = self.first_parts(&config, &lists, &inputs);
                Catalog::build_first(&inputs, parts, &mut names)
            } else if self.names_given.load(Ordering::Acquire) {
                Catalog::build_stable(&inputs, &mut names)
            } else {
                Catalog::build_stable(&inputs, &mut names.clone())
            }
        };
        warnings.extend(unknown);
        warnings.extend(
            self.pager
                .as_ref()
                .and_then(|p| shadowed_by_page_tool(&catalog, p)),
        );
        self.log_new_warnings(warnings);
        let mut current = self.catalog.write().unwrap();
        let changed = current.tools_json() != catalog.tools_json();
        *current = Arc::new(catalog);
        changed
    }

    /// Each rebuild finds the same collisions again: logs only new warnings.
    fn log_new_warnings(&self, warnings: Vec<String>) {
        let mut logged = self.catalog_warnings.lock().unwrap();
        for w in warnings {
            if logged.insert(w.clone()) {
                warn!("{w}");
            }
        }
    }

    /// Every warning the catalog's builds logged (name collisions, unknown tool names), sorted:
    /// for `check`'s table.
    pub(crate) fn catalog_warnings(&self) -> Vec<String> {
        let mut all: Vec<String> = self
            .catalog_warnings
            .lock()
            .unwrap()
            .iter()
            .cloned()
            .collect();
        all.sort();
        all
    }

    /// Writes each server's tool list to the transcript when it is new or changed, so the
    /// recording can be served again as a cassette: the tools the config exposes (a cassette
    /// played without the config offers what the session offered, no more).
    fn record_tool_lists(&self, config: &Config, lists: &[(String, ToolList)]) {
        let Some(writer) = &self.transcript else {
            return;
        };
        let mut recorded = self.recorded_tool_lists.lock().unwrap();
        for (server, tools) in lists {
            let config = config.server(server);
            let prefix = config.map_or("", |c| c.tool_prefix.as_str());
            if recorded
                .get(server)
                .is_some_and(|(r, p)| r == tools && p == prefix)
            {
                continue;
            }
            let exposed: Vec<Value> = tools
                .iter()
                .filter(|t| config.is_none_or(|c| c.exposes(t.name())))
                .map(ServerTool::to_value)
                .collect();
            // Recording into the cassette itself: a list it holds already is not added again.
            let in_cassette = self.cassette.get().is_some_and(|c| {
                c.records_into_itself() && c.holds_tool_list(server, prefix, &exposed)
            });
            if !in_cassette {
                writer.record_tools(server, prefix, &exposed);
            }
            recorded.insert(server.clone(), (tools.clone(), prefix.to_owned()));
        }
    }

    /// Stops every server (stdin closed, SIGTERM, SIGKILL) and waits for their tasks.
    pub async fn shutdown(&self) {
        self.shutdown.send_replace(true);
        let tasks: Vec<_> = std::mem::take(&mut *self.server_tasks.lock().unwrap());
        for (_, _, t) in tasks {
            let _ = t.await;
        }
    }

    /// Writes out what the transcript writer holds.
    pub fn flush_transcript(&self) {
        if let Some(t) = &self.transcript {
            t.flush();
        }
    }

    /// What each ready server offers besides tools (prompts, resources, templates), read
    /// from the servers now; for `check`.
    pub async fn offered(&self) -> HashMap<String, crate::passthrough::inventory::Offered> {
        crate::passthrough::inventory::offered(&self.upstream(None)).await
    }

    /// The servers and config for a passthrough request; `slot` records where it was sent.
    pub(super) fn upstream<'a>(
        &self,
        slot: Option<&'a super::DownstreamSlot>,
    ) -> crate::passthrough::Upstream<'a> {
        crate::passthrough::Upstream {
            servers: self.servers(),
            config: self.config(),
            slot,
            legacy_client: false,
            client_input: None,
        }
    }

    /// Our `capabilities` (for `initialize` and `server/discover`): tools plus what
    /// [`crate::passthrough`] proxies for the ready servers.
    pub(super) fn capabilities(&self) -> Value {
        self.passthrough.declare(&self.servers())
    }

    /// Our `instructions` (for `initialize` and `server/discover`): ours, then each server's.
    pub(super) fn instructions(&self) -> String {
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
        let down = crate::availability::down_servers(&self.servers());
        text.push_str(&crate::availability::instructions_note(&down).unwrap_or_default());
        text
    }

    /// The page tool of calls without a client.
    pub(super) fn own_pager(&self) -> Option<&crate::page_tool::Pager> {
        self.pager.as_ref()
    }

    /// The page tool for a new session (its own key into the shared store); `None` when paging
    /// is off.
    pub(super) fn session_pager(&self) -> Option<crate::page_tool::Pager> {
        self.pager
            .as_ref()
            .map(crate::page_tool::Pager::for_new_session)
    }

    /// Registers a new session; returns its number (unique within the process).
    pub(super) fn register(&self, session: Weak<Session>) -> u64 {
        let id = self.next_session.fetch_add(1, Ordering::Relaxed);
        self.sessions.lock().unwrap().push((id, session));
        id
    }

    /// A session has closed.
    pub(super) fn unregister(&self, id: u64) {
        self.sessions.lock().unwrap().retain(|(i, _)| *i != id);
    }

    /// The open sessions, oldest first.
    pub(super) fn sessions(&self) -> Vec<Arc<Session>> {
        self.sessions
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(_, s)| s.upgrade())
            .collect()
    }

    /// The open session numbered `id`.
    pub(super) fn session(&self, id: u64) -> Option<Arc<Session>> {
        let sessions = self.sessions.lock().unwrap();
        sessions.iter().find(|(i, _)| *i == id)?.1.upgrade()
    }

    /// Tells every session a list changed (see [`Session::list_changed`]).
    pub(super) async fn list_changed(&self, method: &str) {
        for session in self.sessions() {
            session.list_changed(method).await;
        }
    }
}

/// Logs why `ds` did not start (`error`) and what follows, unless a config reload retired it.
fn warn_not_started(ds: &Downstream, error: &str) {
    if ds.is_retired() {
        return;
    }
    let what = match ds.state() {
        ServerState::Unavailable { .. } => "server unavailable; its tools are not offered",
        ServerState::Stopped => "server stopped",
        _ => "server not ready yet; it is retried and its tools will appear when it is ready",
    };
    // No `stderr` field when the server wrote nothing there (or is remote: it has no stderr).
    let tail = ds.stderr_tail().join(" | ");
    let stderr = (!tail.is_empty()).then(|| tracing::field::display(&tail));
    warn!(server = %ds.name(), %error, stderr, "{what}");
}

/// The warning for a server's tool exposed under the page tool's name (`[paging] tool_name`,
/// `envelope_next_page` by default): the client sees the page tool there, and the server's
/// tool is left out of `tools/list` and unreachable, so the warning says how to get it back.
fn shadowed_by_page_tool(catalog: &Catalog, pager: &crate::page_tool::Pager) -> Option<String> {
    let name = pager.tool_name();
    let route = catalog.route(name)?;
    Some(format!(
        "server `{}` offers tool `{}` as `{name}`, the page tool's name: the page tool answers \
         that name and the server's tool is not offered; change [paging] tool_name or the \
         server's tool_prefix to offer it",
        route.server, route.tool
    ))
}
