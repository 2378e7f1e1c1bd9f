//! `serve --http`: the real binary served over streamable HTTP, driven by the Python SDK's
//! streamable HTTP client in its legacy (2025-11-25, `Mcp-Session-Id`) and 2026-07-28
//! (stateless) modes against server-everything, compared with the same plan over stdio; two
//! clients at once; the guards (Origin, bearer token, body size, unknown session); shutdown.
use crate::common::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

/// The proxy serving HTTP, with its stderr collected.
pub(crate) struct HttpProxy {
    child: Child,
    url: String,
    pub(crate) addr: String,
    stderr: mpsc::Receiver<String>,
}

impl HttpProxy {
    /// Starts `serve --http 127.0.0.1:0` (plus `args`) and waits for the address it logs.
    pub(crate) fn start(config: &Path, args: &[&str], env: &[(&str, &str)]) -> HttpProxy {
        let mut child = Command::new(bin())
            .args(["serve", "--config"])
            .arg(config)
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, stderr) = mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let url = loop {
            let line = stderr
                .recv_timeout(Duration::from_secs(30))
                .expect("the proxy logs the address it serves");
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_owned();
            }
        };
        let addr = url["http://".len()..url.len() - "/mcp".len()].to_owned();
        HttpProxy {
            child,
            url,
            addr,
            stderr,
        }
    }

    /// The Python SDK client in `mode` running `plan` against this proxy.
    fn client(&self, mode: &str, plan: &Value) -> Child {
        sdk_client(mode, plan, &["--".as_ref(), self.url.as_ref()])
    }

    /// One raw HTTP/1.1 request; the status code and the body.
    pub(crate) fn raw(&self, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let (status, _, body) = self.raw_with_head(method, headers, body);
        (status, body)
    }

    /// Opens a 2025-11-25 session (`initialize`, then `notifications/initialized`); its id.
    fn legacy_session(&self) -> String {
        self.session_of_version("2025-11-25")
    }

    /// Opens a session of protocol `version` (`initialize`, then
    /// `notifications/initialized`); its id.
    pub(crate) fn session_of_version(&self, version: &str) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}});
        let (status, head, body) =
            self.raw_with_head("POST", &[ACCEPT, JSON_TYPE], &init.to_string());
        assert_eq!(status, 200, "{body}");
        let negotiated = format!("\"protocolVersion\":\"{version}\"");
        assert!(body.contains(&negotiated), "{body}");
        let id = head
            .lines()
            .find_map(|l| {
                l.split_once(':')
                    .filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
            })
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_else(|| panic!("no session id: {head}"));
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        let (status, _) = self.raw("POST", &[ACCEPT, JSON_TYPE, ("Mcp-Session-Id", &id)], &note);
        assert_eq!(status, 202);
        id
    }

    /// One raw HTTP/1.1 request; the status code, the head (status line and headers) and the
    /// body.
    pub(crate) fn raw_with_head(
        &self,
        method: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut request = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        let status = answer
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        (status, head.to_owned(), body.to_owned())
    }

    /// Sends SIGTERM and waits for the exit; its status and the whole stderr.
    pub(crate) fn stop(mut self) -> (std::process::ExitStatus, String) {
        // SAFETY: kill(2) with the pid of our own child and SIGTERM.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = wait_exit(&mut self.child, Duration::from_secs(30));
        let mut text = String::new();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(2)) {
            text.push_str(&line);
            text.push('\n');
        }
        (status, text)
    }
}

/// A test that panics before [`HttpProxy::stop`] must not leave the proxy running (an orphan
/// keeps every descriptor it inherited, a lock file's too).
impl Drop for HttpProxy {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn wait_exit(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the proxy did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn finish(client: std::process::Child, what: &str) -> Value {
    json_stdout(&client.wait_with_output().unwrap(), what)
}

pub(crate) const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
pub(crate) const JSON_TYPE: (&str, &str) = ("Content-Type", "application/json");

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string()
}

/// Calls that show routing, progress and server-to-client requests.
fn plan() -> Value {
    json!([
        {"op": "list_tools"},
        {"op": "call", "name": "echo", "arguments": {"message": "over http"}},
        {"op": "call", "name": "get-sum", "arguments": {"a": 2, "b": 40}},
        {"op": "call", "name": "trigger-long-running-operation",
         "arguments": {"duration": 1, "steps": 2}, "progress": true},
        {"op": "call", "name": "trigger-elicitation-request", "arguments": {}},
        {"op": "call", "name": "no-such-tool", "arguments": {}}
    ])
}

/// Each step's envelope without its `call_id` (the list of tool names as it is). Progress is
/// compared apart: the SDK's stdio client in 2026-07-28 mode shows none.
fn envelopes(report: &Value) -> Vec<Value> {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| match step.get("structuredContent") {
            Some(env) => {
                let mut env = env.clone();
                env.as_object_mut().unwrap().remove("call_id");
                env
            }
            None => step.clone(),
        })
        .collect()
}

