#!/usr/bin/python3
"""The nemesis: the whole system under a seeded random schedule of faults,
then a checker over everything it wrote (docs/reliability.md).

It starts, on one store (--store sqlite, dynamodb-local or dynalite):
  - the stream fleet: `leasehold upstream-sim` and --workers workers sharing
    --connections connections, each worker writing to a jsonl sink of its own
    (one file per process started, so that a paused process and its
    successor under the same ID never share one);
  - the movie service: `leasehold serve` (no trace worker of its own) and
    --trace-workers `leasehold trace-worker` processes on one media folder
    and the store's queue, and --users simulated users who upload movies,
    mark, trim and trace them, trace again and delete them over the HTTP API.
Each process's wall clock is off by its own amount within --skew-ms
(libfaketime; monotonic time is left alone, as on real machines), and on
DynamoDB each talks to the store through a fault proxy of its own
(tests/nemesis/fault_proxy.py).

For --seconds it injects, every --fault-every on average, one of (those that
apply to the store): kill -9 of a worker, trace worker or serve (restarted
under its old ID or a new one); SIGSTOP past a ttl, then SIGCONT; SIGTERM and
a restart; an upstream flap (the simulator killed, then started again);
latency, dropped connections, resets or a black hole (a partition) between
one process (or all) and DynamoDB; the store locked away from every process
(SQLite). Simulated users keep working throughout, and the fleet's own user
stops and starts connections.

Then it heals everything, waits for the system to settle, and checks
(tests/nemesis/checker.py): no two writers of a connection at once (by epoch
and true time), no sequence gap, epochs only rise, every STARTED connection
streaming at the end, no movie stuck, every trace job with one start and one
end in its audit. It prints the faults by kind with the recovery of the
connections each touched (p50/p99), every violation with the events around
it, and last:

  nemesis: F faults, V violations

Exit 1 on a violation, 2 on a usage error or when the system could not be
set up.

Usage: tests/nemesis/nemesis.py [--bin build/bin/leasehold] [--tool-dir DIR] [--store sqlite]
       [--seconds 600] [--seed N] [--workers 3] [--connections 24] [--rate 5]
       [--trace-workers 2] [--users 2] [--fault-every 6] [--skew-ms 500]
       [--max-clock-skew 500ms] [--work DIR] [--keep]
"""

import argparse
import collections
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402
import fault_proxy  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FAKETIME_LIBS = ("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/faketime/libfaketimeMT.so.1")
# base/crash_point.h: the steps of an upload, a probe, a trace and a removal
# where a process may be armed to kill itself (LEASEHOLD_CRASH_AT).
CRASH_POINTS = ("movies.upload.after_create", "movies.probe.before_status",
                "movies.trace.after_start", "movies.trace.before_enqueue",
                "movies.trace.after_claim", "movies.trace.after_publish",
                "movies.delete.after_mark", "movies.delete.after_rows",
                "movies.delete.before_item")
TRACING_TTL_S = 5
ANALYSIS_TTL_S = 10
SWEEP_EVERY_S = 2  # the movies' sweep: what a crash left half-way is repaired
SWEEP_GRACE_S = 5  # within a grace and 1.5 periods (docs/reliability.md)


def now_ms():
    return int(time.time() * 1000)


def log(msg):
    print("nemesis: " + msg, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, pred, timeout_s, every_s=0.2):
    deadline = time.monotonic() + timeout_s
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError("timed out waiting for " + what)
        time.sleep(every_s)


class Events:
    """Everything that happened, in true time: faults, heals, processes, users."""

    def __init__(self, path):
        self.lock = threading.Lock()
        self.items = []
        self.file = open(path, "a")

    def add(self, kind, **fields):
        e = {"at_ms": now_ms(), "kind": kind, **fields}
        with self.lock:
            self.items.append(e)
            self.file.write(json.dumps(e) + "\n")
            self.file.flush()
        return e

    def around(self, at_ms, window_ms=5000):
        with self.lock:
            return [e for e in self.items if abs(e["at_ms"] - at_ms) <= window_ms]


class Instance:
    """One process the nemesis started: a worker, serve or a trace worker."""

    def __init__(self, slot, role, wid, skew_ms, gen):
        self.slot, self.role, self.wid, self.skew_ms, self.gen = slot, role, wid, skew_ms, gen
        self.name = f"{slot}.{gen}"
        self.popen = None
        self.proxy = None
        self.sink = None
        self.lines, self.read_to = [], 0  # the sink's lines read so far
        self.stopped = False  # SIGSTOPped
        self.crash_at = None  # the crash point it was armed with
        self.ended_by_fault = False  # killed or stopped by the nemesis

    def alive(self):
        return self.popen is not None and self.popen.poll() is None


