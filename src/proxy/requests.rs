//! A session's answers to its client's requests: `initialize` (MCP "Lifecycle"), the first
//! steps of an MCP 2026-07-28 request (`server/discover`, `subscriptions/listen`), `ping`,
//! `tools/list`, `tools/call`, and the passthrough methods.

use std::sync::Arc;

use jsonrpc_core::ErrorCode;
use serde_json::{json, Value};
use tracing::info;

use super::call_params::Malformed;
use super::calls::{CallRequest, CallSummary, NotEnveloped};
use super::dispatch::invalid_request;
use super::session::Session;
use super::{init_params, negotiate_version, DownstreamSlot, LATEST_PROTOCOL_VERSION};
use crate::downstream::ClientInit;
use crate::era::RequestMeta;
use crate::jsonrpc;

/// See [`Session::admit`].
#[derive(Debug, Clone)]
pub(super) struct Admission {
    pub initialized: bool,
    pub key: Option<u64>,
    /// The request's per-request fields when it is an MCP 2026-07-28 request.
    pub modern: Option<Arc<RequestMeta>>,
}

/// A response ready to be sent: its JSON text (without the newline) and, for a `tools/call`,
/// the call's log line, written once the response is queued; `stamped` when its result already
/// carries what an MCP 2026-07-28 result needs ([`crate::era::stamp_result`]).
pub(super) struct Answer {
    pub json: Vec<u8>,
    pub call: Option<CallSummary>,
    pub stamped: bool,
}

impl Answer {
    pub(super) fn of(message: &Value) -> Answer {
        Answer {
            json: serde_json::to_vec(message).expect("a JSON value always serializes"),
            call: None,
            stamped: false,
        }
    }
}

impl Session {
    /// Decides, in the order requests are fed, whether a request came after `initialize` and
    /// which key (start order among the calls in flight) a `tools/call` gets; the request's own
    /// task may run later. A client that sends requests after `initialize` has finished
    /// initializing, even if it never sent `notifications/initialized`.
    fn admit(&self, method: &str) -> Admission {
        let initialized = self.protocol_version.get().is_some();
        if initialized {
            self.mark_client_ready();
        }
        let key = (method == "tools/call").then(|| self.core.next_key());
        Admission {
            initialized,
            key,
            modern: None,
        }
    }

    /// Waits for a free request slot (backpressure: feeding waits meanwhile), then admits
    /// the request (see [`Session::admit`]).
    pub(super) async fn admit_when_free(
        &self,
        method: &str,
    ) -> (tokio::sync::OwnedSemaphorePermit, Admission) {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the request semaphore is never closed");
        (permit, self.admit(method))
    }

    /// Answers one request (other than `initialize`) with a whole JSON-RPC response.
    pub(super) async fn handle_request(
        self: &Arc<Self>,
        id: Value,
        method: &str,
        params: Option<Value>,
        slot: DownstreamSlot,
        admission: Admission,
    ) -> Answer {
        if let Some(err) = self.refused_before_handling(method, params.as_ref(), &admission) {
            if method != "tools/call" {
                return Answer::of(&jsonrpc::error_response(id, err));
            }
            // Recorded, as any call the proxy refuses itself.
            let refusal = Malformed::of(err, params);
            let err = self.core.refuse_malformed(&id, admission.key, refusal);
            return Answer::of(&jsonrpc::error_response(id, err));
        }
        if method == "ping" {
            return Answer::of(&jsonrpc::response(id, json!({})));
        }
        // Tests only: a request whose handling panics (`dispatch::panicked` answers it).
        #[cfg(test)]
        if method == "mcp-envelope/test-panic" {
            panic!("a panic made by a test");
        }
        match method {
            "tools/list" => match crate::passthrough::check_cursor(params.as_ref()) {
                Ok(()) => {
                    let modern = admission.modern.is_some();
                    Answer {
                        json: self.core.tools_list_response(&id, self.pager(), modern),
                        call: None,
                        stamped: modern,
                    }
                }
                Err(err) => Answer::of(&jsonrpc::error_response(id, err)),
            },
            "tools/call" => {
                let modern = admission.modern.is_some();
                let call = CallRequest {
                    id: &id,
                    params,
                    slot,
                    key: admission.key,
                    modern: admission.modern.as_ref(),
                    session: Some(self),
                };
                // Boxed, as are the other paths' larger futures below: see `answer_request`.
                match Box::pin(self.core.call_tool_mapped(call)).await {
                    Ok((mut mapped, summary)) => {
                        self.fit_media_to_version(&mut mapped);
                        // A 2026-07-28 answer is stamped as it is written, not parsed again.
                        let json = match modern {
                            true => mapped.stamped_response_json(&id),
                            false => mapped.response_json(&id),
                        };
                        Answer {
                            json,
                            call: Some(summary),
                            stamped: modern,
                        }
                    }
                    Err(NotEnveloped::Error(err)) => Answer::of(&jsonrpc::error_response(id, err)),
                    Err(NotEnveloped::Result(r)) => Answer::of(&jsonrpc::response(id, r)),
                }
            }
            _ => {
                let legacy = admission.modern.is_none();
                Box::pin(self.passthrough(id, method, params, &slot, legacy)).await
            }
        }
    }

