//! Everything besides tools that the proxy passes between the client and its servers:
//! resources, prompts, completion and logging (MCP specification 2025-11-25, "Server Features:
//! Resources, Prompts", "Utilities: Completion, Logging, Pagination").
//!
//! The rules:
//! - `initialize` declares a capability ([`Declared`]) only when at least one ready server
//!   offers it; a notification that belongs to a capability we did not declare is dropped;
//! - list requests (`resources/list`, `resources/templates/list`, `prompts/list`) ask every
//!   ready server that offers the capability for all its pages, all servers at once
//!   ([`fetch_each`]: slow servers cost the longest `tool_timeout_sec`, not their sum), and
//!   answer the merged list, in config order whoever answers first, in one page; any `cursor`
//!   from the client is one we never gave out, so it is -32602;
//! - single-item requests are routed: resources by URI ([`resources`]), prompts by name
//!   ([`prompts`]), completions by their `ref` ([`completion`]); `logging/setLevel` goes to every
//!   server that offers logging ([`logging`]); what is forwarded unread has its shape checked
//!   first ([`param_shapes`], -32602), so that a server that chokes on it cannot leave the
//!   request waiting for its timeout;
//! - what servers answer passes through unchanged (resource contents are not enveloped, URIs are
//!   never rewritten); only prompt names are renamed like tool names;
//! - a server that (re)starts after `initialize` (or a remote server that forgot our session
//!   and got a new one) gets the client's last logging level and its subscriptions again,
//!   and the client gets `notifications/resources/list_changed` / `prompts/list_changed` for
//!   it ([`Passthrough::on_server_changed`]).
//!
//! Results of `tools/call` that are not plain tool results are handled in [`results`].

pub mod completion;
pub mod declared;
pub mod down;
pub mod fan_out;
pub mod input_rounds;
pub mod inventory;
pub mod logging;
pub mod param_shapes;
pub mod prompts;
pub mod resources;
pub mod slot;
pub mod subscribed;
pub use envelope_core::mapping::nested as results;
pub mod uri_routing;
pub mod uri_template;
pub use declared::Declared;
pub use slot::DownstreamSlot;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use jsonrpc_core::ErrorCode;
use serde_json::{json, Value};
use tracing::{debug, warn};

use crate::config::Config;
use crate::downstream::{CallError, Connection, Downstream, ServerState};
use crate::jsonrpc;

/// JSON-RPC error code for an unknown resource (MCP 2025-11-25 "Resources: Error Handling").
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// Most pages followed per list request to one server.
pub const MAX_PAGES: usize = 10_000;

/// Our `instructions` followed by each server's, under a `## <server>` heading, in config order;
/// servers without instructions are left out.
pub fn merge_instructions(ours: &str, servers: &[(&str, &str)]) -> String {
    let mut out = ours.to_owned();
    for (name, text) in servers {
        let text = text.trim();
        if !text.is_empty() {
            out.push_str(&format!("\n\n## {name}\n{text}"));
        }
    }
    out
}

/// `Err` with a -32602 error object when the params of a list request carry a `cursor`: we
/// answer every list in one page, so no cursor is ours (MCP "Utilities: Pagination": an invalid
/// cursor is -32602).
pub fn check_cursor(params: Option<&Value>) -> Result<(), Value> {
    match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Ok(()),
        Some(c) => Err(jsonrpc::error_object(
            ErrorCode::InvalidParams,
            format!("unknown cursor {c}: this list is answered in one page"),
            None,
        )),
    }
}

/// What the session must do with a server's notification.
#[derive(Debug, Clone, PartialEq)]
pub enum NotificationAction {
    /// Pass it to the client with these params.
    Forward(Option<Value>),
    /// Drop it (a capability we did not declare).
    Drop,
    /// Refresh what we know of that server's list, then pass it on unchanged.
    RefreshThenForward(ListKind),
}

/// A list the proxy keeps per server for routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `resources/list` and `resources/templates/list`.
    Resources,
    /// `prompts/list`.
    Prompts,
}

