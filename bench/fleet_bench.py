#!/usr/bin/python3
"""Benchmarks of the stream fleet (docs/benchmarks.md), run by scripts/bench.sh.

Each benchmark starts its own `leasehold upstream-sim`, a fresh store and
`leasehold worker` processes, measures them from outside (/proc, the
worker's /metrics, the sink files) and prints one JSON line on stdout:

  memory  RSS of one worker (VmRSS) after start with no connections, then
          owning N idle connections (--rate-per-conn 0.01) once every one of
          them has written its first message; (RSS_N - RSS_0) / N in KiB.
  writes  store calls per connection per minute of one worker owning 100
          connections with per-connection leases (--session-ttl 0: renew 5 s,
          checkpoint 5 s, reconcile 2 s), from leasehold_store_operation_seconds_count per
          operation over a measured window; on SQLite also the rows the
          connections table saw written (counted by triggers in the file).
  failover  --failover-workers (3) workers on SQLite with a 4 s ttl and no
          session; --kills
          times, kill -9 one and time until each of its connections is written
          again by another (the sinks' written_at_ms), then restart it;
          nearest-rank percentiles over kills and over (kill, connection); and
          the conditional writes the survivors saw fail meanwhile
          (leasehold_store_condition_failures_total), per kill and per orphan:
          the takeover herd, were every survivor to try every orphan.
  sessions  sessions against per-connection leases in the same run:
          --sessions-workers (4) workers on SQLite sharing
          --sessions-connections (1000) at --sessions-rate (1) message/s each,
          at the default timing of each mode (sessions: session 3 s renewed
          every 800 ms, connection leases 30 min renewed every 10 min,
          checkpoints every 5 s; plain: --session-ttl 0, leases 20 s renewed
          every 5 s, checkpoints every 5 s). Over --window seconds: the
          lease-keeping writes the store accepted
          (leasehold_fleet_lease_writes_total, all kinds) and the checkpoint
          writes, per connection per minute, and the CPU of each worker; then
          --sessions-kills kill -9s of one worker, each restarted, and the
          time until each of its connections is written again by another:
          nearest-rank p50/p99 over connections, and the slowest kill.
  handover  one worker owning --handover-connections (1000), SIGTERMed once
          all stream: the time from the signal to its exit (streams closed,
          sink flushed, every lease released with its final checkpoint), and
          to every connection free in `conn list`; --rounds times, on SQLite
          and (with --dynamodb-endpoint) on DynamoDB.
  throughput  messages/s and CPU per 10,000 messages of one worker owning
          --throughput-connections (1000) streams of one upstream-sim
          (--throughput-rate 0: as fast as the reader reads; --sim-threads 2),
          against bench/bare_ws_reader (Boost.Beast alone, --reader) reading
          the same streams in the same run; --rounds times, alternately (which
          goes first alternates too), each over --throughput-window seconds
          once every stream has delivered. The worker's messages are its
          leasehold_fleet_messages_total, its CPU /proc/PID/stat; medians
          over rounds, and the median of the rounds' ratios worker/bare (goal
          >= 0.8). others_cpu_cores: the machine's busy time not charged to
          the reader and the upstream-sim (other processes, softirqs).
  cost    what the fleet costs as AWS bills it, on DynamoDB: --cost-workers (4)
          workers at the defaults sharing --cost-connections (1000) at
          --cost-rate (1) message/s each; once every connection streams and
          --settle seconds more, over --window seconds, the read and write
          capacity units the workers' own replies reported
          (leasehold_store_capacity_units_total: ConsumedCapacity, table and
          every index), per connection per minute, in all and by table and
          index, and the conditional writes that failed (a write unit each
          on DynamoDB, which no reply reports). On --dynamodb-endpoint, or
          with --dynamodb-local on AWS's DynamoDB Local, which this starts
          (scripts/setup.sh fetches it).
  lowrate  slow streams, as real fleets have them, at the default timing
          (sessions, checkpoints every 5 s) and a jsonl sink; its parts
          (--lowrate-parts cpu,memory,latency):
          cpu: for each of --lowrate-configs (1000x5,200x20: connections x
            messages/s each), CPU per 10,000 messages of one worker and of
            the bare reader side by side, each on its own n streams of one
            upstream-sim at that rate (--random-phase: streams opened
            together do not send together), over the same windows:
            --lowrate-rounds (3) windows of --lowrate-window (20) seconds,
            the bare reader started afresh for each; the median of the
            rounds' ratios worker/bare (goal <= 1.5);
          memory: RSS growth per connection of one worker taking
            --idle-connections (10,000) at --idle-rate (0.1) messages/s,
            over ws:// (goal 16 KiB; and the bare reader's, 1 stream against
            all) and wss:// (an upstream-sim with a self-signed certificate
            the worker trusts; goal 48 KiB);
          latency: one worker owning the ws:// connections, the upstream now
            at --latency-rate (1): over --latency-window (30) seconds, each
            message's sink written_at_ms less its upstream sent_at_ms
            (nearest-rank p50/p99, goal p99 <= 100 ms); the session's
            renewals (its expiry in the store, read every
            --latency-sample-every) and each connection's checkpoints (its
            last_seq, read every second): the gaps between them; and the
            bare reader's CPU per 10,000 messages on the same streams.
          --worker-bin runs the workers of another build (before/after).

  page    what one open Fleet page costs while it polls, at --page-sizes
          (1000,10000,100000) connections (every tenth STOPPED, no worker):
          `leasehold bench fleet-page` (bench/cli/bench_fleet_page.h) for
          --page-seconds (120) each, on SQLite and, with --dynamodb-local, on
          AWS's DynamoDB Local: bytes, requests and read units a minute, and
          a page of 100's latency.
  react   how soon the fleet acts on what is written to it, against the
          reconcile period (2 s, the default): two workers at the defaults
          sharing --react-connections (40) at 5 messages/s; --react-trials
          (20) times each: `conn stop` of an owned connection until no
          worker owns it, `conn start` of it until one does, `conn add` of a
          new one until one does; and a worker stopped with SIGTERM until
          the other owns all it had (--react-kills, 3, each restarted
          after). From just before the command or signal, ownership read from
          the workers' /metrics every 20 ms; nearest-rank p50/p99/max. On
          SQLite; --dynamodb-local on AWS's DynamoDB Local, the workers
          polling the desired state every --react-poll-every (60s).

Usage: bench/fleet_bench.py [--bin build/bin/leasehold] [memory|writes|failover|sessions|handover|throughput|lowrate|cost|react ...]
       [--connections 1000] [--window 60] [--dynamodb-endpoint URL] [--kills 50]
       [--reader build/bin/bare_ws_reader] [--rounds 5] [--throughput-window 10]
       [--throughput-rate 0] [--sim-threads 2] [--worker-bin BIN] [--lowrate-parts cpu,memory,latency]
       [--lowrate-configs 1000x5,200x20] [--lowrate-rounds 3] [--lowrate-window 20]
       [--idle-connections 10000] [--idle-rate 0.1] [--latency-rate 1] [--latency-window 30]
       [--dynamodb-local] [--cost-workers 4] [--cost-connections 1000] [--cost-rate 1]
Without a DynamoDB endpoint, `writes` runs on SQLite only.
"""