/// Starts tests/clients/sdk_client.py in `mode` with `plan`; `target` is `-- URL` or
/// `-- COMMAND...`.
fn sdk_client(mode: &str, plan: &Value, target: &[&std::ffi::OsStr]) -> Child {
    let plan_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(plan_file.path(), plan.to_string()).unwrap();
    let (_, plan_path) = plan_file.keep().unwrap();
    let script = root().join("tests/clients/sdk_client.py");
    let mut command = Command::new(python());
    command
        .arg(script)
        .args(["--mode", mode])
        .arg("--plan")
        .arg(plan_path);
    command
        .args(target)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The same plan over stdio: the proxy started by the SDK client as a subprocess.
fn stdio_report(config: &Path, mode: &str) -> Value {
    let serve: Vec<std::ffi::OsString> = vec![
        "--".into(),
        bin().into(),
        "serve".into(),
        "--config".into(),
        config.into(),
    ];
    let serve: Vec<&std::ffi::OsStr> = serve.iter().map(|s| s.as_ref()).collect();
    finish(sdk_client(mode, &plan(), &serve), "sdk_client over stdio")
}

#[test]
fn sdk_clients_over_http_get_the_same_envelopes_as_over_stdio_two_at_once() {
    let (_dir, config) = write_config(&real_server("everything", ""));
    let proxy = HttpProxy::start(&config, &[], &[]);
    // Two legacy sessions and a stateless client at the same time.
    let legacy_a = proxy.client("legacy", &plan());
    let legacy_b = proxy.client("legacy", &plan());
    let modern = proxy.client("2026-07-28", &plan());
    let (legacy_a, legacy_b) = (finish(legacy_a, "legacy A"), finish(legacy_b, "legacy B"));
    let modern = finish(modern, "2026-07-28");
    assert_eq!(legacy_a["protocolVersion"], "2025-11-25");
    assert_eq!(modern["protocolVersion"], "2026-07-28");
    let echo = &legacy_a["steps"][1]["structuredContent"];
    assert_eq!(echo["status"], "ok", "{legacy_a}");
    assert_eq!(echo["content"], "Echo: over http");
    // Progress reaches each HTTP client (a last event may lose the race with the result in
    // the client, which then shows it as a plain notification).
    for report in [&legacy_a, &legacy_b, &modern] {
        let progress = report["steps"][3]["progress"].as_array().unwrap();
        assert!(
            !progress.is_empty(),
            "no progress reached the client: {report}"
        );
    }
    // The clients share one server, whose elicitation requests name no call: the proxy gives
    // each to a client with a call in flight there, so together they answer all three.
    let elicited = [&legacy_a, &legacy_b, &modern]
        .iter()
        .flat_map(|r| r["callbacks"].as_array().unwrap())
        .filter(|c| c["method"] == "elicitation/create")
        .count();
    assert_eq!(elicited, 3, "{legacy_a}\n{legacy_b}\n{modern}");
    assert_eq!(envelopes(&legacy_a), envelopes(&legacy_b));

    assert_eq!(
        envelopes(&legacy_a),
        envelopes(&stdio_report(&config, "legacy"))
    );
    assert_eq!(
        envelopes(&modern),
        envelopes(&stdio_report(&config, "2026-07-28"))
    );
    let servers = children_of(proxy.child.id());
    let (status, stderr) = proxy.stop();
    assert!(status.success(), "exit {status:?}: {stderr}");
    assert!(
        wait_gone(&servers, Duration::from_secs(10)).is_empty(),
        "servers left running"
    );
}

#[test]
fn foreign_origin_unknown_session_and_large_body_are_refused() {
    let (_dir, config) = write_config(&real_server("everything", ""));
    let limits = [
        "--max-body-bytes",
        "2000",
        "--body-timeout-secs",
        "5",
        "--session-idle-secs",
        "60",
        "--max-sessions",
        "4",
    ];
    let proxy = HttpProxy::start(&config, &limits, &[]);
    let init = initialize_body();
    let (accept, json_type) = (ACCEPT, JSON_TYPE);
    let foreign = proxy.raw(
        "POST",
        &[accept, json_type, ("Origin", "https://evil.example")],
        &init,
    );
    assert_eq!(foreign.0, 403, "{foreign:?}");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let unknown = proxy.raw(
        "POST",
        &[accept, json_type, ("Mcp-Session-Id", "feedface")],
        &list,
    );
    assert_eq!(unknown.0, 404, "{unknown:?}");
    let no_session = proxy.raw("POST", &[accept, json_type], &list);
    assert_eq!(no_session.0, 400, "{no_session:?}");
    let big = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
        "params": {"pad": "x".repeat(5000)}})
    .to_string();
    let large = proxy.raw("POST", &[accept, json_type], &big);
    assert_eq!(large.0, 413, "{large:?}");
    assert!(large.1.contains("limit of 2000 bytes"), "{large:?}");
    let local = proxy.raw(
        "POST",
        &[accept, json_type, ("Origin", "http://localhost:6274")],
        &init,
    );
    assert_eq!(local.0, 200, "{local:?}");
    assert!(
        local.1.contains("\"protocolVersion\":\"2025-11-25\""),
        "{local:?}"
    );
    let (status, _) = proxy.stop();
    assert!(status.success());
}