/// The servers and settings a request works with.
pub struct Upstream<'a> {
    /// Every supervised server, in config order.
    pub servers: Arc<Vec<Downstream>>,
    /// The config (timeouts, prompt filters, prefixes).
    pub config: Arc<Config>,
    /// Holds the connection and downstream id of each forwarded request until it is answered,
    /// so that the client's `notifications/cancelled` reaches every server still asked.
    pub slot: Option<&'a DownstreamSlot>,
    /// Whether the results go to a client that negotiated a 2025 revision: a 2026-07-28
    /// server's then lose the members only that revision defines
    /// ([`crate::era::drop_modern_result_members`]), and their `InputRequiredResult`s are
    /// bridged or refused ([`input_rounds`]).
    pub legacy_client: bool,
    /// For a 2025 client: its session, which a 2026-07-28 server's input requests are put to
    /// ([`input_rounds::fulfil`]); `None` for a 2026-07-28 client, or a request of the
    /// proxy's own.
    pub client_input: Option<Arc<dyn input_rounds::ClientInput>>,
}

/// What an [`Upstream`] holds, owned: for a request sent to several servers at once, which may
/// outlive the request that sent it ([`fan_out`]).
#[derive(Clone)]
pub struct OwnedUpstream {
    servers: Arc<Vec<Downstream>>,
    config: Arc<Config>,
    slot: Option<DownstreamSlot>,
    legacy_client: bool,
    client_input: Option<Arc<dyn input_rounds::ClientInput>>,
}

impl OwnedUpstream {
    /// The [`Upstream`] it holds.
    pub fn upstream(&self) -> Upstream<'_> {
        Upstream {
            servers: self.servers.clone(),
            config: self.config.clone(),
            slot: self.slot.as_ref(),
            legacy_client: self.legacy_client,
            client_input: self.client_input.clone(),
        }
    }

    /// The same without the client request's slot: for what is sent on the proxy's own behalf
    /// once that request has been answered.
    pub fn detached(&self) -> OwnedUpstream {
        OwnedUpstream {
            slot: None,
            ..self.clone()
        }
    }
}

