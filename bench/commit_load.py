#!/usr/bin/env python3
"""Commits to a SQLite database at a steady rate from another process, for a
benchmark that must meet a store others write to (docs/benchmarks.md, `bench
http` under writes). Each commit inserts one row into a table of its own
(`commit_load`), which nothing of leasehold reads, so the only effect on the
store is that its WAL moves on. Stops after --seconds and prints the number of
commits made on stderr.

    bench/commit_load.py --db /tmp/s.db --per-second 1000 --seconds 25
"""
import argparse
import sqlite3
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="the SQLite file (WAL mode)")
    parser.add_argument("--per-second", type=float, default=100.0, help="commits a second")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to run")
    args = parser.parse_args()
    if not 0 < args.per_second <= 100_000 or not 0 < args.seconds <= 3600:
        parser.error("--per-second must be in (0, 100000] and --seconds in (0, 3600]")

    db = sqlite3.connect(args.db, isolation_level=None, timeout=5)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS commit_load(n INTEGER)")
    period = 1.0 / args.per_second
    start = time.monotonic()
    next_at, commits = start, 0
    while time.monotonic() - start < args.seconds:
        db.execute("INSERT INTO commit_load VALUES (?)", (commits,))
        commits += 1
        next_at += period
        wait = next_at - time.monotonic()
        if wait > 0:
            time.sleep(wait)
    print(f"commits {commits} in {time.monotonic() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