#[test]
fn a_bearer_token_is_required_off_loopback_and_checked() {
    let (_dir, config) = write_config(&real_server("everything", ""));
    let refused = Command::new(bin())
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let text = String::from_utf8_lossy(&refused.stderr);
    assert!(text.contains("--auth-token-env"), "{text}");
    let weak = Command::new(bin())
        .args(["serve", "--config"])
        .arg(&config)
        .args([
            "--http",
            "0.0.0.0:0",
            "--auth-token-env",
            "MCP_HTTP_WEAK_TOKEN",
        ])
        .env("MCP_HTTP_WEAK_TOKEN", "s3cr3")
        .output()
        .unwrap();
    assert_eq!(weak.status.code(), Some(2));
    let text = String::from_utf8_lossy(&weak.stderr);
    assert!(text.contains("fewer than the 16"), "{text}");
    assert!(!text.contains("s3cr3"), "{text}");

    let token = "t0ken-for-this-test";
    let env = [("MCP_HTTP_TEST_TOKEN", token)];
    let proxy = HttpProxy::start(&config, &["--auth-token-env", "MCP_HTTP_TEST_TOKEN"], &env);
    let init = initialize_body();
    let (accept, json_type) = (ACCEPT, JSON_TYPE);
    let missing = proxy.raw("POST", &[accept, json_type], &init);
    assert_eq!(missing.0, 401);
    let wrong = proxy.raw(
        "POST",
        &[accept, json_type, ("Authorization", "Bearer nope")],
        &init,
    );
    assert_eq!(wrong.0, 401);
    let bearer = format!("Bearer {token}");
    let good = proxy.raw(
        "POST",
        &[accept, json_type, ("Authorization", &bearer)],
        &init,
    );
    assert_eq!(good.0, 200, "{good:?}");
    let (status, stderr) = proxy.stop();
    assert!(status.success());
    assert!(!stderr.contains(token), "the token reached the logs");
}

/// A 2026-07-28 `tools/call` of `name` with id `id`, sent statelessly; the answer.
fn stateless_call(proxy: &HttpProxy, id: &str, name: &str, arguments: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = [
        ACCEPT,
        JSON_TYPE,
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", name),
    ];
    let (status, text) = proxy.raw("POST", &headers, &body.to_string());
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["id"], id, "the client's own id comes back: {answer}");
    answer
}

#[test]
fn stateless_clients_page_only_their_own_truncated_results() {
    let server = fixture_server("fx", &[], "char_budget = 200");
    let (_dir, config) = write_config(&server);
    let proxy = HttpProxy::start(&config, &[], &[]);
    // Two stateless clients use the same request id: each result is truncated.
    let rows = |prefix: &str| json!({"n": 40, "prefix": prefix});
    let alice = envelope_of(&stateless_call(&proxy, "5", "rows", rows("alice-")));
    let bob = envelope_of(&stateless_call(&proxy, "5", "rows", rows("bob-")));
    // The client's own ids name nothing another stateless client could page.
    for guess in ["5", "1", "0"] {
        let args = json!({"call_id": guess});
        let page = envelope_of(&stateless_call(&proxy, "6", "envelope_next_page", args));
        assert_eq!(page["status"], "error", "{page}");
        assert!(page["content"].as_str().unwrap().starts_with("not_found"));
    }
    let mut call_ids = vec![];
    for env in [&alice, &bob] {
        assert_eq!(env["status"], "truncated", "{env}");
        let call_id = env["call_id"].as_str().unwrap().to_owned();
        let hex = call_id.chars().all(|c| c.is_ascii_hexdigit());
        assert!(call_id.len() == 32 && hex, "not 128 random bits: {call_id}");
        call_ids.push(call_id);
    }
    assert_ne!(call_ids[0], call_ids[1]);
    // Each pages its own result with the call_id its envelope gave it.
    for (call_id, own, other) in [
        (&call_ids[0], "alice-", "bob-"),
        (&call_ids[1], "bob-", "alice-"),
    ] {
        let args = json!({"call_id": call_id});
        let page = envelope_of(&stateless_call(&proxy, "6", "envelope_next_page", args));
        assert_ne!(page["status"], "error", "{page}");
        let content = page["content"].as_str().unwrap();
        assert!(
            content.contains(own) && !content.contains(other),
            "{content}"
        );
        assert_ne!(page["call_id"], "6");
    }
    let (status, _) = proxy.stop();
    assert!(status.success());
}

