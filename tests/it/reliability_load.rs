//! Issue 5, load and backpressure against the real binary: 2,000 calls with up to 200 in flight
//! over three servers (two fixture servers and the real server-everything), and a client that
//! does not read its stdout for a while.
use crate::common;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::faults::*;
use common::*;
use serde_json::{json, Value};

const TOTAL: usize = 2000;
const WINDOW: usize = 200;

/// What call `i` asks and what its envelope content must contain.
fn plan(i: usize) -> (String, Value, String) {
    match i % 3 {
        0 => (
            "a_echo".into(),
            json!({"text": format!("a-{i}")}),
            format!("a-{i}"),
        ),
        1 => (
            "b_rows".into(),
            json!({"n": 1 + i % 4, "prefix": format!("p{i}-")}),
            format!("name=p{i}-row-0"),
        ),
        _ => (
            "echo".into(),
            json!({"message": format!("m-{i}")}),
            format!("m-{i}"),
        ),
    }
}

/// 2,000 `tools/call`s, at most 200 in flight, over two fixture servers and server-everything:
/// every call answered exactly once, with its own id, `call_id` and content.
#[test]
fn two_thousand_calls_200_in_flight_three_servers() {
    let (_dir, config) = write_config(&format!(
        "[defaults]\nchar_budget = 2000\ntool_timeout_sec = 60\n{}{}{}",
        fixture_server("a", &[], "tool_prefix = \"a_\""),
        fixture_server("b", &[], "tool_prefix = \"b_\""),
        real_server("everything", "startup_timeout_sec = 60")
    ));
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-06-18");
    let kids = live_children(p.pid());
    assert_eq!(kids.len(), 3, "three servers");

    let started = Instant::now();
    let (mut sent, mut in_flight, mut max_in_flight) = (0usize, 0usize, 0usize);
    let mut answers: HashMap<i64, usize> = HashMap::new();
    let (mut answered, mut wrong, mut duplicated, mut unknown) = (0usize, 0usize, 0usize, 0usize);
    let deadline = Instant::now() + Duration::from_secs(300);
    while answered + duplicated < TOTAL || sent < TOTAL {
        while sent < TOTAL && in_flight < WINDOW {
            let (tool, args, _) = plan(sent);
            p.send(&call_msg(json!(sent as i64), &tool, args));
            sent += 1;
            in_flight += 1;
            max_in_flight = max_in_flight.max(in_flight);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(msg) = p.try_recv(left) else { break };
        if !is_response(&msg) {
            continue;
        }
        let Some(id) = msg["id"].as_i64().filter(|i| (0..TOTAL as i64).contains(i)) else {
            unknown += 1;
            continue;
        };
        let n = answers.entry(id).or_default();
        *n += 1;
        if *n > 1 {
            duplicated += 1;
            continue;
        }
        answered += 1;
        in_flight -= 1;
        let env = envelope_of(&msg);
        let (_, _, want) = plan(id as usize);
        let ok = env["status"] == "ok"
            && env["call_id"].as_str() == Some(id.to_string().as_str())
            && env["content"].as_str().unwrap_or("").contains(&want);
        if !ok {
            wrong += 1;
            eprintln!("wrong answer for {id}: {env}");
        }
        if answered == TOTAL {
            // Wait briefly for any duplicate.
            while let Some(extra) = p.try_recv(Duration::from_millis(500)) {
                if is_response(&extra) {
                    duplicated += 1;
                }
            }
            break;
        }
    }
    let took = started.elapsed();
    let lost = TOTAL - answers.len();
    eprintln!(
        "FIGURES load: sent {sent}, answered {answered}, lost {lost}, duplicated {duplicated}, wrong {wrong}, unknown ids {unknown}, max in flight {max_in_flight}, {:.1} s ({:.0} calls/s, debug build)",
        took.as_secs_f64(),
        TOTAL as f64 / took.as_secs_f64()
    );
    assert_eq!(sent, TOTAL);
    assert_eq!(answered, TOTAL);
    assert_eq!((lost, duplicated, wrong, unknown), (0, 0, 0, 0));
    assert_eq!(max_in_flight, WINDOW);
    finish(p, &kids);
}

/// RSS of a process in kB.
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// A client of the real binary that sends `n` calls of `tool` with `args` from a writer thread
/// (the proxy may stop reading stdin under backpressure; the test never blocks on it) and does
/// not read its stdout for `stall` (sampling the proxy's RSS every 100 ms meanwhile).
struct StalledClient {
    child: Child,
    stdout: BufReader<ChildStdout>,
    writer: std::thread::JoinHandle<ChildStdin>,
    pid: u32,
    /// The proxy's servers, taken right after `initialize`.
    kids: Vec<u32>,
    /// RSS in kB right after `initialize`.
    baseline_kb: u64,
    /// The largest RSS in kB seen during the stall.
    max_rss_kb: u64,
    _stderr: tempfile::NamedTempFile,
}

impl StalledClient {
    fn start(
        config: &Path,
        client: &str,
        n: usize,
        tool: &'static str,
        args: Value,
        stall: Duration,
    ) -> Self {
        let stderr = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new(bin())
            .args(["serve", "--config"])
            .arg(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr.reopen().unwrap())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let init = json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":client,"version":"1"}}});
        writeln!(stdin, "{init}").unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert!(line.contains("\"init\""), "{line}");
        let baseline_kb = rss_kb(pid);
        let kids = live_children(pid);
        let writer = std::thread::spawn(move || {
            let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
            writeln!(stdin, "{initialized}").unwrap();
            for i in 0..n {
                writeln!(stdin, "{}", call_msg(json!(i), tool, args.clone())).unwrap();
            }
            stdin.flush().unwrap();
            stdin
        });
        let mut max_rss_kb = 0;
        for _ in 0..stall.as_millis() / 100 {
            std::thread::sleep(Duration::from_millis(100));
            max_rss_kb = max_rss_kb.max(rss_kb(pid));
        }
        StalledClient {
            child,
            stdout,
            writer,
            pid,
            kids,
            baseline_kb,
            max_rss_kb,
            _stderr: stderr,
        }
    }

    /// The next line of stdout and its length in bytes; the proxy must not close stdout early.
    fn read_line(&mut self) -> (String, usize) {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "proxy closed stdout early");
        (line, n)
    }

    /// Waits for the writer, lets the proxy settle for `settle`, takes its RSS in kB, then
    /// closes stdin: the exit status and that RSS.
    fn finish(mut self, settle: Duration) -> (std::process::ExitStatus, u64) {
        let stdin = self.writer.join().unwrap();
        std::thread::sleep(settle);
        let after = rss_kb(self.pid);
        drop(stdin);
        let status = self.child.wait().unwrap();
        assert!(wait_gone(&self.kids, Duration::from_secs(5)).is_empty());
        (status, after)
    }
}

