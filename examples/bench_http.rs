//! Benchmark client for `scripts/bench_remote`: the "direct" arm of the remote-server figures.
//! Speaks MCP streamable HTTP to a server itself and times sequential `tools/call` round trips.
//!
//! ```text
//! bench_http --url URL [--n N] [--tool NAME] [--args JSON] [--label TEXT]
//! ```
//!
//! `initialize` (keeping the `Mcp-Session-Id`), `notifications/initialized`, 20 warm-up calls,
//! then `--n` calls one after another, each timed from the POST being sent to its answer read
//! (a JSON body, or the SSE event carrying the response), parsed only as far as its `id`. Prints
//! one JSON line: `{"label", "n", "p50_us", "p99_us", "mean_us", "errors"}`. Uses the same HTTP
//! stack as the proxy (reqwest, sse-stream), so the comparison isolates what the proxy adds.

use std::time::Instant;

use futures_util::StreamExt;
use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::{json, Value};

struct Opts {
    url: String,
    n: usize,
    tool: String,
    args: Value,
    label: String,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        url: String::new(),
        n: 1000,
        tool: "echo".into(),
        args: json!({"message": "hi"}),
        label: "direct".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => o.url = value,
            "--n" => o.n = value.parse().expect("--n is a number"),
            "--tool" => o.tool = value,
            "--args" => o.args = serde_json::from_str(&value).expect("--args is JSON"),
            "--label" => o.label = value,
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(!o.url.is_empty(), "--url is required");
    o
}

struct Session {
    client: reqwest::Client,
    url: String,
    session: Option<HeaderValue>,
    version: Option<HeaderValue>,
}

impl Session {
    /// POSTs one message; for a request, returns whether its answer is an error and when it was
    /// read (the rest of an SSE stream is read afterwards, so the connection is reused).
    async fn post(&mut self, message: Value) -> (bool, Instant) {
        let mut req = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(message.to_string());
        for (name, value) in [
            ("mcp-session-id", &self.session),
            ("mcp-protocol-version", &self.version),
        ] {
            if let Some(v) = value {
                req = req.header(name, v.clone());
            }
        }
        let resp = req.send().await.expect("POST");
        if self.session.is_none() {
            self.session = resp.headers().get("mcp-session-id").cloned();
        }
        if message.get("id").is_none() {
            return (false, Instant::now());
        }
        let sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let (answer, at): (Value, Instant) = if sse {
            let mut events = std::pin::pin!(sse_stream::SseByteStream::new(resp.bytes_stream()));
            loop {
                let event = events.next().await.expect("an answer event").expect("SSE");
                let Some(data) = event.data.filter(|d| !d.is_empty()) else {
                    continue;
                };
                let v: Value = serde_json::from_str(&data).expect("JSON event");
                if v.get("id") == message.get("id") {
                    let at = Instant::now();
                    while events.next().await.is_some() {}
                    break (v, at);
                }
            }
        } else {
            let body = resp.bytes().await.expect("answer body");
            (
                serde_json::from_slice(&body).expect("JSON answer"),
                Instant::now(),
            )
        };
        if let Some(version) = answer["result"]["protocolVersion"].as_str() {
            self.version = HeaderValue::from_str(version).ok();
        }
        let failed = answer.get("error").is_some() || answer["result"]["isError"] == true;
        (failed, at)
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let o = parse_opts();
    let mut s = Session {
        client: reqwest::Client::new(),
        url: o.url.clone(),
        session: None,
        version: None,
    };
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "bench_http", "version": "1"}});
    s.post(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
        .await;
    s.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let params = json!({"name": o.tool, "arguments": o.args});
    let mut errors = 0u64;
    let mut lat = Vec::with_capacity(o.n);
    for i in 0..(20 + o.n) {
        let call = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": params});
        let t = Instant::now();
        let (failed, at) = s.post(call).await;
        errors += u64::from(failed);
        if i >= 20 {
            lat.push(at.duration_since(t).as_nanos() as u64);
        }
    }
    let mean = lat.iter().sum::<u64>() as f64 / lat.len().max(1) as f64;
    lat.sort_unstable();
    println!(
        "{}",
        json!({"label": o.label, "n": o.n, "p50_us": percentile(&lat, 50.0) as f64 / 1000.0,
               "p99_us": percentile(&lat, 99.0) as f64 / 1000.0, "mean_us": mean / 1000.0,
               "errors": errors})
    );
}