    /// The JSON-RPC error object a request is refused with before it is handled, whatever
    /// its method: [`Session::refusal`], params sent as an array (JSON-RPC 2.0 allows them; MCP
    /// requests take an object), a `_meta` of the wrong shape ([`jsonrpc::meta_error`]).
    pub(super) fn refused_before_handling(
        &self,
        method: &str,
        params: Option<&Value>,
        admission: &Admission,
    ) -> Option<Value> {
        self.refusal(method, admission)
            .or_else(|| jsonrpc::positional_params_error(method, params))
            .or_else(|| jsonrpc::meta_error(params))
    }

    /// Keeps a legacy client's answer to the content types of the protocol version it
    /// negotiated: for a 2024-11-05 client, audio blocks become text saying what they were
    /// ([`envelope_core::mapping::audio_as_text`]); the envelope is the same for every client.
    fn fit_media_to_version(&self, mapped: &mut envelope_core::mapping::Mapped) {
        use envelope_core::mapping::{audio_as_text, audio_content_allowed};
        if let Some(version) = self
            .protocol_version()
            .filter(|v| !audio_content_allowed(v))
        {
            audio_as_text(&mut mapped.media, version);
        }
    }

    /// Why a request cannot be handled yet, as a JSON-RPC error object:
    /// - a 2026-07-28 request (with its `_meta`) for a method that revision removed (`ping`,
    ///   `logging/setLevel`, `resources/subscribe`, ...): -32601 (MCP 2026-07-28 "Key Changes",
    ///   major change 5);
    /// - once the client spoke 2026-07-28 in a session it opened no legacy session in, any
    ///   request without its `_meta`, `ping` as much as `tools/list`: -32602 (MCP 2026-07-28
    ///   "Base Protocol: General fields, `_meta`, Per-request protocol fields": a request
    ///   missing a required field is malformed and the server MUST reject it with -32602;
    ///   "Versioning and Compatibility": a version it does not speak gets -32022). `ping` is
    ///   exempt from nothing there: the revision has no `ping` at all;
    /// - before `initialize`, any request but `ping` (MCP 2025-11-25 "Lifecycle:
    ///   Initialization": a client sends nothing but pings before `initialize` is answered):
    ///   -32600.
    fn refusal(&self, method: &str, admission: &Admission) -> Option<Value> {
        if let Some(err) = admission
            .modern
            .as_ref()
            .and_then(|_| crate::modern::removed_method(method))
        {
            return Some(err);
        }
        if admission.initialized {
            return None;
        }
        if self.listeners.seen() {
            // A client that spoke MCP 2026-07-28 sent a request without its `_meta`.
            return Some(crate::era::parse_meta(None).expect_err("no `_meta` is never valid"));
        }
        if method == "ping" {
            return None;
        }
        Some(invalid_request(format!(
            "not initialized: send `initialize` before `{method}`"
        )))
    }

