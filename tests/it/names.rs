//! Tool names that do not depend on which servers are up (README, "Configuration"): a server
//! whose `enabled_tools` lists its tools has those names counted in collisions while it is
//! down, so the other server's tool has the same name before and after it comes up, in
//! `serve` and in a one-shot `call` alike.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

const LONG: Duration = Duration::from_secs(60);

/// A config of fixture `a` (listing `echo` and `add`) and `b` (listing `echo`), where `b`
/// starts only once `marker` exists (before, each start exits 1 and it is restarted).
fn config_with_late_b(marker: &Path) -> (tempfile::TempDir, std::path::PathBuf) {
    let a = fixture_server("a", &[], "enabled_tools = [\"echo\", \"add\"]");
    let script = format!(
        "if [ -e {m} ]; then exec python3 {f} --name b; else exit 1; fi",
        m = marker.display(),
        f = fixture().display()
    );
    let b = format!(
        "[mcp_servers.b]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nenabled_tools = [\"echo\"]\nmax_restarts = 20\n"
    );
    write_config(&format!("{a}{b}"))
}

/// The names of `p`'s `tools/list`.
fn tool_names(p: &mut RawProxy, id: &str) -> Vec<String> {
    p.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    let (resp, _) = p.response(&json!(id), LONG);
    let tools = resp["result"]["tools"].as_array().expect("tools").iter();
    tools
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Waits for `notifications/tools/list_changed`.
fn wait_list_changed(p: &RawProxy) {
    let deadline = Instant::now() + LONG;
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        if p.recv(left)["method"] == "notifications/tools/list_changed" {
            return;
        }
    }
    panic!("no tools/list_changed; stderr:\n{}", p.stderr());
}

#[test]
fn names_do_not_change_when_a_server_that_was_down_comes_up() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("b-may-start");
    let (_d, config) = config_with_late_b(&marker);
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-11-25");
    // b is down: a's echo is named as if b were up (it used to be plain `echo`).
    assert_eq!(
        tool_names(&mut p, "1"),
        ["a__echo", "add", "envelope_next_page"]
    );
    let env = envelope_of(&p.call(json!(2), "a__echo", json!({"text": "hi"}), LONG));
    assert_eq!(env["content"], "hi", "{env}");
    // The shared name points to both names, and stays final.
    let env = envelope_of(&p.call(json!(3), "echo", json!({"text": "hi"}), LONG));
    assert_eq!(
        env["content"],
        "not_found: no tool named 'echo': more than one server offers that name, so each one's \
         tool is named after its server; did you mean 'a__echo' or 'b__echo'?",
        "{env}"
    );
    assert_eq!(env["retryable"], false, "{env}");
    std::fs::write(&marker, "").unwrap();
    wait_list_changed(&p);
    let after = tool_names(&mut p, "4");
    assert_eq!(after, ["a__echo", "add", "b__echo", "envelope_next_page"]);
    let env = envelope_of(&p.call(json!(5), "b__echo", json!({"text": "from b"}), LONG));
    assert_eq!(env["content"], "from b", "{env}");
    finish_session(p);
    // A proxy started with both up gives the very same names.
    let mut both = RawProxy::start(&config, &[]);
    both.initialize("2025-11-25");
    assert_eq!(tool_names(&mut both, "1"), after);
    finish_session(both);
}

/// `mcp-envelope call TOOL {"text":"hi"}` with `config`: its envelope.
fn call(config: &Path, tool: &str) -> Value {
    let out = std::process::Command::new(bin())
        .args(["call", "--config"])
        .arg(config)
        .args([tool, "{\"text\":\"hi\"}"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

#[test]
fn call_names_tools_as_serve_does_while_a_server_is_down() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, config) = config_with_late_b(&dir.path().join("never"));
    // b never starts: `serve` offers a's echo as `a__echo` (above); `call` answers the same
    // names the same way.
    let env = call(&config, "a__echo");
    assert_eq!(
        (&env["status"], &env["content"]),
        (&json!("ok"), &json!("hi")),
        "{env}"
    );
    let env = call(&config, "echo");
    assert_eq!(env["status"], "error", "{env}");
    assert!(
        env["content"]
            .as_str()
            .unwrap()
            .ends_with("did you mean 'a__echo' or 'b__echo'?"),
        "{env}"
    );
    let env = call(&config, "add");
    assert_eq!(env["status"], "error", "add needs numbers: {env}");
    assert!(env["content"].as_str().unwrap().contains("-32602"), "{env}");
}
