//! Secrets in what servers send back: a remote server that repeats the password of the user
//! info in its `url` (sent as HTTP Basic) gets `[redacted]` in the envelope and the logs, as
//! the values of its credential headers do.
use crate::common::*;
use crate::remote::fault_server;

use serde_json::json;
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
