//! Benchmark client for `scripts/bench`: speaks MCP over stdio to a command it spawns and times
//! `tools/call` round trips.
//!
//! ```text
//! bench_client --mode seq|conc|big|startup [--n N] [--inflight K] [--tool NAME]
//!              [--args JSON] [--label TEXT] [--protocol VERSION] -- COMMAND [ARGS...]
//! ```
//!
//! - `seq`: `--n` calls one after another; p50 / p99 / mean latency in µs.
//! - `conc`: `--n` calls with `--inflight` outstanding at all times; calls per second.
//! - `big`: one call (`--args`, e.g. `{"n":1000000}`); time from the request written to the
//!   whole answer line read, the answer's size, and the spawned process's memory: VmRSS before
//!   the call, VmHWM (peak) and VmRSS after it, and VmRSS again after `--settle-ms`; the
//!   process's CPU time for the call (its threads included; taken when the answer is read, so
//!   freeing memory after the answer is not counted).
//! - `startup`: time from spawn to the `initialize` answer.
//!
//! `--protocol 2025-11-25` (the default) opens a session with `initialize`; `--protocol
//! 2026-07-28` speaks the stateless revision instead: `server/discover` first, and every request
//! carries the protocol version and (empty) client capabilities in its `_meta` (MCP 2026-07-28,
//! basic/lifecycle).
//!
//! The tool is found by `tools/list`: the first tool named exactly `--tool`, else one ending in
//! `_<tool>` (FastMCP prefixes proxied tools with `<server>_`). Prints one JSON line.
//!
//! Timing: a dedicated reader thread takes the timestamp (`Instant`) as soon as a line's newline
//! has been read, before any parsing, then extracts the id and hands `(id, instant, bytes)` to the
//! main thread. Requests are pre-formatted into a reused buffer; one write + flush per request.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
struct Head {
    id: Option<Value>,
    method: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
    result: Option<ResultHead>,
}

#[derive(Deserialize)]
struct ResultHead {
    #[serde(rename = "isError")]
    is_error: Option<bool>,
}

/// One answer as seen by the reader thread.
struct Answer {
    id: u64,
    at: Instant,
    bytes: usize,
    failed: bool,
    /// The whole line, kept only for answers the main thread asked to keep (id 0 and 1).
    line: Option<Vec<u8>>,
}

struct Opts {
    mode: String,
    n: usize,
    inflight: usize,
    tool: String,
    args: String,
    label: String,
    settle_ms: u64,
    protocol: String,
    cmd: Vec<String>,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        mode: "seq".into(),
        n: 1000,
        inflight: 64,
        tool: "row".into(),
        args: "{}".into(),
        label: String::new(),
        settle_ms: 1000,
        protocol: "2025-11-25".into(),
        cmd: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .unwrap_or_else(|| die(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--mode" => o.mode = val(),
            "--n" => o.n = val().parse().unwrap_or_else(|_| die("bad --n")),
            "--inflight" => o.inflight = val().parse().unwrap_or_else(|_| die("bad --inflight")),
            "--tool" => o.tool = val(),
            "--args" => o.args = val(),
            "--label" => o.label = val(),
            "--settle-ms" => o.settle_ms = val().parse().unwrap_or_else(|_| die("bad --settle-ms")),
            "--protocol" => o.protocol = val(),
            "--" => {
                o.cmd = it.by_ref().collect();
                break;
            }
            other => die(&format!("unknown argument {other}")),
        }
    }
    if !["2025-11-25", "2026-07-28"].contains(&o.protocol.as_str()) {
        die("--protocol is 2025-11-25 or 2026-07-28");
    }
    if o.cmd.is_empty() {
        die("usage: bench_client --mode seq|conc|big|startup [...] -- COMMAND [ARGS...]");
    }
    o
}

fn die(msg: &str) -> ! {
    eprintln!("bench_client: {msg}");
    std::process::exit(2)
}

struct Peer {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    rx: mpsc::Receiver<Answer>,
    buf: Vec<u8>,
}

