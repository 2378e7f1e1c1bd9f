#!/usr/bin/env python3
"""Soak test of mcp-envelope (run by scripts/soak; Python 3 standard library only).

Starts `mcp-envelope serve` with two fixture servers, keeps a mix of tools/call requests in
flight for SOAK_SECONDS, SIGKILLs one of the servers every SOAK_KILL_EVERY seconds (alternating),
and samples the proxy's RSS, open file descriptors and live child processes every
SOAK_SAMPLE_EVERY seconds. At the end it closes stdin, waits for the proxy to exit, and prints
a summary; exit status 1 if any call was lost or answered twice, or the proxy did not exit 0.
"""

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECONDS = float(os.environ.get("SOAK_SECONDS", "600"))
KILL_EVERY = float(os.environ.get("SOAK_KILL_EVERY", "60"))
SAMPLE_EVERY = float(os.environ.get("SOAK_SAMPLE_EVERY", "5"))
IN_FLIGHT = int(os.environ.get("SOAK_IN_FLIGHT", "8"))
BIN = os.environ.get("SOAK_BIN", os.path.join(ROOT, "target", "debug", "mcp-envelope"))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "fixture_server.py")

CALLS = [
    ("echo", lambda i: {"text": f"soak {i}"}),
    ("rows", lambda i: {"n": 50}),
    ("lines", lambda i: {"n": 200}),
    ("big", lambda i: {"bytes": 20000}),
    ("sleep", lambda i: {"ms": 200}),
    ("fail", lambda i: {"message": "expected failure"}),
    ("rpc_error", lambda i: {"code": -32603, "message": "internal"}),
    ("add", lambda i: {"a": i, "b": 1}),
]


def config_text():
    servers = []
    for name in ("a", "b"):
        args = json.dumps([FIXTURE, "--name", name])
        servers.append(
            f'[mcp_servers.{name}]\ncommand = "python3"\nargs = {args}\n'
            f'tool_prefix = "{name}_"\ntool_timeout_sec = 30\nmax_restarts = 3\n'
        )
    return "[defaults]\nchar_budget = 2000\n" + "\n".join(servers)


def proc_children(pid):
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(rest[1]) == pid and rest[0] != "Z":
            kids.append(int(entry))
    return kids


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


class Soak:
    def __init__(self, proxy):
        self.proxy = proxy
        self.lock = threading.Lock()
        self.slots = threading.Semaphore(IN_FLIGHT)
        self.pending = {}
        self.answers = {}
        self.statuses = {}
        self.unexpected = []

    def send(self, msg):
        data = (json.dumps(msg) + "\n").encode()
        self.proxy.stdin.write(data)
        self.proxy.stdin.flush()

    def reader(self):
        for raw in self.proxy.stdout:
            msg = json.loads(raw)
            if "id" not in msg or "method" in msg:
                continue
            key = json.dumps(msg["id"])
            with self.lock:
                self.answers[key] = self.answers.get(key, 0) + 1
                if self.pending.pop(key, None) is None:
                    continue
            self.slots.release()
            env = msg.get("result", {}).get("structuredContent")
            if env is None:
                self.unexpected.append(msg)
                continue
            kind = env["status"]
            if kind == "error":
                kind = "error:" + env["content"].split(":", 1)[0]
            with self.lock:
                self.statuses[kind] = self.statuses.get(kind, 0) + 1

    def run(self):
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "soak", "version": "1"}}})
        first = json.loads(self.proxy.stdout.readline())
        assert first.get("id") == "init", first
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        threading.Thread(target=self.reader, daemon=True).start()
        pid = self.proxy.pid
        start = time.monotonic()
        next_kill, next_sample, victim = start + KILL_EVERY, start, 0
        samples, kills, i = [], 0, 0
        while time.monotonic() - start < SECONDS:
            now = time.monotonic()
            if now >= next_sample:
                samples.append((round(now - start), rss_kib(pid), fd_count(pid),
                                len(proc_children(pid))))
                next_sample += SAMPLE_EVERY
            if now >= next_kill:
                kids = sorted(proc_children(pid))
                if kids:
                    os.kill(kids[victim % len(kids)], signal.SIGKILL)
                    kills += 1
                    victim += 1
                next_kill += KILL_EVERY
            if not self.slots.acquire(timeout=0.5):
                continue
            tool, args = random.choice(CALLS)
            server = random.choice("ab")
            key = json.dumps(i)
            with self.lock:
                self.pending[key] = True
            self.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                       "params": {"name": f"{server}_{tool}", "arguments": args(i)}})
            i += 1
        deadline = time.monotonic() + 60
        while self.pending and time.monotonic() < deadline:
            time.sleep(0.1)
        samples.append((round(time.monotonic() - start), rss_kib(pid), fd_count(pid),
                        len(proc_children(pid))))
        return i, kills, samples


def main():
    if not os.path.exists(BIN):
        sys.exit(f"soak: {BIN} not found; build it first (cargo build) or set SOAK_BIN")
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "soak.toml")
        with open(config, "w") as f:
            f.write(config_text())
        log = open(os.path.join(tmp, "proxy.log"), "wb")
        proxy = subprocess.Popen([BIN, "serve", "--config", config], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=log)
        soak = Soak(proxy)
        sent, kills, samples = soak.run()
        proxy.stdin.close()
        status = proxy.wait(timeout=60)
        lost = len(soak.pending)
        duplicated = sum(1 for n in soak.answers.values() if n > 1)
        answered = sent - lost
        print(f"soak: {SECONDS:.0f} s, {kills} server kill(s), {IN_FLIGHT} calls in flight")
        print(f"calls: sent {sent}, answered {answered}, lost {lost}, duplicated {duplicated}")
        print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(soak.statuses.items())))
        print("samples (s, RSS KiB, fds, children):")
        for s in samples:
            print(f"  {s[0]:>5} {s[1]:>8} {s[2]:>4} {s[3]:>3}")
        rss = [s[1] for s in samples]
        fds = [s[2] for s in samples]
        kids = [s[3] for s in samples]
        print(f"RSS {rss[0] / 1024:.1f} -> {rss[-1] / 1024:.1f} MiB (max {max(rss) / 1024:.1f}); "
              f"fds {fds[0]} -> {fds[-1]} (max {max(fds)}); children {min(kids)}..{max(kids)}; "
              f"proxy exit {status}")
        if soak.unexpected:
            print(f"unexpected answers: {soak.unexpected[:3]}")
        ok = lost == 0 and duplicated == 0 and status == 0 and not soak.unexpected
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
