//! Helpers for the reliability tests (issue 5): call messages, collecting answers by id,
//! process checks (zombies, children) and a clean finish.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{alive, children_of, wait_gone, write_config, RawProxy};

/// A `tools/call` request.
pub fn call_msg(id: Value, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":arguments}})
}

/// A proxy serving `config_text` (written to a temporary directory, returned too), after
/// `initialize` (protocol 2025-06-18) and `notifications/initialized`.
pub fn initialized(config_text: &str) -> (tempfile::TempDir, RawProxy) {
    let (dir, config) = write_config(config_text);
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-06-18");
    (dir, p)
}

/// [`initialized`] with a `[defaults]` table of `defaults` (TOML lines) before `servers`.
pub fn initialized_with(defaults: &str, servers: &str) -> (tempfile::TempDir, RawProxy) {
    initialized(&format!("[defaults]\n{defaults}\n{servers}"))
}

/// Asserts that `env` (an envelope) is a `server_error`.
pub fn assert_server_error(env: &Value) {
    let content = env["content"].as_str().unwrap_or_default();
    assert!(content.starts_with("server_error: "), "{env}");
}

/// The `tools/list` response (id `"l"`, 30 s at most).
pub fn list_tools(p: &mut RawProxy) -> Value {
    p.send(&json!({"jsonrpc":"2.0","id":"l","method":"tools/list"}));
    p.response(&json!("l"), Duration::from_secs(30)).0
}

/// A `ping` request.
pub fn ping_msg(id: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"ping"})
}

/// Whether `msg` is a response (has `result` or `error`).
pub fn is_response(msg: &Value) -> bool {
    msg.get("id").is_some() && (msg.get("result").is_some() || msg.get("error").is_some())
}

/// Reads until `n` responses arrived or `timeout`; returns every response by id (as its JSON
/// text), in arrival order per id, so duplicates show up as a second element.
pub fn collect(p: &RawProxy, n: usize, timeout: Duration) -> HashMap<String, Vec<Value>> {
    let deadline = Instant::now() + timeout;
    let mut got: HashMap<String, Vec<Value>> = HashMap::new();
    let mut count = 0;
    while count < n {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(msg) = p.try_recv(left) else { break };
        if is_response(&msg) {
            got.entry(msg["id"].to_string()).or_default().push(msg);
            count += 1;
        }
    }
    got
}

/// The state letter of a process from /proc (`R`, `S`, `Z`, …), `None` when gone.
pub fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Children of `pid` that are zombies (exited but not reaped).
pub fn zombie_children(pid: u32) -> Vec<u32> {
    children_of(pid)
        .into_iter()
        .filter(|c| proc_state(*c) == Some('Z'))
        .collect()
}

/// Live (non-zombie) children of `pid`.
pub fn live_children(pid: u32) -> Vec<u32> {
    children_of(pid).into_iter().filter(|c| alive(*c)).collect()
}

/// Waits until `pid` has `n` live children (a restarted server), up to `timeout`.
pub fn wait_children(pid: u32, n: usize, timeout: Duration) -> Vec<u32> {
    let deadline = Instant::now() + timeout;
    loop {
        let kids = live_children(pid);
        if kids.len() == n || Instant::now() > deadline {
            return kids;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Closes stdin, checks exit 0 and that every child ever seen (`seen`, plus the current ones)
/// is gone.
pub fn finish(mut p: RawProxy, seen: &[u32]) {
    let mut all: Vec<u32> = seen.to_vec();
    all.extend(children_of(p.pid()));
    let status = p.close(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "stderr:\n{}", p.stderr());
    let left = wait_gone(&all, Duration::from_secs(5));
    assert!(left.is_empty(), "children still running: {left:?}");
}

/// Sends a signal to a process.
pub fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a pid we started; no memory is touched.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

/// The hostile test server (`tests/fixtures/hostile_server.py`).
pub fn hostile() -> std::path::PathBuf {
    crate::common::root().join("tests/fixtures/hostile_server.py")
}

/// A TOML server table for the hostile server named `name`, with its flags and extra TOML lines.
pub fn hostile_server(name: &str, flags: &[&str], extra: &str) -> String {
    let mut args = vec![hostile().display().to_string()];
    args.extend(flags.iter().map(|s| s.to_string()));
    format!(
        "[mcp_servers.{name}]\ncommand = \"python3\"\nargs = {}\n{extra}\n",
        serde_json::to_string(&args).unwrap()
    )
}

/// The proxy's resident memory (VmRSS) in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The exposed tool names of a `tools/list` answer.
pub fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
