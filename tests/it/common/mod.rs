//! Helpers shared by the end-to-end tests: where the pinned real servers live, temporary
//! configs, a raw JSON-RPC client over the real binary's stdio, and the Python SDK driver.

pub mod faults;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `.tools/` with the pinned servers and clients (installed by `scripts/install-deps`).
pub fn tools() -> PathBuf {
    let dir = root().join(".tools");
    assert!(
        dir.join("venv/bin/mcp-server-time").exists()
            && dir
                .join("npm/node_modules/.bin/mcp-server-everything")
                .exists(),
        "the pinned MCP servers are missing: run `scripts/install-deps` (or `scripts/test`) first"
    );
    dir
}

/// The proxy binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcp-envelope"))
}

/// The fixture server script.
pub fn fixture() -> PathBuf {
    root().join("tests/fixtures/fixture_server.py")
}

/// Python of the tools venv (has the `mcp` SDK).
pub fn python() -> PathBuf {
    tools().join("venv/bin/python")
}

/// A TOML server table for the fixture server named `name` with extra fixture flags and extra
/// TOML lines.
pub fn fixture_server(name: &str, flags: &[&str], extra: &str) -> String {
    let mut args = vec![
        fixture().display().to_string(),
        "--name".into(),
        name.into(),
    ];
    args.extend(flags.iter().map(|s| s.to_string()));
    format!(
        "[mcp_servers.{name}]\ncommand = \"python3\"\nargs = {}\n{extra}\n",
        serde_json::to_string(&args).unwrap()
    )
}

/// A TOML server table for a real server: `everything`, `time` or `git` (git needs `repo`).
pub fn real_server(kind: &str, extra: &str) -> String {
    let t = tools();
    match kind {
        "everything" => format!(
            "[mcp_servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\n{extra}\n",
            t.join("npm/node_modules/.bin/mcp-server-everything")
                .display()
                .to_string()
        ),
        "time" => format!(
            "[mcp_servers.time]\ncommand = {:?}\nargs = [\"--local-timezone\", \"UTC\"]\n{extra}\n",
            t.join("venv/bin/mcp-server-time").display().to_string()
        ),
        other => panic!("unknown real server {other}"),
    }
}

/// A TOML table for mcp-server-git on `repo`.
pub fn git_server(repo: &Path, extra: &str) -> String {
    format!(
        "[mcp_servers.git]\ncommand = {:?}\nargs = [\"--repository\", {:?}]\n{extra}\n",
        tools()
            .join("venv/bin/mcp-server-git")
            .display()
            .to_string(),
        repo.display().to_string()
    )
}

/// The command line that starts the pinned server-everything over stdio.
pub fn everything_cmd() -> Vec<String> {
    vec![
        tools()
            .join("npm/node_modules/.bin/mcp-server-everything")
            .display()
            .to_string(),
        "stdio".into(),
    ]
}

/// Writes `text` as `config.toml` in a new temporary directory.
pub fn write_config(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// A git repository with `commits` commits, for `git_log`.
pub fn git_repo(commits: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git_commits(dir.path(), "commit number", commits);
    dir
}

/// Adds `n` commits to the repository at `repo`, named `"{message} {i}"`, with fixed dates.
pub fn git_commits(repo: &Path, message: &str, n: usize) {
    for i in 0..n {
        std::fs::write(repo.join("f.txt"), format!("{message} {i}\n")).unwrap();
        git(repo, &["add", "f.txt"]);
        git(repo, &["commit", "-q", "-m", &format!("{message} {i}")]);
    }
}

/// Runs `git ARGS` in `repo` with a fixed author, committer and date; panics on failure.
fn git(repo: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()
        .unwrap();
    assert!(st.status.success(), "git {args:?}: {st:?}");
}

/// The proxy under test, driven with raw JSON-RPC lines.
pub struct RawProxy {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    pub stderr_path: PathBuf,
    _stderr_dir: tempfile::TempDir,
}

impl RawProxy {
    /// Starts `mcp-envelope serve --config CONFIG` with extra args.
    pub fn start(config: &Path, extra_args: &[&str]) -> RawProxy {
        RawProxy::start_env(config, extra_args, &[])
    }

    /// [`RawProxy::start`] with extra environment variables.
    pub fn start_env(config: &Path, extra_args: &[&str], env: &[(&str, &str)]) -> RawProxy {
        let stderr_dir = tempfile::tempdir().unwrap();
        let stderr_path = stderr_dir.path().join("stderr.log");
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let mut child = Command::new(bin())
            .arg("serve")
            .arg("--config")
            .arg(config)
            .args(extra_args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        RawProxy {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            stderr_path,
            _stderr_dir: stderr_dir,
        }
    }

    /// Sends raw bytes followed by a newline.
    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a JSON value as one line.
    pub fn send(&mut self, msg: &Value) {
        self.send_raw(&msg.to_string());
    }

    /// Next line from stdout, parsed; panics after `timeout`.
    pub fn recv(&self, timeout: Duration) -> Value {
        let line = self.lines.recv_timeout(timeout).unwrap_or_else(|e| {
            panic!(
                "no message from the proxy within {timeout:?}: {e}; stderr:\n{}",
                self.stderr()
            )
        });
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("proxy wrote a non-JSON line {line:?}: {e}"))
    }

    /// Next line, or `None` after `timeout`.
    pub fn try_recv(&self, timeout: Duration) -> Option<Value> {
        self.lines.recv_timeout(timeout).ok().map(|l| {
            serde_json::from_str(&l).unwrap_or_else(|e| panic!("non-JSON line {l:?}: {e}"))
        })
    }

    /// Reads messages until the response with `id` arrives; returns it and the other messages
    /// seen meanwhile.
    pub fn response(&self, id: &Value, timeout: Duration) -> (Value, Vec<Value>) {
        let deadline = Instant::now() + timeout;
        let mut others = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = self.recv(left);
            if msg.get("id") == Some(id)
                && (msg.get("result").is_some() || msg.get("error").is_some())
            {
                return (msg, others);
            }
            others.push(msg);
        }
    }

    /// `initialize` + `notifications/initialized`; returns the initialize result.
    pub fn initialize(&mut self, protocol_version: &str) -> Value {
        self.send(
            &json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
                "protocolVersion": protocol_version,
                "capabilities": {"roots": {"listChanged": true}, "sampling": {}, "elicitation": {}},
                "clientInfo": {"name": "raw-test-client", "version": "1.0"}
            }}),
        );
        let (resp, _) = self.response(&json!("init"), Duration::from_secs(60));
        self.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        resp["result"].clone()
    }

    /// A `tools/call` and its result (the whole JSON-RPC response).
    pub fn call(&mut self, id: Value, name: &str, arguments: Value, timeout: Duration) -> Value {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":arguments}}));
        self.response(&id, timeout).0
    }

    /// Closes stdin and waits for the exit status.
    pub fn close(&mut self, timeout: Duration) -> std::process::ExitStatus {
        self.stdin.take();
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(
                Instant::now() < deadline,
                "proxy did not exit within {timeout:?}; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything the proxy wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// The proxy's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for RawProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The envelope inside a `tools/call` response (its `structuredContent`), checking that the
/// text block carries the same envelope.
pub fn envelope_of(response: &Value) -> Value {
    let result = &response["result"];
    let env = result["structuredContent"].clone();
    assert!(env.is_object(), "no structuredContent in {response}");
    let text = result["content"][0]["text"]
        .as_str()
        .expect("first block is the envelope text");
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        env,
        "text block and structuredContent differ"
    );
    assert_eq!(result["isError"], json!(env["status"] == "error"));
    env
}

/// All processes whose parent is `pid` (from /proc).
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
                // Field 4 (after the parenthesized command) is the parent pid.
                if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
                    let fields: Vec<&str> = rest.split_whitespace().collect();
                    if fields.get(1).and_then(|f| f.parse::<u32>().ok()) == Some(pid) {
                        out.push(p);
                    }
                }
            }
        }
    }
    out
}