impl Upstream<'_> {
    /// An owned copy ([`OwnedUpstream`]).
    pub fn owned(&self) -> OwnedUpstream {
        OwnedUpstream {
            servers: self.servers.clone(),
            config: self.config.clone(),
            slot: self.slot.cloned(),
            legacy_client: self.legacy_client,
            client_input: self.client_input.clone(),
        }
    }

    /// The ready servers whose `initialize` result declares capability `key`, in config order.
    pub fn offering(&self, key: &str) -> Vec<&Downstream> {
        self.servers
            .iter()
            .filter(|ds| {
                server_capabilities(ds).is_some_and(|c| c.get(key).is_some_and(|v| !v.is_null()))
            })
            .collect()
    }

    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<&Downstream> {
        self.servers.iter().find(|ds| ds.name() == name)
    }

    /// The servers that are (re)starting now, or ready on a connection that has just closed:
    /// what they offer is unknown until they are ready again.
    pub fn settling(&self) -> Vec<&Downstream> {
        let settling = |ds: &&Downstream| match ds.state() {
            ServerState::Starting | ServerState::Restarting { .. } => true,
            ServerState::Ready(conn) => conn.is_closed(),
            ServerState::Unavailable { .. } | ServerState::Stopped => false,
        };
        self.servers.iter().filter(settling).collect()
    }

    /// Runs `pass` (a look-up over the servers ready now); when it finds nothing and a server
    /// is [`Upstream::settling`], waits for those ([`Upstream::wait_settling`]) and runs it once
    /// more. `Err` holds the names of the servers still not ready (empty when none was
    /// settling), for [`down::servers_down`].
    pub async fn again_once_settled<T, F: std::future::Future<Output = Option<T>>>(
        &self,
        mut pass: impl FnMut() -> F,
    ) -> Result<T, Vec<String>> {
        if let Some(found) = pass().await {
            return Ok(found);
        }
        if self.settling().is_empty() {
            return Err(Vec::new());
        }
        let not_ready = self.wait_settling().await;
        pass().await.ok_or(not_ready)
    }

    /// Waits for the [`Upstream::settling`] servers to be ready, each up to its own
    /// `tool_timeout_sec` from now (the waits overlap: the longest bounds the whole); returns
    /// the names of those still not ready, in config order.
    pub async fn wait_settling(&self) -> Vec<String> {
        let start = tokio::time::Instant::now();
        let mut not_ready = Vec::new();
        for ds in self.settling() {
            let timeout = self.config.tool_settings(ds.name(), "").tool_timeout.value;
            if ds.wait_ready(start + timeout).await.is_err() {
                not_ready.push(ds.name().to_owned());
            }
        }
        not_ready
    }

    /// Sends one request to `ds` and waits for its answer (the server's `tool_timeout_sec`):
    /// `Ok(result)`, or `Err(error object)` — the server's own JSON-RPC error, or -32603 when
    /// it did not answer, or when a 2026-07-28 server answers a 2025 client's request with an
    /// `InputRequiredResult` where that revision allows none ([`input_rounds::misplaced`]).
    pub async fn ask(&self, ds: &Downstream, method: &str, params: &Value) -> Result<Value, Value> {
        let timeout = self.config.tool_settings(ds.name(), "").tool_timeout.value;
        let slot = self.slot;
        let mut modern_server = false;
        let mut sent = None;
        let answer = ds
            .request(method, Some(params), timeout, &mut |conn, id| {
                modern_server = matches!(conn.era(), Some(crate::downstream::ServerEra::Modern(_)));
                if let Some(slot) = slot {
                    slot.add(conn, id);
                    sent = Some((conn.clone(), id));
                }
            })
            .await;
        // Answered (or timed out, and cancelled by the peer): the client's cancellation no
        // longer concerns it.
        if let (Some(slot), Some((conn, id))) = (slot, sent) {
            slot.answered(&conn, id);
        }
        let legacy_answer = self.legacy_client && modern_server;
        let failed = |e: CallError| {
            jsonrpc::error_object(
                ErrorCode::InternalError,
                format!("server '{}' did not answer `{method}`: {e}", ds.name()),
                None,
            )
        };
        match answer {
            Ok(Ok(body)) => match body.into_result().await {
                Ok(outcome) => outcome
                    .map(|mut result| {
                        // Passed on as the proxy's answer: not the server's identity.
                        crate::era::drop_server_info(&mut result);
                        if legacy_answer {
                            crate::era::drop_modern_result_members(method, &mut result);
                        }
                        result
                    })
                    .and_then(|result| {
                        let misplaced = legacy_answer
                            .then(|| input_rounds::misplaced(ds.name(), method, &result))
                            .flatten();
                        misplaced.map_or(Ok(result), Err)
                    }),
                Err(e) => Err(failed(e)),
            },
            Ok(Err(error)) => Err(error),
            Err(e) => Err(failed(e)),
        }
    }

    /// Every page of a list request to `ds` (`method`, items under `key`), following
    /// `nextCursor` (MCP "Utilities: Pagination"); `Err` with a reason when a page fails.
    pub async fn fetch_all(
        &self,
        ds: &Downstream,
        method: &str,
        key: &str,
    ) -> Result<Vec<Value>, String> {
        let mut items = Vec::new();
        let mut params = json!({});
        for _ in 0..MAX_PAGES {
            let page = self
                .ask(ds, method, &params)
                .await
                .map_err(|e| format!("{method} failed: {e}"))?;
            match page.get(key) {
                Some(Value::Array(list)) => items.extend(list.iter().cloned()),
                _ => return Err(format!("{method} answer has no `{key}` array")),
            }
            match page.get("nextCursor") {
                Some(c) if !c.is_null() => params = json!({ "cursor": c }),
                _ => return Ok(items),
            }
        }
        Err(format!("{method} returned more than {MAX_PAGES} pages"))
    }
}

/// [`Upstream::fetch_all`] of each of `servers` (`method`, items under `key`), all at once: a
/// list costs the longest `tool_timeout_sec` of its servers, not their sum. The answers are in
/// the order of `servers`, whichever server answers first.
pub async fn fetch_each(
    up: &Upstream<'_>,
    servers: &[&Downstream],
    method: &str,
    key: &str,
) -> Vec<Result<Vec<Value>, String>> {
    let each = servers.iter().map(|ds| up.fetch_all(ds, method, key));
    futures_util::future::join_all(each).await
}

