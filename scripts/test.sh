#!/usr/bin/env bash
# make test: the system tests on the optimised build (already built), then
# the unit tests under ASan+UBSan. The sanitized build compiles while the
# system tests run, at the lowest CPU priority (nice 19): those tests spend
# most of their time waiting on processes, timers and sockets, and the
# compiler takes only the CPU they leave idle, so that on two cores the
# whole run is some five minutes shorter than one after the other. Both
# test runs go ahead whatever the other's outcome; the exit status is
# non-zero if either failed or the build did.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}

cmake --preset asan >/dev/null || exit 1
log=build-asan/test_binaries.log
echo "test: the sanitized build runs beside the system tests, at nice 19 (its log: $log)"
# In a session of its own, so that it is stopped whole (ninja and the
# compilers under it) if this script is.
setsid nice -n 19 cmake --build --preset asan -j "$jobs" --target test_binaries >"$log" 2>&1 &
builder=$!
trap '[ -n "$builder" ] && kill -- -"$builder" 2>/dev/null' EXIT
trap 'exit 130' INT TERM

failed=()
ctest --preset default -j "$jobs" || failed+=("the system tests")

if kill -0 "$builder" 2>/dev/null; then
  echo "test: waiting for the sanitized build, at $(tail -n 1 "$log" | cut -d' ' -f1)"
fi
if wait "$builder"; then
  builder=
  ctest --preset asan -j "$jobs" || failed+=("the unit tests")
else
  builder=
  tail -n 40 "$log"
  failed+=("the sanitized build")
fi

if ((${#failed[@]})); then
  echo "test: failed: ${failed[*]}" >&2
  exit 1
fi
