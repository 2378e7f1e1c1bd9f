//! Remote downstream servers: the proxy connects over streamable HTTP (and the older HTTP+SSE
//! transport) to real servers started on 127.0.0.1 with a free port: server-everything in its
//! `streamableHttp` and `sse` modes, a Python SDK server requiring a bearer token, and a small
//! fault server (tests/fixtures/http_servers.py) for 401, 429, 503, a slow call and a crash.
use crate::common;
use common::*;
use serde_json::{json, Value};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(60);
const SECRET: &str = "tok-9f8e7d6c5b4a";

/// A server process started for one test; killed when dropped.
pub(super) struct HttpServer {
    child: Child,
    port: u16,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpServer {
    /// Starts `command` (which listens on `port`) and waits until the port accepts.
    pub(super) fn start(mut command: Command, port: u16) -> HttpServer {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut server = HttpServer { child, port };
        let deadline = Instant::now() + LONG;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(server.child.try_wait().unwrap().is_none(), "server exited");
            assert!(Instant::now() < deadline, "server not listening on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    pub(super) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// A port on 127.0.0.1 that was free a moment ago.
pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn everything(mode: &str) -> HttpServer {
    everything_on(mode, free_port())
}

/// server-everything in `mode` on `port`.
fn everything_on(mode: &str, port: u16) -> HttpServer {
    let mut c = Command::new(tools().join("npm/node_modules/.bin/mcp-server-everything"));
    c.arg(mode).env("PORT", port.to_string());
    HttpServer::start(c, port)
}

/// The Python SDK fixture server on `port` (a new free one when `None`), requiring the bearer
/// token [`SECRET`].
fn sdk_server(port: Option<u16>, flags: &[&str]) -> HttpServer {
    let port = port.unwrap_or_else(free_port);
    let mut c = Command::new(python());
    c.arg(root().join("tests/fixtures/http_servers.py"))
        .args([
            "sdk",
            "--port",
            &port.to_string(),
            "--token-env",
            "FIXTURE_TOKEN",
        ])
        .args(flags)
        .env("FIXTURE_TOKEN", SECRET);
    HttpServer::start(c, port)
}

pub(super) fn fault_server(log: &Path) -> HttpServer {
    let port = free_port();
    let mut c = Command::new(python());
    c.arg(root().join("tests/fixtures/http_servers.py"))
        .args(["faults", "--port", &port.to_string(), "--log"])
        .arg(log);
    HttpServer::start(c, port)
}

/// A config with one remote server `remote` at `url`, plus extra lines in its table.
fn remote_config(url: &str, extra: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    write_config(&format!("[mcp_servers.remote]\nurl = {url:?}\n{extra}\n"))
}

fn call_envelope(p: &mut RawProxy, id: i64, tool: &str, args: Value) -> Value {
    envelope_of(&p.call(json!(id), tool, args, LONG))
}

fn assert_ok(env: &Value, text: &str) {
    assert_eq!(env["status"], "ok", "{env}");
    assert!(
        env["content"].as_str().unwrap().contains(text),
        "want {text:?}: {env}"
    );
}

fn assert_error(env: &Value, error_type: &str, needle: &str, retryable: bool) {
    assert_eq!(env["status"], "error", "{env}");
    let content = env["content"].as_str().unwrap();
    assert!(
        content.starts_with(&format!("{error_type}: ")) && content.contains(needle),
        "want {error_type} with {needle:?}, got {env}"
    );
    assert_eq!(env["retryable"], json!(retryable), "{env}");
}

#[test]
fn everything_over_streamable_http_lists_calls_and_streams_progress() {
    let server = everything("streamableHttp");
    let (_d, cfg) = remote_config(&server.url("/mcp"), "char_budget = 500");
    let report = sdk_session(
        &cfg,
        &json!([
            {"op": "list_tools"},
            {"op": "call", "name": "echo", "arguments": {"message": "over http"}},
            {"op": "call", "name": "get-sum", "arguments": {"a": 2, "b": 40}},
            {"op": "call", "name": "trigger-long-running-operation",
             "arguments": {"duration": 1, "steps": 3}, "progress": true},
        ]),
        &[],
    );
    let steps = &report["steps"];
    let names: Vec<&str> = steps[0]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"echo") && names.contains(&"get-sum"),
        "{names:?}"
    );
    let echo = &steps[1]["structuredContent"];
    assert_eq!(echo["status"], "ok", "{report}");
    assert!(
        echo["content"]
            .as_str()
            .unwrap()
            .contains("Echo: over http"),
        "{echo}"
    );
    let sum = &steps[2]["structuredContent"];
    assert!(sum["content"].as_str().unwrap().contains("42"), "{sum}");
    let progress = steps[3]["progress"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(
        progress.len(),
        3,
        "progress over the SSE answer stream: {report}"
    );
    assert_eq!(steps[3]["structuredContent"]["status"], "ok", "{report}");
}

#[test]
fn everything_over_the_legacy_sse_transport() {
    let server = everything("sse");
    // The streamable POST to /sse is refused (404): the proxy falls back to GET /sse.
    let (_d, cfg) = remote_config(&server.url("/sse"), "");
    let mut p = RawProxy::start(&cfg, &["--log-level", "debug"]);
    p.initialize("2025-11-25");
    let env = call_envelope(&mut p, 1, "echo", json!({"message": "legacy"}));
    assert_ok(&env, "Echo: legacy");
    let env = call_envelope(&mut p, 2, "get-sum", json!({"a": 1, "b": 2}));
    assert!(env["content"].as_str().unwrap().contains('3'), "{env}");
    assert!(p.stderr().contains("HTTP+SSE"), "{}", p.stderr());
    finish_session(p);
}

#[test]
fn python_sdk_server_with_a_bearer_token() {
    let server = sdk_server(None, &[]);
    let extra = "bearer_token_env_var = \"REMOTE_TOKEN\"\nchar_budget = 300";
    let (_d, cfg) = remote_config(&server.url("/mcp"), extra);
    let args = ["--log-level", "trace"];
    let mut p = RawProxy::start_env(&cfg, &args, &[("REMOTE_TOKEN", SECRET)]);
    p.initialize("2025-11-25");
    let env = call_envelope(&mut p, 1, "echo", json!({"text": "with token"}));
    assert_ok(&env, "with token");
    let env = call_envelope(&mut p, 2, "rows", json!({"n": 500}));
    assert_eq!(env["status"], "truncated", "{env}");
    assert!(env["omitted"].as_u64().unwrap() > 400, "{env}");
    assert!(env["content"].as_str().unwrap().contains("row-0"), "{env}");
    let stderr = p.stderr();
    finish_session(p);
    assert!(
        !stderr.contains(SECRET),
        "the token reached the log:\n{stderr}"
    );

    // A wrong token: 401 at initialize, so the server is unavailable at once; `check` names
    // the variable, never the value.
    let wrong = "wrong-7a6b5c4d";
    let out = check_with(&cfg, &[("REMOTE_TOKEN", wrong)]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("HTTP 401: it did not accept the bearer token from $REMOTE_TOKEN (bearer_token_env_var)"), "{text}");
    assert!(!text.contains(wrong), "{text}");

    // No token at all: the variable is named as not set.
    let out = check_with(&cfg, &[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("bearer_token_env_var names $REMOTE_TOKEN, which is not set"),
        "{text}"
    );
}

/// `mcp-envelope check --config CONFIG` with extra environment variables.
fn check_with(config: &Path, env: &[(&str, &str)]) -> std::process::Output {
    Command::new(bin())
        .args(["check", "--log-level", "trace", "--config"])
        .arg(config)
        .env_remove("REMOTE_TOKEN")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn http_faults_map_to_their_error_types() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let server = fault_server(&log);
    let mut tables = String::from("bearer_token_env_var = \"FAULT_TOKEN\"\nmax_restarts = 0\n");
    tables.push_str("[mcp_servers.remote.tools.slow]\ntool_timeout_sec = 1\n");
    tables.push_str("[mcp_servers.remote.tools.echo]\nchar_budget = 100\n");
    let (_d, cfg) = remote_config(&server.url("/mcp"), &tables);
    let mut p = RawProxy::start_env(&cfg, &[], &[("FAULT_TOKEN", SECRET)]);
    p.initialize("2025-11-25");
    let env = call_envelope(&mut p, 1, "echo", json!({"text": "fine"}));
    assert_eq!(env["content"], "fine", "{env}");
    let env = call_envelope(&mut p, 2, "rate_limited", json!({}));
    assert_error(
        &env,
        "rate_limit",
        "is rate limited (HTTP 429 Too Many Requests); retry after 7 s",
        true,
    );
    let env = call_envelope(&mut p, 3, "overloaded", json!({}));
    assert_error(
        &env,
        "overloaded",
        "(HTTP 503 Service Unavailable); retry after 30 s",
        true,
    );
    let env = call_envelope(&mut p, 4, "unauthorized", json!({}));
    assert_error(
        &env,
        "unavailable",
        "HTTP 401 Unauthorized: it did not accept the bearer token from $FAULT_TOKEN",
        false,
    );
    let env = call_envelope(&mut p, 5, "slow", json!({}));
    assert_error(
        &env,
        "timeout",
        "no response from server 'remote' within 1s",
        true,
    );
    let env = call_envelope(&mut p, 6, "garbage", json!({}));
    assert_error(&env, "server_error", "the answer is not valid JSON: ", true);
    let env = call_envelope(&mut p, 7, "crash", json!({}));
    assert_error(
        &env,
        "server_error",
        "the connection to server 'remote' failed during the call",
        true,
    );
    let stderr = p.stderr();
    finish_session(p);
    assert!(!stderr.contains(SECRET), "{stderr}");

    // What the server saw: the session id and protocol version after initialize, the token
    // on every request, the GET stream asked for once, cancellation of the timed-out call.
    let requests: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The era probe first (this server answers it without a version list: 2025 era).
    assert_eq!(requests[0]["rpc"], "server/discover");
    assert_eq!(requests[0]["version"], "2026-07-28");
    assert_eq!(requests[1]["rpc"], "initialize");
    assert_eq!(requests[1]["session"], Value::Null);
    for r in &requests[2..] {
        assert_eq!(r["session"], "fault-session-1", "{r}");
        assert_eq!(r["version"], "2025-11-25", "{r}");
    }
    assert!(requests.iter().all(|r| r["auth"] == true));
    let rpcs: Vec<&str> = requests.iter().filter_map(|r| r["rpc"].as_str()).collect();
    assert!(
        rpcs.contains(&"notifications/initialized") && rpcs.contains(&"notifications/cancelled"),
        "{rpcs:?}"
    );
    assert_eq!(
        requests.iter().filter(|r| r["method"] == "GET").count(),
        1,
        "{requests:?}"
    );
}

/// server-everything restarted while the proxy is idle no longer knows the proxy's session and
/// answers it with 400 "No valid session ID provided": the proxy opens a new session with the
/// same `initialize` and sends the call again.
#[test]
fn a_server_restarted_while_idle_gets_a_new_session_and_the_call_goes_through() {
    let port = free_port();
    let server = everything_on("streamableHttp", port);
    let (_d, cfg) = remote_config(&server.url("/mcp"), "");
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-11-25");
    let env = call_envelope(&mut p, 1, "echo", json!({"message": "before"}));
    assert_ok(&env, "before");
    drop(server);
    let _server = everything_on("streamableHttp", port);
    let env = call_envelope(&mut p, 2, "echo", json!({"message": "after"}));
    assert_ok(&env, "after");
    let env = call_envelope(&mut p, 3, "get-sum", json!({"a": 2, "b": 3}));
    assert_ok(&env, "5");
    assert!(p.stderr().contains("opened a new one"), "{}", p.stderr());
    finish_session(p);
}

#[test]
fn a_server_killed_mid_call_is_a_retryable_error_and_is_reconnected() {
    let server = sdk_server(None, &["--json"]);
    let port = server.port;
    let extra = "bearer_token_env_var = \"REMOTE_TOKEN\"\ntool_timeout_sec = 30";
    let (_d, cfg) = remote_config(&server.url("/mcp"), extra);
    let mut p = RawProxy::start_env(&cfg, &[], &[("REMOTE_TOKEN", SECRET)]);
    p.initialize("2025-11-25");
    let env = call_envelope(&mut p, 1, "add", json!({"a": 2, "b": 3}));
    assert!(env["content"].as_str().unwrap().contains('5'), "{env}");
    p.send(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":20}}}));
    std::thread::sleep(Duration::from_millis(800));
    drop(server);
    let (resp, _) = p.response(&json!(2), LONG);
    let env = envelope_of(&resp);
    assert_error(&env, "server_error", "server 'remote'", true);
    // The same server comes back on the same port: the proxy connects again (new session).
    let _server = sdk_server(Some(port), &["--json"]);
    let env = call_envelope(&mut p, 3, "echo", json!({"text": "back"}));
    assert_eq!(env["status"], "ok", "{env}; stderr:\n{}", p.stderr());
    finish_session(p);
}

#[test]
fn an_imported_remote_entry_works_once_its_moved_token_is_set() {
    let server = sdk_server(None, &[]);
    let dir = tempfile::tempdir().unwrap();
    let client = dir.path().join("claude_desktop_config.json");
    let entry = json!({"mcpServers": {"docs": {"url": server.url("/mcp"),
        "headers": {"Authorization": format!("Bearer {SECRET}"), "X-Team": "t-1"}}}});
    std::fs::write(&client, entry.to_string()).unwrap();
    let out = Command::new(bin())
        .arg("import")
        .arg(&client)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(!text.contains(SECRET), "the token was copied:\n{text}");
    assert!(
        text.contains("# set DOCS_TOKEN in the proxy's environment"),
        "{text}"
    );
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, &text).unwrap();
    let mut p = RawProxy::start_env(&cfg, &[], &[("DOCS_TOKEN", SECRET)]);
    p.initialize("2025-11-25");
    let env = call_envelope(&mut p, 1, "add", json!({"a": 20, "b": 22}));
    assert_ok(&env, "42");
    finish_session(p);
}

/// The Python SDK server serves both eras: the proxy's `server/discover` probe finds it speaks
/// MCP 2026-07-28, so every request goes as a stateless POST with the request metadata headers
/// and no session; server-everything (2025 era only) refuses the probe and gets a session.
/// `check` shows each server's era. An `x-mcp-header` argument travels in `Mcp-Param-*`; a
/// timed-out call is cancelled by closing its stream.
#[test]
fn a_2026_07_28_remote_server_is_called_statelessly_beside_a_2025_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("headers.jsonl");
    let log_flag = log.to_str().unwrap();
    let modern = sdk_server(None, &["--log", log_flag]);
    let legacy = everything("streamableHttp");
    let (_d, cfg) = write_config(&format!(
        "[mcp_servers.modern]\nurl = {:?}\nbearer_token_env_var = \"REMOTE_TOKEN\"\nchar_budget = 300\n\
         [mcp_servers.modern.tools.slow]\ntool_timeout_sec = 1\n\
         [mcp_servers.legacy]\nurl = {:?}\n",
        modern.url("/mcp"),
        legacy.url("/mcp")
    ));
    let out = check_with(&cfg, &[("REMOTE_TOKEN", SECRET)]);
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{table}");
    let row = |name: &str| {
        let row = table.lines().find(|l| l.trim_start().starts_with(name));
        row.unwrap_or_else(|| panic!("no row {name}:\n{table}"))
            .to_owned()
    };
    assert!(row("modern").contains("2026-07-28 (modern)"), "{table}");
    assert!(row("legacy").contains("2025-11-25 (legacy)"), "{table}");
    std::fs::write(&log, "").unwrap();

    let mut p = RawProxy::start_env(&cfg, &[], &[("REMOTE_TOKEN", SECRET)]);
    p.initialize("2025-11-25");
    let env = call_envelope(&mut p, 1, "modern__echo", json!({"text": "stateless"}));
    assert_ok(&env, "stateless");
    let env = call_envelope(&mut p, 2, "rows", json!({"n": 500}));
    assert_eq!(env["status"], "truncated", "{env}");
    assert!(env["content"].as_str().unwrap().contains("row-0"), "{env}");
    let env = call_envelope(&mut p, 3, "legacy__echo", json!({"message": "session"}));
    assert_ok(&env, "Echo: session");
    // The server checks the x-mcp-header parameter's Mcp-Param-Region against the body.
    let args = json!({"region": "eu-west1", "query": "q"});
    let env = call_envelope(&mut p, 4, "regional", args);
    assert_ok(&env, "eu-west1: q");
    // A call past its timeout is cancelled by closing its response stream: no
    // `notifications/cancelled` is POSTed.
    let env = call_envelope(&mut p, 5, "slow", json!({"seconds": 5}));
    assert_error(&env, "timeout", "within 1s", true);
    // Each JSON answer is its call's answer: nothing is left to fail (and log) after it.
    let stderr = p.stderr();
    assert!(!stderr.contains("could not tell which request"), "{stderr}");
    finish_session(p);

    // What the modern server saw: POSTs only, each with the version and method headers (the
    // tool's name for calls), never a session id; no `initialize`.
    let requests: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let methods: Vec<&str> = requests
        .iter()
        .filter_map(|r| r["mcp-method"].as_str())
        .collect();
    assert!(
        methods.contains(&"server/discover") && methods.contains(&"tools/list"),
        "{requests:?}"
    );
    assert!(!methods.contains(&"initialize"), "{requests:?}");
    for r in &requests {
        assert_eq!(r["method"], "POST", "{r}");
        assert!(r["mcp-method"].is_string(), "requests only: {r}");
        assert_eq!(r["mcp-session-id"], Value::Null, "{r}");
        assert_eq!(r["mcp-protocol-version"], "2026-07-28", "{r}");
    }
    let calls: Vec<&Value> = requests
        .iter()
        .filter(|r| r["mcp-method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 4, "{requests:?}");
    assert_eq!(calls[0]["mcp-name"], "echo");
    assert_eq!(calls[1]["mcp-name"], "rows");
    assert_eq!(calls[2]["mcp-name"], "regional");
    assert_eq!(calls[2]["mcp-param-region"], "eu-west1");
}

/// A TCP relay to `upstream` on 127.0.0.1 that cuts the first connection whose bytes from the
/// client contain `needle`, `after` they were seen (both ways, as a dropped network would);
/// every other connection is relayed untouched. Returns the relay's port.
fn cutting_relay(upstream: u16, needle: &'static str, after: Duration) -> u16 {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let cut_once = Arc::new(AtomicBool::new(false));
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                continue;
            };
            let (mut c_read, mut s_write) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut s_read, mut c_write) =
                (server.try_clone().unwrap(), client.try_clone().unwrap());
            let cut_once = cut_once.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 16384];
                while let Ok(n) = c_read.read(&mut buf) {
                    if n == 0 || s_write.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    let seen = String::from_utf8_lossy(&buf[..n]).contains(needle);
                    if seen && !cut_once.swap(true, Ordering::SeqCst) {
                        let (c, s) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                        std::thread::spawn(move || {
                            std::thread::sleep(after);
                            let _ = c.shutdown(std::net::Shutdown::Both);
                            let _ = s.shutdown(std::net::Shutdown::Both);
                        });
                    }
                }
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut s_read, &mut c_write);
                let _ = c_write.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    port
}

/// server-everything keeps the events of its SSE streams (an event store) and gives them ids:
/// when the connection carrying a call's SSE answer is cut after the first progress event, the
/// proxy resumes the stream with GET and `Last-Event-ID` (after the `retry` delay, 1 s when
/// the server names none), and the call still gets its result.
#[test]
fn a_cut_sse_answer_is_resumed_with_last_event_id() {
    let server = everything("streamableHttp");
    // Progress at 0.5 s, the result at 1 s; the cut at 0.7 s. (This server's example event
    // store replays what was stored after the id but sends nothing live on the resumed
    // stream, so the resume, a second after the cut, must come after the result.)
    let relay = cutting_relay(
        server.port,
        "trigger-long-running-operation",
        Duration::from_millis(700),
    );
    let url = format!("http://127.0.0.1:{relay}/mcp");
    let (_d, cfg) = remote_config(&url, "tool_timeout_sec = 12");
    let mut p = RawProxy::start(&cfg, &["--log-level", "debug"]);
    p.initialize("2025-11-25");
    let args = json!({"duration": 1, "steps": 2});
    let env = call_envelope(&mut p, 1, "trigger-long-running-operation", args);
    let stderr = p.stderr();
    assert_eq!(env["status"], "ok", "{env}\n{stderr}");
    assert_ok(&env, "completed");
    assert!(stderr.contains("SSE stream resumed"), "{stderr}");
    let env = call_envelope(&mut p, 2, "echo", json!({"message": "still here"}));
    assert_ok(&env, "still here");
    finish_session(p);
}

/// A server that gives its SSE events no ids cannot resume a cut stream: the call fails as a
/// retryable `server_error`, and the next call goes through.
#[test]
fn a_cut_sse_answer_without_event_ids_fails_retryably() {
    let server = sdk_server(None, &["--legacy-only"]);
    let relay = cutting_relay(server.port, "\"slow\"", Duration::from_millis(700));
    let url = format!("http://127.0.0.1:{relay}/mcp");
    let extra = "bearer_token_env_var = \"REMOTE_TOKEN\"\ntool_timeout_sec = 30";
    let (_d, cfg) = remote_config(&url, extra);
    let mut p = RawProxy::start_env(&cfg, &[], &[("REMOTE_TOKEN", SECRET)]);
    p.initialize("2025-11-25");
    let env = call_envelope(&mut p, 1, "slow", json!({"seconds": 5}));
    assert_error(&env, "server_error", "server 'remote'", true);
    let env = call_envelope(&mut p, 2, "echo", json!({"text": "after the cut"}));
    assert_ok(&env, "after the cut");
    finish_session(p);
}
