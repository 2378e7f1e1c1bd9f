"""Aggregates scripts/bench results (JSON lines) into the table printed and BENCHMARKS.md.

Medians over the repetitions, with the spread min-max. The sections of an existing BENCHMARKS.md
after the generated "## Goals" table are kept as they are (written by hand or by the other
benchmark scripts).
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("results")
ap.add_argument("out")
for k in ["reps", "quick", "n-seq", "n-conc", "inflight", "big-rows", "n-echo", "budget"]:
    ap.add_argument("--" + k, type=int)
ap.add_argument("--load-before", default="?")
ap.add_argument("--load-after", default="?")
a = ap.parse_args()

data = {}  # (workload, way) -> list of result dicts
with open(a.results) as f:
    for line in f:
        r = json.loads(line)
        data.setdefault((r["workload"], r["way"]), []).append(r["result"])

WAYS = ["direct", "relay", "proxy", "peer"]


def values(workload, way, fn):
    out = []
    for r in data.get((workload, way), []):
        try:
            v = fn(r)
        except (KeyError, TypeError, ZeroDivisionError):
            v = None
        if v is not None:
            out.append(v)
    return out


def med(workload, way, fn):
    v = values(workload, way, fn)
    return statistics.median(v) if v else None


def spread(workload, way, fn, fmt):
    v = values(workload, way, fn)
    if not v:
        return "n/a"
    m = statistics.median(v)
    if len(v) == 1:
        return fmt(m)
    return f"{fmt(m)} ({fmt(min(v))}–{fmt(max(v))})"


def ratio(x, y):
    return f"{x / y:.2f}" if x is not None and y not in (None, 0) else "n/a"


f0 = lambda v: f"{v:.0f}"
f1 = lambda v: f"{v:.1f}"
f2 = lambda v: f"{v:.2f}"
direct_big_bytes = med("big", "direct", lambda r: r["answer_bytes"])
input_mb = (direct_big_bytes or 0) / 1e6

metrics = [
    # (label, workload, fn, fmt, unit)
    ("(1) small call p50 latency", "seq", lambda r: r["p50_us"], f1, "µs"),
    ("(1) small call p99 latency", "seq", lambda r: r["p99_us"], f1, "µs"),
    ("(1) CPU time of the spawned process per call", "seq", lambda r: r["cpu_us_per_call"], f1, "µs"),
    ("(2) throughput, 64 in flight", "conc", lambda r: r["calls_per_s"], f0, "calls/s"),
    ("(2) CPU time of the spawned process per call", "conc", lambda r: r["cpu_us_per_call"], f1, "µs"),
    ("(3) big result: time to answer", "big", lambda r: r["seconds"] * 1000, f0, "ms"),
    ("(3) big result: input rate", "big",
     lambda r: input_mb / r["seconds"] if input_mb else None, f0, "MB/s"),
    ("(3) peak RSS (VmHWM) of the process", "big", lambda r: r["hwm_kib"] / 1024, f0, "MiB"),
    ("(3) VmRSS before the call", "big", lambda r: r["rss_before_kib"] / 1024, f1, "MiB"),
    ("(3) VmRSS 1 s after the answer", "big", lambda r: r["rss_settled_kib"] / 1024, f1, "MiB"),
    ("(4) start-up to initialize answer", "startup", lambda r: r["startup_us"] / 1000, f1, "ms"),
    ("(5) server-everything echo p50", "echo", lambda r: r["p50_us"], f1, "µs"),
    ("(5) server-everything echo p99", "echo", lambda r: r["p99_us"], f1, "µs"),
]

rows = []
for label, wl, fn, fmt, unit in metrics:
    d, r, p, q = (med(wl, w, fn) for w in WAYS)
    # "added over the relay" only for times (µs, ms); a rate or a size is compared by ratio.
    added = fmt(p - r) if unit in ("µs", "ms") and None not in (p, r) else "n/a"
    rows.append([f"{label} [{unit}]"] + [spread(wl, w, fn, fmt) for w in WAYS]
                + [ratio(p, d), ratio(p, r), added, ratio(q, p)])
errors = sum(r.get("errors", 0) for rs in data.values() for r in rs)

header = ["figure", "direct", "byte relay", "mcp-envelope (proxy)", "FastMCP (peer)", "proxy/direct",
          "proxy/relay", "proxy − relay", "peer/proxy"]
def table(rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)

# Goals.
g = []
def goal(text, measured, ok):
    status = "n/a" if ok is None else ("met" if ok else "**missed**")
    g.append(f"| {text} | {measured} | {status} |")

P50 = lambda r: r["p50_us"]
d50, r50, p50 = (med("seq", w, P50) for w in ("direct", "relay", "proxy"))
goal("small calls: p50 added over the byte relay ≤ 20 µs",
     f"{p50 - r50:.1f} µs" if None not in (p50, r50) else "n/a",
     None if None in (p50, r50) else p50 - r50 <= 20)
goal("small calls: p50 proxy/direct ≤ 1.10", ratio(p50, d50),
     None if None in (p50, d50) else p50 / d50 <= 1.10)
e_d, e_r, e_p = (med("echo", w, P50) for w in ("direct", "relay", "proxy"))
goal("server-everything echo: p50 added over the byte relay ≤ 20 µs",
     f"{e_p - e_r:.1f} µs" if None not in (e_p, e_r) else "n/a",
     None if None in (e_p, e_r) else e_p - e_r <= 20)
goal("server-everything echo: p50 proxy/direct ≤ 1.10", ratio(e_p, e_d),
     None if None in (e_p, e_d) else e_p / e_d <= 1.10)
c_d, c_r, c_p, c_q = (med("conc", w, lambda r: r["calls_per_s"]) for w in WAYS)
goal("throughput, 64 in flight ≥ the byte relay's",
     f"{c_p:.0f} vs {c_r:.0f} calls/s ({ratio(c_p, c_r)} ×; {ratio(c_p, c_d)} × direct)"
     if None not in (c_p, c_r, c_d) else "n/a",
     None if None in (c_p, c_r) else c_p >= c_r)
b_p = med("big", "proxy", lambda r: r["seconds"])
rate = input_mb / b_p if b_p and input_mb else None
goal("large result: ≥ 300 MB/s of input (end to end, server included)",
     f"{rate:.0f} MB/s" if rate else "n/a", None if rate is None else rate >= 300)
b_d = med("big", "direct", lambda r: r["seconds"])
own = input_mb / (b_p - b_d) if b_p and b_d and b_p > b_d and input_mb else None
goal("(same goal, the proxy's own share) input ÷ time the proxy adds over direct ≥ 300 MB/s",
     f"{own:.0f} MB/s ({1000 * (b_p - b_d):.0f} ms added)" if own else "n/a",
     None if own is None else own >= 300)
hwm = med("big", "proxy", lambda r: r["hwm_kib"] * 1024)
goal("large result: peak RSS of the proxy ≤ 1.2 × the result's size",
     f"{hwm / direct_big_bytes:.2f} ×" if hwm and direct_big_bytes else "n/a",
     None if not (hwm and direct_big_bytes) else hwm <= 1.2 * direct_big_bytes)
back = med("big", "proxy", lambda r: (r["rss_settled_kib"] - r["rss_before_kib"]) / 1024)
goal("memory returns to the baseline after the call (VmRSS 1 s after − before ≤ 5 MiB)",
     f"{back:+.1f} MiB" if back is not None else "n/a", None if back is None else back <= 5)
s_d, s_p = med("startup", "direct", lambda r: r["startup_us"] / 1000), med("startup", "proxy", lambda r: r["startup_us"] / 1000)
goal("start-up ≤ 20 ms beyond the slowest server's own start-up (3 servers)",
     f"{s_p - s_d:.1f} ms" if None not in (s_p, s_d) else "n/a",
     None if None in (s_p, s_d) else s_p - s_d <= 20)
goal("≥ 20 × the peer proxy's throughput",
     f"{c_p / c_q:.1f} ×" if None not in (c_p, c_q) else "n/a",
     None if None in (c_p, c_q) else c_p >= 20 * c_q)
goals = "\n".join(["| goal | measured (medians) | |", "|---|---|---|"] + g)


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"

cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
mem = sh("grep MemTotal /proc/meminfo | awk '{printf \"%.1f GiB\", $2/1048576}'")
machine = (f"{os.cpu_count()} CPUs (nproc {sh('nproc')}), {cpu}; {mem} RAM; "
           f"Linux {platform.release()}; {sh('rustc --version')}")
now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")

keep = ""
if os.path.exists(a.out):
    text = open(a.out, encoding="utf-8").read()
    # Everything from the first section after the generated ones ("Goals") is kept as written.
    heads = [m.start() for m in re.finditer(r"^## ", text, re.M)]
    goals_at = text.find("\n## Goals\n")
    later = [h for h in heads if h > goals_at + 1] if goals_at >= 0 else heads
    if later:
        keep = text[later[0]:].rstrip() + "\n"

quick_note = "\n**Quick mode (smoke test): R=1 and smaller N; not representative.**\n" if a.quick else ""
doc = f"""# Benchmarks