    /// Resources, prompts, completion, logging ([`crate::passthrough`]); -32601 for anything
    /// else. `legacy`: a request of the session `initialize` opened, whose results carry
    /// nothing only MCP 2026-07-28 defines ([`crate::passthrough::Upstream::legacy_client`]),
    /// and whose client is asked a 2026-07-28 server's input requests
    /// ([`crate::passthrough::input_rounds`]).
    async fn passthrough(
        self: &Arc<Self>,
        id: Value,
        method: &str,
        params: Option<Value>,
        slot: &DownstreamSlot,
        legacy: bool,
    ) -> Answer {
        let mut up = self.core.upstream(Some(slot));
        up.legacy_client = legacy;
        if legacy {
            let input = super::client_requests::SessionInput(self.clone());
            up.client_input = Some(Arc::new(input));
        }
        let mut answer = self.resource_subscription(&up, method, &params).await;
        if answer.is_none() {
            answer = self.set_log_level(&up, method, &params).await;
        }
        if answer.is_none() {
            answer = self.core.passthrough.handle(&up, method, params).await;
        }
        if let Some(answer) = answer {
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

    /// `initialize`: checks its params ([`init_params::check`]: -32602 naming what is wrong,
    /// and nothing started), negotiates the version, starts the servers (unless running) and
    /// answers with our capabilities and instructions.
    pub(super) async fn initialize(self: &Arc<Self>, id: &Value, params: Option<Value>) -> Value {
        if self.protocol_version.get().is_some() {
            let err = invalid_request("already initialized: `initialize` may be sent only once");
            return jsonrpc::error_response(id.clone(), err);
        }
        let checked = match init_params::check(params.as_ref()) {
            Ok(checked) => checked,
            Err(err) => return jsonrpc::error_response(id.clone(), err),
        };
        let version = negotiate_version(Some(checked.protocol_version));
        if self.protocol_version.set(version).is_err() {
            let err = invalid_request("already initialized");
            return jsonrpc::error_response(id.clone(), err);
        }
        let capabilities = checked.capabilities.clone();
        let _ = self.legacy_capabilities.set(capabilities.clone());
        let client_info = checked.client_info.clone();
        info!(protocol_version = version, client = %client_info, "client initialize");
        self.core
            .start_servers(ClientInit {
                protocol_version: version.to_owned(),
                capabilities,
                client_info,
            })
            .await;
        let capabilities = self.core.capabilities();
        let text = self.core.instructions();
        self.warn_client_about(crate::availability::down_servers(&self.core.servers()));
        let result = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": crate::era::server_info(),
            "instructions": text,
        });
        jsonrpc::response(id.clone(), result)
    }

    /// The first steps of a modern request, in the order requests are fed: the servers are
    /// started on the first one (with its capabilities and clientInfo) unless running;
    /// `server/discover` and `subscriptions/listen` are answered here (returns `true`),
    /// everything else goes on to the ordinary request path.
    pub(super) async fn modern_request(
        self: &Arc<Self>,
        id: &Value,
        method: &str,
        params: Option<&Value>,
        meta: &RequestMeta,
    ) -> bool {
        self.listeners.mark_seen();
        if !self.core.servers_started() {
            info!(protocol_version = %meta.protocol_version, client = ?meta.client_info, "first modern request");
            let client_info = meta.client_info.clone();
            self.core
                .start_servers(ClientInit {
                    protocol_version: LATEST_PROTOCOL_VERSION.to_owned(),
                    capabilities: meta.capabilities.clone(),
                    client_info: client_info
                        .unwrap_or_else(|| json!({"name": "unknown-client", "version": "0"})),
                })
                .await;
        }
        // What we declare is fixed once the first start settled, as for `initialize`; by the
        // first modern request, also when the servers started before any client came (`serve
        // --http`): a 2026-07-28 client whose first request was `prompts/list` was told no
        // server offers prompts until some client sent `server/discover` (fresh-user test).
        if !self.core.passthrough.is_declared() {
            self.core.capabilities();
        }
        match method {
            "server/discover" => {
                let core = &self.core;
                let result =
                    crate::modern::discover_result(core.capabilities(), &core.instructions());
                self.send(&jsonrpc::response(id.clone(), result)).await;
                true
            }
            "subscriptions/listen" => {
                let declared = self.core.capabilities();
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
}
