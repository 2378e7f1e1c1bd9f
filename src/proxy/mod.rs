//! The proxy: one shared [`Core`] (servers, catalog, config, transcript, paging store, routing,
//! the `tools/call` path) and one [`Session`] per connected client (negotiated protocol era,
//! in-flight ids, cancellation, server-to-client requests under ids of its own, its output
//! queue). [`serve`] runs one core and one session over our stdin/stdout; an HTTP server opens a
//! session per client over the same core.
//!
//! Each session dispatches the messages it is fed; every request is answered by its own task
//! (so a slow tool never blocks another) whose response goes to the session's output queue.
//! Downstream servers report notifications, server-to-client requests and tool-list changes
//! through one event channel to the core, which routes them to sessions (`events.rs`).
//!
//! Protocol behaviour (MCP specification 2025-06-18 and 2025-11-25, "Lifecycle", "Tools",
//! "Utilities: Cancellation, Ping, Progress"; JSON-RPC 2.0 for errors and batches):
//! - `initialize` whose params lack a member `InitializeRequestParams` requires is -32602
//!   (`init_params.rs`, also run by the HTTP endpoint before it opens a session);
//! - `initialize` starts every enabled server in parallel (once per core: later sessions find
//!   them running), waits for each up to its `startup_timeout_sec`, and answers with our
//!   serverInfo, the negotiated protocolVersion, `tools.listChanged: true` plus the capabilities
//!   [`crate::passthrough`] proxies, and the servers' instructions; a second `initialize` in
//!   a session is an error; other requests before it (except `ping`) are errors;
//! - resources, prompts, completion and logging requests go to [`crate::passthrough`], and
//!   server notifications pass through its filter (nothing for a capability not declared);
//! - `tools/list` answers the merged catalog in one page (a `cursor` is -32602);
//!   `tools/call` is routed, forwarded with its arguments and `_meta`, and answered with the
//!   envelope ([`crate::outcome`]), except the URL-elicitation-required error (-32042), which
//!   the client gets as that JSON-RPC error;
//! - requests of MCP 2026-07-28 (per-request `_meta`, see [`crate::era`]) need no
//!   `initialize`: the first one starts the servers (unless running), `server/discover` and
//!   `subscriptions/listen` are answered with [`crate::modern`], every other one takes the same
//!   path as in a legacy session and its result is stamped with `resultType` (and the caching
//!   hints where the 2026-07-28 schema requires them); list changes go to legacy sessions
//!   and to the listen streams that asked for them;
//! - input a server needs from the client during a `tools/call` (sampling, elicitation, roots)
//!   crosses the eras in `multi_round.rs`: `input_required` rounds for modern clients, ordinary
//!   server-to-client requests for legacy ones;
//! - unknown methods get -32601, lines that are not JSON -32700 with id null, invalid requests
//!   -32600, a request whose id is still in flight in its session -32600 (the first is not
//!   disturbed);
//! - `notifications/cancelled` from the client is forwarded downstream with the mapped id and
//!   the cancelled request is answered by nobody;
//! - server-to-client requests are forwarded to a client under fresh ids and the answers routed
//!   back (`client_requests.rs`); notifications pass through.

use std::time::Duration;

use serde_json::Value;

mod call_params;
mod calls;
mod calls_in_flight;
mod cancelled_progress;
mod catalog_inputs;
mod client_requests;
mod core;
mod dispatch;
mod events;
mod first_parts;
mod init_gate;
pub(crate) mod init_params;
mod input_failed;
mod log_levels;
mod multi_round;
mod paging_hooks;
mod reload;
mod requests;
mod round_events;
mod session;
mod stdio;
mod subscriptions;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_future_sizes;
mod tools_list;
mod unanswered;
mod unrouted;

pub use self::core::Core;
pub use self::session::SessionOutput;
pub use self::stdio::serve;
pub use crate::passthrough::DownstreamSlot;

/// Protocol versions we speak, oldest first (MCP specification revisions).
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The start of our `instructions`; each server's own follow under its name.
pub const OUR_INSTRUCTIONS: &str = "Every tool result is a JSON envelope {call_id, tool, status, content, omitted, retryable}; status is ok, truncated (omitted rows were left out to fit the budget) or error (retryable says whether retrying could help).";
/// The version we answer with when the client asks for one we do not know.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";
/// Most requests of one session handled at once; feeding it waits beyond that (backpressure).
pub const MAX_CONCURRENT_REQUESTS: usize = 1024;
/// Suggested capacity of a session's output queue (lines waiting for the client); when it is
/// full, request tasks wait (backpressure).
pub const OUTPUT_QUEUE: usize = 256;
/// How long in-flight requests get to finish when a session closes (stdin closed, a signal).
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
        other => id_key(other),
    }
}

/// The key of a JSON-RPC id in the tables of requests in flight: its JSON text (`7`, `"7"`:
/// a string id and a number id never share a key). A number is its text as received
/// (serde_json keeps it: `envelope_core::numbers`), copied without the serializer (about 400
/// instructions less per request; callgrind, 2026-12-02).
pub fn id_key(id: &Value) -> String {
    match id {
        Value::Number(n) => n.as_str().to_owned(),
        _ => id.to_string(),
    }
}

#[cfg(test)]
mod id_key_tests {
    use super::{call_id_of, id_key};
    use serde_json::json;

    #[test]
    fn an_ids_key_is_its_json_text_and_a_call_id_its_plain_text() {
        for id in [
            json!(0),
            json!(7),
            json!(u64::MAX),
            json!(-3),
            json!(1.5),
            json!("7"),
            json!("a\"b"),
            json!(null),
        ] {
            assert_eq!(id_key(&id), id.to_string(), "{id}");
        }
        assert_ne!(id_key(&json!(7)), id_key(&json!("7")));
        assert_eq!(call_id_of(&json!(42)), "42");
        assert_eq!(call_id_of(&json!("42")), "42");
    }
}
