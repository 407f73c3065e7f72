"""The nemesis's checker: what the processes wrote, against what we promise.

Pure functions over plain data, so that tests/nemesis/checker_test.py can
feed it histories with known faults:

  writers    one per process the nemesis started: {"name", "skew_ms", "lines"}
             where lines are the sink lines it wrote, parsed, in file order
             ({"conn", "seq", "worker", "epoch", "written_at_ms"}). A line's
             true time is its written_at_ms less the writer's skew (the
             nemesis set each process's clock off by skew_ms).

A violation is a dict {"kind", "at_ms" (true time), "what"}. The kinds:

  overlap        a connection written under an epoch after a later epoch's
                 first write (two writers at once)
  shared-epoch   one epoch of a connection written by two processes
  epoch-back     a process wrote a connection under a lower epoch after a
                 higher one, or the store's epoch is below one written
  seq-back       a process wrote a sequence number not above the one it
                 wrote last under the same epoch
  gap            a sequence number no process wrote, below one written
  checkpoint     the store's checkpoint is past every line written
  not-streaming  a STARTED connection with no line in the final window
  stuck          a movie left processing, queued, tracing or deleting
  audit          a trace job whose audit has not exactly one start and one end
"""

import bisect
import collections


def true_ms(writer, line):
    return line["written_at_ms"] - writer["skew_ms"]


def check_streams(writers):
    """Violations of one writer per connection, rising epochs and no gap."""
    violations = []
    # conn -> epoch -> [first true ms, last true ms, writer names]
    spans = collections.defaultdict(dict)
    seqs = collections.defaultdict(set)
    for w in writers:
        last = {}  # conn -> (epoch, seq) of this writer's last line
        for line in w["lines"]:
            conn, epoch, seq, t = line["conn"], line["epoch"], line["seq"], true_ms(w, line)
            seqs[conn].add(seq)
            if conn in last:
                e0, s0 = last[conn]
                if epoch < e0:
                    violations.append(_v("epoch-back", t, f"{w['name']} wrote {conn} under epoch "
                                         f"{epoch} after epoch {e0}"))
                elif epoch == e0 and seq <= s0:
                    violations.append(_v("seq-back", t, f"{w['name']} wrote {conn} seq {seq} "
                                         f"after seq {s0} under epoch {epoch}"))
            last[conn] = (epoch, seq)
            span = spans[conn].setdefault(epoch, [t, t, set()])
            span[0], span[1] = min(span[0], t), max(span[1], t)
            span[2].add(w["name"])
    for conn, by_epoch in sorted(spans.items()):
        latest_end, latest_epoch, latest_names = None, None, set()
        for epoch in sorted(by_epoch):
            first, last, names = by_epoch[epoch]
            if len(names) > 1:
                violations.append(_v("shared-epoch", first, f"{conn} epoch {epoch} written by "
                                     + ", ".join(sorted(names))))
            if latest_end is not None and latest_end > first:
                violations.append(_v("overlap", first, f"{conn}: epoch {latest_epoch} "
                                     f"({', '.join(sorted(latest_names))}) wrote until "
                                     f"{latest_end}, {latest_end - first} ms after epoch {epoch} "
                                     f"({', '.join(sorted(names))}) began at {first}"))
            if latest_end is None or last > latest_end:
                latest_end, latest_epoch, latest_names = last, epoch, names
    for conn, got in sorted(seqs.items()):
        missing = sorted(set(range(1, max(got) + 1)) - got)
        if missing:
            violations.append(_v("gap", _first_after(writers, conn, missing[0]),
                                 f"{conn}: {len(missing)} sequence numbers never written: "
                                 + _ranges(missing)))
    return violations