/// A downstream server's `_meta["io.modelcontextprotocol/serverInfo"]` names the server that
/// answers (MCP 2026-07-28 "Base Protocol: General fields, `_meta`"): through `serve --http`
/// the answer is the proxy's, so a 2025-era client never sees the downstream server's identity
/// as the answering server's, and a 2026-07-28 client sees the proxy's.
#[test]
fn call_results_carry_no_downstream_server_identity() {
    let (_dir, config) = write_config(&crate::eras::modern_server("modern", ""));
    let proxy = HttpProxy::start(&config, &[], &[]);
    let session = proxy.legacy_session();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let headers = [ACCEPT, JSON_TYPE, ("Mcp-Session-Id", session.as_str())];
    let (status, body) = proxy.raw("POST", &headers, &call.to_string());
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(envelope_of(&answer)["content"], "hi", "{answer}");
    let info = &answer["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert!(
        info.is_null(),
        "the downstream server's identity reached the client: {answer}"
    );
    let modern = stateless_call(&proxy, "3", "echo", json!({"text": "hi"}));
    let info = &modern["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(info["name"], "mcp-envelope", "{modern}");
    let (status, _) = proxy.stop();
    assert!(status.success());
}

/// Results passed on unchanged (`resources/read`, `prompts/get`) follow the rule of call
/// results: the downstream server's `_meta["io.modelcontextprotocol/serverInfo"]` never reaches
/// the client; a 2025-era client gets none, a 2026-07-28 client ours; other members stay.
#[test]
fn forwarded_results_carry_no_downstream_server_identity() {
    let (_dir, config) = write_config(&fixture_server("fx", &["--features"], ""));
    let proxy = HttpProxy::start(&config, &[], &[]);
    let session = proxy.legacy_session();
    let identify = json!({"fixture/identify": true});
    let requests = [
        (
            "resources/read",
            json!({"uri": "fixture://fx/doc/0", "_meta": identify}),
        ),
        (
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "a"}, "_meta": identify}),
        ),
    ];
    for (id, (method, params)) in requests.iter().enumerate() {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let headers = [ACCEPT, JSON_TYPE, ("Mcp-Session-Id", session.as_str())];
        let (status, body) = proxy.raw("POST", &headers, &request.to_string());
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            answer["result"]["_meta"],
            json!({"fixture/trace": "t-fx"}),
            "{method}: {answer}"
        );
    }
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}, "fixture/identify": true});
    let body = json!({"jsonrpc": "2.0", "id": "m", "method": "resources/read",
        "params": {"uri": "fixture://fx/doc/0", "_meta": meta}});
    let headers = [
        ACCEPT,
        JSON_TYPE,
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "resources/read"),
        ("Mcp-Name", "fixture://fx/doc/0"),
    ];
    let (status, text) = proxy.raw("POST", &headers, &body.to_string());
    assert_eq!(status, 200, "{text}");
    let modern: Value = serde_json::from_str(&text).unwrap();
    let meta = &modern["result"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/serverInfo"]["name"], "mcp-envelope",
        "{modern}"
    );
    assert_eq!(meta["fixture/trace"], "t-fx", "{modern}");
    let (status, _) = proxy.stop();
    assert!(status.success());
}

/// `serve --http` on an address another program listens on: one line naming the address and
/// why, exit 2 (a usage error), and no server started.
#[test]
fn an_address_in_use_is_one_line_naming_it_and_exit_2() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (_dir, config) = write_config("");
    let out = Command::new(bin())
        .arg("--config")
        .arg(&config)
        .args(["serve", "--http", &addr])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        format!("mcp-envelope serve: cannot listen on {addr}: the address is already in use (another program listens there: stop it, or choose another port)\n")
    );
}

/// `--allow-origin '*'` and `--allow-origin null` were accepted (`null` then let any sandboxed
/// page call the endpoint): both are refused at start, saying why, exit 2.
#[test]
fn a_wildcard_or_null_allowed_origin_is_refused_at_start_with_exit_2() {
    let (_dir, config) = write_config("");
    for (origin, why) in [("*", "any origin"), ("null", "sandboxed")] {
        let out = Command::new(bin())
            .arg("--config")
            .arg(&config)
            .args(["serve", "--http", "127.0.0.1:0", "--allow-origin", origin])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{origin}: {stderr}");
        assert!(stderr.contains("--allow-origin"), "{origin}: {stderr}");
        assert!(stderr.contains(why), "{origin}: {stderr}");
    }
}
