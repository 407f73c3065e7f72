#!/usr/bin/env bash
# The lease demo: workers contending for leases on an embedded
# SQLite file, using nothing but the `leasehold` binary.
#
#   1. worker-1 runs a job under `lease hold`; the lease is renewed while the
#      job runs, past its 3 s ttl.
#   2. worker-2 tries to take the same lease and is told who holds it (exit 3).
#   3. The job finishes; the lease is released; worker-2 takes it with the
#      next fencing epoch.
#   4. A holder that freezes (SIGSTOP) past its ttl loses the lease to
#      another worker and, once it runs again, stops its job and exits 3.
#
# Everything lives in a temporary directory that is removed at the end.
# Takes about 15 seconds. Set LEASEHOLD_BIN to use another build.
set -euo pipefail

cd "$(dirname "$0")/.."
bin=${LEASEHOLD_BIN:-build/bin/leasehold}
if [[ ! -x $bin ]]; then
  echo "demo: $bin is missing; run 'make build' first" >&2
  exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/leasehold-demo.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
export LEASEHOLD_STORE="sqlite:$tmp/demo.db"

step() { printf '\n== %s\n' "$*"; }
# Prints a command as a user would type it, runs it, and reports a failing
# exit code instead of stopping the demo.
run() {
  printf '$ leasehold %s\n' "$*"
  local code=0
  "$bin" "$@" || code=$?
  if ((code != 0)); then printf '(exit code %d)\n' "$code"; fi
  return 0
}
# The value of a top-level string field of a one-line JSON object.
field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }
# Waits (up to 10 s) until `leasehold lease show KEY` says the lease is held.
wait_held() {
  for _ in $(seq 100); do
    if "$bin" lease show "$1" 2>/dev/null | grep -q '"held":true'; then return 0; fi
    sleep 0.1
  done
  echo "demo: the lease on $1 was never taken" >&2
  exit 1
}

echo "leasehold demo; store: $LEASEHOLD_STORE"

step "1. worker-1 runs a job while holding the lease 'nightly-report' (ttl 3s)"
printf '$ leasehold lease hold nightly-report --owner worker-1 --ttl 3s -- sh -c JOB &\n'
# The job prints its fencing epoch, then works until told to stop.
"$bin" lease hold nightly-report --owner worker-1 --ttl 3s -- sh -c \
  'echo "  [job] running under lease epoch $LEASEHOLD_EPOCH"
   while [ ! -e "$0" ]; do sleep 0.1; done
   echo "  [job] finished"' "$tmp/stop" &
hold_pid=$!
pids+=("$hold_pid")
wait_held nightly-report
run lease show nightly-report

step "2. worker-2 tries to take it: exit 3, and the holder on stdout"
run lease acquire nightly-report --owner worker-2

step "3. four seconds later (longer than the ttl) worker-1 still holds it: 'lease hold' renews it"
sleep 4
run lease show nightly-report

step "4. the job finishes; 'lease hold' releases the lease and returns the job's exit code"
touch "$tmp/stop"
code=0
wait "$hold_pid" || code=$?
echo "lease hold exited with $code"
run lease show nightly-report

step "5. now worker-2 gets it, with the next fencing epoch"
lease=$("$bin" lease acquire nightly-report --owner worker-2)
printf '$ leasehold lease acquire nightly-report --owner worker-2\n%s\n' "$lease"
run lease list
token=$(field token <<<"$lease")
run lease release nightly-report --owner worker-2 --token "$token"
run lease list --expired

step "6. a holder frozen past its ttl loses the lease, and stops its job when it wakes"
printf '$ leasehold lease hold stream-7 --owner worker-1 --ttl 2s -- sh -c JOB &\n'
# The job notes its pid (so that the demo can freeze it too) and sleeps.
"$bin" lease hold stream-7 --owner worker-1 --ttl 2s -- sh -c \
  'echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 60' "$tmp/job.pid" &
hold_pid=$!
pids+=("$hold_pid")
wait_held stream-7
for _ in $(seq 100); do [[ -s $tmp/job.pid ]] && break; sleep 0.1; done
job_pid=$(cat "$tmp/job.pid")
pids+=("$job_pid")
echo "freezing worker-1 (pid $hold_pid) and its job (pid $job_pid) with SIGSTOP for 3 s"
kill -STOP "$hold_pid" "$job_pid"
sleep 3
run lease acquire stream-7 --owner worker-2
echo "waking worker-1 and its job with SIGCONT"
kill -CONT "$job_pid" "$hold_pid"
code=0
wait "$hold_pid" || code=$?
echo "worker-1's lease hold exited with $code (3: the lease is no longer yours); its job was stopped:"
if kill -0 "$job_pid" 2>/dev/null; then echo "  job $job_pid is still running"; else echo "  job $job_pid is gone"; fi
run lease show stream-7

printf '\ndemo finished\n'
