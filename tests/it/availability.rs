//! A server that failed to start is visible to the client: named in the `initialize` answer's
//! instructions, and sent as a `notifications/message` warning when the proxy declared
//! `logging` (here: the fixture server with `--features` offers it).
use crate::common;
use common::*;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(30);

fn start(features: bool) -> (tempfile::TempDir, RawProxy) {
    let flags: &[&str] = if features { &["--features"] } else { &[] };
    let (dir, config) = write_config(&format!(
        "{}{}",
        fixture_server("fx", flags, ""),
        fixture_server(
            "broken",
            &["--exit-at-start", "3"],
            "max_restarts = 0\nstartup_timeout_sec = 5"
        )
    ));
    (dir, RawProxy::start(&config, &[]))
}

#[test]
fn a_failed_server_is_named_in_instructions_and_warned_about() {
    let (_dir, mut p) = start(true);
    let init = p.initialize("2025-06-18");
    let text = init["instructions"].as_str().unwrap();
    assert!(text.contains("\n\n## Unavailable servers\n"), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("- broken: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("exit status: 3"), "{line}");
    assert!(!text.contains("- fx:"), "{text}");
    assert!(init["capabilities"].get("logging").is_some(), "{init}");
    let msg = p.recv(LONG);
    assert_eq!(msg["method"], "notifications/message", "{msg}");
    assert_eq!(msg["params"]["level"], "warning", "{msg}");
    assert_eq!(msg["params"]["logger"], "mcp-envelope", "{msg}");
    let data = msg["params"]["data"].as_str().unwrap();
    assert!(
        data.starts_with("server 'broken' is not available"),
        "{data}"
    );
    finish_session(p);
}

#[test]
fn without_logging_only_the_instructions_say_it() {
    let (_dir, mut p) = start(false);
    let init = p.initialize("2025-06-18");
    assert!(init["capabilities"].get("logging").is_none(), "{init}");
    let text = init["instructions"].as_str().unwrap();
    assert!(text.contains("\n- broken: "), "{text}");
    p.send(&serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    let (_, others) = p.response(&serde_json::json!(2), LONG);
    assert!(
        others
            .iter()
            .all(|m| m["method"] != "notifications/message"),
        "{others:?}"
    );
    finish_session(p);
}

/// The proxy's warning about a server that did not start quotes the server's stderr, and has
/// no `stderr` field at all when the server wrote nothing there.
#[test]
fn the_unavailable_warning_quotes_stderr_only_when_there_is_some() {
    let (_dir, config) = write_config(&format!(
        "{}[mcp_servers.silent]\ncommand = \"sh\"\nargs = [\"-c\", \"exit 4\"]\nmax_restarts = 0\n",
        fixture_server("broken", &["--exit-at-start", "3"], "max_restarts = 0")
    ));
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-11-25");
    let warning = |server: &str| {
        let deadline = std::time::Instant::now() + LONG;
        loop {
            let stderr = p.stderr();
            let needle = format!("server={server} ");
            let line = stderr
                .lines()
                .find(|l| l.contains("server unavailable") && l.contains(&needle));
            if let Some(line) = line {
                return line.to_owned();
            }
            assert!(std::time::Instant::now() < deadline, "{stderr}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let broken = warning("broken");
    assert!(
        broken.contains("stderr=[fixture] --exit-at-start: exiting with code 3"),
        "{broken}"
    );
    let silent = warning("silent");
    assert!(silent.contains("exit status: 4"), "{silent}");
    assert!(!silent.contains("stderr="), "{silent}");
    finish_session(p);
}

/// A configured tool (`enabled_tools`) whose server is restarting is waited for within the
/// call's `tool_timeout_sec`, as a call to a listed tool waits for its server to come back:
/// a server that comes up on its second start answers the call; one that never does gives a
/// (retryable) timeout, not a final `unavailable`.
#[test]
fn a_call_to_a_restarting_servers_tool_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started-once");
    // The first start fails (exit 1) and leaves a marker; the second runs the fixture.
    let script = format!(
        "if [ -e {m} ]; then exec python3 {f} --name late; else touch {m}; exit 1; fi",
        m = marker.display(),
        f = fixture().display()
    );
    let late = format!(
        "[mcp_servers.late]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nenabled_tools = [\"echo\"]\ntool_timeout_sec = 20\n"
    );
    let never = fixture_server(
        "never",
        &["--exit-at-start", "3"],
        "enabled_tools = [\"add\"]\ntool_timeout_sec = 1",
    );
    let (_d, config) = write_config(&format!("{late}{never}"));
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-11-25");
    let env = envelope_of(&p.call(
        serde_json::json!(1),
        "echo",
        serde_json::json!({"text": "hi"}),
        LONG,
    ));
    assert_eq!(env["status"], "ok", "{env}");
    let env = envelope_of(&p.call(
        serde_json::json!(2),
        "add",
        serde_json::json!({"a": 1, "b": 2}),
        LONG,
    ));
    assert_eq!(env["status"], "error", "{env}");
    assert!(
        env["content"].as_str().unwrap().starts_with("timeout: "),
        "{env}"
    );
    assert_eq!(env["retryable"], true, "{env}");
    finish_session(p);
}
