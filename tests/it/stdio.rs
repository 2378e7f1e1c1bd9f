//! How `serve` uses its own stdin and stdout (src/stdio.rs): pipes are switched to
//! non-blocking and driven by the reactor while the session runs, their original flags come
//! back when it ends, and files (which cannot be polled) still work through the fallback.

use crate::common;

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bin, fixture_server, write_config};
use serde_json::{json, Value};

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // Close-on-exec, so the proxy inherits only the end it is given.
    // SAFETY: pipe2() writes two descriptors into the array we own.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned by nobody else.
    unsafe {
        use std::os::fd::FromRawFd;
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    }
}

fn nonblocking(fd: &impl AsRawFd) -> bool {
    // SAFETY: F_GETFL on a descriptor we own.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    assert!(flags >= 0);
    flags & libc::O_NONBLOCK != 0
}

/// Starts `mcp-envelope --config CONFIG [extra] serve` with the given stdio.
fn serve(
    config: &std::path::Path,
    extra: &[&str],
    stdin: Stdio,
    stdout: Stdio,
    stderr: Stdio,
) -> std::process::Child {
    Command::new(bin())
        .arg("--config")
        .arg(config)
        .args(extra)
        .arg("serve")
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap()
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

#[test]
fn pipes_are_nonblocking_while_serving_and_restored_after() {
    let (_dir, config) = write_config(&fixture_server("fx", &[], ""));
    let (stdin_read, stdin_write) = pipe();
    let (stdout_read, stdout_write) = pipe();
    // Our own handles on the same open files as the proxy's stdin and stdout.
    let stdin_probe = stdin_read.try_clone().unwrap();
    let stdout_probe = stdout_write.try_clone().unwrap();
    assert!(!nonblocking(&stdin_probe) && !nonblocking(&stdout_probe));
    let mut child = serve(
        &config,
        &[],
        Stdio::from(stdin_read),
        Stdio::from(stdout_write),
        Stdio::null(),
    );
    let mut to_proxy = File::from(stdin_write);
    let mut from_proxy = BufReader::new(File::from(stdout_read));
    writeln!(to_proxy, "{INITIALIZE}").unwrap();
    let mut line = String::new();
    from_proxy.read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], json!(1), "{answer}");
    assert!(
        nonblocking(&stdin_probe) && nonblocking(&stdout_probe),
        "serve drives pipes through the reactor"
    );
    writeln!(
        to_proxy,
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#
    )
    .unwrap();
    line.clear();
    from_proxy.read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert!(answer["result"]["tools"].is_array(), "{answer}");
    drop(to_proxy); // EOF: the session ends
    let status = wait_timeout(&mut child, Duration::from_secs(20));
    assert!(status.success());
    assert!(
        !nonblocking(&stdin_probe) && !nonblocking(&stdout_probe),
        "the original (blocking) flags are put back"
    );
}

/// One socket as both stdin and stdout (socat `EXEC:`, systemd socket units): made
/// non-blocking as one, and left blocking again afterwards.
#[test]
fn one_socket_as_stdin_and_stdout_is_restored() {
    let (_dir, config) = write_config(&fixture_server("fx", &[], ""));
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let probe = theirs.try_clone().unwrap();
    let mut child = serve(
        &config,
        &[],
        Stdio::from(OwnedFd::from(theirs.try_clone().unwrap())),
        Stdio::from(OwnedFd::from(theirs)),
        Stdio::null(),
    );
    let mut writer = ours.try_clone().unwrap();
    let mut reader = BufReader::new(ours);
    writeln!(writer, "{INITIALIZE}").unwrap();
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    assert!(nonblocking(&probe), "a socket is driven by the reactor");
    writer.shutdown(std::net::Shutdown::Write).unwrap(); // EOF on the proxy's stdin
    assert!(wait_timeout(&mut child, Duration::from_secs(20)).success());
    assert!(
        !nonblocking(&probe),
        "the original (blocking) flags are put back"
    );
}

/// With `2>&1` stdout shares stderr's pipe: it stays blocking (log lines must never meet
/// `EAGAIN`), stdin is still driven by the reactor, and a burst of calls into a pipe nobody
/// reads for a while is answered in full. (Logs are kept to errors here: with `2>&1` they
/// would be mixed into the protocol stream, which no client can use anyway.)
#[test]
fn stdout_shared_with_stderr_stays_blocking() {
    let (_dir, config) = write_config(&fixture_server("fx", &[], ""));
    let (stdin_read, stdin_write) = pipe();
    let (out_read, out_write) = pipe();
    let stdin_probe = stdin_read.try_clone().unwrap();
    let out_probe = out_write.try_clone().unwrap();
    let mut child = Command::new(bin())
        .args([
            "--config",
            config.to_str().unwrap(),
            "--log-level",
            "error",
            "serve",
        ])
        .stdin(Stdio::from(stdin_read))
        .stdout(Stdio::from(out_write.try_clone().unwrap()))
        .stderr(Stdio::from(out_write))
        .spawn()
        .unwrap();
    let mut to_proxy = File::from(stdin_write);
    writeln!(to_proxy, "{INITIALIZE}").unwrap();
    for i in 2..202 {
        writeln!(
            to_proxy,
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
            "x".repeat(2000)
        )
        .unwrap();
    }
    // Let the pipe fill up before reading anything.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(nonblocking(&stdin_probe) && !nonblocking(&out_probe));
    drop(to_proxy);
    drop(out_probe); // our copy of the write end, or the read below never sees EOF
    let mut answered = std::collections::HashSet::new();
    for line in BufReader::new(File::from(out_read)).lines() {
        let line = line.unwrap();
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            if v["result"]["structuredContent"]["status"] == "ok" {
                answered.insert(v["id"].as_u64().unwrap());
            }
        }
    }
    assert_eq!(answered.len(), 200, "every call answered");
    assert!(wait_timeout(&mut child, Duration::from_secs(20)).success());
}

#[test]
fn files_as_stdin_and_stdout_work_through_the_fallback() {
    let (dir, config) = write_config(&fixture_server("fx", &[], ""));
    let input = dir.path().join("in.jsonl");
    std::fs::write(
        &input,
        format!(
            "{INITIALIZE}\n{}\n{}\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#
        ),
    )
    .unwrap();
    let output = dir.path().join("out.jsonl");
    let mut child = serve(
        &config,
        &[],
        Stdio::from(File::open(&input).unwrap()),
        Stdio::from(File::create(&output).unwrap()),
        Stdio::null(),
    );
    assert!(wait_timeout(&mut child, Duration::from_secs(20)).success());
    let text = std::fs::read_to_string(&output).unwrap();
    let answers: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3)], "{text}");
    assert!(answers[2]["result"]["structuredContent"]["status"].is_string());
}

fn wait_timeout(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the proxy did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
