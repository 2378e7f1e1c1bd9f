//! One connection to a server (a child process's pipes or a remote HTTP session): the JSON-RPC
//! [`Peer`] plus what MCP adds on top: the era the server speaks (requests get its `_meta`,
//! notifications it does not know are not sent), its `initialize` or `server/discover` result,
//! its requests waiting for the client, and coalesced `tools/list` refreshes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{OnceLock, RwLock};
use std::time::Duration;

use serde_json::Value;

use super::{coalesce, handshake, server_requests, ServerEra};
use crate::rpc::{CallError, Peer, ResultBody};
use crate::transport::Outbox;
use crate::wire::jsonrpc;

/// One running connection to a server.
#[derive(Debug)]
pub struct Connection {
    peer: Peer,
    /// Its requests to the client still waiting for an answer.
    pub(super) server_requests: server_requests::ServerRequests,
    /// `tools/list` refreshes asked for by `notifications/tools/list_changed`.
    pub(super) tools_refresh: coalesce::Coalescer,
    /// The server's `initialize` result (`serverInfo`, `capabilities`, `protocolVersion`), or
    /// for a modern server its `server/discover` result (`capabilities`, `supportedVersions`).
    pub initialize_result: RwLock<Value>,
    /// The era the server speaks, once [`handshake::open`] found it.
    pub(super) era: OnceLock<ServerEra>,
    /// Set once the handshake is done and the server serves calls.
    serving: AtomicBool,
    /// Requests sent through [`super::Downstream::request`] and not answered yet.
    pub(super) in_flight: super::retire::InFlight,
    /// How many times a remote server forgot our session and a new one replaced it.
    renewals: AtomicU64,
}

impl Connection {
    /// A connection to server `server` whose lines go to `outbox`; what the server sends that
    /// is logged passes through `redactor` (see [`Peer::with_redactor`]).
    pub fn new(server: &str, outbox: Outbox, redactor: crate::redact::Redactor) -> Connection {
        Connection {
            peer: Peer::new(server, outbox).with_redactor(redactor),
            server_requests: Default::default(),
            tools_refresh: Default::default(),
            initialize_result: RwLock::new(Value::Null),
            era: OnceLock::new(),
            serving: AtomicBool::new(false),
            in_flight: Default::default(),
            renewals: AtomicU64::new(0),
        }
    }

    /// How many times the session behind this connection was replaced by a new one (a remote
    /// server that restarted while the proxy was idle forgot it): the server then knows
    /// nothing of what the proxy set up before (logging level, subscriptions).
    pub fn renewals(&self) -> u64 {
        self.renewals.load(Ordering::Acquire)
    }

    /// Counts one more replaced session ([`Connection::renewals`]).
    pub(super) fn renewed(&self) {
        self.renewals.fetch_add(1, Ordering::AcqRel);
    }

    /// Marks the handshake done: from now on the server serves calls.
    pub(super) fn set_serving(&self) {
        self.serving.store(true, Ordering::Release);
    }

    /// Whether the handshake is done ([`Connection::set_serving`]).
    pub(super) fn is_serving(&self) -> bool {
        self.serving.load(Ordering::Acquire)
    }

    /// The JSON-RPC peer underneath.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The server's config name.
    pub fn server(&self) -> &str {
        self.peer.name()
    }

    /// The era the server speaks (`None` during the handshake).
    pub fn era(&self) -> Option<&ServerEra> {
        self.era.get()
    }

    /// Whether the child behind this connection has gone away (or the session was lost).
    pub fn is_closed(&self) -> bool {
        self.peer.is_closed()
    }

    /// Sends a request and waits up to `timeout` for its answer, parsed. See
    /// [`Peer::request`] for `on_sent` and the cancellation sent on timeout.
    pub async fn request(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
        on_sent: &mut (dyn FnMut(u64) + Send),
    ) -> Result<Result<Value, Value>, CallError> {
        match self
            .request_body(method, params, timeout, on_sent, false)
            .await?
        {
            Ok(body) => body.into_result().await,
            Err(error) => Ok(Err(error)),
        }
    }

    /// Like [`Connection::request`], but a large `result` may come back unparsed
    /// ([`ResultBody::Raw`]); with `raw`, a successful one of any size does. The params get the era's `_meta` ([`handshake::prepare_params`];
    /// written straight from `params` for either era, see `stamped.rs`).
    pub async fn request_body(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
        on_sent: &mut (dyn FnMut(u64) + Send),
        raw: bool,
    ) -> Result<Result<ResultBody, Value>, CallError> {
        self.send(method, params, timeout, on_sent, raw).await
    }

    /// [`Connection::request_body`] whose successful answer comes back unparsed whatever its
    /// size ([`crate::rpc::Peer::request_by`] with `raw`): for `tools/list` pages.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
    ) -> Result<Result<ResultBody, Value>, CallError> {
        self.send(method, params, timeout, &mut |_| {}, true).await
    }

    /// The request's line for the server's era, sent ([`crate::rpc::Peer::request_by`]).
    async fn send(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
        on_sent: &mut (dyn FnMut(u64) + Send),
        raw: bool,
    ) -> Result<Result<ResultBody, Value>, CallError> {
        let line = |id: u64| match self.era() {
            Some(ServerEra::Modern(stamp)) => {
                let stamped = super::stamped::Stamped { params, stamp };
                jsonrpc::request_line_of(&id, method, Some(&stamped), params)
            }
            Some(ServerEra::Legacy { .. }) => {
                let stripped = params.map(super::stamped::Stripped);
                jsonrpc::request_line_of(&id, method, stripped.as_ref(), params)
            }
            None => jsonrpc::request_line(&id, method, params),
        };
        self.peer.request_by(line, timeout, on_sent, raw).await
    }

    /// Queues a notification for the server unless its era does not have it; dropped (with a
    /// log line) if the server is gone or its queue is full.
    pub fn notify(&self, method: &str, params: Option<Value>) {
        if handshake::notification_allowed(self.era(), method) {
            self.peer.notify(method, params);
        }
    }
}