import argparse
import concurrent.futures
import json
import math
import os
import re
import resource
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
    worker_bin = None  # --worker-bin: the workers' binary, if not --bin's

    def __init__(self, bin_path, store, work, procs):
        self.bin, self.store, self.work, self.procs = bin_path, store, work, procs

    def cli(self, *args):
        subprocess.run([self.bin, "--store", self.store, *args], check=True,
                       stdout=subprocess.DEVNULL)

    def upstream(self, rate, threads=1, *flags):
        err = open(os.path.join(self.work, "upstream-sim.log"), "ab")
        p = self.procs.start([self.bin, "upstream-sim", "--rate-per-conn", str(rate),
                              "--threads", str(threads), *flags],
                             stdout=subprocess.PIPE, stderr=err, text=True)
        line = p.stdout.readline()
        if not line:
            raise RuntimeError("upstream-sim did not start; see upstream-sim.log")
        self.sim = p
        return json.loads(line)["listening"]

    def add_conns(self, addr, ids, stopped=False, scheme="ws"):
        extra = ["--stopped"] if stopped else []
        add = lambda cid: self.cli("conn", "add", cid, "--url",
                                   f"{scheme}://{addr}/s/{cid}?from={{next_seq}}", *extra)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(add, ids))

    def worker(self, wid, *flags, may_exit=False):
        """Starts a worker and waits for its /metrics; None if it exited first and may_exit."""
        port = free_port()
        sink = os.path.join(self.work, wid + ".jsonl")
        err = open(os.path.join(self.work, wid + ".log"), "ab")
        p = self.procs.start([self.worker_bin or self.bin, "--store", self.store, "worker", "--id", wid,
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


def series(m, name):
    """Each series of `name` in `m`, as (labels, value)."""
    for key, value in m.items():
        base, _, rest = key.partition("{")
        if base == name:
            yield dict(re.findall(r'(\w+)="([^"]*)"', rest)), value


def metric(m, name, **labels):
    """Sum of the series of `name` whose labels include `labels`."""
    return sum(value for got, value in series(m, name)
               if all(got.get(k) == v for k, v in labels.items()))


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


def start_dynamodb_local(procs, work):
    """AWS's DynamoDB Local, in memory, on a free port; its endpoint."""
    home = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".deps",
                        "dynamodb-local")
    if not os.path.exists(os.path.join(home, "DynamoDBLocal.jar")):
        sys.exit("DynamoDB Local is missing: run scripts/setup.sh")
    port = free_port()
    log = open(os.path.join(work, "dynamodb-local.log"), "ab")
    procs.start(["java", "-Djava.library.path=" + os.path.join(home, "DynamoDBLocal_lib"), "-jar",
                 os.path.join(home, "DynamoDBLocal.jar"), "-inMemory", "-sharedDb",
                 "-disableTelemetry", "-port", str(port)], cwd=work, stdout=log, stderr=log)

    def accepts():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_for("DynamoDB Local", accepts, 60)
    return f"http://127.0.0.1:{port}"


def dynamodb_fleet(args, procs, work, bench, prefix, ids):
    """A fleet streaming connections `ids` on a fresh set of DynamoDB tables
    (--dynamodb-endpoint, or --dynamodb-local started here): its upstream at
    --cost-rate messages a second and --cost-workers workers, once every
    connection streams and --settle has passed: (fleet, workers)."""
    endpoint = args.dynamodb_endpoint
    if args.dynamodb_local:
        endpoint = start_dynamodb_local(procs, work)
    if not endpoint:
        sys.exit(bench + " needs --dynamodb-endpoint URL or --dynamodb-local")
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "AKIDBENCH")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench-secret")
    store = f"dynamodb://us-east-1/{prefix}{int(time.time())}_?endpoint={endpoint}"
    fleet = Fleet(args.bin, store, work, procs)
    fleet.cli("store", "init")
    addr = fleet.upstream(args.cost_rate, 2, "--random-phase")
    fleet.add_conns(addr, ids)
    workers = [fleet.worker("w%d" % i) for i in range(args.cost_workers)]
    wait_for("every connection streaming",
             lambda: len(set().union(*(sink_conns(w.sink) for w in workers))) == len(ids), 600)
    time.sleep(args.settle)
    return fleet, workers


def bench_cost(args, procs, work):
    ids = ["c%05d" % i for i in range(args.cost_connections)]
    _, workers = dynamodb_fleet(args, procs, work, "cost", "cost", ids)

    def units():
        out = {}
        for w in workers:
            m = metrics(w)
            for got, value in series(m, "leasehold_store_capacity_units_total"):
                k = (got["table"] + ("/" + got["index"] if got["index"] else ""), got["kind"])
                out[k] = out.get(k, 0.0) + value
            out[("", "condition_failures")] = out.get(("", "condition_failures"), 0.0) + metric(
                m, "leasehold_store_condition_failures_total")
        return out

    # Each connection's checkpoint lag (messages in its sink that no
    # checkpoint covers: what a crash then would read again), sampled from
    # every worker every 10 s over the window; at 1 message/s, seconds.
    lags = []

    def sample_lags():
        for w in workers:
            m = metrics(w) or {}
            lags.extend(v for _, v in series(m, "leasehold_fleet_connection_checkpoint_lag_messages"))

    before, t0 = units(), time.monotonic()
    while time.monotonic() - t0 < args.window:  # the window measured
        time.sleep(min(10.0, max(0.0, args.window - (time.monotonic() - t0))))
        sample_lags()
    after, t1 = units(), time.monotonic()
    lags.sort()
    lag_p = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))] if lags else None
    per = lambda k: (after.get(k, 0.0) - before.get(k, 0.0)) / len(ids) / ((t1 - t0) / 60)
    by = {}
    for where, kind in sorted(set(after) | set(before)):
        if where:
            by.setdefault(where, {})[kind] = round(per((where, kind)), 3)
    emit({"bench": "cost", "store": "dynamodb_local" if args.dynamodb_local else "dynamodb",
          "workers": len(workers), "connections": len(ids), "rate": args.cost_rate,
          "window_s": round(t1 - t0, 1),
          "write_units_per_conn_min": round(sum(per(k) for k in after if k[1] == "write"), 3),
          "read_units_per_conn_min": round(sum(per(k) for k in after if k[1] == "read"), 3),
          "failed_conditional_writes_per_conn_min": round(per(("", "condition_failures")), 3),
          "checkpoint_lag_messages_p50": lag_p(0.5), "checkpoint_lag_messages_p99": lag_p(0.99),
          "checkpoint_lag_samples": len(lags),
          "by_table_and_index": by})