/// A client that sends 500 calls answering ~10 KB each and does not read its stdout for 3 s:
/// after reading, all 500 answers are there exactly once, each a whole JSON line, and the proxy
/// stayed small meanwhile (backpressure instead of buffering without bound).
#[test]
fn slow_client_loses_nothing() {
    const N: usize = 500;
    let (_dir, config) = write_config(&format!(
        "[defaults]\nchar_budget = 20000\n{}",
        fixture_server("fx", &[], "")
    ));
    let args = json!({"bytes": 10_000});
    let mut client = StalledClient::start(&config, "slow", N, "big", args, Duration::from_secs(3));
    let mut seen = HashSet::new();
    let (mut dup, mut bad) = (0, 0);
    let mut bytes = 0usize;
    for _ in 0..N {
        let (line, n) = client.read_line();
        bytes += n;
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            bad += 1;
            continue;
        };
        let id = msg["id"].as_u64().expect("a response to a call");
        let env = envelope_of(&msg);
        if env["status"] != "ok" || env["content"].as_str().unwrap().len() != 10_000 {
            bad += 1;
        }
        if !seen.insert(id) {
            dup += 1;
        }
    }
    let max_rss = client.max_rss_kb;
    let (status, _) = client.finish(Duration::ZERO);
    let lost = N - seen.len();
    eprintln!(
        "FIGURES slow client: {N} calls, {} answered, lost {lost}, duplicated {dup}, bad {bad}, {:.1} MB read after a 3 s stall, proxy RSS max {} MB",
        seen.len(),
        bytes as f64 / 1e6,
        max_rss / 1024
    );
    assert_eq!((lost, dup, bad), (0, 0, 0));
    assert!(max_rss < 200 * 1024, "proxy RSS {max_rss} kB while stalled");
    assert_eq!(status.code(), Some(0));
}

/// A client that sends 3,000 calls answering ~100 KB each and does not read its stdout for a
/// while: the proxy stops reading requests once its output queue is full (backpressure up to
/// the servers) instead of holding hundreds of MB of answers, loses nothing once the client
/// reads, and gives the memory back afterwards.
#[test]
fn a_client_that_does_not_read_bounds_the_output_queue() {
    const N: usize = 3000;
    let (_dir, config) = write_config(&format!(
        "[defaults]\nchar_budget = 200000\ntool_timeout_sec = 600\n{}",
        hostile_server("h", &[], "")
    ));
    let args = json!({"bytes": 100_000});
    let mut client =
        StalledClient::start(&config, "stalled", N, "blob", args, Duration::from_secs(10));
    let mut seen = HashSet::new();
    for _ in 0..N {
        let (line, _) = client.read_line();
        let msg: Value = serde_json::from_str(&line).unwrap();
        let env = envelope_of(&msg);
        assert_eq!(env["status"], "ok", "{}", env["content"]);
        seen.insert(msg["id"].as_u64().unwrap());
    }
    let (baseline, max_rss) = (client.baseline_kb, client.max_rss_kb);
    let (status, after) = client.finish(Duration::from_secs(2));
    eprintln!(
        "FIGURES stalled client: {N} x 100 KB, {} answered, RSS baseline {} MB, max {} MB while stalled, {} MB after draining",
        seen.len(),
        baseline / 1024,
        max_rss / 1024,
        after / 1024
    );
    assert_eq!(seen.len(), N);
    assert_eq!(status.code(), Some(0));
    assert!(max_rss < 120 * 1024, "proxy RSS {max_rss} kB while stalled");
    assert!(
        after < baseline + 30 * 1024,
        "proxy RSS {after} kB after draining (baseline {baseline} kB)"
    );
}