/// Whether a process is still alive (and not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .map(|(_, r)| r.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// Waits until none of `pids` is alive, up to `timeout`; returns the ones still alive.
pub fn wait_gone(pids: &[u32], timeout: Duration) -> Vec<u32> {
    let deadline = Instant::now() + timeout;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the Python SDK driver (`tests/clients/sdk_client.py`) with `plan` against the MCP
/// server started by `command` (program and arguments); returns its JSON report.
pub fn sdk_run<S: AsRef<std::ffi::OsStr>>(command: &[S], plan: &Value) -> Value {
    let plan_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(plan_file.path(), plan.to_string()).unwrap();
    let out = Command::new(python())
        .arg(root().join("tests/clients/sdk_client.py"))
        .arg("--plan")
        .arg(plan_file.path())
        .arg("--")
        .args(command)
        .output()
        .unwrap();
    json_stdout(&out, "sdk_client")
}

/// [`sdk_run`] against the proxy under test started with `config` and extra proxy arguments.
pub fn sdk_session(config: &Path, plan: &Value, extra_proxy_args: &[&str]) -> Value {
    let mut command: Vec<std::ffi::OsString> = vec![
        bin().into(),
        "serve".into(),
        "--config".into(),
        config.into(),
    ];
    command.extend(extra_proxy_args.iter().map(Into::into));
    sdk_run(&command, plan)
}

/// Ends a raw proxy session and checks that it exits 0 and leaves no child behind.
pub fn finish_session(mut p: RawProxy) {
    let kids = children_of(p.pid());
    let st = p.close(Duration::from_secs(15));
    assert!(st.success(), "proxy exit {st:?}; stderr:\n{}", p.stderr());
    assert!(
        wait_gone(&kids, Duration::from_secs(10)).is_empty(),
        "children left behind"
    );
}

/// The JSON a successful client run printed on stdout; panics with both outputs otherwise.
pub fn json_stdout(out: &std::process::Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what} output is not JSON: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// `mcp-envelope check --config CONFIG` run to the end.
pub fn check(config: &Path) -> std::process::Output {
    Command::new(bin())
        .args(["check", "--config"])
        .arg(config)
        .output()
        .unwrap()
}

/// The stdout of a run that exited with 0; panics with both outputs otherwise.
pub fn ok_stdout(out: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The first line of `text` that starts with `start`, its words joined by one space (a row
/// of `check`'s table); panics when there is none.
pub fn table_row(text: &str, start: &str) -> String {
    text.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in\n{text}"))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The proxy binary as a command with HOME set to `home` and the variables that would point
/// it (or a client) at other config files removed, for `install` / `uninstall` tests.
pub fn bin_in_home(home: &Path) -> Command {
    let mut c = Command::new(bin());
    c.env("HOME", home);
    for var in [
        "XDG_CONFIG_HOME",
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
        "MCP_ENVELOPE_CONFIG",
    ] {
        c.env_remove(var);
    }
    c
}
