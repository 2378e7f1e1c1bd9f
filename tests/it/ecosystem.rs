//! Fitting the ecosystem through the binary (issue 7): config discovery order, nothing but
//! protocol messages on stdout in `serve` even at trace level, `--log-file`.
use crate::common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// `check` with no `--config`, in `cwd`, with exactly `env` for the discovery variables.
fn check_in(cwd: &Path, env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.arg("check")
        .current_dir(cwd)
        .env_remove("MCP_ENVELOPE_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", cwd.join("no-home"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// A config with one fixture server named `name`, written at `path`.
fn config_at(path: &Path, name: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, fixture_server(name, &[], "")).unwrap();
}

fn first_server(out: &Output) -> String {
    ok_stdout(out)
        .lines()
        .nth(3)
        .unwrap_or("")
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn discovery_order_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("cwd");
    let xdg = dir.path().join("xdg");
    let env_file = dir.path().join("env.toml");
    let given = dir.path().join("given.toml");
    std::fs::create_dir_all(&cwd).unwrap();

    // Nothing anywhere: exit 2, every place named.
    let out = check_in(&cwd, &[("XDG_CONFIG_HOME", &xdg)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for place in [
        "--config (not given)".to_string(),
        "MCP_ENVELOPE_CONFIG (not set)".to_string(),
        format!("{} (not found)", cwd.join("mcp-envelope.toml").display()),
        format!(
            "{} (not found)",
            xdg.join("mcp-envelope/config.toml").display()
        ),
    ] {
        assert!(err.contains(&place), "{place} missing in {err}");
    }

    // 4. $XDG_CONFIG_HOME/mcp-envelope/config.toml.
    config_at(&xdg.join("mcp-envelope/config.toml"), "fromxdg");
    assert_eq!(
        first_server(&check_in(&cwd, &[("XDG_CONFIG_HOME", &xdg)])),
        "fromxdg"
    );
    // 3. ./mcp-envelope.toml beats it.
    config_at(&cwd.join("mcp-envelope.toml"), "fromcwd");
    assert_eq!(
        first_server(&check_in(&cwd, &[("XDG_CONFIG_HOME", &xdg)])),
        "fromcwd"
    );
    // 2. MCP_ENVELOPE_CONFIG beats that.
    config_at(&env_file, "fromenv");
    let env = [
        ("XDG_CONFIG_HOME", xdg.as_path()),
        ("MCP_ENVELOPE_CONFIG", env_file.as_path()),
    ];
    assert_eq!(first_server(&check_in(&cwd, &env)), "fromenv");
    // 1. --config beats everything.
    config_at(&given, "fromflag");
    let out = Command::new(bin())
        .arg("check")
        .arg("--config")
        .arg(&given)
        .current_dir(&cwd)
        .env("XDG_CONFIG_HOME", &xdg)
        .env("MCP_ENVELOPE_CONFIG", &env_file)
        .output()
        .unwrap();
    assert_eq!(first_server(&out), "fromflag");
}

fn assert_jsonrpc_lines(stdout: &str) -> usize {
    let mut n = 0;
    for line in stdout.lines() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "not a JSON-RPC message: {line}");
        n += 1;
    }
    n
}

/// Runs a session (initialize, tools/list, calls, an unknown tool, a bad method, garbage) with
/// the stdout pipe read whole afterwards, so any stray line would be seen.
fn session_stdout(extra_args: &[&str], rust_log: Option<&str>) -> (String, String) {
    let (_dir, config) = write_config(&format!(
        "[defaults]\nchar_budget = 60\n{}",
        fixture_server("fx", &["--noisy"], "")
    ));
    let input = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}).to_string(),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string(),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}).to_string(),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rows","arguments":{"n":4,"prefix":"SECRET-ARG-"}}}).to_string(),
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fail","arguments":{"message":"nope"}}}).to_string(),
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"missing","arguments":{}}}).to_string(),
        json!({"jsonrpc":"2.0","id":6,"method":"no/such"}).to_string(),
        "this is not json".to_string(),
    ];
    let mut cmd = Command::new(bin());
    cmd.arg("serve")
        .arg("--config")
        .arg(&config)
        .args(extra_args);
    cmd.env_remove("RUST_LOG");
    if let Some(filter) = rust_log {
        cmd.env("RUST_LOG", filter);
    }
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        // Send initialize first and give the server time to start, then the rest.
        writeln!(stdin, "{}", input[0]).unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        for line in &input[1..] {
            writeln!(stdin, "{line}").unwrap();
        }
        std::thread::sleep(Duration::from_millis(1500));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn stdout_carries_only_protocol_messages_at_trace_level() {
    for (args, rust_log) in [
        (&["--log-level", "trace"][..], None),
        (&[][..], Some("trace")),
    ] {
        let (stdout, stderr) = session_stdout(args, rust_log);
        let n = assert_jsonrpc_lines(&stdout);
        assert!(
            n >= 7,
            "expected every answer on stdout, got {n}:\n{stdout}\n{stderr}"
        );
        for id in 1..=6 {
            assert!(
                stdout.contains(&format!("\"id\":{id}")),
                "no answer {id}: {stdout}"
            );
        }
        assert!(stdout.contains("-32700"), "parse error answered: {stdout}");
        assert!(
            stderr.contains("TRACE") || stderr.contains("DEBUG"),
            "{stderr}"
        );
        assert!(
            stderr.contains("server stderr"),
            "server stderr is logged at debug: {stderr}"
        );
    }
}

