#!/usr/bin/env bash
# make bench: the `bench leases` figures of docs/benchmarks.md, each against
# the baselines measured in the same run:
#   - SQLite, on a file in a temporary directory (baseline: the SQLite C API);
#   - DynamoDB, against dynalite started here on a free loopback port
#     (baselines: bare pre-signed HTTP requests, and the AWS SDK for
#     JavaScript running bench/sdk_renew_loop.mjs).
# Then `bench http`: the server of `serve` on a fresh SQLite file (baseline:
# a minimal Beast server answering the same bytes), with its defaults.
# Then the stream fleet (bench/fleet_bench.py): a worker's memory per idle
# connection, its store writes per connection per minute on SQLite and on the
# same dynalite, failover times over BENCH_FLEET_KILLS (default 50) kills, how
# long a worker of 1,000 connections takes to hand them all over on SIGTERM, and
# the messages per second one worker reads from 1,000 connections against
# bench/bare_ws_reader (built by `make bench`) on the same streams, and the
# slow streams (`lowrate`: CPU per message against the bare reader at 5 and
# 20 messages/s a stream, memory per idle ws:// and wss:// connection at
# 10,000, latency at 10,000 x 1/s), and what the fleet costs in DynamoDB
# capacity units (`cost`, on DynamoDB Local), and what one open Fleet page's
# polling costs at up to 100,000 connections (`page`).
# Then the movie tracer (build/bin/tracer_bench, built by `make bench`):
# tracing a synthetic movie against decoding it alone, in the same run; the
# Analyze page's frame images on long movies (build/bin/frames_bench): as the
# route was, from the movie's key frames and from its proxy; and
# `bench movies`: 100 viewers polling a movie's metadata while it is traced,
# against the same polling idle.
# Every JSON line goes to stdout; BENCH_SECONDS (default 10) sets the length
# of the lease benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=build/bin/leasehold
seconds="${BENCH_SECONDS:-10}"
work="$(mktemp -d)"
dynalite_pid=""
cleanup() {
  if [[ -n "$dynalite_pid" ]]; then kill "$dynalite_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "leasehold: bench leases on SQLite" >&2
"$bin" --store "sqlite:$work/leases.db" bench leases --leases 1000 --seconds "$seconds"

echo "leasehold: bench leases on DynamoDB (dynalite)" >&2
node -e '
const dynalite = require(process.argv[1]);
const server = dynalite({createTableMs: 0, updateTableMs: 0, deleteTableMs: 0});
server.listen(0, "127.0.0.1", () => process.stdout.write(server.address().port + "\n"));
' "$PWD/node_modules/dynalite" >"$work/port" &
dynalite_pid=$!
for _ in $(seq 300); do  # up to 30 s for node to start listening
  [[ -s "$work/port" ]] && break
  kill -0 "$dynalite_pid" 2>/dev/null || { echo "leasehold: dynalite did not start" >&2; exit 1; }
  sleep 0.1
done
[[ -s "$work/port" ]] || { echo "leasehold: dynalite did not listen within 30 s" >&2; exit 1; }

# dynalite wants requests signed, by anyone: never send real credentials to it.
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
unset AWS_SESSION_TOKEN AWS_PROFILE
"$bin" --store "dynamodb://us-east-1/bench_?endpoint=http://127.0.0.1:$(cat "$work/port")" \
  bench leases --leases 1000 --seconds "$seconds" --sdk-baseline bench/sdk_renew_loop.mjs

echo "leasehold: bench http" >&2
env -u LEASEHOLD_STORE "$bin" bench http  # a fresh SQLite file of its own

echo "leasehold: fleet_bench" >&2
/usr/bin/python3 bench/fleet_bench.py --bin "$bin" --reader build/bin/bare_ws_reader \
  memory writes failover sessions handover throughput lowrate \
  --kills "${BENCH_FLEET_KILLS:-50}" \
  --dynamodb-endpoint "http://127.0.0.1:$(cat "$work/port")"
# What the fleet costs as AWS bills it, on AWS's own DynamoDB Local (started
# by the benchmark): capacity units per connection per minute.
/usr/bin/python3 bench/fleet_bench.py --bin "$bin" cost --dynamodb-local --window 120 --settle 20
# How soon the fleet acts on conn stop, start, add and a SIGTERM, on SQLite.
/usr/bin/python3 bench/fleet_bench.py --bin "$bin" react
# One open Fleet page's polling at 1,000, 10,000 and 100,000 connections, on
# SQLite and DynamoDB Local: bytes and read units a minute.
/usr/bin/python3 bench/fleet_bench.py --bin "$bin" page --dynamodb-local --page-seconds 60

echo "leasehold: tracer_bench" >&2
build/bin/tracer_bench

# The Analyze page's frames on 10-minute 1080p movies with a key frame every
# 10 s, H.264 and HEVC (made with ffmpeg once, kept in BENCH_MOVIES_DIR,
# default .bench-movies: some 1.5 GB each with its proxy).
movies_dir="${BENCH_MOVIES_DIR:-.bench-movies}"
echo "leasehold: frames_bench (movies in $movies_dir)" >&2
build/bin/frames_bench --dir "$movies_dir" --codec h264
build/bin/frames_bench --dir "$movies_dir" --codec hevc

echo "leasehold: bench movies" >&2
env -u LEASEHOLD_STORE "$bin" bench movies  # a fresh SQLite file of its own
