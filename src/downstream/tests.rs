//! Supervision of real child processes (`sh` scripts speaking just enough MCP): what a call
//! cut short by the server's exit is told, and what of its stderr is kept.

use std::time::Duration;

use serde_json::json;
use tokio::sync::{mpsc, watch};

use super::*;

/// A stdio MCP server in `sh`: answers `server/discover` with -32601, `initialize`,
/// `tools/list` (one tool), and on `tools/call` writes `$1` to stderr and exits with code 3.
const CRASHING_SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"server/discover"'*) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}\n' "$id" ;;
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}\n' "$id" ;;
    *'"tools/list"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"boom","inputSchema":{"type":"object"}}]}}\n' "$id" ;;
    *'"tools/call"'*) echo "fatal: $1" >&2; echo "the disk is on fire" >&2; exit 3 ;;
  esac
done
"#;

fn spec(args: Vec<String>) -> ServerSpec {
    ServerSpec {
        name: "sh".into(),
        program: "sh".into(),
        args,
        env: Vec::new(),
        env_remove: Vec::new(),
        cwd: None,
        startup_timeout: Duration::from_secs(20),
        max_restarts: 0,
        max_message_bytes: 1 << 20,
        remote: None,
        output_gate: None,
        on_listed: None,
    }
}

fn client() -> ClientInit {
    ClientInit {
        protocol_version: "2025-06-18".into(),
        capabilities: json!({}),
        client_info: json!({"name": "test", "version": "1"}),
    }
}

/// Starts `spec` and waits until it is ready; the shutdown sender keeps it running.
async fn ready(spec: ServerSpec) -> (Downstream, watch::Sender<bool>) {
    let (events, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let (stop, shutdown) = watch::channel(false);
    let (ds, _task) = Downstream::spawn(spec, client(), events, shutdown);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    ds.wait_ready(deadline).await.expect("the server starts");
    (ds, stop)
}

#[tokio::test]
async fn a_call_cut_short_by_a_crash_names_the_exit_status_and_the_stderr_tail() {
    let args = ["-c", CRASHING_SERVER, "sh", "out of memory"].map(String::from);
    let (ds, _stop) = ready(spec(args.to_vec())).await;
    let params = json!({"name": "boom", "arguments": {}});
    let outcome = ds
        .request(
            "tools/call",
            Some(&params),
            Duration::from_secs(20),
            &mut |_, _| {},
        )
        .await;
    let Err(CallError::Exited(reason)) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(reason.starts_with("closed its stdout"), "{reason}");
    assert!(reason.contains("exit status: 3"), "{reason}");
    assert!(
        reason.ends_with("last stderr: fatal: out of memory | the disk is on fire"),
        "{reason}"
    );
}

#[tokio::test]
async fn secrets_in_a_servers_arguments_are_redacted_from_its_stderr() {
    let script = r#"echo "connecting with $2 as $4" >&2; exit 1"#;
    let args = [
        "-c",
        script,
        "sh",
        "--api-key",
        "sk-live-5up3r53cr3t",
        "--db",
        "postgres://app:hunter2hunter2@db/x",
    ];
    let (events, _rx) = mpsc::unbounded_channel();
    let (_stop, shutdown) = watch::channel(false);
    let (ds, _task) = Downstream::spawn(
        spec(args.map(String::from).to_vec()),
        client(),
        events,
        shutdown,
    );
    let mut state = ds.watch_state();
    let reason = loop {
        if let ServerState::Unavailable { reason } = &*state.borrow_and_update() {
            break reason.clone();
        }
        state.changed().await.unwrap();
    };
    let tail = ds.stderr_tail().join("\n");
    assert_eq!(
        tail,
        "connecting with [redacted] as postgres://app:[redacted]@db/x"
    );
    assert!(
        !reason.contains("5up3r53cr3t") && !reason.contains("hunter2"),
        "{reason}"
    );
    assert!(reason.contains("connecting with [redacted]"), "{reason}");
}
