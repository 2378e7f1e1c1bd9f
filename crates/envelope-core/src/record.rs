//! The transcript record: one `tools/call` as a transcript line ([`CallRecord`]), a server's
//! tool list ([`ToolListRecord`]), and what a record keeps out (argument and event values under
//! secret-looking keys, [`redact`]).
//!
//! Format (version [`FORMAT_VERSION`]; issue 4 of the project): one JSON object per line, the
//! fields of [`CallRecord`] in declaration order, the budget settings flat beside
//! `char_budget`. Writing the file (a writer thread, mode 0600, one `write` per line) and reading
//! it back are the main crate's; replay is [`crate::replay`].
//!
//! This module does no I/O.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::envelope::Envelope;
use crate::mapping::{MediaMode, Outcome};
use crate::settings::RecordedBudget;

/// The transcript format version written in every record's `v`.
pub const FORMAT_VERSION: u32 = 1;
/// What a redacted argument value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// One `tools/call` as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// Format version ([`FORMAT_VERSION`]).
    pub v: u32,
    /// When the call started: RFC 3339, UTC, milliseconds (`2026-11-30T03:48:18.123Z`).
    pub started_at: String,
    /// The record's number in this proxy run (0-based): the proxy's transcript writer numbers
    /// call records in the order they are made, which is the order the calls ended (a
    /// 2026-07-28 client's call that needed input is recorded once, when its last round is
    /// answered; its `input_required` rounds take no number). Every number is used: a missing
    /// one means records were dropped (the writer fell behind, which is logged). Transcripts
    /// written before numbered the calls in the order they started, leaving gaps.
    pub seq: u64,
    /// The envelope's `call_id` (the client's JSON-RPC id as a string).
    pub call_id: String,
    /// The tool name the client used.
    pub tool: String,
    /// The server's config name (`""` when no server had the tool).
    pub server: String,
    /// The tool's own name on that server.
    pub server_tool: String,
    /// The call's arguments, with secret keys redacted: an object (`{}` when the call had
    /// none), except in the record of a call the proxy refused ([`Outcome::Refused`]), which
    /// holds them as the client sent them, of any JSON type.
    pub arguments: Value,
    /// The char_budget in force (Unicode scalar values).
    pub char_budget: usize,
    /// The other budget settings in force (`token_budget`, `tokenizer`, `long_rows`, ...),
    /// written flat beside `char_budget`.
    #[serde(flatten)]
    pub budget: RecordedBudget,
    /// The tool timeout in force, in milliseconds.
    pub timeout_ms: u64,
    /// The media mode in force.
    #[serde(default)]
    pub media: MediaMode,
    /// The raw outcome exactly as received.
    pub outcome: Outcome,
    /// The envelope sent to the client.
    pub envelope: Envelope,
    /// How long the call took, in milliseconds.
    pub duration_ms: u64,
    /// Notifications and server-to-client requests (with their answers) that belonged to the
    /// call, in order; omitted when there were none. Each is `{"direction": "server_to_client" |
    /// "client_to_server" | "proxy_to_server", "message": <JSON-RPC message>}` (`proxy_to_server`:
    /// an error the proxy answered a server's request with itself).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
}

/// A server's tool list as the proxy saw it, recorded when the list is first seen and each time
/// it changes, so a recording can be served again without the server (`serve --cassette`).
///
/// One line `{"v":1,"kind":"tools","recorded_at":"<RFC 3339>","server":"git","tools":[<Tool>…]}`
/// with each tool definition as the server sent it. Call records have no `kind`; transcripts
/// written before tool lists were recorded have none of these lines and read as before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolListRecord {
    /// Format version ([`FORMAT_VERSION`]).
    pub v: u32,
    /// Always [`TOOL_LIST_KIND`].
    pub kind: String,
    /// When the list was seen: RFC 3339, UTC, milliseconds.
    pub recorded_at: String,
    /// The server's config name.
    pub server: String,
    /// The server's `tool_prefix` when the list was recorded (the member is absent when it was
    /// empty, and in transcripts written before it was recorded), so that a cassette served
    /// without the config offers the tools under the names the session gave them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_prefix: String,
    /// The server's tool definitions (MCP `Tool` objects), in the server's order.
    pub tools: Vec<Value>,
}

/// The `kind` of a [`ToolListRecord`] line.
pub const TOOL_LIST_KIND: &str = "tools";

/// Formats a time as RFC 3339 in UTC with milliseconds, e.g. `2026-11-30T03:48:18.123Z`
/// (humantime's RFC 3339 writer; a time before 1970 is written as 1970-01-01T00:00:00.000Z).
pub fn rfc3339_utc_millis(t: SystemTime) -> String {
    let t = t.max(UNIX_EPOCH);
    humantime::format_rfc3339_millis(t).to_string()
}

