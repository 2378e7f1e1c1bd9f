//! Servers that are not running, made visible to the client: a client such as Claude Code
//! shows the proxy as connected and simply lacks the missing server's tools, so the proxy says
//! which servers are down and why.
//!
//! - In the `initialize` answer, after the instructions, a `## Unavailable servers` section
//!   names each enabled server that was not ready when the client connected, with the reason
//!   (MCP 2025-11-25, "Lifecycle: Initialization", `InitializeResult.instructions`).
//! - When the proxy declared the `logging` capability (it does when a server offers it), one
//!   `notifications/message` with level `warning` and logger `mcp-envelope` per such server
//!   (MCP 2025-11-25, "Utilities: Logging"); without that capability nothing is sent.
//!
//! Pure: the session passes in the states and sends what comes out.

use serde_json::{json, Value};

use crate::downstream::{Downstream, ServerState};

/// Longest reason kept, in characters (Unicode scalar values); longer ones end with `…`.
pub const MAX_REASON_CHARS: usize = 300;

/// An enabled server that is not ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Down {
    /// The server's config name.
    pub name: String,
    /// Its state (`restarting`, `unavailable`, `starting`) and why, e.g. `unavailable: cannot
    /// start `npx`: No such file or directory`.
    pub why: String,
}

/// The servers that are not ready (stopped ones are left out: they stop only with the proxy).
pub fn down_servers(servers: &[Downstream]) -> Vec<Down> {
    servers
        .iter()
        .filter_map(|ds| {
            let why = match ds.state() {
                ServerState::Ready(_) | ServerState::Stopped => return None,
                ServerState::Starting => "still starting".to_string(),
                ServerState::Restarting { reason, .. } => format!("restarting: {}", short(&reason)),
                ServerState::Unavailable { reason } => format!("unavailable: {}", short(&reason)),
            };
            Some(Down {
                name: ds.name().to_owned(),
                why,
            })
        })
        .collect()
}

/// At most `shown` of `items`, then `and N more` for the rest (a message naming servers).
pub fn at_most(mut items: Vec<String>, shown: usize) -> Vec<String> {
    let more = items.len().saturating_sub(shown);
    if more > 0 {
        items.truncate(shown);
        items.push(format!("and {more} more"));
    }
    items
}

/// `text` on one line, cut to [`MAX_REASON_CHARS`] characters including the truncation marker
/// (`… [N characters cut]`, [`envelope_core::message_cut::cut_message`]).
fn short(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    envelope_core::message_cut::cut_message([one_line.as_str()], MAX_REASON_CHARS)
}

/// The section appended to our `instructions`, or `None` when every server is ready.
pub fn instructions_note(down: &[Down]) -> Option<String> {
    if down.is_empty() {
        return None;
    }
    let mut out = String::from(
        "\n\n## Unavailable servers\nThese configured servers are not running, so their tools are missing:",
    );
    for d in down {
        out.push_str(&format!("\n- {}: {}", d.name, d.why));
    }
    Some(out)
}

/// The params of the `notifications/message` warning about one server.
pub fn warning_params(d: &Down) -> Value {
    json!({
        "level": "warning",
        "logger": "mcp-envelope",
        "data": format!("server '{}' is not available, its tools are missing: {}", d.name, d.why),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_and_warning_name_each_server_and_why() {
        assert_eq!(instructions_note(&[]), None);
        let down = [
            Down {
                name: "git".into(),
                why: "unavailable: cannot start `uvx`".into(),
            },
            Down {
                name: "db".into(),
                why: "restarting: closed its stdout".into(),
            },
        ];
        assert_eq!(
            instructions_note(&down).unwrap(),
            "\n\n## Unavailable servers\nThese configured servers are not running, so their tools are missing:\n- git: unavailable: cannot start `uvx`\n- db: restarting: closed its stdout"
        );
        assert_eq!(
            warning_params(&down[0]),
            json!({"level": "warning", "logger": "mcp-envelope", "data": "server 'git' is not available, its tools are missing: unavailable: cannot start `uvx`"})
        );
    }

    #[test]
    fn reasons_are_one_short_line() {
        assert_eq!(short("a\n  b\tc"), "a b c");
        let long = "é".repeat(1000);
        let cut = short(&long);
        assert_eq!(cut.chars().count(), MAX_REASON_CHARS);
        assert!(cut.ends_with("characters cut]"), "{cut}");
    }
}
