//! A Python SDK server (mcp 2.3.0) that serves both eras over stdio and asks the client mid-call
//! through the SDK's classic API (`create_message`, `elicit`, `list_roots`), which the SDK
//! refuses in the 2026-07-28 era: the proxy opens local servers with `initialize`, so such a
//! server runs legacy and its requests reach clients of both eras.
use super::eras::{envelope, era_client};
use crate::common;
use common::*;
use serde_json::{json, Value};

/// The server table of tests/fixtures/sdk_stdio_server.py named `name`.
pub(super) fn sdk_stdio_server(name: &str, extra: &str) -> String {
    let script = root().join("tests/fixtures/sdk_stdio_server.py");
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = [{:?}]\n{extra}\n",
        python().display().to_string(),
        script.display().to_string()
    )
}

/// The content of the envelope of each step of an `era_client` run, `mode` naming the client.
fn contents(mode: &str, out: &Value) -> Vec<String> {
    let steps = out["steps"].as_array().unwrap();
    steps
        .iter()
        .map(|step| {
            let env = envelope(step);
            assert_eq!(env["status"], "ok", "{mode}: {env}");
            env["content"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn a_dual_era_sdk_server_samples_elicits_and_lists_roots_for_both_client_eras() {
    let (_dir, config) = write_config(&sdk_stdio_server("py", ""));
    let text = ok_stdout(&check(&config));
    assert!(
        table_row(&text, "py ").starts_with("py ready 2025-11-25 (legacy) "),
        "{text}"
    );
    let plan = json!([
        {"op": "call", "name": "sample", "arguments": {"prompt": "p"}},
        {"op": "call", "name": "ask", "arguments": {}},
        {"op": "call", "name": "roots", "arguments": {}},
    ]);
    for mode in ["legacy", "2026-07-28"] {
        let out = era_client(mode, &config, &plan);
        let content = contents(mode, &out);
        assert_eq!(
            content[0], "result=sampled: sampled: fixed answer",
            "{mode}"
        );
        assert_eq!(
            content[1], "result=elicited: accept {\"ok\":true}",
            "{mode}"
        );
        assert_eq!(content[2], "result=roots: file:///tmp", "{mode}");
        let asked: Vec<&str> = out["callbacks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["method"].as_str().unwrap())
            .collect();
        assert_eq!(
            asked,
            ["sampling/createMessage", "elicitation/create", "roots/list"],
            "{mode}"
        );
    }
}
