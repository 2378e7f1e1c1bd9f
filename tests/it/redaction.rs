//! Secrets in what servers send back: a remote server that repeats the password of the user
//! info in its `url` (sent as HTTP Basic) gets `[redacted]` in the envelope and the logs, as
//! the values of its credential headers do.
use crate::common::faults::{call_msg, list_tools};
use crate::common::*;
use crate::remote::fault_server;

use serde_json::{json, Value};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(60);

#[test]
fn a_url_password_echoed_by_a_remote_server_is_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let server = fault_server(&dir.path().join("requests.jsonl"));
    let password = "s3cret-Pass-42";
    let url = server
        .url("/mcp")
        .replace("http://", &format!("http://bob:{password}@"));
    let (_d, cfg) = write_config(&format!(
        "[mcp_servers.remote]\nurl = {url:?}\nmax_restarts = 0\n"
    ));
    let mut p = RawProxy::start(&cfg, &["--log-level", "debug"]);
    p.initialize("2025-11-25");
    let env = envelope_of(&p.call(json!(1), "echo_auth", json!({}), LONG));
    let content = env["content"].as_str().unwrap();
    assert!(content.starts_with("server_error: "), "{env}");
    assert!(
        content.contains("rejected credentials bob:[redacted] sent as [redacted]"),
        "{env}"
    );
    let stderr = p.stderr();
    finish_session(p);
    assert!(!stderr.contains(password), "{stderr}");
}

/// A remote server whose tool error repeats the request's headers: the bearer token and the
/// `env_http_headers` value read `[redacted]` in the envelope (its text and
/// `structuredContent`) and the transcript.
#[test]
fn credentials_echoed_in_a_remote_tool_result_are_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let server = fault_server(&dir.path().join("requests.jsonl"));
    let transcript = dir.path().join("t.jsonl");
    let (_d, cfg) = write_config(&format!(
        "[transcript]\npath = {:?}\n[mcp_servers.remote]\nurl = {:?}\nmax_restarts = 0\n\
         bearer_token_env_var = \"GITHUB_PAT\"\nenv_http_headers = {{ \"X-Api-Key\" = \"ACME_AUTH\" }}\n",
        transcript,
        server.url("/mcp")
    ));
    let (pat, key) = ("ghp_patSecretBBB222", "acmeSecretCCC333");
    let env = [("GITHUB_PAT", pat), ("ACME_AUTH", key)];
    let mut p = RawProxy::start_env(&cfg, &[], &env);
    p.initialize("2025-11-25");
    let env = envelope_of(&p.call(json!(1), "echo_headers", json!({}), LONG));
    let content = env["content"].as_str().unwrap();
    assert!(content.starts_with("tool_error: "), "{env}");
    assert!(
        content.contains("x-api-key: [redacted]")
            && content.contains("authorization: Bearer [redacted]"),
        "{env}"
    );
    let stderr = p.stderr();
    finish_session(p);
    let recorded = std::fs::read_to_string(&transcript).unwrap();
    for text in [env.to_string(), recorded, stderr] {
        assert!(!text.contains(pat) && !text.contains(key), "{text}");
    }
}

/// A local server given `API_TOKEN` in its `env`: the value goes from a tool result, a
/// `prompts/get` result and a `resources/read` result; the value of a variable
/// whose name is not secret-looking stays.
#[test]
fn secret_env_values_in_a_local_servers_answers_are_redacted() {
    let secret = "sk-local-777777";
    let extra = format!("env = {{ API_TOKEN = {secret:?}, GREETING = \"hello-world\" }}");
    let transcript = std::env::temp_dir().join(format!("redaction-{}.jsonl", std::process::id()));
    let server = fixture_server("fx", &["--features"], &extra);
    let (_d, cfg) = write_config(&format!("[transcript]\npath = {transcript:?}\n{server}"));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-11-25");
    let said = format!("{secret} and hello-world");
    let env = envelope_of(&p.call(json!(1), "echo", json!({ "text": said }), LONG));
    assert_eq!(env["content"], "[redacted] and hello-world", "{env}");
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/get",
        "params": {"name": "greet", "arguments": {"name": secret}}});
    p.send(&get);
    let (answer, _) = p.response(&json!(2), LONG);
    let text = answer["result"]["messages"][0]["content"]["text"].as_str();
    assert_eq!(text, Some("Hello, [redacted] from fx"), "{answer}");
    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
        "params": {"uri": format!("fixture://fx/item/{secret}")}});
    p.send(&read);
    let (answer, _) = p.response(&json!(3), LONG);
    let text = answer["result"]["contents"][0]["text"].as_str();
    assert_eq!(text, Some("item [redacted] of fx"), "{answer}");
    // A call no server takes is recorded without the secret too.
    let env = envelope_of(&p.call(json!(4), "nope", json!({ "text": said }), LONG));
    assert_eq!(env["status"], "error", "{env}");
    finish_session(p);
    // The client typed the value into the call's arguments: the transcript has it redacted.
    let recorded = std::fs::read_to_string(&transcript).unwrap();
    assert!(!recorded.contains(secret), "{recorded}");
    assert!(
        recorded.contains("[redacted] and hello-world"),
        "{recorded}"
    );
    // Played back from that transcript, the same call (the secret typed again) matches its
    // recording, whose arguments hold "[redacted]" in its place.
    let mut played = RawProxy::start(&cfg, &["--cassette", transcript.to_str().unwrap()]);
    played.initialize("2025-11-25");
    let env = envelope_of(&played.call(json!(1), "echo", json!({ "text": said }), LONG));
    assert_eq!(env["status"], "ok", "{env}");
    assert_eq!(env["content"], "[redacted] and hello-world", "{env}");
    // A call the cassette lacks is answered not_found without quoting the secret it carried.
    let other = json!({ "text": format!("{secret} again") });
    let env = envelope_of(&played.call(json!(2), "echo", other, LONG));
    assert_eq!(env["status"], "error", "{env}");
    assert!(!env.to_string().contains(secret), "{env}");
    finish_session(played);
    let _ = std::fs::remove_file(&transcript);
}