#[test]
fn info_logs_have_one_line_per_call_and_no_argument_values() {
    let (stdout, stderr) = session_stdout(&[], None);
    assert_jsonrpc_lines(&stdout);
    let calls: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("tools/call"))
        .collect();
    assert_eq!(calls.len(), 3, "{stderr}");
    for field in [
        "call_id=3",
        "tool=rows",
        "server=fx",
        "status=\"truncated\"",
        "omitted=",
        "duration_ms=",
    ] {
        assert!(
            calls.iter().any(|l| l.contains(field)),
            "{field} in {calls:?}"
        );
    }
    assert!(
        !stderr.contains("SECRET-ARG-"),
        "an argument value reached the log: {stderr}"
    );
    assert!(
        !stderr.contains('\x1b'),
        "no ANSI colours when stderr is not a terminal"
    );
}

#[test]
fn log_file_takes_the_logs() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("proxy.log");
    let log_arg = log.display().to_string();
    let (stdout, stderr) = session_stdout(&["--log-file", &log_arg, "--log-level", "debug"], None);
    assert_jsonrpc_lines(&stdout);
    assert!(stderr.trim().is_empty(), "stderr should be empty: {stderr}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("tools/call") && logged.contains("call_id=3"),
        "{logged}"
    );
    assert!(!logged.contains("\x1b["), "no ANSI colours in the file");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "a new log file is readable by its owner only");
}

#[test]
fn a_log_file_that_is_a_symlink_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("elsewhere");
    std::fs::write(&target, "").unwrap();
    let link = dir.path().join("proxy.log");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = Command::new(bin())
        .args(["--log-file", link.to_str().unwrap(), "config-schema"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot open log file") && stderr.contains("symbolic link"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "",
        "nothing written through it"
    );
}

#[test]
fn every_subcommand_has_help_with_example_and_exit_codes() {
    let version = Command::new(bin()).arg("--version").output().unwrap();
    assert!(version.status.success());
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("mcp-envelope "));
    for sub in [
        "serve",
        "call",
        "envelope",
        "replay",
        "render",
        "check",
        "import",
        "config-schema",
    ] {
        let out = Command::new(bin()).args([sub, "--help"]).output().unwrap();
        assert!(out.status.success(), "{sub}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Example"),
            "{sub} --help has no example:\n{text}"
        );
        assert!(
            text.contains("Exit codes"),
            "{sub} --help has no exit codes:\n{text}"
        );
    }
}