Produced by `scripts/bench` on {now}.{quick_note}

Machine: {machine}.
Load average (1, 5, 15 min) before the run: {a.load_before}; after: {a.load_after}. Other
processes (compilers, test runs) may have been running on this shared machine while it ran; the
ways were interleaved (direct → relay → proxy → peer, repeated R={a.reps} times) so that such
noise hits them alike. Figures are medians over the repetitions, with min–max in parentheses.

Setup: client `examples/bench_client.rs` (Rust, one dedicated reader thread, `Instant` around
write → read of the matching answer); downstream `examples/bench_server.rs` (a fast Rust server
that exists only for benchmarks); byte relay = `examples/bench_relay.rs` between the client and
the same server (one thread per direction, one `read` and one `write` per chunk, no parsing: the
floor of any stdio proxy; "proxy − relay" is what mcp-envelope adds over that floor); proxy = `mcp-envelope` release build with `char_budget =
{a.budget}` (default log level); peer = FastMCP 4.2.3's `create_proxy` over the same
`mcpServers` JSON that `fastmcp run` uses, with its `ResponseLimitingMiddleware(max_size={a.budget})`
(a byte limit, its nearest equivalent of the character budget), run by `scripts/bench_peer.py`.

Workloads: (1) {a.n_seq} sequential `row` calls (one short row as structuredContent);
(2) {a.n_conc} `row` calls with {a.inflight} in flight; (3) one `big_rows` call of {a.big_rows}
rows of 50 bytes = {input_mb:.1f} MB of JSON, enveloped to {a.budget} characters (peak RSS is the
VmHWM of the spawned process: the bench server for "direct", the proxy otherwise); (4) spawn →
`initialize` answer with three bench servers configured ("direct" and "relay" = one bench server);
(5) {a.n_echo} sequential calls of `@modelcontextprotocol/server-everything`'s `echo`.
Every process is spawned fresh for every workload and repetition; 20 warm-up calls precede (1), (2), (5).
"CPU time of the spawned process" is user + system time from `/proc/<pid>/stat` over the timed
calls (clock-tick resolution, 10 ms) divided by the calls: the bench server's for "direct", the
relay's or the proxy's own (its server not included) for those, the Python process's for the peer.
Failed calls counted: {errors}.

{table(rows)}

## Goals

{goals}

"""
with open(a.out, "w", encoding="utf-8") as f:
    f.write(doc + keep)
print(table(rows))
print()
print(goals)