impl Peer {
    fn spawn(cmd: &[String]) -> Peer {
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| die(&format!("cannot start {}: {e}", cmd[0])));
        let stdin = BufWriter::with_capacity(64 * 1024, child.stdin.take().unwrap());
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || reader(stdout, tx));
        Peer {
            child,
            stdin,
            rx,
            buf: Vec::with_capacity(512),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one request; returns the instant after the flush started (just before writing).
    fn send(&mut self, id: u64, method: &str, params: &str) -> Instant {
        self.buf.clear();
        writeln!(
            self.buf,
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{params}}}"
        )
        .unwrap();
        let t = Instant::now();
        self.stdin.write_all(&self.buf).unwrap();
        self.stdin.flush().unwrap();
        t
    }

    fn notify(&mut self, method: &str) {
        writeln!(
            self.stdin,
            "{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\"}}"
        )
        .unwrap();
        self.stdin.flush().unwrap();
    }

    fn recv(&self) -> Answer {
        self.rx
            .recv_timeout(Duration::from_secs(300))
            .unwrap_or_else(|_| die("no answer within 300 s (or the process exited)"))
    }

    /// Waits for the answer to `id`, skipping others.
    fn wait(&self, id: u64) -> Answer {
        loop {
            let a = self.recv();
            if a.id == id {
                return a;
            }
        }
    }

    /// Opens the session (`initialize`), or with a `meta` (2026-07-28) asks `server/discover`.
    fn initialize(&mut self, meta: Option<&str>) -> Answer {
        let t0 = Instant::now();
        if let Some(meta) = meta {
            self.send(0, "server/discover", &format!("{{{meta}}}"));
            let mut a = self.wait(0);
            if a.failed {
                die("server/discover failed");
            }
            a.at = a.at.max(t0);
            return a;
        }
        self.send(
            0,
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench_client","version":"0.1.0"}}"#,
        );
        let mut a = self.wait(0);
        if a.failed {
            die("initialize failed");
        }
        self.notify("notifications/initialized");
        a.at = a.at.max(t0);
        a
    }

    fn tool_name(&mut self, wanted: &str, meta: Option<&str>) -> String {
        self.send(1, "tools/list", &format!("{{{}}}", meta.unwrap_or("")));
        let a = self.wait(1);
        let line = a.line.unwrap_or_default();
        let v: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
        let names: Vec<String> = v["result"]["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let suffix = format!("_{wanted}");
        names
            .iter()
            .find(|n| *n == wanted)
            .or_else(|| names.iter().find(|n| n.ends_with(&suffix)))
            .cloned()
            .unwrap_or_else(|| die(&format!("no tool {wanted} among {names:?}")))
    }

    fn close(mut self) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn reader(stdout: std::process::ChildStdout, tx: mpsc::Sender<Answer>) {
    let mut r = BufReader::with_capacity(1 << 20, stdout);
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let at = Instant::now();
        let Ok(head) = serde_json::from_slice::<Head>(&line) else {
            continue;
        };
        if head.method.is_some() {
            continue; // a notification or server-to-client request
        }
        let Some(id) = head.id.as_ref().and_then(Value::as_u64) else {
            continue;
        };
        let failed = head.error.is_some()
            || head
                .result
                .as_ref()
                .and_then(|r| r.is_error)
                .unwrap_or(false);
        let keep = id <= 1 || line.len() < 4096 && failed;
        let a = Answer {
            id,
            at,
            bytes: line.len(),
            failed,
            line: keep.then(|| line.clone()),
        };
        if tx.send(a).is_err() {
            return;
        }
    }
}