class System:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.rng = random.Random(args.seed)
        self.events = Events(os.path.join(work, "events.jsonl"))
        self.instances = []  # every process ever started
        self.current = {}  # slot -> Instance
        self.gens = collections.Counter()
        self.lock = threading.RLock()
        self.hub = None
        self.store_port = None
        self.helpers = []  # emulators and the upstream, stopped last
        self.upstream = None
        self.upstream_port = free_port()
        self.serve_port = free_port()
        self.token = {}
        self.faketime = next((p for p in FAKETIME_LIBS if os.path.exists(p)), None)
        if self.faketime is None:
            sys.exit("nemesis: libfaketime is not installed (scripts/setup.sh)")

    # --- the store --------------------------------------------------------------------------

    def start_store(self):
        kind = self.args.store
        if kind == "sqlite":
            self.db = os.path.join(self.work, "store.db")
            self.store_uri = lambda port=None: "sqlite:" + self.db
            return
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "AKIDNEMESIS")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "nemesis-secret")
        os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        self.store_port = free_port()
        out = open(os.path.join(self.work, kind + ".log"), "ab")
        if kind == "dynamodb-local":
            home = os.path.join(ROOT, ".deps", "dynamodb-local")
            if not os.path.exists(os.path.join(home, "DynamoDBLocal.jar")):
                sys.exit("nemesis: DynamoDB Local is missing: run scripts/setup.sh")
            argv = ["java", "-Djava.library.path=" + os.path.join(home, "DynamoDBLocal_lib"),
                    "-jar", os.path.join(home, "DynamoDBLocal.jar"), "-inMemory", "-sharedDb",
                    "-disableTelemetry", "-port", str(self.store_port)]
        elif kind == "dynalite":
            argv = [os.path.join(ROOT, "node_modules", ".bin", "dynalite"), "--port",
                    str(self.store_port)]
        else:
            sys.exit("nemesis: --store is sqlite, dynamodb-local or dynalite")
        self.helpers.append(subprocess.Popen(argv, cwd=self.work, stdout=out, stderr=out))

        def accepts():
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.store_port)) == 0

        wait_for(kind, accepts, 90)
        prefix = "nem%d_" % (int(time.time()) % 100000)
        self.store_uri = lambda port=None: (
            f"dynamodb://us-east-1/{prefix}?endpoint=http://127.0.0.1:{port or self.store_port}")
        self.hub = fault_proxy.ProxyHub()

    def cli(self, *argv, check=True):
        r = subprocess.run([self.args.bin, "--store", self.store_uri(), *argv],
                           capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            raise RuntimeError(f"leasehold {' '.join(argv)}: exit {r.returncode}: {r.stderr}")
        return r

    # --- processes --------------------------------------------------------------------------

    def roll_skew(self):
        half = self.args.skew_ms / 2
        return int(round(self.rng.uniform(-half, half)))

    def start(self, slot, role, new_id=False, crash_at=None):
        """Starts (or restarts) the process of `slot`; armed to kill itself
        at the crash point `crash_at`, if given."""
        with self.lock:
            self.gens[slot] += 1
            gen = self.gens[slot]
            old = self.current.get(slot)
            wid = f"{slot}-{gen}" if new_id else (old.wid if old is not None else slot)
            inst = Instance(slot, role, wid, self.roll_skew(), gen)
            port = None
            if self.hub is not None:
                inst.proxy = self.hub.proxy(inst.name, self.store_port)
                port = inst.proxy.port
            common = ["--max-clock-skew", self.args.max_clock_skew] if role == "worker" else []
            if role == "worker":
                inst.sink = os.path.join(self.work, "sinks", inst.name + ".jsonl")
                argv = ["worker", "--id", wid, "--sink", "jsonl:" + inst.sink, *common]
            elif role == "serve":
                argv = ["serve", "--listen", f"127.0.0.1:{self.serve_port}", "--trace-workers",
                        "0", "--media-dir", self.media, *self.movie_flags()]
            else:
                argv = ["trace-worker", "--media-dir", self.media, *self.movie_flags()]
            env = dict(os.environ, LD_PRELOAD=self.faketime,
                       FAKETIME="%+.3f" % (inst.skew_ms / 1000), DONT_FAKE_MONOTONIC="1")
            inst.crash_at = crash_at
            if crash_at:
                env["LEASEHOLD_CRASH_AT"] = crash_at
            err = open(os.path.join(self.work, "logs", inst.name + ".log"), "ab")
            inst.popen = subprocess.Popen([self.args.bin, "--store", self.store_uri(port), *argv],
                                          env=env, stdout=subprocess.DEVNULL, stderr=err,
                                          cwd=self.work)
            self.current[slot] = inst
            self.instances.append(inst)
            self.events.add("start", process=inst.name, id=wid, pid=inst.popen.pid,
                            skew_ms=inst.skew_ms, **({"crash_at": crash_at} if crash_at else {}))
            return inst

    def movie_flags(self):
        return ["--tracing-lease-ttl", f"{TRACING_TTL_S}s", "--analysis-lease-ttl",
                f"{ANALYSIS_TTL_S}s", "--sweep-every", f"{SWEEP_EVERY_S}s", "--sweep-grace",
                f"{SWEEP_GRACE_S}s"]

    def send(self, inst, sig):
        if inst.alive():
            try:
                os.kill(inst.popen.pid, sig)
            except ProcessLookupError:
                pass

    def stop_outside_a_write(self, inst):
        """SIGSTOPs inst; on SQLite only where it holds no write lock: a
        process paused inside a write transaction stalls every process of the
        machine's one file (SQLite's design, not a fault of ours)."""
        for attempt in range(200):
            self.send(inst, signal.SIGSTOP)
            if self.args.store != "sqlite" or self.can_write_sqlite():
                inst.stopped = True
                return True
            self.send(inst, signal.SIGCONT)
            time.sleep((attempt % 7) / 1000)
        return False

    def can_write_sqlite(self):
        try:
            db = sqlite3.connect(self.db, timeout=0.05)
            try:
                db.execute("BEGIN IMMEDIATE")
                db.execute("ROLLBACK")
                return True
            finally:
                db.close()
        except sqlite3.OperationalError:
            return False

    def end(self, inst, sig=signal.SIGTERM, timeout_s=30):
        inst.ended_by_fault = True
        if inst.stopped:
            self.send(inst, signal.SIGCONT)
            inst.stopped = False
        if inst.alive():
            self.send(inst, sig)
            try:
                inst.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.events.add("hung", process=inst.name, signal=int(sig))
                inst.popen.kill()
                inst.popen.wait()
        self.events.add("exit", process=inst.name, code=inst.popen.returncode)

    # --- the upstream -----------------------------------------------------------------------

    def start_upstream(self):
        err = open(os.path.join(self.work, "logs", "upstream-sim.log"), "ab")
        for _ in range(50):
            p = subprocess.Popen([self.args.bin, "upstream-sim", "--listen",
                                  f"127.0.0.1:{self.upstream_port}", "--rate-per-conn",
                                  str(self.args.rate), "--random-phase"],
                                 stdout=subprocess.PIPE, stderr=err, text=True)
            if p.stdout.readline():
                self.upstream = p
                self.events.add("start", process="upstream", pid=p.pid)
                return
            p.wait()
            time.sleep(0.1)  # its port may still be taken by the last one's sockets
        raise RuntimeError("upstream-sim did not start; see logs/upstream-sim.log")

    # --- set-up -----------------------------------------------------------------------------

    def set_up(self):
        for d in ("sinks", "logs", "media"):
            os.makedirs(os.path.join(self.work, d), exist_ok=True)
        self.media = os.path.join(self.work, "media")
        self.start_store()
        if self.args.store != "sqlite":
            self.cli("store", "init")
        self.start_upstream()
        self.conns = ["c%03d" % i for i in range(self.args.connections)]
        for c in self.conns:
            self.cli("conn", "add", c, "--url",
                     f"ws://127.0.0.1:{self.upstream_port}/s/{c}?from={{next_seq}}")
        for i in range(self.args.users):
            r = self.cli("user", "add", f"user{i}", "--display-name", f"User {i}")
            self.token[i] = json.loads(r.stdout)["token"]
        for i in range(self.args.workers):
            self.start(f"w{i + 1}", "worker")
        self.start("serve", "serve")
        for i in range(self.args.trace_workers):
            self.start(f"t{i + 1}", "trace-worker")
        self.movie = self.make_movie()
        wait_for("serve", lambda: self.http(0, "GET", "/healthz")[0] == 200, 60)
        wait_for("every connection streaming", lambda: not self.silent_since(0), 120, 0.5)

    def make_movie(self):
        path = os.path.join(self.work, "movie.avi")
        tool = os.path.join(self.args.tool_dir or os.path.dirname(self.args.bin), "make_test_movie")
        if not os.path.exists(tool):
            sys.exit("nemesis: make_test_movie is missing: build the default preset")
        out = subprocess.run([tool, path, str(self.args.movie_frames)], capture_output=True,
                             text=True, check=True).stdout
        self.spot = json.loads(out)
        return path

    # --- reading what was written -----------------------------------------------------------

    def writers(self):
        """Every worker process's sink lines so far (read on from where the
        last call stopped), as checker.py takes them."""
        out = []
        with self.lock:
            instances = [i for i in self.instances if i.sink is not None]
        for inst in instances:
            try:
                with open(inst.sink, "rb") as f:
                    f.seek(inst.read_to)
                    data = f.read()
            except FileNotFoundError:
                data = b""
            end = data.rfind(b"\n") + 1
            inst.lines.extend(json.loads(line) for line in data[:end].splitlines())
            inst.read_to += end
            out.append({"name": inst.name, "skew_ms": inst.skew_ms, "lines": inst.lines})
        return out

    def silent_since(self, from_ms):
        """The started connections with no line at or after from_ms (true time)."""
        started = set(self.conns) - self.fleet_user_stopped
        latest = {}
        for w in self.writers():
            for line in w["lines"][-4 * len(self.conns):]:
                t = checker.true_ms(w, line)
                latest[line["conn"]] = max(latest.get(line["conn"], -1), t)
        return sorted(c for c in started if latest.get(c, -1) < from_ms)

    # --- HTTP as the users speak it ---------------------------------------------------------

    def http(self, user, method, path, body=None, data=None, timeout_s=10):
        headers = {"Authorization": "Bearer " + self.token.get(user, "")}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        elif data is not None:
            headers["Content-Type"] = "application/octet-stream"
        req = urllib.request.Request(f"http://127.0.0.1:{self.serve_port}{path}", data=data,
                                     method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw[:1] in (b"{", b"[") else raw
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except (OSError, ValueError) as e:
            return 0, str(e)


class Users:
    """Simulated users of the movie service, each on a thread of its own.

    A user uploads a movie, waits for its probe, takes the analysis lease,
    places a marker, trims, traces, waits for the trace to end, and then
    traces again or deletes the movie. A call that fails (serve down, a
    process paused) is tried again a little later; nothing here is a
    violation: the checker judges what the store holds at the end."""

    def __init__(self, system):
        self.s = system
        self.stop = threading.Event()
        self.movies = set()  # every movie created
        self.deleted = set()  # movies whose DELETE was accepted
        self.jobs = []  # (movie, job) the API accepted
        self.actions = collections.Counter()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(u,), daemon=True)
                        for u in range(system.args.users)]

    def start(self):
        for t in self.threads:
            t.start()

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def call(self, user, method, path, ok, **kw):
        """The call, tried until it answers one of `ok` or a 4xx other than
        409 and 423 (held: it may be free later), or the users stop:
        (status, body)."""
        while not self.stop.is_set():
            status, body = self.s.http(user, method, path, **kw)
            if status in ok or (400 <= status < 500 and status not in (409, 423)):
                return status, body
            time.sleep(0.5)
        return 0, None

    def status(self, user, mid):
        st, body = self.s.http(user, "GET", f"/api/movies/{mid}")
        return body.get("status") if st == 200 and isinstance(body, dict) else None

    def wait_status(self, user, mid, wanted, timeout_s):
        deadline = time.monotonic() + timeout_s
        while not self.stop.is_set() and time.monotonic() < deadline:
            st = self.status(user, mid)
            if st in wanted:
                return st
            time.sleep(0.3)
        return None

    def run(self, user):
        rng = random.Random(self.s.args.seed * 1000 + user)
        with open(self.s.movie, "rb") as f:
            movie_bytes = f.read()
        n = 0
        while not self.stop.is_set():
            n += 1
            st, body = self.call(user, "POST", f"/api/movies?name=u{user}-{n}", (201,),
                                 data=movie_bytes, timeout_s=30)
            if st != 201:
                continue
            mid = body["id"]
            with self.lock:
                self.movies.add(mid)
                self.actions["upload"] += 1
            self.s.events.add("user", user=user, action="upload", movie=mid)
            got = self.wait_status(user, mid, ("ready", "invalid"), 120)
            for _ in range(rng.randint(1, 3)):
                if got not in ("ready", "traced", "tracing failed") or self.stop.is_set():
                    break
                got = self.trace(user, mid)
            st, _ = self.call(user, "DELETE", f"/api/movies/{mid}", (202, 404))
            if st in (202, 404):
                with self.lock:
                    self.deleted.add(mid)
                    self.actions["delete"] += 1
                self.s.events.add("user", user=user, action="delete", movie=mid)

    def trace(self, user, mid):
        st, body = self.call(user, "POST", f"/api/movies/{mid}/analysis-lease", (200,))
        if st != 200:
            # Held: by this user's own lease whose answer was lost; it expires.
            self.wait_status(user, mid, (), ANALYSIS_TTL_S + 2)
            return self.status(user, mid)
        lease = body["lease_id"]
        marker = [{"id": "m1", "label": "spot", "frame": 0, "x": self.s.spot["x"],
                   "y": self.s.spot["y"]}]
        for path, payload in (("markers", {"lease_id": lease, "markers": marker}),
                              ("trim", {"lease_id": lease, "start_frame": 0,
                                        "end_frame": self.s.args.movie_frames - 1})):
            st, _ = self.call(user, "PUT", f"/api/movies/{mid}/{path}", (200,), body=payload)
            if st != 200:
                return self.status(user, mid)
        with self.lock:
            self.actions["edit"] += 1
        st, body = self.call(user, "POST", f"/api/movies/{mid}/trace", (202,),
                             body={"lease_id": lease})
        if st != 202:
            return self.status(user, mid)
        with self.lock:
            self.jobs.append((mid, body["job_id"]))
            self.actions["trace"] += 1
        self.s.events.add("user", user=user, action="trace", movie=mid, job=body["job_id"])
        return self.wait_status(user, mid, ("traced", "tracing failed"), 180)


