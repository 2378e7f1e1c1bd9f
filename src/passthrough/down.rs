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
//! A request that no server up answers, and that no server that is down is known to own (it
//! never listed what it owns, or nobody asked it to), may still be for a server that is down:
//! the "not found" error then names the servers that are down and might own it, with why
//! ([`servers_down`], [`note`]; `data.servers_down` holds `{"server", "reason"}` for each),
//! as a `tools/call` of an unknown name names them (`no_such_tool`'s `servers_down`).
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

/// The servers that are down now and might own what a request asks for (`could_own(name)`), in
/// config order, with why; then those of `not_ready` (servers waited for that were still not
/// ready, [`Upstream::wait_settling`]) that are not down by now but `could_own`, as `not ready`.
pub fn servers_down(
    up: &Upstream<'_>,
    not_ready: &[String],
    could_own: impl Fn(&str) -> bool,
) -> Vec<Down> {
    let mut down: Vec<Down> = down_servers(&up.servers);
    for name in not_ready {
        if !down.iter().any(|d| d.name == *name) {
            let why = "not ready".to_owned();
            down.push(Down {
                name: name.clone(),
                why,
            });
        }
    }
    down.retain(|d| could_own(&d.name));
    down
}

/// At most this many servers are named in a message ([`note`]); `data.servers_down` has all.
pub const SHOWN: usize = 3;

/// The end of a "not found" message when `down` (see [`servers_down`]) might own what was asked
/// for, `what` being that kind of thing in the plural: `" (server 'a' is down (unavailable:
/// …), so its prompts are not known)"`, `" (servers 'a' (…), 'b' (…) are down, so their
/// resources are not known)"` (at most [`SHOWN`], then `and N more`); empty for none.
pub fn note(down: &[Down], what: &str) -> String {
    if let [d] = down {
        let (name, why) = (&d.name, &d.why);
        return format!(" (server '{name}' is down ({why}), so its {what} are not known)");
    }
    let each = down.iter().map(|d| format!("'{}' ({})", d.name, d.why));
    let named = crate::availability::at_most(each.collect(), SHOWN).join(", ");
    match down {
        [] => String::new(),
        _ => format!(" (servers {named} are down, so their {what} are not known)"),
    }
}

/// `data` of a "not found" error (`data`, an object or null) with `servers_down` added: each
/// of `down` as `{"server", "reason"}`; unchanged when `down` is empty.
pub fn with_servers_down(data: Option<Value>, down: &[Down]) -> Option<Value> {
    if down.is_empty() {
        return data;
    }
    let each: Vec<Value> = down
        .iter()
        .map(|d| json!({ "server": d.name, "reason": d.why }))
        .collect();
    let mut data = data.unwrap_or_else(|| json!({}));
    data["servers_down"] = Value::Array(each);
    Some(data)
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
    fn the_note_names_the_servers_down_that_might_own_it() {
        let down = |names: &[&str]| -> Vec<Down> {
            let each = names.iter().map(|n| Down {
                name: (*n).to_owned(),
                why: format!("why {n}"),
            });
            each.collect()
        };
        assert_eq!(note(&[], "prompts"), "");
        let one = note(&down(&["a"]), "prompts");
        assert_eq!(
            one,
            " (server 'a' is down (why a), so its prompts are not known)"
        );
        let two = note(&down(&["a", "b"]), "resources");
        let expected =
            " (servers 'a' (why a), 'b' (why b) are down, so their resources are not known)";
        assert_eq!(two, expected);
        let five = note(&down(&["a", "b", "c", "d", "e"]), "prompts");
        assert!(five.contains("'c' (why c), and 2 more are down"), "{five}");
        assert_eq!(with_servers_down(None, &[]), None);
        let data = with_servers_down(Some(json!({"uri": "u"})), &down(&["a"]));
        let expected = json!({"uri": "u", "servers_down": [{"server": "a", "reason": "why a"}]});
        assert_eq!(data, Some(expected));
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
