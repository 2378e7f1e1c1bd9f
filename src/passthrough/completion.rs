//! `completion/complete` routed by its `ref` (MCP specification 2025-11-25, "Utilities:
//! Completion").
//!
//! - `ref/prompt`: the prompt's exposed name is routed like `prompts/get` and sent with the
//!   server's own name;
//! - `ref/resource`: the `uri` (a URI template) goes to the server that listed that template
//!   (else one that listed that exact URI); when no server did, to every server that offers
//!   completions and resources at once ([`super::fan_out`]: slow servers cost the longest
//!   `tool_timeout_sec`, not their sum): the answer of the first in config order that accepts,
//!   once every one before it refused, else the last one's refusal.
//!
//! A server that owns the ref but does not offer completions gets no request: the answer is an
//! empty completion (`{"completion": {"values": [], "hasMore": false}}`). An unknown prompt name
//! or template, or another `ref.type`, is -32602. The server's answer passes through unchanged.
//! A ref whose server is down is waited for while it (re)starts, and is otherwise -32602 naming
//! that server and why ([`super::down`]); it never goes to another server. A ref no server up
//! answers while servers are down is -32602 naming those that might own it, with why, in the
//! message and `data.servers_down` (for `ref/resource`: every server down, and the proxy's
//! "Unknown resource template" rather than the last server's refusal).

use jsonrpc_core::ErrorCode;
use serde_json::{json, Value};

use super::fan_out::{first_taken, Asked, Verdict};
use super::{server_capabilities, Passthrough, Upstream};
use crate::downstream::Downstream;
use crate::jsonrpc;

/// The answer when the owner of a ref offers no completions.
pub fn empty_completion() -> Value {
    json!({ "completion": { "values": [], "hasMore": false } })
}

fn offers_completions(ds: &Downstream) -> bool {
    server_capabilities(ds).is_some_and(|c| c.get("completions").is_some_and(|v| !v.is_null()))
}

impl Passthrough {
    pub(super) async fn complete(
        &self,
        up: &Upstream<'_>,
        mut params: Value,
    ) -> Result<Value, Value> {
        let invalid = |m: String| jsonrpc::error_object(ErrorCode::InvalidParams, m, None);
        if let Some(err) = super::param_shapes::completion_params_error(&params) {
            return Err(err);
        }
        let kind = params
            .pointer("/ref/type")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match kind.as_deref() {
            Some("ref/prompt") => {
                let Some(name) = params
                    .pointer("/ref/name")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                else {
                    return Err(invalid("`ref.name` must be a string".into()));
                };
                let route = self.prompt_route(up, &name).await?;
                let Some(ds) = up.server(&route.server) else {
                    return Err(super::prompts::unknown_prompt(&name, &[]));
                };
                if !offers_completions(ds) {
                    return Ok(empty_completion());
                }
                params["ref"]["name"] = Value::from(&*route.tool);
                up.ask(ds, "completion/complete", &params).await
            }
            Some("ref/resource") => {
                let Some(uri) = params
                    .pointer("/ref/uri")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                else {
                    return Err(invalid("`ref.uri` must be a string".into()));
                };
                self.complete_resource(up, &uri, &params).await
            }
            _ => Err(invalid(
                "`ref.type` must be \"ref/prompt\" or \"ref/resource\"".into(),
            )),
        }
    }

    /// The server that is down and last listed template `uri` (else the URI `uri`), once it
    /// is back (waited for while it (re)starts, up to its `tool_timeout_sec`): `Ok(None)` when
    /// no server that is down listed it, `Err` naming the server when it is still down.
    async fn template_owner_down(
        &self,
        up: &Upstream<'_>,
        uri: &str,
    ) -> Result<Option<String>, Value> {
        let down = super::down::down_names(up);
        let owner = self
            .resources
            .lock()
            .unwrap()
            .template_owner_while_down(uri, &down);
        let Some(ds) = owner.as_deref().and_then(|o| up.server(o)) else {
            return Ok(None);
        };
        match super::down::wait_back(up, ds).await {
            Ok(()) => Ok(owner),
            Err(d) => Err(super::down::template_error(uri, &d)),
        }
    }

    async fn complete_resource(
        &self,
        up: &Upstream<'_>,
        uri: &str,
        params: &Value,
    ) -> Result<Value, Value> {
        let resource_servers = up.offering("resources");
        let order: Vec<&str> = resource_servers.iter().map(|ds| ds.name()).collect();
        let mut owner = self
            .resources
            .lock()
            .unwrap()
            .owner_of_template(uri, &order);
        if owner.is_none() {
            // The client may complete before listing templates: learn them now.
            let _ = self
                .list_resources(
                    up,
                    &json!({}),
                    "resources/templates/list",
                    "resourceTemplates",
                )
                .await;
            owner = self
                .resources
                .lock()
                .unwrap()
                .owner_of_template(uri, &order);
        }
        if owner.is_none() {
            owner = self.template_owner_down(up, uri).await?;
        }
        if let Some(ds) = owner.as_deref().and_then(|o| up.server(o)) {
            if !offers_completions(ds) {
                return Ok(empty_completion());
            }
            return up.ask(ds, "completion/complete", params).await;
        }
        // Asked of them all at once; the first in config order that answers wins.
        let completing = resource_servers
            .into_iter()
            .filter(|ds| offers_completions(ds));
        let servers: Vec<String> = completing.map(|ds| ds.name().to_owned()).collect();
        let method = "completion/complete";
        let asking =
            super::uri_routing::asking(up, &self.subscribed_on, method, params, uri, &servers);
        let answered = |_: usize, asked: &Asked| match asked.answer {
            Ok(_) => Verdict::Take,
            Err(_) => Verdict::Pass,
        };
        let fanned = first_taken(asking, answered).await;
        if let Some((_, asked)) = fanned.taken {
            return asked.answer;
        }
        let in_order = fanned.answered.into_iter().max_by_key(|(i, _)| *i);
        let last = in_order.and_then(|(_, asked)| asked.answer.err());
        // Any server that is down may own it: it is our answer then, naming them.
        let down = super::down::servers_down(up, &[], |_| true);
        match last {
            Some(error) if down.is_empty() => Err(error),
            _ => {
                let note = super::down::note(&down, "resource templates");
                let data = super::down::with_servers_down(Some(json!({ "uri": uri })), &down);
                let data = data.filter(|_| !down.is_empty());
                Err(jsonrpc::error_object(
                    ErrorCode::InvalidParams,
                    format!("Unknown resource template: {uri}{note}"),
                    data,
                ))
            }
        }
    }
}
