//! A remote server's request to the client, with two sessions over one core: it reaches the
//! session whose call's HTTP response stream it came on, even when another session's call on
//! the same server is older (the best guess stdio is left with would pick that one). The
//! server is the Python SDK fixture (tests/fixtures/http_servers.py) in its 2025 era, from
//! `.tools/venv`.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use super::*;

/// A server of tests/fixtures/http_servers.py, killed when dropped.
pub(super) struct HttpFixture {
    child: Child,
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub(super) url: String,
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpFixture {
    /// Starts tests/fixtures/http_servers.py with `python`: `args`, then `--port` and a free
    /// port, then `tail`; returns once it accepts connections (panics after [`WAIT`]).
    pub(super) fn start(python: &Path, args: &[&str], tail: &[&std::ffi::OsStr]) -> HttpFixture {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(python)
            .arg(root.join("tests/fixtures/http_servers.py"))
            .args(args)
            .args(["--port", &port.to_string()])
            .args(tail)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
        let url = format!("http://127.0.0.1:{port}/mcp");
        let fixture = HttpFixture { child, url };
        let deadline = Instant::now() + WAIT;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "fixture not listening on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        fixture
    }
}

/// The Python SDK fixture in its 2025 era (needs `.tools/venv`: scripts/install-deps).
fn legacy_sdk_server() -> HttpFixture {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/venv/bin/python");
    HttpFixture::start(&python, &["sdk", "--legacy-only"], &[])
}

/// Answers the sampling request `asked` with `text`.
fn sampled(asked: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"role": "assistant",
        "content": {"type": "text", "text": text}, "model": "m"}})
}

fn prompt_of(asked: &Value) -> &str {
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    asked["params"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_servers_request_goes_to_the_call_whose_stream_it_came_on() {
    let server = legacy_sdk_server();
    let url = server.url.clone();
    let core = Core::new(config(&format!("[mcp_servers.web]\nurl = {url:?}\n")), None);
    let (mut a, mut b) = two_ready_clients(&core).await;
    // a's call is the older one on the server; it asks only after 2 s. b's asks at once.
    let call_a = call(json!(2), "sample", json!({"prompt": "for a", "delay": 2}));
    a.session.feed_line(call_a.to_string().into_bytes()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let call_b = call(json!(2), "sample", json!({"prompt": "for b"}));
    b.session.feed_line(call_b.to_string().into_bytes()).await;
    let asked_b = b.recv().await;
    assert_eq!(prompt_of(&asked_b), "for b");
    assert!(a.out.try_recv().is_err(), "a is not asked b's question");
    let done_b = b.ask(&sampled(&asked_b, "from b")).await;
    assert!(
        envelope(&done_b)["content"]
            .as_str()
            .unwrap()
            .ends_with("sampled: from b"),
        "{done_b}"
    );
    let asked_a = a.recv().await;
    assert_eq!(prompt_of(&asked_a), "for a");
    let done_a = a.ask(&sampled(&asked_a, "from a")).await;
    assert!(
        envelope(&done_a)["content"]
            .as_str()
            .unwrap()
            .ends_with("sampled: from a"),
        "{done_a}"
    );
    a.session.close().await;
    b.session.close().await;
    core.shutdown().await;
}
