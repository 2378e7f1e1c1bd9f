//! Benchmark client for `scripts/bench_tools`: many tools, listed directly or through the proxy.
//!
//! ```text
//! tools_client direct --lists R -- SERVER_COMMAND [ARGS...]   (with --servers K: K copies,
//!                                                              `{i}` in an argument -> 0..K-1)
//! tools_client proxy  --lists R -- PROXY_COMMAND [ARGS...]
//! ```
//!
//! Each arm: spawn the process(es), `initialize`, `notifications/initialized`, then `tools/list`
//! (following `nextCursor` until the last page) on every connection at once; the time from the
//! spawn to the last byte of that first listing is the start-up figure. Then `--lists` more
//! listings one after another, each timed from its requests written to the last byte of its
//! last page (each page is then scanned to count its tools and find `nextCursor`; the scans of
//! pages before the last are part of the time, as a client paging must make them). Each
//! connection is read on its own thread. A second figure adds the client's own parse: until
//! every page is parsed into `serde_json::Value`s (`startup_parsed_ms`, `parsed_p50_ms`).
//! Prints one JSON line: start-up
//! (ms) and the CPU the spawned processes used until then (ms), listing p50/p99 (ms), tools and bytes of one listing, pages, CPU of the spawned
//! processes per listing (ms, from `/proc/PID/task/*/schedstat`, all threads), and their memory
//! (VmHWM, VmRSS in kB, summed over the processes).

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct ListResponse {
    result: Option<ListResult>,
}

#[derive(Deserialize)]
struct ListResult {
    tools: Vec<IgnoredAny>,
    #[serde(rename = "nextCursor")]
    next_cursor: Option<serde_json::Value>,
}

/// One MCP connection over a child's pipes.
struct Conn {
    child: Child,
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
    next_id: u64,
    line: Vec<u8>,
    /// When the last byte of `line` was read (before anything looked at it).
    read_at: Instant,
}

/// What one full listing (all pages) of one connection saw; `done` is when the last page's
/// last byte was read (before it is parsed), `parsed` when every page had been parsed into
/// `serde_json::Value`s (what a client that uses the tools does next).
#[derive(Clone, Copy)]
struct Listing {
    tools: usize,
    bytes: usize,
    pages: usize,
    done: Instant,
    parsed: Instant,
}

impl Default for Listing {
    fn default() -> Self {
        let now = Instant::now();
        Listing {
            tools: 0,
            bytes: 0,
            pages: 0,
            done: now,
            parsed: now,
        }
    }
}

impl Conn {
    fn spawn(argv: &[String]) -> Conn {
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {argv:?}: {e}"));
        let input = BufWriter::new(child.stdin.take().unwrap());
        let output = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
        Conn {
            child,
            input,
            output,
            next_id: 0,
            line: Vec::new(),
            read_at: Instant::now(),
        }
    }

    fn send(&mut self, method: &str, params: serde_json::Value) -> u64 {
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        serde_json::to_writer(&mut self.input, &msg).unwrap();
        self.input.write_all(b"\n").unwrap();
        self.input.flush().unwrap();
        self.next_id
    }

    fn notify(&mut self, method: &str) {
        let msg = json!({"jsonrpc": "2.0", "method": method});
        serde_json::to_writer(&mut self.input, &msg).unwrap();
        self.input.write_all(b"\n").unwrap();
        self.input.flush().unwrap();
    }

    /// Reads lines until the response to a request (a line with `"result"` or `"error"` and
    /// no `"method"`); notifications and server requests are skipped. `read_at` is when the
    /// response's last byte was read, before the line is scanned.
    fn read_response(&mut self) -> &[u8] {
        loop {
            self.line.clear();
            let n = self.output.read_until(b'\n', &mut self.line).unwrap();
            self.read_at = Instant::now();
            assert!(n > 0, "the process closed its output");
            if starts_as_response(&self.line) {
                return &self.line;
            }
        }
    }

    /// Sends the first `tools/list` request (of a listing).
    fn start_listing(&mut self) {
        self.send("tools/list", json!({}));
    }

    /// Reads the pages of a listing started with [`Conn::start_listing`], asking for the next
    /// page while there is one.
    fn finish_listing(&mut self) -> Listing {
        let mut listing = Listing::default();
        loop {
            self.read_response();
            listing.done = self.read_at;
            let line = &self.line;
            listing.bytes += line.len();
            listing.pages += 1;
            let page: ListResponse = serde_json::from_slice(line).expect("a tools/list answer");
            let result = page.result.expect("tools/list answered with a result");
            listing.tools += result.tools.len();
            let next = result.next_cursor.filter(|c| !c.is_null());
            if let Some(c) = &next {
                self.send("tools/list", json!({ "cursor": c }));
            }
            // The client's own work on the page: every tool as a value tree.
            let value: serde_json::Value = serde_json::from_slice(&self.line).unwrap();
            std::hint::black_box(value);
            listing.parsed = Instant::now();
            if next.is_none() {
                return listing;
            }
        }
    }
}