class Nemesis:
    """The schedule of faults: one every --fault-every on average, each healed
    after its own duration, several at once at times."""

    def __init__(self, system):
        self.s = system
        self.rng = random.Random(system.args.seed + 1)
        self.pending = []  # (due monotonic, what, fn)
        self.faults = []  # {"kind", "at_ms", "heal_ms", "victim", "conns"}
        self.unexpected_exits = []  # (process, exit code)
        self.crashes = collections.Counter()  # crash point -> processes killed there

    def choose(self):
        kinds = [("kill-9 worker", 4), ("SIGSTOP worker", 3), ("SIGTERM worker", 2),
                 ("kill-9 trace-worker", 2), ("SIGSTOP trace-worker", 1), ("kill-9 serve", 1),
                 ("SIGTERM trace-worker", 1), ("upstream flap", 1), ("conn stop-start", 2),
                 ("crash point", 2)]
        if self.s.args.store == "sqlite":
            kinds += [("store lock", 1)]
        else:
            kinds += [("latency", 2), ("drop", 1), ("reset", 1), ("partition", 3)]
        total = sum(w for _, w in kinds)
        x = self.rng.uniform(0, total)
        for k, w in kinds:
            x -= w
            if x <= 0:
                return k
        return kinds[-1][0]

    def owned_by(self, inst):
        """The connections whose last line so far came from inst."""
        last = {}
        for w in self.s.writers():
            for line in w["lines"]:
                t = checker.true_ms(w, line)
                if t >= last.get(line["conn"], (-1, None))[0]:
                    last[line["conn"]] = (t, w["name"])
        return sorted(c for c, (_, name) in last.items() if name == inst.name)

    def fault(self, kind, victim=None, conns=None, **fields):
        f = {"kind": kind, "at_ms": now_ms(), "heal_ms": None,
             "victim": victim.name if victim else None, "conns": conns or [], **fields}
        self.faults.append(f)
        self.s.events.add("fault", fault=kind, victim=f["victim"],
                          **{k: v for k, v in fields.items()})
        return f

    def healed(self, f):
        f["heal_ms"] = now_ms()
        self.s.events.add("heal", fault=f["kind"], victim=f["victim"])

    def later(self, delay_s, fn):
        self.pending.append((time.monotonic() + delay_s, fn))

    def pick(self, role):
        live = [i for i in self.s.current.values() if i.role == role and i.alive()
                and not i.stopped]
        return self.rng.choice(live) if live else None

    def inject(self):
        s, kind = self.s, self.choose()
        role = ("worker" if kind.endswith(" worker") and "trace" not in kind else
                "trace-worker" if "trace-worker" in kind else "serve" if "serve" in kind else None)
        if kind.startswith("kill-9") or kind.startswith("SIGTERM"):
            victim = self.pick(role)
            if victim is None:
                return
            conns = self.owned_by(victim) if role == "worker" else []
            f = self.fault(kind, victim, conns)
            victim.ended_by_fault = True
            if kind.startswith("kill-9"):
                s.send(victim, signal.SIGKILL)
                victim.popen.wait()
            else:
                s.end(victim, signal.SIGTERM)
            self.healed(f)
            new_id = role == "worker" and self.rng.random() < 0.5
            self.later(self.rng.uniform(0.5, 4), lambda: s.start(victim.slot, role, new_id))
        elif kind.startswith("SIGSTOP"):
            victim = self.pick(role)
            if victim is None:
                return
            conns = self.owned_by(victim) if role == "worker" else []
            ttl = 3 if role == "worker" else TRACING_TTL_S
            pause = self.rng.uniform(ttl + 1, ttl + 5)
            f = self.fault(kind, victim, conns, pause_s=round(pause, 1))
            if not s.stop_outside_a_write(victim):
                return
            def resume():
                s.send(victim, signal.SIGCONT)
                victim.stopped = False
                self.healed(f)
            self.later(pause, resume)
        elif kind == "crash point":
            # serve or a trace worker restarted armed to kill itself at a
            # step of an upload, a probe, a trace or a removal
            victim = self.rng.choice([i for i in s.current.values()
                                      if i.role in ("serve", "trace-worker") and i.alive()
                                      and not i.stopped and not i.crash_at] or [None])
            if victim is None:
                return
            point = self.rng.choice(CRASH_POINTS)
            f = self.fault(kind, victim, [], point=point)
            victim.ended_by_fault = True
            s.end(victim, signal.SIGTERM)
            s.start(victim.slot, victim.role, crash_at=point)
            self.healed(f)
        elif kind == "upstream flap":
            f = self.fault(kind, None, list(s.conns))
            s.upstream.kill()
            s.upstream.wait()
            def back():
                s.start_upstream()
                self.healed(f)
            self.later(self.rng.uniform(1, 5), back)
        elif kind == "conn stop-start":
            c = self.rng.choice(s.conns)
            if c in s.fleet_user_stopped:
                return
            f = self.fault(kind, None, [], conn=c)
            s.fleet_user_stopped.add(c)
            s.cli("conn", "stop", c)
            def start_again():
                s.cli("conn", "start", c)
                s.fleet_user_stopped.discard(c)
                self.healed(f)
            self.later(self.rng.uniform(1, 4), start_again)
        elif kind == "store lock":
            hold = self.rng.uniform(1, 6)
            f = self.fault(kind, None, list(s.conns), hold_s=round(hold, 1))
            threading.Thread(target=self.lock_store, args=(f, hold), daemon=True).start()
        else:  # a fault between processes and DynamoDB
            everyone = kind == "latency" and self.rng.random() < 0.3
            victims = [i for i in s.current.values() if i.alive()] if everyone else [
                self.rng.choice([i for i in s.current.values() if i.alive()])]
            ms = int(self.rng.uniform(100, 1500)) if kind == "latency" else 0
            duration = self.rng.uniform(2, 15)
            conns = list(s.conns) if everyone else (
                self.owned_by(victims[0]) if victims[0].role == "worker" else [])
            f = self.fault(kind, victims[0] if not everyone else None, conns,
                           everyone=everyone, latency_ms=ms, duration_s=round(duration, 1))
            mode = "blackhole" if kind == "partition" else kind
            for v in victims:
                v.proxy.set_mode(mode, ms)
            def clear():
                for v in victims:
                    v.proxy.set_mode("ok")
                self.healed(f)
            self.later(duration, clear)

    def lock_store(self, f, hold_s):
        db = sqlite3.connect(self.s.db, timeout=30, isolation_level=None)
        try:
            db.execute("BEGIN EXCLUSIVE")
            f["locked_ms"] = now_ms()
            time.sleep(hold_s)  # the fault itself: the lock held this long
            db.execute("COMMIT")
        finally:
            db.close()
            self.healed(f)

    def run(self, seconds):
        self.began_ms = now_ms()
        end = time.monotonic() + seconds
        next_fault = time.monotonic() + self.rng.uniform(1, self.s.args.fault_every)
        while time.monotonic() < end:
            t = time.monotonic()
            due = [p for p in self.pending if p[0] <= t]
            self.pending = [p for p in self.pending if p[0] > t]
            for _, fn in due:
                fn()
            self.notice_exits()
            if t >= next_fault:
                self.inject()
                next_fault = t + self.rng.expovariate(1 / self.s.args.fault_every)
            time.sleep(0.05)

    def notice_exits(self):
        """A process that exited on its own (no fault of ours ended it) is
        an event, counted in the report, and started again."""
        for inst in list(self.s.current.values()):
            if inst.popen.poll() is not None and not inst.ended_by_fault:
                inst.ended_by_fault = True
                if inst.crash_at and inst.popen.returncode == -signal.SIGKILL:
                    self.s.events.add("crashed", process=inst.name, point=inst.crash_at)
                    self.crashes[inst.crash_at] += 1
                else:
                    self.s.events.add("exited", process=inst.name, code=inst.popen.returncode)
                    self.unexpected_exits.append((inst.name, inst.popen.returncode))
                self.later(1, lambda inst=inst: self.s.start(inst.slot, inst.role))

    def heal_all(self):
        """Runs every pending heal now, and starts whatever is down."""
        for _, fn in sorted(self.pending, key=lambda p: p[0]):
            fn()
        self.pending = []
        s = self.s
        for inst in list(s.current.values()):
            if inst.stopped:
                s.send(inst, signal.SIGCONT)
                inst.stopped = False
            if inst.proxy is not None:
                inst.proxy.set_mode("ok")
            if inst.crash_at and inst.alive():  # still armed: replaced by one that is not
                s.end(inst)
            if not inst.alive():
                s.start(inst.slot, inst.role)
        if s.upstream.poll() is not None:
            s.start_upstream()