def bench_react(args, procs, work):
    if args.dynamodb_local:
        endpoint = start_dynamodb_local(procs, work)
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "AKIDBENCH")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench-secret")
        store, name = f"dynamodb://us-east-1/react{int(time.time())}_?endpoint={endpoint}", \
            "dynamodb_local"
    else:
        store, name = "sqlite:" + os.path.join(work, "react.db"), "sqlite"
    fleet = Fleet(args.bin, store, work, procs)
    fleet.cli("store", "init")
    addr = fleet.upstream(5.0)
    ids = ["c%03d" % i for i in range(args.react_connections)]
    fleet.add_conns(addr, ids)
    # On DynamoDB the workers poll rarely (--react-poll-every): what they act
    # on within the reconcile period comes from the change feed's reader.
    flags = ("--poll-every", args.react_poll_every) if args.dynamodb_local else ()
    workers = {w: fleet.worker(w, *flags) for w in ("w0", "w1")}

    def owners():
        out = {}
        for wid, w in workers.items():
            for labels, _ in series(metrics(w) or {}, "leasehold_fleet_connection_messages_total"):
                out[labels.get("conn")] = wid
        return out

    # What each command took itself (the CLI's process, its store calls),
    # part of the time to its effect.
    command_ms = {"stop": [], "start": [], "add": []}

    def timed(action, done, limit_s=30.0, kind=None):
        t0 = time.monotonic()
        action()
        if kind:
            command_ms[kind].append((time.monotonic() - t0) * 1000)
        while not done():
            if time.monotonic() - t0 > limit_s:
                raise RuntimeError("not acted on within %.0f s" % limit_s)
            time.sleep(0.02)
        return (time.monotonic() - t0) * 1000

    def feed_reader():
        """The worker that last said it reads the change feed, from the logs."""
        last = ("", None)  # a line's UTC time first: they sort as text
        for wid in workers:
            try:
                with open(os.path.join(work, wid + ".log"), errors="replace") as f:
                    for line in f:
                        if "reading the connections' change feed" in line:
                            last = max(last, (line.split(" ", 1)[0], wid))
            except OSError:
                pass
        return last[1]

    # Balanced first: the trials time what follows a command, not the
    # balancing that follows a worker's start.
    every = list(ids)  # and those added by the trials

    def balanced():
        o = owners()
        return len(o) == len(every) and all(
            sum(1 for w in o.values() if w == wid) >= len(every) // 2 - 1 for wid in workers)
    wait_for("every connection owned, half each", balanced, 120)
    time.sleep(args.settle)
    took = {"stop": [], "start": [], "add": [], "sigterm": []}
    add_by = {}
    for trial in range(args.react_trials):
        cid = ids[trial % len(ids)]
        took["stop"].append(timed(lambda: fleet.cli("conn", "stop", cid),
                                  lambda: cid not in owners(), kind="stop"))
        took["start"].append(timed(lambda: fleet.cli("conn", "start", cid),
                                   lambda: cid in owners(), kind="start"))
        new = "n%03d" % trial
        every.append(new)
        took["add"].append(timed(lambda: fleet.add_conns(addr, [new]), lambda: new in owners(),
                                 kind="add"))
        # Taken by the feed reader's own worker (told in-process) or another
        # (told through its member item, heard at its next heartbeat).
        by = "reader" if owners().get(new) == feed_reader() else "other"
        add_by.setdefault(by, []).append(took["add"][-1])
        time.sleep(0.5)
    for kill in range(args.react_kills):
        wid = "w%d" % (kill % 2)
        other = "w%d" % (1 - kill % 2)
        wait_for("balance", lambda: sum(1 for o in owners().values() if o == wid) > 0, 60)
        had = [c for c, o in owners().items() if o == wid]
        w = workers[wid]
        took["sigterm"].append(timed(lambda: w.send_signal(signal.SIGTERM),
                                     lambda: all(owners().get(c) == other for c in had)))
        w.wait(30)
        workers[wid] = fleet.worker(wid, *flags)
        wait_for("balanced again", balanced, 120)

    def pct(v, q):
        v = sorted(v)
        return round(v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))])
    emit({"bench": "react", "store": name, "connections": len(ids), "reconcile_ms": 2000,
          "poll_every": args.react_poll_every if args.dynamodb_local else None,
          **{f"{k}_ms": {"p50": pct(v, 0.5), "p99": pct(v, 0.99), "max": round(max(v)),
                          "n": len(v)} for k, v in took.items() if v},
          **{f"{k}_command_ms_p50": pct(v, 0.5) for k, v in command_ms.items() if v},
          **{f"add_ms_taken_by_{k}": {"p50": pct(v, 0.5), "p99": pct(v, 0.99), "n": len(v)}
             for k, v in add_by.items()}})


def bench_page(args, procs, work):
    """`leasehold bench fleet-page` at each of --page-sizes, on SQLite and,
    with --dynamodb-local or --dynamodb-endpoint, on DynamoDB."""
    stores = [("sqlite", lambda n: "sqlite:" + os.path.join(work, "page%d.db" % n))]
    endpoint = args.dynamodb_endpoint
    if args.dynamodb_local:
        endpoint = start_dynamodb_local(procs, work)
    if endpoint:
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "AKIDBENCH")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench-secret")
        stores.append(("dynamodb", lambda n: "dynamodb://us-east-1/page%d_%d_?endpoint=%s" % (
            n, int(time.time()), endpoint)))
    for _, uri in stores:
        for n in (int(s) for s in args.page_sizes.split(",")):
            out = subprocess.run([args.bin, "--store", uri(n), "bench", "fleet-page",
                                  "--connections", str(n), "--seconds", str(args.page_seconds)],
                                 capture_output=True, text=True, check=False)
            if out.returncode != 0:
                sys.exit("bench fleet-page failed: " + out.stderr[-2000:])
            emit(json.loads(out.stdout.strip().splitlines()[-1]))


