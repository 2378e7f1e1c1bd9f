//! A minimal, fast, deterministic MCP server over stdio, **for benchmarks only** (`scripts/bench`).
//!
//! The Python fixture server (`tests/fixtures/fixture_server.py`) would dominate the timings, so
//! the benchmark uses this one. It is not a test fixture and not a reference implementation: it
//! answers `initialize`, `ping`, `tools/list` and `tools/call` and ignores everything else.
//!
//! Tools:
//! - `row` `{}`: one short row as `structuredContent` `{"rows":[{"i":1,"name":"alpha","ok":true}]}`;
//! - `echo` `{"message": S}`: a text block `Echo: S`;
//! - `big_rows` `{"n": N}`: `structuredContent` `{"rows":[...]}` with N rows of exactly
//!   [`ROW_BYTES`] bytes each (`{"i":7,"name":"row-7","pad":"xxx…"}`), written straight into the
//!   output buffer, so 1,000,000 rows are 50,000,000 bytes of rows.
//!
//! Threads: one reader (stdin), a small pool of workers, one writer (stdout) that batches every
//! queued answer into one flush. Concurrent calls are answered as they finish.
//!
//! Build: `cargo build --release --example bench_server`.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use serde::Deserialize;
use serde_json::{json, Value};

/// Bytes of one `big_rows` row, commas between rows not included.
const ROW_BYTES: usize = 50;
/// Workers answering `tools/call`.
const WORKERS: usize = 2;

#[derive(Deserialize)]
struct Request {
    id: Option<Value>,
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
}

/// The writer thread: answers are written in batches, one flush per burst.
fn spawn_writer(out_rx: mpsc::Receiver<Vec<u8>>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let stdout = std::io::stdout();
        let mut out = BufWriter::with_capacity(256 * 1024, stdout.lock());
        while let Ok(buf) = out_rx.recv() {
            if out.write_all(&buf).is_err() {
                return;
            }
            while let Ok(buf) = out_rx.try_recv() {
                if out.write_all(&buf).is_err() {
                    return;
                }
            }
            if out.flush().is_err() {
                return;
            }
        }
    })
}

/// `WORKERS` threads answering `tools/call` jobs.
fn spawn_workers(
    job_rx: mpsc::Receiver<(Value, Value)>,
    out_tx: &mpsc::Sender<Vec<u8>>,
) -> Vec<thread::JoinHandle<()>> {
    let job_rx = Arc::new(Mutex::new(job_rx));
    (0..WORKERS)
        .map(|_| {
            let rx = job_rx.clone();
            let out = out_tx.clone();
            thread::spawn(move || loop {
                let job = rx.lock().unwrap().recv();
                let Ok((id, params)) = job else { return };
                if out.send(call_tool(&id, &params)).is_err() {
                    return;
                }
            })
        })
        .collect()
}

/// The answer to a request other than `tools/call`.
fn answer(id: &Value, method: &str, params: Option<&Value>) -> Vec<u8> {
    match method {
        "initialize" => {
            let version = params
                .and_then(|p| p.get("protocolVersion"))
                .cloned()
                .unwrap_or_else(|| json!("2025-06-18"));
            response(
                id,
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bench-server", "version": "0.1.0"}
                }),
            )
        }
        "ping" => response(id, json!({})),
        "tools/list" => response(id, tools()),
        _ => {
            let mut v = serde_json::to_vec(&json!({
                "jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("Method not found: {method}")}
            }))
            .unwrap();
            v.push(b'\n');
            v
        }
    }
}

fn main() {
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>();
    let writer = spawn_writer(out_rx);
    let (job_tx, job_rx) = mpsc::channel::<(Value, Value)>();
    let workers = spawn_workers(job_rx, &out_tx);
    let stdin = std::io::stdin();
    let mut input = BufReader::with_capacity(64 * 1024, stdin.lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(req) = serde_json::from_slice::<Request>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (req.id, req.method) else {
            continue; // notifications and responses
        };
        if method == "tools/call" {
            let _ = job_tx.send((id, req.params.unwrap_or(Value::Null)));
            continue;
        }
        if out_tx
            .send(answer(&id, &method, req.params.as_ref()))
            .is_err()
        {
            break;
        }
    }
    drop(job_tx);
    for w in workers {
        let _ = w.join();
    }
    drop(out_tx);
    let _ = writer.join();
}

fn response(id: &Value, result: Value) -> Vec<u8> {
    let mut v = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result})).unwrap();
    v.push(b'\n');
    v
}

fn tools() -> Value {
    json!({"tools": [
        {"name": "row", "description": "One short row as structuredContent.",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "echo", "description": "Echoes `message` as text.",
         "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
        {"name": "big_rows", "description": "n rows of 50 bytes each as structuredContent {rows}.",
         "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}},
                         "required": ["n"]}}
    ]})
}

fn call_tool(id: &Value, params: &Value) -> Vec<u8> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    match name {
        "row" => response(
            id,
            json!({
                "content": [{"type": "text", "text": "{\"rows\":[{\"i\":1,\"name\":\"alpha\",\"ok\":true}]}"}],
                "structuredContent": {"rows": [{"i": 1, "name": "alpha", "ok": true}]}
            }),
        ),
        "echo" => {
            let msg = args.get("message").and_then(Value::as_str).unwrap_or("");
            response(
                id,
                json!({"content": [{"type": "text", "text": format!("Echo: {msg}")}]}),
            )
        }
        "big_rows" => big_rows(id, args.get("n").and_then(Value::as_u64).unwrap_or(0)),
        other => response(
            id,
            json!({"content": [{"type": "text", "text": format!("MCP error -32602: Unknown tool: {other}")}],
                   "isError": true}),
        ),
    }
}

/// The whole response line for `big_rows`, written as bytes (no `Value` tree).
fn big_rows(id: &Value, n: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(n as usize * (ROW_BYTES + 1) + 256);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut out, id).unwrap();
    out.extend_from_slice(b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"");
    out.extend_from_slice(format!("{n} rows in structuredContent").as_bytes());
    out.extend_from_slice(b"\"}],\"structuredContent\":{\"rows\":[");
    let pad = [b'x'; ROW_BYTES];
    let mut num = itoa_buf();
    for i in 0..n {
        if i > 0 {
            out.push(b',');
        }
        let digits = fmt_u64(i, &mut num);
        // {"i":D,"name":"row-D","pad":"P"} = 29 fixed bytes + 2 × digits + pad.
        let pad_len = ROW_BYTES.saturating_sub(29 + 2 * digits.len());
        out.extend_from_slice(b"{\"i\":");
        out.extend_from_slice(digits);
        out.extend_from_slice(b",\"name\":\"row-");
        out.extend_from_slice(digits);
        out.extend_from_slice(b"\",\"pad\":\"");
        out.extend_from_slice(&pad[..pad_len]);
        out.extend_from_slice(b"\"}");
    }
    out.extend_from_slice(b"]}}}\n");
    out
}

fn itoa_buf() -> [u8; 20] {
    [0; 20]
}

fn fmt_u64(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}
