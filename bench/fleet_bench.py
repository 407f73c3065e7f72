#!/usr/bin/python3
"""Benchmarks of the stream fleet (docs/benchmarks.md), run by scripts/bench.sh.

Each benchmark starts its own `leasehold upstream-sim`, a fresh store and
`leasehold worker` processes, measures them from outside (/proc, the
worker's /metrics, the sink files) and prints one JSON line on stdout:

  memory  RSS of one worker (VmRSS) after start with no connections, then
          owning N idle connections (--rate-per-conn 0.01) once every one of
          them has written its first message; (RSS_N - RSS_0) / N in KiB.
  writes  store calls per connection per minute of one worker owning 100
          connections at the default timing (renew 5 s, checkpoint 5 s,
          reconcile 2 s), from leasehold_store_operation_seconds_count per
          operation over a measured window; on SQLite also the rows the
          connections table saw written (counted by triggers in the file).
  failover  three workers on SQLite with a 4 s ttl; --kills times, kill -9
          one and time until each of its connections is written again by
          another (the sinks' written_at_ms), then restart it; nearest-rank
          percentiles over kills and over (kill, connection).

Usage: bench/fleet_bench.py [--bin build/bin/leasehold] [memory|writes|failover ...]
       [--connections 1000] [--window 60] [--dynamodb-endpoint URL] [--kills 50]
Without a DynamoDB endpoint, `writes` runs on SQLite only.
"""

import argparse
import concurrent.futures
import json
import math
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def log(msg):
    print("leasehold: fleet_bench: " + msg, file=sys.stderr, flush=True)


def emit(figures):
    print(json.dumps(figures, separators=(",", ":")), flush=True)


def wait_for(what, pred, timeout_s, every_s=0.2):
    deadline = time.monotonic() + timeout_s
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting for " + what)
        time.sleep(every_s)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS for pid %d" % pid)


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Procs:
    """The processes a benchmark started; stopped (SIGTERM, then SIGKILL) at exit."""

    def __init__(self):
        self.procs = []

    def start(self, args, **kw):
        p = subprocess.Popen(args, **kw)
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM, timeout_s=15):
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def close(self):
        for p in reversed(self.procs):
            self.stop(p)


class Fleet:
    def __init__(self, bin_path, store, work, procs):
        self.bin, self.store, self.work, self.procs = bin_path, store, work, procs

    def cli(self, *args):
        subprocess.run([self.bin, "--store", self.store, *args], check=True,
                       stdout=subprocess.DEVNULL)

    def upstream(self, rate):
        err = open(os.path.join(self.work, "upstream-sim.log"), "ab")
        p = self.procs.start([self.bin, "upstream-sim", "--rate-per-conn", str(rate)],
                             stdout=subprocess.PIPE, stderr=err, text=True)
        line = p.stdout.readline()
        return json.loads(line)["listening"]

    def add_conns(self, addr, ids, stopped=False):
        extra = ["--stopped"] if stopped else []
        add = lambda cid: self.cli("conn", "add", cid, "--url",
                                   f"ws://{addr}/s/{cid}?from={{next_seq}}", *extra)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(add, ids))

    def worker(self, wid, *flags, may_exit=False):
        """Starts a worker and waits for its /metrics; None if it exited first and may_exit."""
        port = free_port()
        sink = os.path.join(self.work, wid + ".jsonl")
        err = open(os.path.join(self.work, wid + ".log"), "ab")
        p = self.procs.start([self.bin, "--store", self.store, "worker", "--id", wid,
                              "--sink", "jsonl:" + sink, "--metrics-listen",
                              f"127.0.0.1:{port}", *flags], stdout=subprocess.DEVNULL,
                             stderr=err)
        p.metrics_url = f"http://127.0.0.1:{port}/metrics"
        p.sink = sink
        wait_for("worker %s metrics" % wid,
                 lambda: p.poll() is not None or metrics(p) is not None, 30)
        if p.poll() is not None:
            if may_exit:
                return None
            raise RuntimeError("worker %s exited with %d" % (wid, p.returncode))
        return p


def metrics(worker):
    try:
        with urllib.request.urlopen(worker.metrics_url, timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        out[name] = float(value)
    return out


def metric(m, name, **labels):
    """Sum of the series of `name` whose labels include `labels`."""
    total = 0.0
    for key, value in m.items():
        base, _, rest = key.partition("{")
        if base != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        if all(got.get(k) == v for k, v in labels.items()):
            total += value
    return total


def sink_conns(path):
    seen = set()
    try:
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):
                    seen.add(json.loads(line)["conn"])
    except FileNotFoundError:
        pass
    return seen


