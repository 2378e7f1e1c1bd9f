//! A fast MCP server over stdio offering many tools, **for benchmarks only**
//! (`scripts/bench_tools`). Not a test fixture and not a reference implementation.
//!
//! Usage: `tools_server [--tools N] [--page P] [--name S]`: offers N tools (default 1000) named
//! `S_t0000`, `S_t0001`, … (S defaults to `srv`), each about 110 bytes of JSON like a small
//! real tool (name, description, an `inputSchema` with one string property). With `--page P` (P > 0; 0 is one page)
//! `tools/list` answers P tools a page with an opaque `nextCursor` (MCP "Utilities:
//! Pagination"); without it, one page. Answers `initialize`, `ping`, `tools/list` and
//! `tools/call` (any tool: a text block echoing its name); every other request gets -32601.
//!
//! Build: `cargo build --release --example tools_server`.

use std::io::{BufRead, BufReader, BufWriter, Write};

use serde_json::{json, Value};

struct Options {
    tools: usize,
    page: Option<usize>,
    name: String,
}

fn options() -> Options {
    let mut o = Options {
        tools: 1000,
        page: None,
        name: "srv".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--tools" => o.tools = value.parse().expect("--tools N"),
            "--page" => o.page = Some(value.parse().expect("--page P")).filter(|p| *p > 0),
            "--name" => o.name = value,
            other => panic!("unknown flag {other}"),
        }
    }
    o
}

/// Every tool, in order.
fn tools(o: &Options) -> Vec<Value> {
    (0..o.tools)
        .map(|i| {
            json!({
                "name": format!("{}_t{i:04}", o.name),
                "description": format!("Benchmark tool {i}."),
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}
            })
        })
        .collect()
}

/// The `tools/list` result for `cursor` (the index of the page's first tool, as a string).
fn list_page(all: &[Value], page: Option<usize>, params: Option<&Value>) -> Value {
    let start: usize = params
        .and_then(|p| p.get("cursor"))
        .and_then(Value::as_str)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
        .min(all.len());
    let end = page.map_or(all.len(), |p| (start + p).min(all.len()));
    let mut result = json!({ "tools": &all[start..end] });
    if end < all.len() {
        result["nextCursor"] = json!(end.to_string());
    }
    result
}

fn main() {
    let o = options();
    let all = tools(&o);
    let input = BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut out = BufWriter::with_capacity(256 * 1024, std::io::stdout().lock());
    for line in input.split(b'\n') {
        let Ok(line) = line else { break };
        let Ok(req) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (req.get("id"), req.get("method").and_then(Value::as_str))
        else {
            continue; // notifications and responses
        };
        let params = req.get("params");
        let message = match method {
            "initialize" => {
                let version = params
                    .and_then(|p| p.get("protocolVersion"))
                    .cloned()
                    .unwrap_or_else(|| json!("2025-06-18"));
                json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "tools-server", "version": "0.1.0"}
                }})
            }
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "tools/list" => {
                json!({"jsonrpc": "2.0", "id": id, "result": list_page(&all, o.page, params)})
            }
            "tools/call" => {
                let name = params.and_then(|p| p.get("name")).cloned();
                json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": format!("called {}", name.unwrap_or_default())}]
                }})
            }
            _ => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": format!("Method not found: {method}")}}),
        };
        let mut bytes = serde_json::to_vec(&message).expect("a JSON value always serializes");
        bytes.push(b'\n');
        if out.write_all(&bytes).and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}
