//! Benchmark client for `scripts/bench_remote`: the "direct" arm of the remote-server figures.
//! Speaks MCP streamable HTTP to a server itself and times sequential `tools/call` round trips.
//!
//! ```text
//! bench_http --url URL [--n N] [--tool NAME] [--args JSON] [--label TEXT] [--clients C]
//!            [--era 2026-07-28]
//! ```
//!
//! With `--era 2026-07-28` there is no `initialize` or session: every call is a stateless
//! request carrying `_meta` and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers.
//!
//! `initialize` (keeping the `Mcp-Session-Id`), `notifications/initialized`, 20 warm-up calls,
//! then `--n` calls one after another, each timed from the POST being sent to its answer read
//! (a JSON body, or the SSE event carrying the response), parsed only as far as its `id`. Prints
//! one JSON line: `{"label", "n", "p50_us", "p99_us", "mean_us", "errors", "clients",
//! "calls_per_s", "cpu_us_per_call"}` (this client's own user + system CPU over the timed calls,
//! from `getrusage`, divided by them). With `--clients C`, C sessions run at once, each making `--n` calls; the
//! latencies of all are pooled and `calls_per_s` counts every timed call over the wall time
//! from the first timed call to the last answer. Uses the same HTTP
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
    clients: usize,
    modern: bool,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        url: String::new(),
        n: 1000,
        tool: "echo".into(),
        args: json!({"message": "hi"}),
        label: "direct".into(),
        clients: 1,
        modern: false,
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
            "--clients" => o.clients = value.parse().expect("--clients is a number"),
            "--era" => o.modern = value == "2026-07-28",
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
    modern: bool,
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
        if self.modern {
            let (method, name) = (&message["method"], &message["params"]["name"]);
            req = req
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method.as_str().unwrap_or_default())
                .header("mcp-name", name.as_str().unwrap_or_default());
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

/// User + system CPU time of this process so far, in microseconds (`getrusage`).
fn own_cpu_us() -> u64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(usage.ru_utime) + us(usage.ru_stime)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One client: a session, 20 warm-up calls, then `n` timed calls once `start` opens. Returns
/// the latencies (ns) and the number of failed calls.
async fn one_client(
    url: String,
    n: usize,
    params: Value,
    ready: std::sync::Arc<tokio::sync::Barrier>,
    modern: bool,
) -> (Vec<u64>, u64) {
    let mut s = Session {
        client: reqwest::Client::new(),
        url,
        session: None,
        version: None,
        modern,
    };
    if !modern {
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "bench_http", "version": "1"}});
        s.post(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
            .await;
        s.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }
    let mut errors = 0u64;
    let mut lat = Vec::with_capacity(n);
    for i in 0..(20 + n) {
        if i == 20 {
            ready.wait().await;
        }
        let call = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": params});
        let t = Instant::now();
        let (failed, at) = s.post(call).await;
        errors += u64::from(failed);
        if i >= 20 {
            lat.push(at.duration_since(t).as_nanos() as u64);
        }
    }
    (lat, errors)
}

/// One client runs on a current-thread runtime, as the proxy's own HTTP client does (a
/// multi-thread runtime adds a cross-thread wake-up to every round trip and made the direct arm
/// slower than the proxy); several clients share a two-worker runtime.
fn main() {
    let o = parse_opts();
    let runtime = if o.clients == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    }
    .enable_all()
    .build()
    .expect("a tokio runtime");
    runtime.block_on(run(o));
}

async fn run(o: Opts) {
    let mut params = json!({"name": o.tool, "arguments": o.args});
    if o.modern {
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "bench_http", "version": "1"}});
    }
    let ready = std::sync::Arc::new(tokio::sync::Barrier::new(o.clients + 1));
    let tasks: Vec<_> = (0..o.clients)
        .map(|_| {
            tokio::spawn(one_client(
                o.url.clone(),
                o.n,
                params.clone(),
                ready.clone(),
                o.modern,
            ))
        })
        .collect();
    ready.wait().await;
    let started = Instant::now();
    let cpu0 = own_cpu_us();
    let (mut lat, mut errors) = (Vec::with_capacity(o.n * o.clients), 0u64);
    for task in tasks {
        let (l, e) = task.await.expect("a client task");
        lat.extend(l);
        errors += e;
    }
    let wall = started.elapsed().as_secs_f64();
    let cpu = own_cpu_us() - cpu0;
    let mean = lat.iter().sum::<u64>() as f64 / lat.len().max(1) as f64;
    lat.sort_unstable();
    println!(
        "{}",
        json!({"label": o.label, "n": o.n, "p50_us": percentile(&lat, 50.0) as f64 / 1000.0,
               "p99_us": percentile(&lat, 99.0) as f64 / 1000.0, "mean_us": mean / 1000.0,
               "errors": errors, "clients": o.clients,
               "calls_per_s": lat.len() as f64 / wall,
               "cpu_us_per_call": cpu as f64 / lat.len().max(1) as f64})
    );
}