def bench_memory(args, procs, work):
    fleet = Fleet(args.bin, "sqlite:" + os.path.join(work, "mem.db"), work, procs)
    addr = fleet.upstream(0.01)
    fleet.add_conns(addr, ["idle-setup"], stopped=True)  # creates the table
    n = args.connections
    w = fleet.worker("mem", "--max-connections", str(max(n, 1000)))
    time.sleep(args.settle)
    rss0 = rss_kib(w.pid)
    ids = ["c%05d" % i for i in range(n)]
    log("memory: adding %d connections" % n)
    fleet.add_conns(addr, ids)
    wait_for("%d connections streaming" % n,
             lambda: len(sink_conns(w.sink)) >= n and
             metric(metrics(w) or {}, "leasehold_fleet_owned_connections") >= n, 600, 1.0)
    time.sleep(args.settle)
    rss_n = rss_kib(w.pid)
    threads = len(os.listdir(f"/proc/{w.pid}/task"))
    procs.stop(w)
    per_conn = (rss_n - rss0) / n
    emit({"bench": "fleet_memory", "backend": "sqlite", "connections": n,
                      "rate_per_conn": 0.01, "rss0_kib": rss0, "rss_n_kib": rss_n,
                      "kib_per_connection": round(per_conn, 1), "threads": threads,
                      "goal_kib": 64, "met": per_conn < 64})


WRITE_OPS = ("put", "update", "update_each", "remove")


def add_row_triggers(db_path, table):
    db = sqlite3.connect(db_path, timeout=30)
    db.executescript(f"""
      CREATE TABLE IF NOT EXISTS bench_row_writes(op TEXT PRIMARY KEY, n INTEGER NOT NULL);
      INSERT OR IGNORE INTO bench_row_writes VALUES('insert', 0), ('update', 0), ('delete', 0);
      CREATE TRIGGER IF NOT EXISTS bench_ins AFTER INSERT ON "{table}"
        BEGIN UPDATE bench_row_writes SET n = n + 1 WHERE op = 'insert'; END;
      CREATE TRIGGER IF NOT EXISTS bench_upd AFTER UPDATE ON "{table}"
        BEGIN UPDATE bench_row_writes SET n = n + 1 WHERE op = 'update'; END;
      CREATE TRIGGER IF NOT EXISTS bench_del AFTER DELETE ON "{table}"
        BEGIN UPDATE bench_row_writes SET n = n + 1 WHERE op = 'delete'; END;
    """)
    db.close()


def row_writes(db_path):
    db = sqlite3.connect(db_path, timeout=30)
    n = db.execute("SELECT sum(n) FROM bench_row_writes").fetchone()[0]
    db.close()
    return n


def bench_writes(args, procs, work, backend, store):
    fleet = Fleet(args.bin, store, work, procs)
    if backend == "dynamodb":
        fleet.cli("store", "init")
    addr = fleet.upstream(args.writes_rate)
    n = args.writes_connections
    fleet.add_conns(addr, ["w%04d" % i for i in range(n)])
    db_path = store[len("sqlite:"):] if backend == "sqlite" else None
    if db_path:
        add_row_triggers(db_path, "items_connections")
    w = fleet.worker("writes-" + backend)
    wait_for("%d connections streaming" % n,
             lambda: metric(metrics(w) or {}, "leasehold_fleet_owned_connections") >= n and
             len(sink_conns(w.sink)) >= n, 300, 0.5)
    time.sleep(args.settle)  # past the first checkpoint of every connection
    before, rows0, t0 = metrics(w), row_writes(db_path) if db_path else None, time.monotonic()
    time.sleep(args.window)
    after, rows1, t1 = metrics(w), row_writes(db_path) if db_path else None, time.monotonic()
    procs.stop(w)
    minutes = (t1 - t0) / 60
    name = "leasehold_store_operation_seconds_count"
    calls = {op: int(metric(after, name, operation=op) - metric(before, name, operation=op))
             for op in WRITE_OPS}
    reads = {op: int(metric(after, name, operation=op) - metric(before, name, operation=op))
             for op in ("get", "batch_get", "query", "query_index")}
    per = lambda x: round(x / n / minutes, 2)
    emit({
        "bench": "fleet_store_writes", "backend": backend, "connections": n,
        "rate_per_conn": args.writes_rate, "window_s": round(t1 - t0, 1),
        "write_calls": calls, "write_calls_per_conn_per_min": per(sum(calls.values())),
        "single_writes_per_conn_per_min": per(calls["put"] + calls["update"] + calls["remove"]),
        "update_each_calls_per_conn_per_min": per(calls["update_each"]),
        "conn_rows_written_per_conn_per_min": per(rows1 - rows0) if db_path else None,
        "read_calls": reads, "read_calls_per_conn_per_min": per(sum(reads.values())),
        "messages": int(metric(after, "leasehold_fleet_messages_total") -
                        metric(before, "leasehold_fleet_messages_total")),
    })


class SinkTail:
    """Reads the lines appended to a sink file since the last call."""

    def __init__(self, path):
        self.path, self.offset, self.partial = path, 0, ""

    def new_lines(self):
        try:
            with open(self.path) as f:
                f.seek(self.offset)
                data = f.read()
                self.offset = f.tell()
        except FileNotFoundError:
            return []
        data = self.partial + data
        lines = data.split("\n")
        self.partial = lines.pop()
        return [json.loads(line) for line in lines if line]