def check_store(writers, conns):
    """The store's view against the sinks: conns is `conn list`'s objects."""
    violations = []
    high_epoch, high_seq = {}, {}
    for w in writers:
        for line in w["lines"]:
            c = line["conn"]
            high_epoch[c] = max(high_epoch.get(c, 0), line["epoch"])
            high_seq[c] = max(high_seq.get(c, 0), line["seq"])
    for c in conns:
        cid = c["id"]
        if c["epoch"] < high_epoch.get(cid, 0):
            violations.append(_v("epoch-back", None, f"{cid}: the store's epoch {c['epoch']} is "
                                 f"below epoch {high_epoch[cid]}, which was written"))
        if c["last_seq"] > high_seq.get(cid, 0):
            violations.append(_v("checkpoint", None, f"{cid}: checkpointed at {c['last_seq']}, "
                                 f"but the sinks hold up to {high_seq.get(cid, 0)}"))
    return violations


def check_streaming(writers, started, from_ms):
    """Every connection in `started` has a line at or after from_ms (true)."""
    latest = {}
    for w in writers:
        for line in w["lines"]:
            t = true_ms(w, line)
            if t > latest.get(line["conn"], -1):
                latest[line["conn"]] = t
    return [_v("not-streaming", from_ms, f"{c}: last written at {latest.get(c, 'never')}, "
               f"nothing since {from_ms}")
            for c in sorted(started) if latest.get(c, -1) < from_ms]


TRANSIENT = ("processing", "queued", "tracing", "deleting")


def check_movies(movies, audits):
    """movies: {id: status} once settled; audits: {movie id: [audit entries]}."""
    violations = []
    for mid, status in sorted(movies.items()):
        if status in TRANSIENT:
            violations.append(_v("stuck", None, f"movie {mid} left {status}"))
    for mid, entries in sorted(audits.items()):
        starts, ends = collections.Counter(), collections.Counter()
        for e in entries:
            job = e.get("job_id", "")
            if e["event"] == "movie.tracing.started":
                starts[job] += 1
            elif e["event"] in ("movie.tracing.completed", "movie.tracing.failed"):
                ends[job] += 1
        for job in sorted(set(starts) | set(ends)):
            if starts[job] != 1 or ends[job] != 1:
                violations.append(_v("audit", None, f"movie {mid} job {job}: {starts[job]} "
                                     f"start(s), {ends[job]} end(s)"))
    return violations


def progress(writers):
    """conn -> sorted true times at which its highest sequence number rose."""
    lines = collections.defaultdict(list)
    for w in writers:
        for line in w["lines"]:
            lines[line["conn"]].append((true_ms(w, line), line["seq"]))
    out = {}
    for conn, seen in lines.items():
        seen.sort()
        high, times = 0, []
        for t, seq in seen:
            if seq > high:
                high = seq
                times.append(t)
        out[conn] = times
    return out


def recovery_ms(times, start_ms, end_ms):
    """How long after start_ms a connection with progress `times` moved on
    past the longest stall overlapping [start_ms, end_ms]; None if it never
    progressed after start_ms."""
    i = bisect.bisect_left(times, start_ms)
    if i == len(times):
        return None
    best, after = -1, None
    for j in range(max(i, 1), len(times)):
        a, b = times[j - 1], times[j]
        if a > end_ms:
            break
        if b - a > best:
            best, after = b - a, b
    if after is None:
        after = times[i]
    return max(0, after - start_ms)


def percentile(values, p):
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, -(-p * len(ordered) // 100) - 1))
    return ordered[int(k)]


def _v(kind, at_ms, what):
    return {"kind": kind, "at_ms": at_ms, "what": what}


def _first_after(writers, conn, seq):
    """The true time of the first line of `conn` above `seq`: where a gap shows."""
    best = None
    for w in writers:
        for line in w["lines"]:
            if line["conn"] == conn and line["seq"] > seq:
                t = true_ms(w, line)
                best = t if best is None else min(best, t)
    return best


def _ranges(numbers):
    out, start = [], numbers[0]
    for prev, n in zip(numbers, numbers[1:] + [None]):
        if n != prev + 1:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = n
    return ", ".join(out[:10]) + (" …" if len(out) > 10 else "")