def report(system, nemesis, users, violations):
    writers = system.writers()
    moves = checker.progress(writers)
    by_kind = collections.defaultdict(list)
    unrecovered = collections.Counter()
    counts = collections.Counter(f["kind"] for f in nemesis.faults)
    for f in nemesis.faults:
        end = f["heal_ms"] or f["at_ms"]
        for c in f["conns"]:
            r = checker.recovery_ms(moves.get(c, []), f["at_ms"], end)
            if r is None:
                unrecovered[f["kind"]] += 1
            else:
                by_kind[f["kind"]].append(r)
    print(f"{'fault':24} {'count':>6} {'conns':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for kind in sorted(counts):
        rec = by_kind.get(kind, [])
        cells = [checker.percentile(rec, 50), checker.percentile(rec, 99), max(rec, default=None)]
        cells = ["-" if v is None else str(v) for v in cells]
        print(f"{kind:24} {counts[kind]:>6} {len(rec) + unrecovered[kind]:>6} "
              f"{cells[0]:>8} {cells[1]:>8} {cells[2]:>8}")
    if nemesis.crashes:
        print("killed at crash points: " + ", ".join(f"{p} {n}" for p, n in
                                                     sorted(nemesis.crashes.items())))
    for name, code in nemesis.unexpected_exits:
        print(f"exited on its own: {name} (exit {code})")
    lines = sum(len(w["lines"]) for w in writers)
    skews = [i.skew_ms for i in system.instances]
    print(f"processes started: {len(system.instances)}, clock skews {min(skews)}..{max(skews)} ms; "
          f"sink lines: {lines}; movies: {len(users.movies)} uploaded, {users.actions['trace']} "
          f"traces, {users.actions['delete']} deleted")
    for v in violations:
        print(f"VIOLATION {v['kind']}: {v['what']}")
        if v["at_ms"] is not None:
            for e in system.events.around(v["at_ms"]):
                if e["kind"] != "user":  # the movies' users: every second, and beside the point
                    print("    " + json.dumps(e))
    timed = [v["at_ms"] for v in violations if v["at_ms"] is not None]
    if timed:
        kinds = collections.Counter(v["kind"] for v in violations)
        print(f"first violation {(min(timed) - nemesis.began_ms) / 1000:.0f} s after the faults "
              f"began; by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    print(f"nemesis: {len(nemesis.faults)} faults, {len(violations)} violations", flush=True)


def settle(system, users, heal_ms):
    """Waits for the fleet and the movies to come back; the final checks."""
    s = system
    from_ms = heal_ms + 5000
    try:
        wait_for("every connection streaming after the heal",
                 lambda: now_ms() > from_ms and not s.silent_since(from_ms), 90, 0.5)
    except TimeoutError:
        pass  # reported by the checker, with the connections it names

    def listed():
        ids, after = set(), ""
        while True:
            st, body = s.http(0, "GET", "/api/movies?limit=100" + (f"&after={after}" if after else ""))
            if st != 200 or not isinstance(body, list):
                return ids
            ids.update(m["id"] for m in body)
            if len(body) < 100:
                return ids
            after = body[-1]["id"]

    def movies_now():
        out = {}
        for mid in sorted(users.movies | listed()):
            st, body = s.http(0, "GET", f"/api/movies/{mid}")
            if st == 200 and isinstance(body, dict):
                out[mid] = body["status"]
            elif st != 404:
                out[mid] = f"unreadable ({st})"
        return out

    try:
        wait_for("no movie in a passing state",
                 lambda: not any(v in checker.TRANSIENT for v in movies_now().values()),
                 s.args.movie_settle, 1)
    except TimeoutError:
        pass
    movies = movies_now()
    audits = {}
    for mid in movies:
        st, body = s.http(0, "GET", f"/api/movies/{mid}/audit")
        if st == 200 and isinstance(body, list):
            audits[mid] = body
    conns = [json.loads(line) for line in s.cli("conn", "list").stdout.splitlines() if line]
    writers = s.writers()
    started = [c["id"] for c in conns if c["desired_state"] == "STARTED"]
    return (checker.check_streams(writers) + checker.check_store(writers, conns)
            + checker.check_streaming(writers, started, from_ms)
            + checker.check_movies(movies, audits))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "leasehold"))
    ap.add_argument("--store", default="sqlite", choices=("sqlite", "dynamodb-local", "dynalite"))
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--connections", type=int, default=24)
    ap.add_argument("--rate", type=float, default=5, help="messages/s per connection")
    ap.add_argument("--trace-workers", type=int, default=2)
    ap.add_argument("--users", type=int, default=2)
    ap.add_argument("--movie-frames", type=int, default=150)
    ap.add_argument("--fault-every", type=float, default=6, help="seconds between faults (mean)")
    ap.add_argument("--skew-ms", type=float, default=500,
                    help="clocks spread over this much (each process within ±half)")
    ap.add_argument("--max-clock-skew", default="500ms", help="the workers' --max-clock-skew")
    ap.add_argument("--movie-settle", type=float, default=120,
                    help="seconds allowed after the heal for every movie to leave a passing state")
    ap.add_argument("--tool-dir", default=None,
                    help="where make_test_movie is (default: beside --bin)")
    ap.add_argument("--work", default=None, help="keep everything here (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    if args.workers < 2 or args.connections < 1 or args.seconds <= 0:
        ap.error("--workers must be at least 2, --connections and --seconds positive")
    args.bin = os.path.abspath(args.bin)  # the processes run in the work folder
    if args.tool_dir:
        args.tool_dir = os.path.abspath(args.tool_dir)
    if not os.access(args.bin, os.X_OK):
        ap.error(f"no leasehold binary at {args.bin}: build first (make build)")
    work = args.work or tempfile.mkdtemp(prefix="nemesis-")
    os.makedirs(work, exist_ok=True)
    log(f"seed {args.seed}, store {args.store}, {args.seconds:.0f} s, work {work}")
    system = System(args, work)
    system.fleet_user_stopped = set()
    users = Users(system)
    nemesis = Nemesis(system)
    code = 2
    try:
        system.set_up()
        users.start()
        nemesis.run(args.seconds)
        log("healing")
        nemesis.heal_all()
        heal_ms = now_ms()
        system.events.add("healed")
        users.join()
        violations = settle(system, users, heal_ms)
        report(system, nemesis, users, violations)
        code = 1 if violations else 0
    finally:
        users.stop.set()
        for inst in list(system.current.values()):
            system.end(inst)
        for p in [system.upstream, *system.helpers]:
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(15)
        if system.hub is not None:
            system.hub.close()
        if not args.work and not args.keep and code == 0:
            shutil.rmtree(work, ignore_errors=True)
        elif code != 0:
            log("kept " + work)
    sys.exit(code)


if __name__ == "__main__":
    main()