/// What a local server sends on its own reaches the client without its secrets too: a
/// `notifications/message` log and the message of an `elicitation/create` request that
/// repeat the value of its `API_TOKEN`.
#[test]
fn secret_env_values_in_a_servers_notifications_and_requests_are_redacted() {
    let secret = "sk-notify-888888";
    let extra = format!("env = {{ API_TOKEN = {secret:?} }}");
    let (_d, cfg) = write_config(&fixture_server("fx", &["--features"], &extra));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-11-25");
    let said = format!("token {secret} in a log");
    p.send(&call_msg(json!(1), "log", json!({ "text": said })));
    let (answer, before) = p.response(&json!(1), LONG);
    assert_eq!(envelope_of(&answer)["status"], "ok", "{answer}");
    let logs: Vec<&Value> = before
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    assert_eq!(logs.len(), 1, "{before:?}");
    assert_eq!(logs[0]["params"]["data"], "token [redacted] in a log");

    let asked = format!("may I use {secret}?");
    p.send(&call_msg(json!(2), "elicit", json!({ "message": asked })));
    let request = p.recv(LONG);
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert_eq!(request["params"]["message"], "may I use [redacted]?");
    p.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}}));
    let (answer, _) = p.response(&json!(2), LONG);
    let env = envelope_of(&answer);
    assert_eq!(env["content"], r#"result={"action":"decline"}"#, "{env}");
    let stderr = p.stderr();
    finish_session(p);
    assert!(!stderr.contains(secret), "{stderr}");
}

/// A server whose tool description and `instructions` repeat the value of its `API_TOKEN`
/// (`--describe-env`): the proxy's `tools/list` and `initialize` result carry `[redacted]` in
/// its place.
#[test]
fn a_secret_in_a_servers_tool_description_is_redacted() {
    let secret = "sk-described-999999";
    let extra = format!("env = {{ API_TOKEN = {secret:?} }}");
    let flags = ["--features", "--describe-env", "API_TOKEN"];
    let (_d, cfg) = write_config(&fixture_server("fx", &flags, &extra));
    let mut p = RawProxy::start(&cfg, &[]);
    let init = p.initialize("2025-11-25");
    let instructions = init["instructions"].as_str().unwrap_or_default();
    assert!(instructions.contains("([redacted])"), "{init}");
    assert!(!instructions.contains(secret), "{init}");
    let list = list_tools(&mut p);
    let echo = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .cloned()
        .unwrap_or_else(|| panic!("no echo tool: {list}"));
    let description = echo["description"].as_str().unwrap();
    assert!(description.ends_with("([redacted])"), "{description}");
    assert!(!list.to_string().contains(secret), "{list}");
    finish_session(p);
}

