//! Requests for a resource, a prompt or a completion of a server that is down (still starting,
//! restarting, or `unavailable` after it gave up): the answer names that server and why it is
//! down ([`crate::availability::down_servers`]), as a `tools/call` of its tools does, instead of
//! a bare "not found" or an answer from another server.
//!
//! What a down server owns is what it listed while it was up: the URIs and URI templates of
//! its resources ([`super::resources::Index`] keeps them after it gives up) and the names its
//! prompts were exposed under ([`DownPrompts`]). A server that never listed them owns nothing
//! known, and a request for an unknown URI or name is answered as before.
//!
//! The error keeps the code of the method's "not found" answer, so that a client that checks
//! codes is not surprised: -32002 (resource not found, MCP 2025-11-25 "Resources: Error
//! Handling") for `resources/read` and `resources/subscribe`, -32602 (invalid params) for
//! `prompts/get` and `completion/complete`; `data` holds `server` and `reason` besides the
//! `uri` (or `name`). A `resources/unsubscribe` of a down server's URI succeeds at once: the
//! proxy drops its record (the server is not subscribed again when it is back), and a server
//! that is down holds no subscription to undo.

use std::collections::HashMap;

use jsonrpc_core::ErrorCode;
use serde_json::{json, Value};

use super::Upstream;
use crate::availability::{down_servers, Down};
use crate::downstream::{Downstream, ServerState};
use crate::jsonrpc;

/// Whether `ds` is up: ready on a connection that is still open.
pub fn is_up(ds: &Downstream) -> bool {
    matches!(ds.state(), ServerState::Ready(conn) if !conn.is_closed())
}

/// The server named `server` when it is down, with why; `None` when it is up or unknown.
pub fn down(up: &Upstream<'_>, server: &str) -> Option<Down> {
    down_servers(&up.servers)
        .into_iter()
        .find(|d| d.name == server)
}

/// The names of the servers that are down now, in config order.
pub fn down_names(up: &Upstream<'_>) -> Vec<String> {
    down_servers(&up.servers)
        .into_iter()
        .map(|d| d.name)
        .collect()
}

/// The error for a resource `uri` of the down server `d` (-32002, see the module doc).
pub fn resource_error(uri: &str, d: &Down) -> Value {
    jsonrpc::error_object(
        ErrorCode::ServerError(super::RESOURCE_NOT_FOUND),
        format!(
            "Resource not available: {uri} belongs to server '{}', which is down ({})",
            d.name, d.why
        ),
        Some(json!({ "uri": uri, "server": d.name, "reason": d.why })),
    )
}

/// The error for a prompt (as the client names it) of the down server `d` (-32602).
pub fn prompt_error(name: &str, d: &Down) -> Value {
    jsonrpc::error_object(
        ErrorCode::InvalidParams,
        format!(
            "Prompt not available: {name} belongs to server '{}', which is down ({})",
            d.name, d.why
        ),
        Some(json!({ "name": name, "server": d.name, "reason": d.why })),
    )
}

/// The error for a `completion/complete` whose resource template `uri` belongs to the down
/// server `d` (-32602).
pub fn template_error(uri: &str, d: &Down) -> Value {
    jsonrpc::error_object(
        ErrorCode::InvalidParams,
        format!(
            "Resource template not available: {uri} belongs to server '{}', which is down ({})",
            d.name, d.why
        ),
        Some(json!({ "uri": uri, "server": d.name, "reason": d.why })),
    )
}

/// Waits for `ds` (down) to be up again within its `tool_timeout_sec`: `Ok` once it is, else
/// `Err` with why it is still down.
pub async fn wait_back(up: &Upstream<'_>, ds: &Downstream) -> Result<(), Down> {
    if is_up(ds) {
        return Ok(());
    }
    let timeout = up.config.tool_settings(ds.name(), "").tool_timeout.value;
    let _ = ds.wait_ready(tokio::time::Instant::now() + timeout).await;
    if is_up(ds) {
        return Ok(());
    }
    Err(down(up, ds.name()).unwrap_or_else(|| Down {
        name: ds.name().to_owned(),
        why: "stopped".to_owned(),
    }))
}

/// The prompts of servers that gave up: each name the client knew them by, and the server.
#[derive(Debug, Default)]
pub struct DownPrompts {
    owners: HashMap<String, String>,
}

impl DownPrompts {
    /// Remembers that `names` (exposed names) were the prompts of `server`, which gave up.
    pub fn remember(&mut self, server: &str, names: impl IntoIterator<Item = String>) {
        for name in names {
            self.owners.insert(name, server.to_owned());
        }
    }

    /// Forgets the prompts of `server` (it is up again and listed them anew).
    pub fn back(&mut self, server: &str) {
        self.owners.retain(|_, s| s != server);
    }

    /// The server that gave up whose prompt was exposed as `name`.
    pub fn owner(&self, name: &str) -> Option<&str> {
        self.owners.get(name).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_server_and_why() {
        let d = Down {
            name: "fx".into(),
            why: "unavailable: gave up".into(),
        };
        let e = resource_error("a://1", &d);
        assert_eq!(e["code"], -32002);
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("server 'fx'") && message.contains("gave up"),
            "{e}"
        );
        assert_eq!(
            e["data"],
            json!({"uri": "a://1", "server": "fx", "reason": "unavailable: gave up"})
        );
        assert_eq!(prompt_error("fx_greet", &d)["code"], -32602);
        assert_eq!(template_error("a://{x}", &d)["data"]["server"], "fx");
    }

    #[test]
    fn down_prompts_are_forgotten_when_the_server_is_back() {
        let mut p = DownPrompts::default();
        p.remember("fx", ["fx_greet".to_owned()]);
        p.remember("fy", ["fy_greet".to_owned()]);
        assert_eq!(p.owner("fx_greet"), Some("fx"));
        p.back("fx");
        assert_eq!(p.owner("fx_greet"), None);
        assert_eq!(p.owner("fy_greet"), Some("fy"));
    }
}
