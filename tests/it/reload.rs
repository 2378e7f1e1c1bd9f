//! Hot reload through the binary: a budget edit applies to the next call with no restart; a
//! broken edit keeps the running config (and says why on stderr, naming file, line and key,
//! never a secret); SIGHUP reloads even when the file looks unchanged; an added server starts
//! and a removed one stops, each with `notifications/tools/list_changed`; a changed launch
//! restarts the server; calls in flight on a restarted or removed server drain; an edit during
//! the first start reaches the client's `initialize`.
use crate::common::faults::signal;
use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(30);

/// Writes the config atomically (as editors do), so the proxy never reads half a file.
fn rewrite(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The fixture server `fx` with `budget` (padded to 3 characters, so that two budgets make
/// files of the same size).
fn fx(budget: usize) -> String {
    fixture_server("fx", &[], &format!("char_budget = {budget:<3}"))
}

/// A proxy serving `config_text` (written to a temporary file), initialized.
fn serving(config_text: &str) -> (tempfile::TempDir, PathBuf, RawProxy) {
    let (dir, config) = write_config(config_text);
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-06-18");
    (dir, config, p)
}

/// Calls `echo` until `done(envelope)` holds (a reload is asynchronous), up to 30 s.
fn call_until(p: &mut RawProxy, id: &mut i64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + LONG;
    loop {
        *id += 1;
        let env = envelope_of(&p.call(json!(*id), "echo", json!({"text": "0123456789"}), LONG));
        if done(&env) || Instant::now() > deadline {
            return env;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Polls `cond` every 100 ms for up to 30 s; whether it became true.
fn wait_until(cond: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + LONG;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn a_budget_edit_applies_to_the_next_call_and_a_broken_edit_keeps_the_old_config() {
    let (_dir, config, mut p) = serving(&fx(100));
    let mut id = 0;
    let env = call_until(&mut p, &mut id, |_| true);
    assert_eq!(env["content"], "0123456789");
    let server = children_of(p.pid());

    rewrite(&config, &fx(4));
    let env = call_until(&mut p, &mut id, |e| e["status"] == "truncated");
    assert_eq!(env["status"], "truncated", "{env}");
    let content = env["content"].as_str().unwrap();
    assert!(
        content.chars().count() <= 4,
        "the new budget (4) applies: {env}"
    );
    assert_eq!(
        children_of(p.pid()),
        server,
        "a budget edit restarts no server"
    );

    let secret = "s3cret-value-never-logged";
    let broken = format!(
        "{}env = {{ TOKEN = \"{secret}\" }}\nchar_budget = -1\n",
        fx(100)
    );
    rewrite(&config, &broken);
    assert!(wait_until(|| p.stderr().contains("config not reloaded")));
    let err = p.stderr();
    let line = broken
        .lines()
        .position(|l| l == "char_budget = -1")
        .unwrap()
        + 1;
    let place = format!("{}:{line}", config.display());
    assert!(
        err.contains(&place),
        "the warning names file and line {place}: {err}"
    );
    assert!(
        err.contains("char_budget"),
        "the warning names the key: {err}"
    );
    assert!(!err.contains(secret), "no secret in the log: {err}");
    let env = call_until(&mut p, &mut id, |_| true);
    assert_eq!(
        env["status"], "truncated",
        "the old budget (4) still applies: {env}"
    );
    finish_session(p);
}

#[test]
fn a_budget_edit_sends_no_list_changed() {
    // A server with prompts and resources besides its tools; none of them changes.
    let text = |budget: usize| {
        fixture_server("fx", &["--features"], &format!("char_budget = {budget:<3}"))
    };
    let (_dir, config, mut p) = serving(&text(100));
    let mut id = 0;
    call_until(&mut p, &mut id, |_| true);
    rewrite(&config, &text(4));
    let mut seen = Vec::new();
    let deadline = Instant::now() + LONG;
    loop {
        id += 1;
        p.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"echo","arguments":{"text":"0123456789"}}}));
        let (response, others) = p.response(&json!(id), LONG);
        seen.extend(others);
        if envelope_of(&response)["status"] == "truncated" || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(wait_until(|| p.stderr().contains("config reloaded")));
    p.send(&json!({"jsonrpc":"2.0","id":"after","method":"ping"}));
    seen.extend(p.response(&json!("after"), LONG).1);
    let methods: Vec<&Value> = seen.iter().map(|m| &m["method"]).collect();
    assert!(
        !methods
            .iter()
            .any(|m| m.as_str().unwrap_or("").ends_with("/list_changed")),
        "nothing changed but the budget: {methods:?}"
    );
    finish_session(p);
}

#[test]
fn sighup_reloads_even_when_the_file_looks_unchanged() {
    let (_dir, config, mut p) = serving(&fx(4));
    let mut id = 0;
    let env = call_until(&mut p, &mut id, |_| true);
    assert_eq!(env["status"], "truncated", "{env}");

    // Same size, same inode, same modification time: only SIGHUP makes the proxy read it.
    let modified = std::fs::metadata(&config).unwrap().modified().unwrap();
    assert_eq!(fx(4).len(), fx(100).len());
    std::fs::write(&config, fx(100)).unwrap();
    let file = std::fs::File::options().write(true).open(&config).unwrap();
    file.set_modified(modified).unwrap();
    drop(file);
    std::thread::sleep(Duration::from_millis(2500));
    let env = call_until(&mut p, &mut id, |_| true);
    assert_eq!(
        env["status"], "truncated",
        "not reloaded without SIGHUP: {env}"
    );

    signal(p.pid(), libc::SIGHUP);
    let env = call_until(&mut p, &mut id, |e| e["status"] == "ok");
    assert_eq!(
        env["content"], "0123456789",
        "SIGHUP applied the new budget: {env}"
    );
    finish_session(p);
}

/// Sends tools/list and returns the exposed names.
fn tool_names(p: &mut RawProxy, id: i64) -> Vec<String> {
    p.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    let (resp, _) = p.response(&json!(id), LONG);
    crate::common::faults::tool_names(&resp)
}

/// Waits for `notifications/tools/list_changed`.
fn list_changed(p: &mut RawProxy) {
    let deadline = Instant::now() + LONG;
    while Instant::now() < deadline {
        if p.recv(LONG)["method"] == "notifications/tools/list_changed" {
            return;
        }
    }
    panic!("no notifications/tools/list_changed");
}

#[test]
fn added_servers_start_and_removed_ones_stop_with_list_changed() {
    let (_dir, config, mut p) = serving(&fx(100));
    assert!(tool_names(&mut p, 1).contains(&"echo".to_string()));
    let fy = |extra: &str| fixture_server("fy", &[], &format!("tool_prefix = \"y_\"\n{extra}"));
    rewrite(&config, &format!("{}{}", fx(100), fy("")));
    list_changed(&mut p);
    let names = tool_names(&mut p, 2);
    assert!(names.contains(&"y_echo".to_string()), "{names:?}");
    assert!(names.contains(&"echo".to_string()), "{names:?}");
    let resp = p.call(json!(3), "y_echo", json!({"text": "from fy"}), LONG);
    assert_eq!(envelope_of(&resp)["content"], "from fy");
    assert_eq!(children_of(p.pid()).len(), 2);

    rewrite(&config, &fy(""));
    list_changed(&mut p);
    let names = tool_names(&mut p, 4);
    assert!(!names.contains(&"echo".to_string()), "{names:?}");
    assert!(names.contains(&"y_echo".to_string()), "{names:?}");
    let resp = p.call(json!(5), "echo", json!({"text": "gone"}), LONG);
    assert_eq!(envelope_of(&resp)["status"], "error", "{resp}");
    let one_left = wait_until(|| children_of(p.pid()).len() == 1);
    assert!(
        one_left,
        "the removed server ended: {:?}",
        children_of(p.pid())
    );
    let before = children_of(p.pid());

    // A changed launch (here `env`) restarts the server: a new process serves the calls.
    rewrite(&config, &fy("env = { A = \"1\" }"));
    let restarted = wait_until(|| {
        let now = children_of(p.pid());
        now.len() == 1 && now != before
    });
    assert!(restarted, "{before:?} -> {:?}", children_of(p.pid()));
    let mut id = 10;
    let deadline = Instant::now() + LONG;
    let env = loop {
        id += 1;
        let env = envelope_of(&p.call(json!(id), "y_echo", json!({"text": "again"}), LONG));
        if env["status"] == "ok" || Instant::now() > deadline {
            break env;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(env["content"], "again", "{env}");
    finish_session(p);
}

/// A `sleep` tools/call message.
fn sleep_call(id: &str, ms: u64, text: &str) -> Value {
    crate::common::faults::call_msg(json!(id), "sleep", json!({"ms": ms, "text": text}))
}

/// The envelope of the answer to `id`: among `seen` (messages already read), else the next.
fn envelope_for(p: &mut RawProxy, id: &str, seen: &[Value]) -> Value {
    let id = json!(id);
    match seen
        .iter()
        .find(|m| m["id"] == id && m.get("result").is_some())
    {
        Some(answer) => envelope_of(answer),
        None => envelope_of(&p.response(&id, LONG).0),
    }
}

/// A call in flight when a reload restarts or removes its server is answered by the old
/// instance, which drains as on SIGTERM; calls after the reload go to the new instance, or find
/// the tool gone; then the old process ends.
#[test]
fn calls_in_flight_drain_when_a_reload_restarts_or_removes_their_server() {
    let fx_env = |env: &str| fixture_server("fx", &[], &format!("char_budget = 100\n{env}"));
    let fy = fixture_server("fy", &[], "tool_prefix = \"y_\"");
    let (_dir, config, mut p) = serving(&format!("{}{fy}", fx_env("")));
    let mut id = 0;
    assert_eq!(
        call_until(&mut p, &mut id, |_| true)["content"],
        "0123456789"
    );
    let before = children_of(p.pid());

    // A changed launch restarts fx while a call runs on it.
    p.send(&sleep_call("slow-1", 8000, "drained"));
    std::thread::sleep(Duration::from_millis(300));
    rewrite(&config, &format!("{}{fy}", fx_env("env = { A = \"1\" }")));
    let beside = wait_until(|| children_of(p.pid()).len() == 3);
    assert!(beside, "the old instance drains beside the new one");
    // A call made meanwhile goes to the new instance (waiting for it to start).
    let echo = json!({"text": "after"});
    p.send(&crate::common::faults::call_msg(
        json!("after"),
        "echo",
        echo,
    ));
    let (resp, seen) = p.response(&json!("after"), LONG);
    assert_eq!(envelope_of(&resp)["content"], "after", "{resp}");
    let env = envelope_for(&mut p, "slow-1", &seen);
    assert_eq!(env["status"], "ok", "the call in flight drained: {env}");
    assert_eq!(env["content"], "drained");
    let replaced = wait_until(|| {
        let now = children_of(p.pid());
        now.len() == 2 && now != before
    });
    assert!(
        replaced,
        "the old instance stopped: {:?}",
        children_of(p.pid())
    );

    // Removing fx while a call runs on it: the call still gets its answer, the tool is gone
    // for the next one, and the process ends.
    p.send(&sleep_call("slow-2", 8000, "drained again"));
    std::thread::sleep(Duration::from_millis(300));
    rewrite(&config, &fy);
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|m: &Value| m["method"] == "notifications/tools/list_changed")
    {
        seen.push(p.recv(LONG));
    }
    let env = envelope_for(&mut p, "slow-2", &seen);
    assert_eq!(env["status"], "ok", "{env}");
    assert_eq!(env["content"], "drained again");
    let env = envelope_of(&p.call(json!("gone"), "echo", json!({"text": "x"}), LONG));
    assert_eq!(env["status"], "error", "{env}");
    assert!(
        env["content"].as_str().unwrap().starts_with("not_found: "),
        "{env}"
    );
    assert!(wait_until(|| children_of(p.pid()).len() == 1));
    finish_session(p);
}

/// A server slow to start, restarted by an edit made while the client's `initialize` waits
/// for it: `initialize` waits for the new instance, so the client sees its tools and what it
/// offers (prompts, resources) from the start.
#[test]
fn a_reload_during_the_first_start_reaches_the_client() {
    let slow =
        |extra: &str| fixture_server("fx", &["--features", "--startup-delay-ms", "3000"], extra);
    let (_dir, config) = write_config(&slow(""));
    let mut p = RawProxy::start(&config, &[]);
    let edited = slow("env = { A = \"1\" }");
    let path = config.clone();
    let editor = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        rewrite(&path, &edited);
    });
    let init = p.initialize("2025-06-18");
    editor.join().unwrap();
    assert!(init["capabilities"]["prompts"].is_object(), "{init}");
    assert!(init["capabilities"]["resources"].is_object(), "{init}");
    assert!(tool_names(&mut p, 1).contains(&"echo".to_string()));
    finish_session(p);
}

/// A server added by a reload before the client ever listed prompts does not take a prompt
/// name from a server that was there first: both servers' lists are read before names are
/// given, so the two `greet` prompts are both named by server, and each reaches its own.
#[test]
fn a_server_added_by_a_reload_takes_no_prompt_name_from_another() {
    let (_dir, config, mut p) = serving(&fixture_server("r", &["--features"], ""));
    let both = format!(
        "{}{}",
        fixture_server("r", &["--features"], ""),
        fixture_server("s", &["--features"], "")
    );
    rewrite(&config, &both);
    // The added server's prompts are read once it is ready, then the client is told.
    let deadline = Instant::now() + LONG;
    while p.recv(LONG)["method"] != "notifications/prompts/list_changed" {
        assert!(
            Instant::now() < deadline,
            "no notifications/prompts/list_changed"
        );
    }
    p.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/list"}));
    let (resp, _) = p.response(&json!(2), LONG);
    let names: Vec<&str> = resp["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        names.contains(&"r__greet") && names.contains(&"s__greet"),
        "{names:?}"
    );
    assert!(!names.contains(&"greet"), "{names:?}");
    let get = json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
        "params": {"name": "r__greet", "arguments": {"name": "ann"}}});
    p.send(&get);
    let (resp, _) = p.response(&json!(3), LONG);
    let text = &resp["result"]["messages"][0]["content"]["text"];
    assert_eq!(text, "Hello, ann from r", "{resp}");
    finish_session(p);
}