def bench_page_live(args, procs, work):
    """`leasehold bench fleet-page` polling a streaming fleet on DynamoDB (its
    workers checkpoint, so the page on screen changes): --cost-workers
    workers, --page-live-connections at --cost-rate messages a second."""
    ids = ["c%07d" % i for i in range(args.page_live_connections)]
    fleet, workers = dynamodb_fleet(args, procs, work, "page-live", "live", ids)
    out = subprocess.run([args.bin, "--store", fleet.store, "bench", "fleet-page",
                          "--connections", "0", "--seconds", str(args.page_seconds)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit("bench fleet-page failed: " + out.stderr[-2000:])
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    figures.update({"bench": "fleet_page_live", "connections": len(ids),
                    "workers": len(workers), "rate": args.cost_rate})
    emit(figures)


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
    w = fleet.worker("writes-" + backend, "--session-ttl", "0")
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


def time_back(tails, victim, lost, kill_ms, timeout_s, every_s):
    """For each connection in `lost`, ms from the kill until another worker's
    sink has a line of it written after the kill."""
    back, deadline = {}, time.monotonic() + timeout_s
    while len(back) < len(lost):
        if time.monotonic() > deadline:
            raise RuntimeError("connections of %s not back within %d s" % (victim, timeout_s))
        time.sleep(every_s)
        for wid, t in tails.items():
            if wid == victim:
                continue
            for line in t.new_lines():
                c = line["conn"]
                if c in lost and c not in back and line["written_at_ms"] > kill_ms:
                    back[c] = line["written_at_ms"] - kill_ms
    return back


def bench_failover(args, procs, work):
    fleet = Fleet(args.bin, "sqlite:" + os.path.join(work, "failover.db"), work, procs)
    addr = fleet.upstream(args.failover_rate)
    n = args.failover_connections
    fleet.add_conns(addr, ["f%03d" % i for i in range(n)])
    timing = ["--session-ttl", "0", "--lease-ttl", args.ttl, "--renew-every", args.renew,
              "--checkpoint-every", args.renew]
    ids = ["fo%d" % (i + 1) for i in range(args.failover_workers)]
    workers = {wid: fleet.worker(wid, *timing) for wid in ids}
    tails = {wid: SinkTail(workers[wid].sink) for wid in ids}
    share = -(-n // len(ids))

    def balanced():
        o = owners(fleet)
        counts = [sum(1 for v in o.values() if v == wid) for wid in ids]
        return o if sum(counts) == n and max(counts) - min(counts) <= 1 else None

    wait_for("a balanced fleet", balanced, 120, 0.5)
    per_kill, per_conn, failures = [], [], []

    def condition_failures(skip):
        total = 0.0
        for wid in ids:
            if wid != skip:
                total += metric(metrics(workers[wid]) or {}, "leasehold_store_condition_failures_total")
        return total

    for k in range(args.kills):
        o = wait_for("a balanced fleet", balanced, 120, 0.5)
        victim = ids[k % len(ids)]
        lost = {c for c, w in o.items() if w == victim}
        for t in tails.values():
            t.new_lines()  # skip what came before the kill
        failed_before = condition_failures(victim)
        workers[victim].kill()
        kill_ms = time.time() * 1000
        workers[victim].wait()
        back = time_back(tails, victim, lost, kill_ms, 60, 0.1)
        per_conn.extend(back.values())
        per_kill.append(max(back.values()))
        failures.append((condition_failures(victim) - failed_before, len(lost)))
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
        "condition_failures_per_kill": round(sum(f for f, _ in failures) / len(failures), 2),
        "condition_failures_per_orphan": round(sum(f for f, _ in failures)
                                               / max(1, sum(n for _, n in failures)), 3),
    })


def bench_sessions(args, procs, work):
    n, nw = args.sessions_connections, args.sessions_workers
    results = {}
    for mode, flags in (("sessions", []), ("plain", ["--session-ttl", "0"])):
        fleet = Fleet(args.bin, "sqlite:" + os.path.join(work, mode + ".db"), work, procs)
        addr = fleet.upstream(args.sessions_rate, threads=2)
        log("sessions (%s): adding %d connections" % (mode, n))
        fleet.add_conns(addr, ["%s%04d" % (mode[0], i) for i in range(n)])
        ids = ["%s-w%d" % (mode, i + 1) for i in range(nw)]
        workers = {wid: fleet.worker(wid, *flags) for wid in ids}
        share = -(-n // nw)

        def spread():
            o = owners(fleet)
            counts = [sum(1 for v in o.values() if v == wid) for wid in ids]
            return o if sum(counts) == n and min(counts) >= share * 0.8 else None

        wait_for("%d connections spread over %d workers" % (n, nw), spread, 300, 1.0)
        wait_for("every connection streaming",
                 lambda: len(set().union(*(sink_conns(w.sink) for w in workers.values()))) >= n,
                 120, 1.0)
        time.sleep(args.settle)
        pids = [workers[wid].pid for wid in ids]
        before = {wid: metrics(workers[wid]) for wid in ids}
        cpu0, t0 = [cpu_s(p) for p in pids], time.monotonic()
        time.sleep(args.window)
        after = {wid: metrics(workers[wid]) for wid in ids}
        cpu1, t1 = [cpu_s(p) for p in pids], time.monotonic()
        minutes = (t1 - t0) / 60
        delta = lambda name, **l: sum(metric(after[w], name, **l) - metric(before[w], name, **l)
                                      for w in ids)
        kinds = ("session_renewal", "membership_renewal", "connection_renewal", "acquisition",
                 "release", "session_end")
        lease_writes = {k: int(delta("leasehold_fleet_lease_writes_total", kind=k)) for k in kinds}
        per = lambda x: round(x / n / minutes, 3)
        figures = {
            "lease_writes": {k: v for k, v in lease_writes.items() if v},
            "lease_writes_per_conn_per_min": per(sum(lease_writes.values())),
            "connection_lease_writes_per_conn_per_min": per(
                lease_writes["connection_renewal"] + lease_writes["acquisition"] +
                lease_writes["release"]),
            "checkpoint_writes_per_conn_per_min": per(
                delta("leasehold_fleet_checkpoint_writes_total")),
            "messages_per_s": round(delta("leasehold_fleet_messages_total") / (t1 - t0)),
            "cpu_per_worker_cores": round(sum(b - a for a, b in zip(cpu0, cpu1)) / nw / (t1 - t0), 4),
        }
        tails = {wid: SinkTail(workers[wid].sink) for wid in ids}
        per_conn, per_kill = [], []
        for k in range(args.sessions_kills):
            wait_for("the fleet spread again", spread, 300, 1.0)
            victim = ids[k % nw]
            lost = {c for c, w in owners(fleet).items() if w == victim}
            for t in tails.values():
                t.new_lines()
            workers[victim].kill()
            kill_ms = time.time() * 1000
            workers[victim].wait()
            back = time_back(tails, victim, lost, kill_ms, 120, 0.05)
            per_conn.extend(back.values())
            per_kill.append(max(back.values()))
            log("sessions (%s): kill %d of %d (%s, %d connections): all back after %.0f ms"
                % (mode, k + 1, args.sessions_kills, victim, len(lost), per_kill[-1]))
            while True:
                p = fleet.worker(victim, *flags, may_exit=True)
                if p is not None:
                    break
                time.sleep(0.5)  # refused while its old membership lease lives
            workers[victim] = p
            tails[victim] = SinkTail(p.sink)
            tails[victim].new_lines()
        figures.update({
            "failover_conn_p50_ms": round(percentile(per_conn, 50)),
            "failover_conn_p99_ms": round(percentile(per_conn, 99)),
            "failover_slowest_kill_ms": round(max(per_kill)),
        })
        results[mode] = figures
        for w in workers.values():
            procs.stop(w)
    s, p = results["sessions"], results["plain"]
    emit({
        "bench": "fleet_sessions", "backend": "sqlite", "workers": nw, "connections": n,
        "rate_per_conn": args.sessions_rate, "window_s": args.window,
        "kills": args.sessions_kills, "sessions": s, "plain": p,
        "lease_writes_ratio": round(s["lease_writes_per_conn_per_min"]
                                    / p["lease_writes_per_conn_per_min"], 4),
        "goal_connection_lease_writes_per_conn_per_min": 0.1,
        "goal_failover_p99_ms": 4000,
        "met": s["connection_lease_writes_per_conn_per_min"] <= 0.1
        and s["failover_conn_p99_ms"] <= 4000,
    })


def bench_handover(args, procs, work, backend, store):
    fleet = Fleet(args.bin, store, work, procs)
    if backend == "dynamodb":
        fleet.cli("store", "init")
    n = args.handover_connections
    addr = fleet.upstream(1.0)
    fleet.add_conns(addr, ["h%04d" % i for i in range(n)])
    stop_ms, free_ms = [], []
    for r in range(args.rounds):
        w = fleet.worker("ho%d" % r, "--max-connections", str(n))
        wait_for("%d connections owned" % n,
                 lambda: metric(metrics(w) or {}, "leasehold_fleet_owned_connections") == n, 180, 0.5)
        wait_for("every connection streaming",
                 lambda: len(sink_conns(w.sink)) == n, 120, 0.5)
        t0 = time.monotonic()
        w.send_signal(signal.SIGTERM)
        w.wait(120)
        stop_ms.append((time.monotonic() - t0) * 1000)
        wait_for("every connection free",
                 lambda: all(v == "" for v in owners(fleet).values()), 120, 0.1)
        free_ms.append((time.monotonic() - t0) * 1000)
        if w.returncode != 0:
            raise RuntimeError("worker exited with %d" % w.returncode)
        log("handover (%s): round %d: exit after %.0f ms, every connection free after %.0f ms"
            % (backend, r + 1, stop_ms[-1], free_ms[-1]))
    emit({
        "bench": "fleet_handover", "backend": backend, "connections": n, "rounds": args.rounds,
        "stop_ms_median": round(median(stop_ms)), "stop_ms": [round(v) for v in stop_ms],
        "free_ms_median": round(median(free_ms)), "free_ms": [round(v) for v in free_ms],
    })


def machine_jiffies():
    """(all, idle) jiffies of the machine so far, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return sum(v), v[3] + v[4]


class Window:
    """CPU of some processes and of the machine between start() and stop()."""

    def __init__(self, pids):
        self.pids = pids

    def start(self):
        self.t0, self.cpu0, self.m0 = time.monotonic(), [cpu_s(p) for p in self.pids], \
            machine_jiffies()

    def stop(self):
        t1, cpu1, m1 = time.monotonic(), [cpu_s(p) for p in self.pids], machine_jiffies()
        self.seconds = t1 - self.t0
        self.cpu = [b - a for a, b in zip(self.cpu0, cpu1)]
        total, idle = m1[0] - self.m0[0], m1[1] - self.m0[1]
        self.busy_cores = (total - idle) / total * os.cpu_count() if total else 0.0


def per_10k_ms(cpu, messages):
    return round(cpu * 1000 * 10000 / messages, 2) if messages else None


def bare_round(args, procs, addr, sim_pid, n, window_s=None, prefix="t", beside=None):
    """One window of the bare reader on n streams; with `beside` (a worker streaming other
    connections of the same upstream), that worker's CPU and messages over the same window
    too, under "beside"."""
    host, port = addr.rsplit(":", 1)
    p = procs.start([args.reader, "--host", host, "--port", port, "--connections", str(n),
                     "--seconds", str(window_s or args.throughput_window), "--settle",
                     str(args.throughput_settle), "--prefix", prefix],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    window = Window([sim_pid] + ([beside.pid] if beside else []))
    said = []
    while True:  # the reader says on stderr when its window starts
        line = p.stderr.readline()
        if not line or "measuring" in line:
            break
        said.append(line)
    if not line:
        p.wait()
        raise RuntimeError("bare_ws_reader failed: " + "".join(said).strip())
    before = metrics(beside) if beside else None
    window.start()
    out = p.stdout.readline()
    window.stop()
    after = metrics(beside) if beside else None
    if p.wait() != 0 or not out:
        raise RuntimeError("bare_ws_reader failed: " + p.stderr.read().strip())
    r = json.loads(out)
    got = {"messages_per_s": r["messages_per_s"], "cpu_ms_per_10k": r["cpu_ms_per_10k"],
           "cpu_cores": round(r["cpu_s"] / r["seconds"], 2), "rss_kib": r["rss_kib"],
           "sim_cpu_cores": round(window.cpu[0] / window.seconds, 2),
           "machine_busy_cores": round(window.busy_cores, 2),
           "others_cpu_cores": round(window.busy_cores - (r["cpu_s"] + sum(window.cpu)) /
                                     window.seconds, 2)}
    if beside:
        delta = lambda name: int(metric(after, name) - metric(before, name))
        messages = delta("leasehold_fleet_messages_total")
        got["beside"] = {
            "messages_per_s": round(messages / window.seconds, 1),
            "cpu_ms_per_10k": per_10k_ms(window.cpu[1], messages),
            "cpu_cores": round(window.cpu[1] / window.seconds, 2), "rss_kib": rss_kib(beside.pid),
            "bad_messages": delta("leasehold_fleet_bad_messages_total"),
            "reconnects": delta("leasehold_fleet_upstream_reconnects_total"),
            "leases_lost": delta("leasehold_fleet_leases_lost_total")}
    return got


class SinkConns:
    """The connections that have written to a sink file so far, read incrementally
    and cheaply (only each line's "conn", which the worker writes first)."""

    def __init__(self, path):
        self.path, self.offset, self.partial, self.seen = path, 0, "", set()

    def update(self):
        try:
            with open(self.path) as f:
                f.seek(self.offset)
                data = f.read(64 << 20)
                self.offset = f.tell()
        except FileNotFoundError:
            return self.seen
        lines = (self.partial + data).split("\n")
        self.partial = lines.pop()
        for line in lines:
            if line.startswith('{"conn":"'):
                self.seen.add(line[9:line.index('"', 9)])
        return self.seen


def wait_streaming(w, n, timeout_s=300, every_s=0.5):
    """Until worker w owns n connections and each of them has written to its sink."""
    sink = SinkConns(w.sink)
    wait_for("%d connections streaming" % n,
             lambda: metric(metrics(w) or {}, "leasehold_fleet_owned_connections") >= n and
             len(sink.update()) >= n, timeout_s, every_s)


def worker_round(args, procs, fleet, sim_pid, n, k, window_s=None):
    w = fleet.worker("tp%s" % k, "--max-connections", str(n))
    wait_streaming(w, n)
    time.sleep(args.throughput_settle)
    window = Window([w.pid, sim_pid])
    before = metrics(w)
    window.start()
    time.sleep(window_s or args.throughput_window)
    window.stop()
    after = metrics(w)
    rss = rss_kib(w.pid)
    procs.stop(w)
    os.remove(w.sink)  # at full speed it grows by megabytes a second
    delta = lambda name: int(metric(after, name) - metric(before, name))
    messages = delta("leasehold_fleet_messages_total")
    return {"messages_per_s": round(messages / window.seconds, 1),
            "cpu_ms_per_10k": per_10k_ms(window.cpu[0], messages),
            "cpu_cores": round(window.cpu[0] / window.seconds, 2), "rss_kib": rss,
            "sim_cpu_cores": round(window.cpu[1] / window.seconds, 2),
            "machine_busy_cores": round(window.busy_cores, 2),
            "others_cpu_cores": round(window.busy_cores - sum(window.cpu) / window.seconds, 2),
            "bad_messages": delta("leasehold_fleet_bad_messages_total"),
            "reconnects": delta("leasehold_fleet_upstream_reconnects_total"),
            "leases_lost": delta("leasehold_fleet_leases_lost_total")}


def median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def bench_throughput(args, procs, work):
    n = args.throughput_connections
    fleet = Fleet(args.bin, "sqlite:" + os.path.join(work, "throughput.db"), work, procs)
    addr = fleet.upstream(args.throughput_rate, args.sim_threads)
    sim_pid = procs.procs[-1].pid
    log("throughput: adding %d connections" % n)
    fleet.add_conns(addr, ["t%d" % i for i in range(n)])  # the bare reader's names too
    rounds = []
    for k in range(args.rounds):
        # Alternate which goes first, so that drift in the machine's speed
        # within a round hits both alike.
        order = ["bare", "worker"] if k % 2 == 0 else ["worker", "bare"]
        got = {}
        for who in order:
            got[who] = (bare_round(args, procs, addr, sim_pid, n) if who == "bare" else
                        worker_round(args, procs, fleet, sim_pid, n, k))
        got["ratio"] = round(got["worker"]["messages_per_s"] / got["bare"]["messages_per_s"], 3)
        log("throughput: round %d of %d: %s" % (k + 1, args.rounds, json.dumps(got)))
        rounds.append(got)
    med = lambda who, key: median([r[who][key] for r in rounds])
    ratio = median([r["ratio"] for r in rounds])
    emit({
        "bench": "fleet_throughput", "backend": "sqlite", "connections": n,
        "rate_per_conn": args.throughput_rate, "sim_threads": args.sim_threads,
        "worker_io_threads": 2, "reader_threads": 2, "rounds": args.rounds,
        "window_s": args.throughput_window,
        "worker_messages_per_s": med("worker", "messages_per_s"),
        "bare_messages_per_s": med("bare", "messages_per_s"),
        "ratio": ratio, "ratios": [r["ratio"] for r in rounds], "goal_ratio": 0.8,
        "met": ratio >= 0.8,
        "worker_cpu_ms_per_10k": med("worker", "cpu_ms_per_10k"),
        "bare_cpu_ms_per_10k": med("bare", "cpu_ms_per_10k"),
        "worker_cpu_cores": med("worker", "cpu_cores"),
        "bare_cpu_cores": med("bare", "cpu_cores"),
        "sim_cpu_cores_with_worker": med("worker", "sim_cpu_cores"),
        "sim_cpu_cores_with_bare": med("bare", "sim_cpu_cores"),
        "machine_busy_cores_with_worker": med("worker", "machine_busy_cores"),
        "machine_busy_cores_with_bare": med("bare", "machine_busy_cores"),
        "others_cpu_cores_with_worker": med("worker", "others_cpu_cores"),
        "others_cpu_cores_with_bare": med("bare", "others_cpu_cores"),
        "worker_bad_messages": sum(r["worker"]["bad_messages"] for r in rounds),
        "worker_reconnects": sum(r["worker"]["reconnects"] for r in rounds),
        "worker_leases_lost": sum(r["worker"]["leases_lost"] for r in rounds),
    })


# ---------------------------------------------------------------- lowrate

def bench_lowrate(args, procs, work):
    parts = args.lowrate_parts.split(",")
    for part in parts:
        if part not in ("cpu", "memory", "latency"):
            sys.exit("--lowrate-parts: unknown part " + part)
    # A worker (and the upstream-sim) holds a descriptor per connection: the
    # processes started here inherit this limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = max(args.idle_connections, 1000) + 256
    if hard != resource.RLIM_INFINITY and hard < need:
        sys.exit("lowrate needs %d open files a process; the hard limit is %d (ulimit -Hn)"
                 % (need, hard))
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if "cpu" in parts:
        for config in args.lowrate_configs.split(","):
            n, rate = config.split("x")
            lowrate_cpu(args, procs, work, int(n), float(rate))
    if "memory" in parts or "latency" in parts:
        ws = lowrate_memory(args, procs, work, "ws", measure="memory" in parts)
        if "memory" in parts:
            lowrate_memory(args, procs, work, "wss")
        if "latency" in parts:
            lowrate_latency(args, procs, work, ws)


def lowrate_cpu(args, procs, work, n, rate):
    """CPU per 10k messages of a worker and of the bare reader side by side, each on n streams
    of one upstream at `rate` with random phases, over the same windows."""
    fleet = Fleet(args.bin, "sqlite:" + os.path.join(work, "lowrate_%dx%g.db" % (n, rate)),
                  work, procs)
    addr = fleet.upstream(rate, args.sim_threads, "--random-phase")
    log("lowrate: %d connections at %g/s: adding them" % (n, rate))
    fleet.add_conns(addr, ["t%d" % i for i in range(n)])
    w = fleet.worker("lr%dx%g" % (n, rate), "--max-connections", str(n))
    wait_streaming(w, n)
    time.sleep(args.throughput_settle)
    rounds = []
    for k in range(args.lowrate_rounds):
        bare = bare_round(args, procs, addr, fleet.sim.pid, n, args.lowrate_window, prefix="b",
                          beside=w)
        got = {"worker": bare.pop("beside"), "bare": bare}
        got["cpu_ratio"] = round(got["worker"]["cpu_ms_per_10k"] / bare["cpu_ms_per_10k"], 3)
        log("lowrate: %dx%g round %d of %d: %s" % (n, rate, k + 1, args.lowrate_rounds,
                                                   json.dumps(got)))
        rounds.append(got)
    procs.stop(w)
    procs.stop(fleet.sim)
    med = lambda who, key: median([r[who][key] for r in rounds])
    ratio = median([r["cpu_ratio"] for r in rounds])
    emit({
        "bench": "fleet_lowrate_cpu", "backend": "sqlite", "connections": n,
        "rate_per_conn": rate, "sim_threads": args.sim_threads, "rounds": args.lowrate_rounds,
        "window_s": args.lowrate_window,
        "worker_messages_per_s": med("worker", "messages_per_s"),
        "bare_messages_per_s": med("bare", "messages_per_s"),
        "worker_cpu_ms_per_10k": med("worker", "cpu_ms_per_10k"),
        "bare_cpu_ms_per_10k": med("bare", "cpu_ms_per_10k"),
        "worker_us_per_message": round(med("worker", "cpu_ms_per_10k") * 100, 1) / 1000,
        "cpu_ratio": ratio, "cpu_ratios": [r["cpu_ratio"] for r in rounds],
        "goal_ratio": 1.5, "met": ratio <= 1.5,
        "worker_cpu_cores": med("worker", "cpu_cores"), "bare_cpu_cores": med("bare", "cpu_cores"),
        "sim_cpu_cores": med("bare", "sim_cpu_cores"),
        "machine_busy_cores": med("bare", "machine_busy_cores"),
        "worker_bad_messages": sum(r["worker"]["bad_messages"] for r in rounds),
        "worker_reconnects": sum(r["worker"]["reconnects"] for r in rounds),
        "worker_leases_lost": sum(r["worker"]["leases_lost"] for r in rounds),
    })


def make_cert(work):
    """A self-signed certificate for 127.0.0.1 and its key; the worker trusts the certificate."""
    cert, key = os.path.join(work, "sim.crt"), os.path.join(work, "sim.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key,
                    "-out", cert], check=True, capture_output=True)
    return cert, key


def lowrate_memory(args, procs, work, scheme, measure=True):
    """RSS per connection of one worker owning --idle-connections streams at
    --idle-rate; the store, its connections and the sim's port are returned
    for lowrate_latency."""
    n = args.idle_connections
    port = free_port()
    fleet = Fleet(args.bin, "sqlite:" + os.path.join(work, "idle_%s.db" % scheme), work, procs)
    sim_flags, worker_flags = ["--listen", "127.0.0.1:%d" % port], []
    if scheme == "wss":
        cert, key = make_cert(work)
        sim_flags += ["--tls-cert", cert, "--tls-key", key]
        worker_flags = ["--ca-file", cert]
    addr = fleet.upstream(args.idle_rate, args.sim_threads, *sim_flags)
    fleet.add_conns(addr, ["idle-setup"], stopped=True, scheme=scheme)  # creates the table
    w = fleet.worker("idle_" + scheme, "--max-connections", str(n), *worker_flags)
    time.sleep(args.settle)
    rss0 = rss_kib(w.pid)
    ids = ["c%05d" % i for i in range(n)]
    log("lowrate: memory (%s): adding %d connections" % (scheme, n))
    fleet.add_conns(addr, ids, scheme=scheme)
    wait_streaming(w, n, 600, 1.0)
    time.sleep(args.settle)
    rss_n = rss_kib(w.pid)
    procs.stop(w)
    figures = {"bench": "fleet_lowrate_memory", "backend": "sqlite", "scheme": scheme,
               "connections": n, "rate_per_conn": args.idle_rate, "rss0_kib": rss0,
               "rss_n_kib": rss_n, "kib_per_connection": round((rss_n - rss0) / n, 1),
               "goal_kib": 16 if scheme == "ws" else 48}
    figures["met"] = figures["kib_per_connection"] <= figures["goal_kib"]
    if scheme == "ws" and measure:
        # The bare reader on as many streams, against itself on one.
        host, p = addr.rsplit(":", 1)
        rss = {}
        for k in (1, n):
            out = subprocess.run([args.reader, "--host", host, "--port", p, "--connections",
                                  str(k), "--seconds", "1", "--settle", str(args.settle),
                                  "--prefix", "b"], check=True, capture_output=True, text=True)
            rss[k] = json.loads(out.stdout)["rss_kib"]
        figures["bare_kib_per_connection"] = round((rss[n] - rss[1]) / (n - 1), 1)
    if measure:
        emit(figures)
    procs.stop(fleet.sim)
    return fleet, port, ids


class StoreWatch:
    """Samples a worker's rows in the SQLite store: when its session's expiry
    moved (each renewal), and when each connection's last_seq moved (each
    checkpoint)."""

    def __init__(self, db_path, worker_id):
        self.db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True, timeout=30)
        self.worker_pk = "WORKER#" + worker_id
        self.expiry, self.renewals, self.min_left_ms = None, [], None
        self.seq, self.moved_at, self.gaps, self.worst = {}, {}, [], (0, "")

    def sample(self, conns=True):
        now = time.time() * 1000
        row = self.db.execute(
            "SELECT json_extract(data, '$.lease_expires_at_ms') FROM items_fleet_workers "
            "WHERE pk = ?", (self.worker_pk,)).fetchone()
        if row and row[0] is not None:
            if row[0] != self.expiry:
                self.renewals.append(now)
                self.expiry = row[0]
            left = row[0] - now
            self.min_left_ms = left if self.min_left_ms is None else min(self.min_left_ms, left)
        if not conns:
            return
        for pk, seq in self.db.execute(
                "SELECT pk, json_extract(data, '$.last_seq') FROM items_connections "
                "WHERE json_extract(data, '$.desired_state') = 'STARTED'"):
            if seq is None or self.seq.get(pk) == seq:
                continue
            if pk in self.moved_at:
                self.gaps.append(now - self.moved_at[pk])
                self.worst = max(self.worst, (now - self.moved_at[pk], pk))
            self.seq[pk], self.moved_at[pk] = seq, now

    def finish(self, now_ms):
        """Counts, as a gap, the time since the last move of each connection."""
        for pk, at in self.moved_at.items():
            self.gaps.append(now_ms - at)
            self.worst = max(self.worst, (now_ms - at, pk))


def lowrate_latency(args, procs, work, ws):
    """One worker owning the idle streams' connections, now at --latency-rate:
    each message's time from the upstream (sent_at_ms) to the sink
    (written_at_ms), and whether renewals and checkpoints kept their pace."""
    fleet, port, ids = ws
    n = len(ids)
    addr = fleet.upstream(args.latency_rate, args.sim_threads, "--listen", "127.0.0.1:%d" % port)
    wid = "latency"
    w = fleet.worker(wid, "--max-connections", str(n))
    wait_streaming(w, n, 600, 1.0)
    time.sleep(args.settle)
    watch = StoreWatch(fleet.store[len("sqlite:"):], wid)
    watch.sample()
    # The first sample sets the start.
    watch.renewals, watch.gaps = [], []
    watch.moved_at = {pk: time.time() * 1000 for pk in watch.seq}
    offset = os.path.getsize(w.sink)
    window = Window([w.pid, fleet.sim.pid])
    before = metrics(w)
    window.start()
    t_end, k = time.monotonic() + args.latency_window, 0
    while time.monotonic() < t_end:
        time.sleep(args.latency_sample_every)
        k += 1
        watch.sample(conns=k % round(1 / args.latency_sample_every) == 0)  # rows once a second
    window.stop()
    after = metrics(w)
    watch.finish(time.time() * 1000)
    log("latency: longest time without a checkpoint: %.1f s (%s)" % (watch.worst[0] / 1000,
                                                                     watch.worst[1]))
    end = os.path.getsize(w.sink)
    procs.stop(w)
    latencies = []
    with open(w.sink, "rb") as f:
        f.seek(offset)
        data = f.read(end - offset).decode()
    pattern = re.compile(r'"written_at_ms":(\d+).*"sent_at_ms":(\d+)')
    for line in data.split("\n"):
        m = pattern.search(line)
        if m:
            latencies.append(int(m.group(1)) - int(m.group(2)))
    delta = lambda name: int(metric(after, name) - metric(before, name))
    messages = delta("leasehold_fleet_messages_total")
    gaps = [b - a for a, b in zip(watch.renewals, watch.renewals[1:])]
    bare = bare_round(args, procs, addr, fleet.sim.pid, n, args.latency_window)
    procs.stop(fleet.sim)
    emit({
        "bench": "fleet_lowrate_latency", "backend": "sqlite", "connections": n,
        "rate_per_conn": args.latency_rate, "window_s": round(window.seconds, 1),
        "messages": messages, "messages_in_sink": len(latencies),
        "latency_p50_ms": percentile(latencies, 50), "latency_p99_ms": percentile(latencies, 99),
        "latency_max_ms": max(latencies), "goal_p99_ms": 100,
        "met": percentile(latencies, 99) <= 100,
        "session_renewals": len(gaps), "session_renew_gap_median_ms": round(median(gaps)),
        "session_renew_gap_max_ms": round(max(gaps)),
        "session_min_left_ms": round(watch.min_left_ms),
        "checkpoint_gap_p99_s": round(percentile(watch.gaps, 99) / 1000, 2),
        "checkpoint_gap_max_s": round(max(watch.gaps) / 1000, 2),
        "sample_every_s": args.latency_sample_every,
        "worker_cpu_ms_per_10k": per_10k_ms(window.cpu[0], messages),
        "bare_cpu_ms_per_10k": bare["cpu_ms_per_10k"],
        "worker_cpu_cores": round(window.cpu[0] / window.seconds, 2),
        "sim_cpu_cores": round(window.cpu[1] / window.seconds, 2),
        "machine_busy_cores": round(window.busy_cores, 2),
        "bad_messages": delta("leasehold_fleet_bad_messages_total"),
        "reconnects": delta("leasehold_fleet_upstream_reconnects_total"),
        "leases_lost": delta("leasehold_fleet_leases_lost_total"),
    })


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("benches", nargs="*", default=["memory", "writes"])
    ap.add_argument("--bin", default="build/bin/leasehold")
    ap.add_argument("--worker-bin", default=None,
                    help="the workers' binary (default: --bin), to measure another build's")
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--settle", type=float, default=6.0)
    ap.add_argument("--window", type=float, default=60.0)
    ap.add_argument("--writes-connections", type=int, default=100)
    ap.add_argument("--writes-rate", type=float, default=1.0)
    ap.add_argument("--dynamodb-endpoint", default=None)
    ap.add_argument("--dynamodb-local", action="store_true",
                    help="cost: start AWS's DynamoDB Local (.deps/) and measure on it")
    ap.add_argument("--cost-workers", type=int, default=4)
    ap.add_argument("--cost-connections", type=int, default=1000)
    ap.add_argument("--cost-rate", type=float, default=1.0)
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--react-connections", type=int, default=40)
    ap.add_argument("--react-trials", type=int, default=20)
    ap.add_argument("--react-kills", type=int, default=3)
    ap.add_argument("--react-poll-every", default="60s")
    ap.add_argument("--page-sizes", default="1000,10000,100000")
    ap.add_argument("--page-seconds", type=int, default=120)
    ap.add_argument("--page-live-connections", type=int, default=1000)
    ap.add_argument("--failover-connections", type=int, default=30)
    ap.add_argument("--failover-rate", type=float, default=10.0)
    ap.add_argument("--failover-workers", type=int, default=3)
    ap.add_argument("--handover-connections", type=int, default=1000)
    ap.add_argument("--ttl", default="4s")
    ap.add_argument("--renew", default="1s")
    ap.add_argument("--reader", default="build/bin/bare_ws_reader")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--throughput-connections", type=int, default=1000)
    ap.add_argument("--throughput-rate", type=float, default=0.0)
    ap.add_argument("--throughput-window", type=float, default=10.0)
    ap.add_argument("--throughput-settle", type=float, default=2.0)
    ap.add_argument("--sim-threads", type=int, default=2)
    ap.add_argument("--sessions-connections", type=int, default=1000)
    ap.add_argument("--sessions-workers", type=int, default=4)
    ap.add_argument("--sessions-rate", type=float, default=1.0)
    ap.add_argument("--sessions-kills", type=int, default=5)
    ap.add_argument("--lowrate-parts", default="cpu,memory,latency")
    ap.add_argument("--lowrate-configs", default="1000x5,200x20")
    ap.add_argument("--lowrate-rounds", type=int, default=3)
    ap.add_argument("--lowrate-window", type=float, default=20.0)
    ap.add_argument("--idle-connections", type=int, default=10000)
    ap.add_argument("--idle-rate", type=float, default=0.1)
    ap.add_argument("--latency-rate", type=float, default=1.0)
    ap.add_argument("--latency-window", type=float, default=30.0)
    ap.add_argument("--latency-sample-every", type=float, default=0.25)
    args = ap.parse_args()
    Fleet.worker_bin = args.worker_bin
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
                elif bench in ("writes", "handover"):
                    run = bench_writes if bench == "writes" else bench_handover
                    run(args, procs, work, "sqlite", "sqlite:" + os.path.join(work, bench + ".db"))
                    if args.dynamodb_endpoint:
                        prefix = "%s%d_" % (bench, int(time.time()))
                        run(args, procs, work, "dynamodb",
                            f"dynamodb://us-east-1/{prefix}?endpoint=" + args.dynamodb_endpoint)
                elif bench == "failover":
                    bench_failover(args, procs, work)
                elif bench == "sessions":
                    bench_sessions(args, procs, work)
                elif bench == "throughput":
                    bench_throughput(args, procs, work)
                elif bench == "lowrate":
                    bench_lowrate(args, procs, work)
                elif bench == "cost":
                    bench_cost(args, procs, work)
                elif bench == "react":
                    bench_react(args, procs, work)
                elif bench == "page":
                    bench_page(args, procs, work)
                elif bench == "page-live":
                    bench_page_live(args, procs, work)
                else:
                    sys.exit("unknown benchmark: " + bench)
            finally:
                procs.close()


if __name__ == "__main__":
    main()