def owners(fleet):
    out = subprocess.run([fleet.bin, "--store", fleet.store, "conn", "list"], check=True,
                         capture_output=True, text=True).stdout
    now_ms = time.time() * 1000
    result = {}
    for line in out.splitlines():
        c = json.loads(line)
        result[c["id"]] = c["owner"] if c["expires_at_ms"] > now_ms else ""
    return result


def percentile(values, p):
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


def bench_failover(args, procs, work):
    fleet = Fleet(args.bin, "sqlite:" + os.path.join(work, "failover.db"), work, procs)
    addr = fleet.upstream(args.failover_rate)
    n = args.failover_connections
    fleet.add_conns(addr, ["f%03d" % i for i in range(n)])
    timing = ["--lease-ttl", args.ttl, "--renew-every", args.renew,
              "--checkpoint-every", args.renew]
    ids = ["fo1", "fo2", "fo3"]
    workers = {wid: fleet.worker(wid, *timing) for wid in ids}
    tails = {wid: SinkTail(workers[wid].sink) for wid in ids}
    share = -(-n // len(ids))

    def balanced():
        o = owners(fleet)
        counts = [sum(1 for v in o.values() if v == wid) for wid in ids]
        return o if sum(counts) == n and max(counts) - min(counts) <= 1 else None

    wait_for("a balanced fleet", balanced, 120, 0.5)
    per_kill, per_conn = [], []
    for k in range(args.kills):
        o = wait_for("a balanced fleet", balanced, 120, 0.5)
        victim = ids[k % len(ids)]
        lost = {c for c, w in o.items() if w == victim}
        for t in tails.values():
            t.new_lines()  # skip what came before the kill
        workers[victim].kill()
        kill_ms = time.time() * 1000
        workers[victim].wait()
        back = {}
        deadline = time.monotonic() + 60
        while len(back) < len(lost):
            if time.monotonic() > deadline:
                raise RuntimeError("connections of %s not back within 60 s" % victim)
            time.sleep(0.1)
            for wid, t in tails.items():
                if wid == victim:
                    continue
                for line in t.new_lines():
                    c = line["conn"]
                    if c in lost and c not in back and line["written_at_ms"] > kill_ms:
                        back[c] = line["written_at_ms"] - kill_ms
        per_conn.extend(back.values())
        per_kill.append(max(back.values()))
        log("failover: kill %d of %d (%s, %d connections): all back after %.0f ms"
            % (k + 1, args.kills, victim, len(lost), per_kill[-1]))
        # Restart under the same name once its membership lease has expired.
        while True:
            p = fleet.worker(victim, *timing, may_exit=True)
            if p is not None:
                break
            time.sleep(0.5)  # refused while its old membership lease lives
        workers[victim] = p
    ms = lambda v: round(v)
    emit({
        "bench": "fleet_failover", "backend": "sqlite", "workers": len(ids), "connections": n,
        "kills": args.kills, "lease_ttl": args.ttl, "renew_every": args.renew,
        "reconcile_every": "2s", "rate_per_conn": args.failover_rate,
        "all_back_p50_ms": ms(percentile(per_kill, 50)),
        "all_back_p90_ms": ms(percentile(per_kill, 90)),
        "all_back_max_ms": ms(max(per_kill)),
        "conn_back_p50_ms": ms(percentile(per_conn, 50)),
        "conn_back_p90_ms": ms(percentile(per_conn, 90)),
        "conn_back_max_ms": ms(max(per_conn)),
    })


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("benches", nargs="*", default=["memory", "writes"])
    ap.add_argument("--bin", default="build/bin/leasehold")
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--settle", type=float, default=6.0)
    ap.add_argument("--window", type=float, default=60.0)
    ap.add_argument("--writes-connections", type=int, default=100)
    ap.add_argument("--writes-rate", type=float, default=1.0)
    ap.add_argument("--dynamodb-endpoint", default=None)
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--failover-connections", type=int, default=30)
    ap.add_argument("--failover-rate", type=float, default=10.0)
    ap.add_argument("--ttl", default="4s")
    ap.add_argument("--renew", default="1s")
    args = ap.parse_args()
    # Stopped by a signal, still stop what it started (a background job
    # starts with SIGINT ignored).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for bench in args.benches:
        procs = Procs()
        with tempfile.TemporaryDirectory() as work:
            try:
                if bench == "memory":
                    bench_memory(args, procs, work)
                elif bench == "writes":
                    bench_writes(args, procs, work, "sqlite",
                                 "sqlite:" + os.path.join(work, "writes.db"))
                    if args.dynamodb_endpoint:
                        prefix = "fleet%d_" % int(time.time())
                        bench_writes(args, procs, work, "dynamodb",
                                     f"dynamodb://us-east-1/{prefix}?endpoint="
                                     + args.dynamodb_endpoint)
                elif bench == "failover":
                    bench_failover(args, procs, work)
                else:
                    sys.exit("unknown benchmark: " + bench)
            finally:
                procs.close()


if __name__ == "__main__":
    main()