/// A `[paging]` edit, which applies at the next start, is said to wait for it.
#[test]
fn a_paging_edit_is_said_to_apply_at_the_next_start() {
    let (_dir, config, p) = serving(&fx(100));
    rewrite(
        &config,
        &format!("[paging]\ntool_name = \"more\"\n{}", fx(100)),
    );
    let said = wait_until(|| {
        p.stderr()
            .contains("[paging] changed: it applies when the proxy next starts")
    });
    assert!(said, "{}", p.stderr());
    finish_session(p);
}

/// An editor mid-save leaves the config empty for a moment: the old proxy applied it (no
/// servers: every tool gone). The running config stays, the log warns, and the next save with
/// content applies.
#[test]
fn an_empty_config_mid_save_keeps_the_running_config_and_the_next_save_applies() {
    let (_dir, config, mut p) = serving(&fx(100));
    let mut id = 0;
    let env = call_until(&mut p, &mut id, |_| true);
    assert_eq!(env["content"], "0123456789");
    let server = children_of(p.pid());
    for (times, blank) in [(1, ""), (2, "  \n\n")] {
        std::fs::write(&config, blank).unwrap();
        let said = || p.stderr().matches("config file is empty or blank").count();
        assert!(wait_until(|| said() >= times), "{}", p.stderr());
    }
    assert!(!p.stderr().contains("config reloaded"), "{}", p.stderr());
    let env = call_until(&mut p, &mut id, |_| true);
    assert_eq!(
        env["content"], "0123456789",
        "the tool is still there: {env}"
    );
    assert_eq!(children_of(p.pid()), server, "no server stopped");
    std::fs::write(&config, fx(4)).unwrap();
    let env = call_until(&mut p, &mut id, |e| e["status"] == "truncated");
    assert_eq!(
        env["status"], "truncated",
        "the next real save applies: {env}"
    );
    finish_session(p);
}