/// The `capabilities` a ready server declared in its `initialize` result.
pub fn server_capabilities(ds: &Downstream) -> Option<Value> {
    match ds.state() {
        ServerState::Ready(conn) if !conn.is_closed() => {
            let init = conn.initialize_result.read().unwrap();
            init.get("capabilities").cloned()
        }
        _ => None,
    }
}

/// The `instructions` a ready server gave in its `initialize` result, without the secrets the
/// proxy gives it ([`Downstream::secrets`]).
pub fn server_instructions(ds: &Downstream) -> Option<String> {
    match ds.state() {
        ServerState::Ready(conn) => {
            let init = conn.initialize_result.read().unwrap();
            let mut text = init.get("instructions").filter(|t| t.is_string())?.clone();
            drop(init);
            ds.secrets().redact_json(&mut text);
            text.as_str().map(str::to_owned)
        }
        _ => None,
    }
}

/// A connection a server was seen ready on, and how many times its session had been replaced
/// then ([`Connection::renewals`]).
type SeenConnection = (Arc<Connection>, u64);

/// Remembers the connection `ds` is ready on; whether it is one not seen before (its first
/// start, or a restart), or a remote server's new session on it (it forgot the old one).
fn record_connection(seen: &mut HashMap<String, SeenConnection>, ds: &Downstream) -> bool {
    let ServerState::Ready(conn) = ds.state() else {
        return false;
    };
    let renewals = conn.renewals();
    match seen.insert(ds.name().to_owned(), (conn.clone(), renewals)) {
        Some((old, before)) => !Arc::ptr_eq(&old, &conn) || before != renewals,
        None => true,
    }
}

/// The session's passthrough state: what was declared and what routing needs to remember.
#[derive(Default)]
pub struct Passthrough {
    declared: OnceLock<Declared>,
    resources: Mutex<resources::Index>,
    prompts: Mutex<prompts::PromptCatalog>,
    /// Per server, the prompts it last listed (all pages).
    prompt_lists: Mutex<HashMap<String, Arc<Vec<Value>>>>,
    /// The exposed names of the prompts of servers that gave up, to name their server.
    down_prompts: Mutex<down::DownPrompts>,
    /// Subscribed URI → the server that accepted the subscription.
    subscriptions: Mutex<HashMap<String, String>>,
    /// What each server is subscribed to on its current connection (one subscribe per URI).
    subscribed_on: Arc<subscribed::SubscribedOn>,
    /// Per server, the connection last seen ready, to notice a (re)start or a new session (held,
    /// so that a new connection can never reuse its address).
    connections: Mutex<HashMap<String, SeenConnection>>,
    /// The params of the last `logging/setLevel` a server accepted, sent again to a server
    /// that (re)starts.
    log_level: Mutex<Option<Value>>,
}

impl Passthrough {
    /// Decides what to declare from the servers ready now (once; later calls return the first
    /// answer) and returns our `capabilities` object.
    pub fn declare(&self, servers: &[Downstream]) -> Value {
        // Under the lock, so that a server found on a new connection by
        // [`Passthrough::on_server_changed`] is one that started after this.
        let mut seen = self.connections.lock().unwrap();
        for ds in servers {
            record_connection(&mut seen, ds);
        }
        let caps: Vec<Value> = servers.iter().filter_map(server_capabilities).collect();
        self.declared
            .get_or_init(|| Declared::from_capabilities(&caps))
            .to_value()
    }

    /// Whether [`Passthrough::declare`] has decided yet.
    pub fn is_declared(&self) -> bool {
        self.declared.get().is_some()
    }

    /// What was declared (nothing before `initialize`).
    pub fn declared(&self) -> Declared {
        self.declared.get().copied().unwrap_or_default()
    }

