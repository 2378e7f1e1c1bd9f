//! A transcript that cannot be recorded stops the proxy at start-up: `serve` (over stdio and
//! `--http`) and `call` exit 2 with a message naming the path, where it was given and why,
//! before they serve or call anything. They logged it and ran without recording.
use crate::common;
use common::*;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `mcp-envelope ARGS` with an `initialize` request on stdin, kept open: a proxy that
/// serves answers it and runs on. Returns its output once it exits, or `None` when it was still
/// running after 20 s (it is killed then).
fn run_with_initialize(args: &[&str]) -> Option<Output> {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let mut stdin = child.stdin.take().unwrap();
    // It may have exited already: a closed pipe is no failure here.
    let _ = writeln!(stdin, "{init}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            drop(stdin);
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    eprintln!(
        "still running; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    None
}

/// Asserts that `args` exit 2 at start-up, having written nothing to stdout, with a message
/// naming `path`, `given` (where the path came from) and `why`.
fn refused_at_start(args: &[&str], path: &Path, given: &str, why: &str) {
    let out = run_with_initialize(args)
        .unwrap_or_else(|| panic!("{args:?} ran on without a transcript at {path:?}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} served: {out:?}");
    let said = format!("cannot record the transcript at {path:?} (given by {given}): ");
    assert!(stderr.contains(&said), "{args:?}: {stderr}");
    assert!(stderr.contains(why), "{args:?}: {stderr}");
}

#[test]
fn an_unwritable_transcript_stops_serve_and_call_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let (_c, cfg) = write_config(&fixture_server("fx", &[], ""));
    let cfg = cfg.to_str().unwrap();
    let target = dir.path().join("target.jsonl");
    std::fs::write(&target, "").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let missing = dir.path().join("missing/calls.jsonl");
    let cases: [(PathBuf, &str); 4] = [
        (dir.path().to_owned(), "it is a directory, not a file"),
        (missing.clone(), "missing\" does not exist"),
        (link, "symbolic link"),
        (fifo, "FIFO"),
    ];
    for (path, why) in &cases {
        let p = path.to_str().unwrap();
        let serve = ["serve", "--config", cfg, "--transcript", p];
        refused_at_start(&serve, path, "--transcript", why);
    }
    // `serve --http` and `call` alike; from the config's `[transcript] path` too.
    let m = missing.to_str().unwrap();
    let http = [
        "serve",
        "--config",
        cfg,
        "--http",
        "127.0.0.1:0",
        "--transcript",
        m,
    ];
    refused_at_start(&http, &missing, "--transcript", "does not exist");
    let call = [
        "call",
        "--config",
        cfg,
        "echo",
        r#"{"text":"x"}"#,
        "--transcript",
        m,
    ];
    refused_at_start(&call, &missing, "--transcript", "does not exist");
    let table = format!("[transcript]\npath = {m:?}\n");
    let (_t, from_config) = write_config(&(table + &fixture_server("fx", &[], "")));
    let from_config = from_config.to_str().unwrap();
    let given = format!("`[transcript] path` in {from_config}");
    refused_at_start(
        &["serve", "--config", from_config],
        &missing,
        &given,
        "does not exist",
    );
    // The symlink's target was not touched.
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "");
}

/// A writable path records as before (the check at start-up refuses nothing it should not).
#[test]
fn a_writable_transcript_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let (_c, cfg) = write_config(&fixture_server("fx", &[], ""));
    let mut p = RawProxy::start(&cfg, &["--transcript", path.to_str().unwrap()]);
    p.initialize("2025-11-25");
    let answer = p.call(
        json!(1),
        "echo",
        json!({"text": "x"}),
        Duration::from_secs(60),
    );
    assert_eq!(envelope_of(&answer)["content"], "x", "{answer}");
    assert!(p.close(Duration::from_secs(15)).success());
    let text = std::fs::read_to_string(&path).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| r.get("kind").is_none())
        .collect();
    assert_eq!(records.len(), 1, "{text}");
    assert_eq!(records[0]["seq"], 0);
}