/// `key` lowercased without `_`, `-`, `.` and spaces: the form in which keys and patterns are
/// compared ([`key_matches`]).
pub fn normalize_key(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Protocol fields whose names end like a secret's but hold none, kept by [`key_matches`]
/// (compared exactly): `progressToken` (MCP specification 2025-11-25, "Utilities: Progress",
/// `_meta.progressToken` and `notifications/progress` params), an id the client chose.
pub const PROTOCOL_KEYS: [&str; 1] = ["progressToken"];

/// Whether `key` matches one of `patterns`: both [`normalize_key`]d, the pattern at the key's
/// start or end (with `api_key`, the keys `apiKey`, `x-api-key` and `API_KEY_2` match; with
/// `token`, `access_token` matches and `max_tokens` does not). An empty pattern matches nothing,
/// and so does nothing match a protocol field of [`PROTOCOL_KEYS`].
pub fn key_matches(key: &str, patterns: &[String]) -> bool {
    if PROTOCOL_KEYS.contains(&key) {
        return false;
    }
    let key = normalize_key(key);
    patterns.iter().any(|p| {
        let p = normalize_key(p);
        !p.is_empty() && (key.starts_with(&p) || key.ends_with(&p))
    })
}

/// Replaces the value of every key that matches one of `keys` ([`key_matches`]:
/// case-insensitive, ignoring `_`, `-`, `.` and spaces, at the key's start or end), at any
/// depth, with [`REDACTED`].
pub fn redact(value: &mut Value, keys: &[String]) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if key_matches(k, keys) {
                    *v = Value::from(REDACTED);
                } else {
                    redact(v, keys);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact(v, keys)),
        _ => {}
    }
}

impl CallRecord {
    /// The record with the budget settings beside `char_budget` that the call used.
    pub fn with_budget(mut self, budget: RecordedBudget) -> CallRecord {
        self.budget = budget;
        self
    }

    /// Builds a record; `arguments` and `events` are redacted with `redact_keys` here.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        started_at: SystemTime,
        seq: u64,
        call_id: &str,
        tool: &str,
        server: &str,
        server_tool: &str,
        mut arguments: Value,
        redact_keys: &[String],
        char_budget: usize,
        timeout: Duration,
        media: MediaMode,
        outcome: Outcome,
        envelope: Envelope,
        duration: Duration,
        events: Vec<Value>,
    ) -> CallRecord {
        redact(&mut arguments, redact_keys);
        let mut events = events;
        // Elicitation answers and sampling requests can carry secrets too.
        events.iter_mut().for_each(|e| redact(e, redact_keys));
        CallRecord {
            v: FORMAT_VERSION,
            started_at: rfc3339_utc_millis(started_at),
            seq,
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            server: server.to_owned(),
            server_tool: server_tool.to_owned(),
            arguments,
            char_budget,
            budget: RecordedBudget::default(),
            timeout_ms: timeout.as_millis() as u64,
            media,
            outcome,
            envelope,
            duration_ms: duration.as_millis() as u64,
            events,
        }
    }
}

/// Test support: a record of `tool` on server `git` (call id `"1"`, the given `arguments`)
/// whose envelope is `outcome` mapped at `char_budget` characters with whole lines kept, as a
/// character-budgeted call would have recorded it.
///
/// Built only for tests (this crate's, and the main crate's through the `test-support`
/// feature its dev-dependency turns on).
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub fn test_record(
    tool: &str,
    arguments: Value,
    outcome: Outcome,
    char_budget: usize,
    duration_ms: u64,
) -> CallRecord {
    use crate::budget::{Budget, LongRows};
    use crate::mapping::{map_outcome, MappingContext, TextShape};
    let ctx = MappingContext {
        call_id: "1",
        tool,
        server: "git",
        budget: Budget::chars(char_budget),
        text: TextShape {
            long_rows: LongRows::Keep,
            ..Default::default()
        },
        media: MediaMode::Passthrough,
    };
    let envelope = map_outcome(&outcome, &ctx).envelope;
    CallRecord::new(
        UNIX_EPOCH,
        0,
        "1",
        tool,
        "git",
        tool,
        arguments,
        &[],
        char_budget,
        Duration::from_secs(60),
        MediaMode::Passthrough,
        outcome,
        envelope,
        Duration::from_millis(duration_ms),
        Vec::new(),
    )
}

/// An event entry for [`CallRecord::events`].
pub fn event(direction: &str, message: Value) -> Value {
    let mut m = Map::new();
    m.insert("direction".into(), Value::from(direction));
    m.insert("message".into(), message);
    Value::Object(m)
}