    /// Answers a client request that this module owns; `None` for any other method.
    pub async fn handle(
        &self,
        up: &Upstream<'_>,
        method: &str,
        params: Option<Value>,
    ) -> Option<Result<Value, Value>> {
        let d = self.declared();
        let not_declared = |what: &str| {
            Some(Err(jsonrpc::error_object(
                ErrorCode::MethodNotFound,
                format!("Method not found: {method} (no server offers {what})"),
                None,
            )))
        };
        let params = params.unwrap_or_else(|| json!({}));
        let answer = match method {
            "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
                if !d.resources =>
            {
                return not_declared("resources")
            }
            "prompts/list" | "prompts/get" if !d.prompts => return not_declared("prompts"),
            "completion/complete" if !d.completions => return not_declared("completions"),
            "logging/setLevel" if !d.logging => return not_declared("logging"),
            "resources/list" => {
                self.list_resources(up, &params, "resources/list", "resources")
                    .await
            }
            "resources/templates/list" => {
                self.list_resources(up, &params, "resources/templates/list", "resourceTemplates")
                    .await
            }
            "resources/read" => self.read(up, &params).await,
            "resources/subscribe" if !d.subscribe => return not_declared("subscriptions"),
            "resources/subscribe" => self.subscribe(up, &params).await,
            "resources/unsubscribe" => self.unsubscribe(up, &params).await,
            "prompts/list" => self.list_prompts(up, &params).await,
            "prompts/get" => self.get_prompt(up, params).await,
            "completion/complete" => self.complete(up, params).await,
            "logging/setLevel" => {
                let answer = logging::set_level(up, &params).await;
                if answer.is_ok() {
                    *self.log_level.lock().unwrap() = Some(params);
                }
                answer
            }
            _ => return None,
        };
        Some(answer)
    }

    /// What to do with notification `method` from `server` (see [`NotificationAction`]).
    pub fn on_notification(
        &self,
        server: &str,
        method: &str,
        params: Option<Value>,
    ) -> NotificationAction {
        if !self.declared().allows(method) {
            debug!(%server, method, "notification for a capability not declared dropped");
            return NotificationAction::Drop;
        }
        match method {
            "notifications/message" => {
                NotificationAction::Forward(Some(logging::with_logger(params, server)))
            }
            "notifications/resources/list_changed" => {
                NotificationAction::RefreshThenForward(ListKind::Resources)
            }
            "notifications/prompts/list_changed" => {
                NotificationAction::RefreshThenForward(ListKind::Prompts)
            }
            _ => NotificationAction::Forward(params),
        }
    }