/// `VmRSS` / `VmHWM` of a process in KiB.
fn proc_kib(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// CPU time (user + system) the process itself has used so far, in microseconds (its threads
/// included, its children not), from `/proc/<pid>/stat` (clock-tick resolution).
fn proc_cpu_us(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &s[s.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(ticks * 1_000_000 / hz)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// CPU microseconds per call of the spawned process between two readings.
fn cpu_per_call(before: Option<u64>, after: Option<u64>, n: usize) -> Option<f64> {
    Some((after? - before?) as f64 / n.max(1) as f64)
}

/// A `tools/call`'s params; with `meta` (2026-07-28), its `_meta` member follows.
fn call_params(tool: &str, args: &str, meta: Option<&str>) -> String {
    match meta {
        Some(meta) => format!("{{\"name\":{},\"arguments\":{args},{meta}}}", json!(tool)),
        None => format!("{{\"name\":{},\"arguments\":{args}}}", json!(tool)),
    }
}

/// The `_meta` member every 2026-07-28 request carries (protocol version, client
/// capabilities); `None` for a 2025-11-25 session.
fn request_meta(protocol: &str) -> Option<String> {
    (protocol == "2026-07-28").then(|| {
        format!(
            "\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"{protocol}\",\
             \"io.modelcontextprotocol/clientCapabilities\":{{}}}}"
        )
    })
}

/// What every mode shares: the server, the call's params, the next id and the error count.
struct Run {
    peer: Peer,
    params: String,
    /// The `_meta` member of a 2026-07-28 request (see [`request_meta`]).
    meta: Option<String>,
    next_id: u64,
    errors: u64,
}

impl Run {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    /// A few calls first so lazily initialized paths do not count.
    fn warm_up(&mut self, tool: &str, mode: &str, args: &str) {
        let big = mode == "big";
        let small = call_params(
            tool,
            if big { "{\"n\":1}" } else { args },
            self.meta.as_deref(),
        );
        for _ in 0..(if big { 3 } else { 20 }) {
            let id = self.id();
            self.peer.send(id, "tools/call", &small);
            self.errors += u64::from(self.peer.wait(id).failed);
        }
    }

    /// `seq`: one call at a time; latency percentiles.
    fn seq(&mut self, n: usize, out: &mut Value) {
        let cpu0 = proc_cpu_us(self.peer.pid());
        let mut lat = Vec::with_capacity(n);
        for _ in 0..n {
            let id = self.id();
            let t = self.peer.send(id, "tools/call", &self.params);
            let a = self.peer.wait(id);
            self.errors += u64::from(a.failed);
            lat.push(a.at.duration_since(t).as_nanos() as u64);
        }
        let mean = lat.iter().sum::<u64>() as f64 / lat.len().max(1) as f64;
        lat.sort_unstable();
        out["n"] = json!(n);
        out["p50_us"] = json!(percentile(&lat, 50.0) as f64 / 1000.0);
        out["p99_us"] = json!(percentile(&lat, 99.0) as f64 / 1000.0);
        out["mean_us"] = json!(mean / 1000.0);
        out["cpu_us_per_call"] = json!(cpu_per_call(cpu0, proc_cpu_us(self.peer.pid()), n));
    }

    /// `conc`: `inflight` calls outstanding at all times; calls per second.
    fn conc(&mut self, n: usize, inflight: usize, out: &mut Value) {
        let cpu0 = proc_cpu_us(self.peer.pid());
        let t0 = Instant::now();
        let mut outstanding: HashMap<u64, ()> = HashMap::with_capacity(inflight * 2);
        let (mut sent, mut done) = (0usize, 0usize);
        while done < n {
            while sent < n && outstanding.len() < inflight {
                let id = self.id();
                self.peer.send(id, "tools/call", &self.params);
                outstanding.insert(id, ());
                sent += 1;
            }
            let a = self.peer.recv();
            if outstanding.remove(&a.id).is_some() {
                done += 1;
                self.errors += u64::from(a.failed);
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        out["n"] = json!(n);
        out["inflight"] = json!(inflight);
        out["seconds"] = json!(secs);
        out["calls_per_s"] = json!(n as f64 / secs);
        out["cpu_us_per_call"] = json!(cpu_per_call(cpu0, proc_cpu_us(self.peer.pid()), n));
    }

    /// `big`: one call; time to answer and the process's memory before, at peak and after.
    fn big(&mut self, settle_ms: u64, out: &mut Value) {
        let pid = self.peer.pid();
        thread::sleep(Duration::from_millis(200));
        let rss_before = proc_kib(pid, "VmRSS:");
        let hwm_before = proc_kib(pid, "VmHWM:");
        let cpu0 = proc_cpu_us(pid);
        let id = self.id();
        let t = self.peer.send(id, "tools/call", &self.params);
        let a = self.peer.wait(id);
        self.errors += u64::from(a.failed);
        let (hwm, rss_after) = (proc_kib(pid, "VmHWM:"), proc_kib(pid, "VmRSS:"));
        out["cpu_us_per_call"] = json!(cpu_per_call(cpu0, proc_cpu_us(pid), 1));
        thread::sleep(Duration::from_millis(settle_ms));
        out["seconds"] = json!(a.at.duration_since(t).as_secs_f64());
        out["answer_bytes"] = json!(a.bytes);
        out["rss_before_kib"] = json!(rss_before);
        out["hwm_before_kib"] = json!(hwm_before);
        out["hwm_kib"] = json!(hwm);
        out["rss_after_kib"] = json!(rss_after);
        out["rss_settled_kib"] = json!(proc_kib(pid, "VmRSS:"));
    }
}

fn main() {
    let o = parse_opts();
    let t_spawn = Instant::now();
    let mut peer = Peer::spawn(&o.cmd);
    let meta = request_meta(&o.protocol);
    let init = peer.initialize(meta.as_deref());
    let startup_us = init.at.duration_since(t_spawn).as_micros() as u64;
    let mut out = json!({"mode": o.mode, "label": o.label, "pid_rss_kib_after_init": proc_kib(peer.pid(), "VmRSS:")});
    if o.mode == "startup" {
        out["startup_us"] = json!(startup_us);
        println!("{out}");
        peer.close();
        return;
    }
    let tool = peer.tool_name(&o.tool, meta.as_deref());
    out["tool"] = json!(tool);
    let params = call_params(&tool, &o.args, meta.as_deref());
    let mut run = Run {
        peer,
        params,
        meta,
        next_id: 2,
        errors: 0,
    };
    run.warm_up(&tool, &o.mode, &o.args);
    match o.mode.as_str() {
        "seq" => run.seq(o.n, &mut out),
        "conc" => run.conc(o.n, o.inflight, &mut out),
        "big" => run.big(o.settle_ms, &mut out),
        other => die(&format!("unknown mode {other}")),
    }
    out["errors"] = json!(run.errors);
    out["startup_us"] = json!(startup_us);
    println!("{out}");
    run.peer.close();
}