/// Whether the line starts like a response: `{"jsonrpc":"2.0","id":…,"result"` or `"error"`
/// appears before any `"method"`.
fn starts_as_response(line: &[u8]) -> bool {
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    let Some(result) = find(line, b"\"result\"").or_else(|| find(line, b"\"error\"")) else {
        return false;
    };
    // Only the text before it: a multi-megabyte answer is not scanned to its end.
    find(&line[..result], b"\"method\"").is_none()
}

/// Lists on every connection at once: all first requests written, then each connection read
/// to its end on its own thread (one connection's parsing never delays reading another's).
fn list_all(conns: &mut [Conn]) -> Listing {
    // Its instants start now: the latest of each connection's replaces them.
    let mut total = Listing::default();
    for c in conns.iter_mut() {
        c.start_listing();
    }
    let listings: Vec<Listing> = if conns.len() == 1 {
        vec![conns[0].finish_listing()]
    } else {
        std::thread::scope(|s| {
            let threads: Vec<_> = conns
                .iter_mut()
                .map(|c| s.spawn(move || c.finish_listing()))
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        })
    };
    for l in listings {
        total.tools += l.tools;
        total.bytes += l.bytes;
        total.pages += l.pages;
        total.done = total.done.max(l.done);
        total.parsed = total.parsed.max(l.parsed);
    }
    total
}

/// CPU time (ns) of every thread of `pid` so far.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// A `/proc/PID/status` field in kB.
fn status_kb(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| {
            l.strip_prefix(key)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

struct Opts {
    arm: String,
    lists: usize,
    servers: usize,
    argv: Vec<String>,
}

fn opts() -> Opts {
    let mut args = std::env::args().skip(1);
    let arm = args.next().expect("arm: direct or proxy");
    let mut o = Opts {
        arm,
        lists: 50,
        servers: 1,
        argv: Vec::new(),
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--lists" => o.lists = args.next().unwrap().parse().unwrap(),
            "--servers" => o.servers = args.next().unwrap().parse().unwrap(),
            "--" => {
                o.argv = args.collect();
                break;
            }
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(!o.argv.is_empty(), "give the command after --");
    o
}

fn main() {
    let o = opts();
    let copies = if o.arm == "direct" { o.servers } else { 1 };
    let started = Instant::now();
    let mut conns: Vec<Conn> = (0..copies)
        .map(|i| {
            let argv: Vec<String> = o
                .argv
                .iter()
                .map(|a| a.replace("{i}", &i.to_string()))
                .collect();
            Conn::spawn(&argv)
        })
        .collect();
    for c in conns.iter_mut() {
        c.send(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "tools_client", "version": "0"}}),
        );
    }
    for c in conns.iter_mut() {
        c.read_response();
        c.notify("notifications/initialized");
    }
    let first = list_all(&mut conns);
    let startup = first.done.duration_since(started);
    let pids: Vec<u32> = conns.iter().map(|c| c.child.id()).collect();
    let cpu = || pids.iter().map(|p| cpu_ns(*p)).sum::<u64>();
    let cpu_before = cpu();
    let mut times = Vec::with_capacity(o.lists);
    let mut parsed = Vec::with_capacity(o.lists);
    let mut last = first;
    for _ in 0..o.lists {
        let t = Instant::now();
        last = list_all(&mut conns);
        times.push(last.done.duration_since(t).as_secs_f64() * 1e3);
        parsed.push(last.parsed.duration_since(t).as_secs_f64() * 1e3);
        assert_eq!(last.tools, first.tools, "every listing has the same tools");
    }
    let cpu_ms = (cpu() - cpu_before) as f64 / 1e6 / o.lists.max(1) as f64;
    let hwm: u64 = pids.iter().map(|p| status_kb(*p, "VmHWM:")).sum();
    let rss: u64 = pids.iter().map(|p| status_kb(*p, "VmRSS:")).sum();
    times.sort_by(f64::total_cmp);
    parsed.sort_by(f64::total_cmp);
    let out = json!({
        "arm": o.arm,
        "startup_ms": startup.as_secs_f64() * 1e3,
        "startup_parsed_ms": first.parsed.duration_since(started).as_secs_f64() * 1e3,
        "parsed_p50_ms": percentile(&parsed, 0.5),
        "startup_cpu_ms": cpu_before as f64 / 1e6,
        "p50_ms": percentile(&times, 0.5),
        "p99_ms": percentile(&times, 0.99),
        "tools": last.tools,
        "bytes": last.bytes,
        "pages": last.pages,
        "cpu_ms_per_list": cpu_ms,
        "vmhwm_kb": hwm,
        "vmrss_kb": rss,
    });
    println!("{out}");
    for mut c in conns {
        drop(c.input);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if c.child.try_wait().ok().flatten().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = c.child.kill();
        let _ = c.child.wait();
    }
}
