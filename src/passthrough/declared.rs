//! What the proxy declares to its client besides `tools`: each capability at least one ready
//! server offers (MCP 2025-11-25 "Lifecycle: Capability Negotiation"), fixed once decided.

use serde_json::{json, Value};

/// The capabilities we declared to the client besides `tools` (fixed at `initialize`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Declared {
    /// `resources` (with `listChanged`).
    pub resources: bool,
    /// `resources.subscribe`.
    pub subscribe: bool,
    /// `prompts` (with `listChanged`).
    pub prompts: bool,
    /// `completions`.
    pub completions: bool,
    /// `logging`.
    pub logging: bool,
}

impl Declared {
    /// What to declare given the `capabilities` objects of the ready servers (MCP
    /// `ServerCapabilities`): each one that at least one server offers.
    pub fn from_capabilities<'a>(servers: impl IntoIterator<Item = &'a Value>) -> Declared {
        let mut d = Declared::default();
        for caps in servers {
            let has = |key: &str| caps.get(key).is_some_and(|v| !v.is_null());
            d.resources |= has("resources");
            d.subscribe |= caps.pointer("/resources/subscribe") == Some(&Value::Bool(true));
            d.prompts |= has("prompts");
            d.completions |= has("completions");
            d.logging |= has("logging");
        }
        d
    }

    /// Our `capabilities` object for the `initialize` answer.
    pub fn to_value(self) -> Value {
        let mut caps = json!({ "tools": { "listChanged": true } });
        if self.resources {
            caps["resources"] = json!({ "subscribe": self.subscribe, "listChanged": true });
        }
        if self.prompts {
            caps["prompts"] = json!({ "listChanged": true });
        }
        if self.completions {
            caps["completions"] = json!({});
        }
        if self.logging {
            caps["logging"] = json!({});
        }
        caps
    }

    /// Whether a server notification may reach the client: those of the features above only
    /// when declared; tasks are never declared, so their notifications never pass; any other
    /// notification (progress, cancellation, elicitation completion, unknown ones) passes.
    pub fn allows(self, method: &str) -> bool {
        match method {
            "notifications/message" => self.logging,
            "notifications/resources/updated" => self.subscribe,
            "notifications/resources/list_changed" => self.resources,
            "notifications/prompts/list_changed" => self.prompts,
            m if m.starts_with("notifications/tasks/") => false,
            _ => true,
        }
    }
}