/// A server that writes the secret with `\u` escapes (Python's `json.dumps` does for
/// non-ASCII characters) in its tool description, its `instructions` and a tool's result, or
/// that echoes it inside JSON held by a text: every spelling reads `[redacted]` (reported by
/// a fresh user: `P\u00e4ssword1234` went through).
#[test]
fn a_secret_the_server_writes_with_json_escapes_is_redacted() {
    let secret = "sk-dëscribed-\"quoted\"-999";
    let transcript = std::env::temp_dir().join(format!("escaped-{}.jsonl", std::process::id()));
    let extra = format!("env = {{ API_TOKEN = {secret:?} }}");
    let flags = ["--features", "--describe-env", "API_TOKEN"];
    let server = fixture_server("fx", &flags, &extra);
    let (_d, cfg) = write_config(&format!("[transcript]\npath = {transcript:?}\n{server}"));
    let mut p = RawProxy::start(&cfg, &[]);
    let init = p.initialize("2025-11-25");
    assert!(!init.to_string().contains("scribed"), "{init}");
    let list = list_tools(&mut p);
    assert!(list.to_string().contains("([redacted])"), "{list}");
    assert!(!list.to_string().contains("scribed"), "{list}");
    let nested = json!({ "API_TOKEN": secret, "n": 1 }).to_string();
    let said = format!("{secret} and {nested}");
    let env = envelope_of(&p.call(json!(1), "echo", json!({ "text": said }), LONG));
    assert_eq!(
        env["content"], r#"[redacted] and {"API_TOKEN":"[redacted]","n":1}"#,
        "{env}"
    );
    finish_session(p);
    let recorded = std::fs::read_to_string(&transcript).unwrap();
    let _ = std::fs::remove_file(&transcript);
    assert!(!recorded.contains("scribed"), "{recorded}");
}

/// A local server that prints a banner with the secrets it was given on stdout before it
/// speaks JSON-RPC: the skipped line is logged with them replaced, as its stderr lines are.
#[test]
fn secrets_in_a_servers_non_json_stdout_line_are_redacted_in_the_log() {
    let (token, password) = ("tok-SECRET-abc123", "hunter2hunter2");
    let script = format!(
        "echo \"connecting with token $API_TOKEN password=$DB_PASS\"; exec {:?} {:?} --name fx",
        python().display().to_string(),
        fixture().display().to_string()
    );
    let (_d, cfg) = write_config(&format!(
        "[mcp_servers.fx]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n\
         env = {{ API_TOKEN = {token:?}, DB_PASS = {password:?} }}\n"
    ));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-11-25");
    let tools = list_tools(&mut p);
    assert!(tools.to_string().contains("echo"), "{tools}");
    let stderr = p.stderr();
    finish_session(p);
    assert!(
        stderr.contains("non-JSON line on stdout skipped"),
        "{stderr}"
    );
    assert!(
        stderr.contains("connecting with token [redacted]"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(token) && !stderr.contains(password),
        "{stderr}"
    );
}

/// Secrets in a server's `args` written as a JSON argument (`{"db":{"password":…}}`) or
/// under a percent-encoded query key (`?api%5Fkey=…`) are secrets like `--token …`: the
/// server's banner that repeats them is logged without them, its answers reach the client
/// without them, and `check` quotes a command that cannot start without them.
#[test]
fn json_and_percent_encoded_secrets_in_args_are_redacted() {
    let (in_json, in_query) = ("Hunter2Json77", "SecretPct9911");
    let json_arg = format!(r#"{{"db":{{"user":"bob","password":"{in_json}"}}}}"#);
    let url_arg = format!("https://h/mcp?x=1&api%5Fkey={in_query}");
    let script = format!(
        "echo \"given $0 $1\"; exec {:?} {:?} --name fx",
        python().display().to_string(),
        fixture().display().to_string()
    );
    let args = serde_json::to_string(&["-c", &script, &json_arg, &url_arg]).unwrap();
    let (_d, cfg) = write_config(&format!(
        "[mcp_servers.fx]\ncommand = \"sh\"\nargs = {args}\n"
    ));
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-11-25");
    let said = format!("{in_json} and {in_query}");
    let env = envelope_of(&p.call(json!(1), "echo", json!({ "text": said }), LONG));
    assert_eq!(env["content"], "[redacted] and [redacted]", "{env}");
    let stderr = p.stderr();
    finish_session(p);
    assert!(stderr.contains("given {"), "{stderr}");
    assert!(
        !stderr.contains(in_json) && !stderr.contains(in_query),
        "{stderr}"
    );
    let command = format!("/nonexistent/bin {json_arg} {url_arg}");
    let (_d, cfg) = write_config(&format!(
        "[mcp_servers.gone]\ncommand = {}\n",
        serde_json::to_string(&command).unwrap()
    ));
    let out = check(&cfg);
    let text = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("cannot start `/nonexistent/bin {"), "{text}");
    for secret in [in_json, in_query] {
        assert!(
            !text.contains(secret) && !log.contains(secret),
            "{text}{log}"
        );
    }
}
