//! A server that speaks only MCP 2026-07-28 (tests/fixtures/modern_only.mjs, on the TypeScript
//! SDK v2: `initialize` is refused with -32022), over stdio and over streamable HTTP: the proxy
//! finds its era with the `server/discover` probe, lists its tools and calls them through the
//! envelope, for a 2025-11-25 client and a 2026-07-28 client (the Python SDK's `Client` in
//! `legacy` and `2026-07-28` mode). Over HTTP, the tool whose `x-mcp-header` mark is invalid is
//! left out with a warning (MCP 2026-07-28 "Transports: Streamable HTTP", "Custom Headers from
//! Tool Parameters"); over stdio it stays, as the specification allows.
use crate::common;
use crate::eras::{envelope, era_client};
use crate::remote::{free_port, HttpServer};
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// The fixture's path.
fn fixture_path() -> String {
    let sdk = tools().join("npm-sdk2/node_modules/@modelcontextprotocol/server");
    assert!(
        sdk.exists(),
        "the TypeScript SDK v2 is missing: run `scripts/install-deps` first"
    );
    root()
        .join("tests/fixtures/modern_only.mjs")
        .display()
        .to_string()
}

/// The settings every config here gives the server `modern`: a small budget for `story`.
const SETTINGS: &str = "[mcp_servers.modern.tools.story]\nchar_budget = 200\n";

/// What the clients do: list, echo, a long text, a call with an `x-mcp-header` argument, and
/// the tool with an invalid mark.
fn plan() -> Value {
    json!([
        {"op": "list_tools"},
        {"op": "call", "name": "echo", "arguments": {"text": "only the new era"}},
        {"op": "call", "name": "story", "arguments": {"lines": 40}},
        {"op": "call", "name": "regional", "arguments": {"region": "eu-west1", "q": "who"}},
        {"op": "call", "name": "broken", "arguments": {"count": 2}},
    ])
}

/// Runs [`plan`] with a 2025-11-25 and a 2026-07-28 client; checks what both see, and whether
/// the proxy offered `broken` (`broken_offered`: then it can be called).
fn both_eras_of_client(config: &Path, broken_offered: bool) {
    for (mode, version) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        let out = era_client(mode, config, &plan());
        assert_eq!(out["protocolVersion"], version, "{mode}: {out}");
        let steps = out["steps"].as_array().unwrap();
        let tools = steps[0]
            .as_array()
            .unwrap_or_else(|| panic!("{mode}: {out}"));
        for name in ["echo", "story", "regional"] {
            assert!(tools.contains(&json!(name)), "{mode}: {name}: {tools:?}");
        }
        // A 2026-07-28 client drops it itself (the Python SDK does so whatever the transport).
        let listed = broken_offered && mode == "legacy";
        assert_eq!(
            tools.contains(&json!("broken")),
            listed,
            "{mode}: {tools:?}"
        );
        let echo = envelope(&steps[1]);
        assert_eq!(echo["status"], "ok", "{mode}: {echo}");
        assert_eq!(echo["content"], "only the new era", "{mode}: {echo}");
        let story = envelope(&steps[2]);
        assert_eq!(story["status"], "truncated", "{mode}: {story}");
        let content = story["content"].as_str().unwrap();
        assert!(content.starts_with("line 1 of 40: "), "{mode}: {story}");
        assert!(content.chars().count() <= 200, "{mode}: {story}");
        let shown = content.lines().count() as u64;
        assert_eq!(story["omitted"], json!(40 - shown), "{mode}: {story}");
        let regional = envelope(&steps[3]);
        assert_eq!(regional["content"], "eu-west1: who", "{mode}: {regional}");
        let broken = envelope(&steps[4]);
        let want = if broken_offered { "ok" } else { "error" };
        assert_eq!(broken["status"], want, "{mode}: {broken}");
    }
}

/// `check`'s output for `config`: the server's row says it speaks 2026-07-28.
fn checked(config: &Path) -> String {
    let text = ok_stdout(&check(config));
    assert!(
        table_row(&text, "modern ").starts_with("modern ready 2026-07-28 (modern) "),
        "{text}"
    );
    text
}

#[test]
fn a_modern_only_stdio_server_for_clients_of_both_eras() {
    let (_dir, config) = write_config(&format!(
        "[mcp_servers.modern]\ncommand = \"node\"\nargs = [{:?}]\n{SETTINGS}",
        fixture_path()
    ));
    let text = checked(&config);
    assert!(!text.contains("x-mcp-header"), "{text}");
    both_eras_of_client(&config, true);
}

#[test]
fn a_modern_only_http_server_for_clients_of_both_eras() {
    let port = free_port();
    let mut node = Command::new("node");
    node.arg(fixture_path()).args(["--http", &port.to_string()]);
    let server = HttpServer::start(node, port);
    let (_dir, config) = write_config(&format!(
        "[mcp_servers.modern]\nurl = {:?}\n{SETTINGS}",
        server.url("/mcp")
    ));
    let text = checked(&config);
    assert!(
        text.contains(
            "  warning: tool \"broken\" dropped: property count: x-mcp-header on a property \
             that is not a string, integer or boolean\n"
        ),
        "{text}"
    );
    assert!(!text.contains("\n  broken "), "{text}");
    // `regional` works: the SDK refuses a call without the matching `Mcp-Param-Region`.
    both_eras_of_client(&config, false);
}