    /// After a server's state or tools changed: when it is ready on a new connection (it
    /// started after `initialize`, or restarted), the last logging level is sent to it again
    /// and its resources and prompts are read again (both at once: a server slow to list them
    /// costs one `tool_timeout_sec`, not two). Returns the list_changed notifications
    /// to send the client (for the capabilities we declared that the server offers).
    pub async fn on_server_changed(&self, up: &Upstream<'_>, server: &str) -> Vec<&'static str> {
        let Some(ds) = up.server(server) else {
            return Vec::new();
        };
        if matches!(ds.state(), ServerState::Unavailable { .. }) {
            return self.forget(up, server).await;
        }
        let started_after_initialize = {
            let mut seen = self.connections.lock().unwrap();
            record_connection(&mut seen, ds) && self.declared.get().is_some()
        };
        if !started_after_initialize {
            return Vec::new();
        }
        let d = self.declared();
        let offers = |key: &str| {
            server_capabilities(ds).is_some_and(|c| c.get(key).is_some_and(|v| !v.is_null()))
        };
        let level = self.log_level.lock().unwrap().clone();
        if let Some(params) = level.filter(|_| offers("logging")) {
            if let Err(e) = up.ask(ds, "logging/setLevel", &params).await {
                warn!(%server, error = %e, "logging/setLevel after a restart refused");
            }
        }
        // Resources and prompts at once: a server slow to list both costs one timeout.
        let resources = async {
            if !(d.resources && offers("resources")) {
                return None;
            }
            if let Err(e) = self.refresh_resources(up, ds).await {
                warn!(%server, error = %e, "reading resources after a start failed");
            }
            self.subscribe_again(up, ds).await;
            Some("notifications/resources/list_changed")
        };
        let prompts = async {
            if !(d.prompts && offers("prompts")) {
                return None;
            }
            if let Err(e) = self.refresh_prompts(up, &[ds]).await {
                warn!(%server, error = %e, "reading prompts after a start failed");
            }
            Some("notifications/prompts/list_changed")
        };
        let (resources, prompts) = futures_util::future::join(resources, prompts).await;
        resources.into_iter().chain(prompts).collect()
    }

    /// A server that gave up (`unavailable`) lists nothing until a restart of the proxy or a
    /// reload: what was known of its prompts and resources is dropped, the prompt catalog is
    /// rebuilt without it, and the client is told of each declared list that had items from it
    /// (MCP 2025-11-25 "Prompts" and "Resources: List Changed Notification": a server that
    /// declared `listChanged` SHOULD notify when its list changes).
    async fn forget(&self, up: &Upstream<'_>, server: &str) -> Vec<&'static str> {
        let d = self.declared();
        let mut changed = Vec::new();
        let names = self.prompts.lock().unwrap().names_of(server);
        self.down_prompts.lock().unwrap().remember(server, names);
        let had_prompts = self.prompt_lists.lock().unwrap().remove(server);
        if had_prompts.is_some_and(|list| !list.is_empty()) {
            if let Err(e) = self.refresh_prompts(up, &[]).await {
                warn!(error = %e, "reading prompts after a server gave up failed");
            }
            if d.prompts {
                changed.push("notifications/prompts/list_changed");
            }
        }
        if self.resources.lock().unwrap().forget(server) && d.resources {
            changed.push("notifications/resources/list_changed");
        }
        self.connections.lock().unwrap().remove(server);
        changed
    }

    /// Subscribes a (re)started server again to every URI the clients hold a subscription to
    /// at it: its new process knows none of them, and would send no
    /// `notifications/resources/updated`. A URI a client's own subscribe already reached the
    /// new process with is not sent again ([`subscribed`]). A refusal is logged (the URI may be
    /// gone).
    async fn subscribe_again(&self, up: &Upstream<'_>, ds: &Downstream) {
        let uris: Vec<String> = {
            let subscriptions = self.subscriptions.lock().unwrap();
            let held = subscriptions
                .iter()
                .filter(|(_, s)| s.as_str() == ds.name());
            held.map(|(uri, _)| uri.clone()).collect()
        };
        for uri in uris {
            let params = json!({ "uri": uri });
            let subscribed = self.subscribed_on.subscribe(up, ds, &params, &uri).await;
            if let Err(e) = subscribed {
                warn!(server = %ds.name(), %uri, error = %e, "subscribing again after a restart failed");
            }
        }
    }

    /// After a config reload: the prompts, when they have been read before, are read again
    /// from every ready server that offers them (filters and prefixes may have changed).
    /// Returns the list_changed notifications to send: prompts when the exposed prompts
    /// changed, resources when `servers_changed`.
    pub async fn after_reload(
        &self,
        up: &Upstream<'_>,
        servers_changed: bool,
    ) -> Vec<&'static str> {
        let d = self.declared();
        let mut changed = Vec::new();
        // Prompts never read yet have reached no client: they are read when first asked for,
        // so a reload has nothing to tell about them (a budget edit must not look like a change).
        let prompts_read = !self.prompt_lists.lock().unwrap().is_empty();
        if d.prompts && prompts_read {
            let before = self.prompts.lock().unwrap().prompts().to_vec();
            if let Err(e) = self.refresh_prompts(up, &up.offering("prompts")).await {
                warn!(error = %e, "reading prompts after a config reload failed");
            }
            if self.prompts.lock().unwrap().prompts() != before.as_slice() {
                changed.push("notifications/prompts/list_changed");
            }
        }
        if d.resources && servers_changed {
            changed.push("notifications/resources/list_changed");
        }
        changed
    }

    /// Refreshes what we know of one server's list after it said the list changed.
    pub async fn refresh(&self, up: &Upstream<'_>, server: &str, kind: ListKind) {
        let Some(ds) = up.server(server) else { return };
        let result = match kind {
            ListKind::Resources => self.refresh_resources(up, ds).await,
            ListKind::Prompts => self.refresh_prompts(up, &[ds]).await,
        };
        if let Err(e) = result {
            warn!(%server, error = %e, "refreshing a list after list_changed failed");
        }
    }
}
