#!/usr/bin/env bash
# make test: the system tests on the optimised build (already built), then
# the unit tests under ASan+UBSan. The sanitized build compiles while the
# system tests run, at the lowest CPU priority (nice 19): those tests spend
# most of their time waiting on processes, timers and sockets, and the
# compiler takes only the CPU they leave idle. The lint checks (clang's
# thread-safety analysis above all) need nothing but the CPU, and run beside
# the unit tests, which leave some of it idle, rather than beside the
# build, which leaves none. Every part goes ahead whatever the others'
# outcome; the exit status is non-zero if any failed or the build did.
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
linter=
stop_background() {
  [ -n "$builder" ] && kill -- -"$builder" 2>/dev/null
  [ -n "$linter" ] && kill "$linter" 2>/dev/null
}
trap stop_background EXIT
trap 'exit 130' INT TERM

failed=()
# What failed, kept apart: the lint run below writes to the same directory.
rm -f build/system-failed.log build-asan/unit-failed.log
if ! ctest --preset default -j "$jobs" -LE lint; then
  failed+=("the system tests")
  cp build/Testing/Temporary/LastTestsFailed.log build/system-failed.log 2>/dev/null
fi

lint_log=build/lint.log
ctest --preset default -L lint >"$lint_log" 2>&1 &
linter=$!

if kill -0 "$builder" 2>/dev/null; then
  echo "test: waiting for the sanitized build, at $(tail -n 1 "$log" | cut -d' ' -f1)"
fi
if wait "$builder"; then
  builder=
  if ! ctest --preset asan -j "$jobs"; then
    failed+=("the unit tests")
    cp build-asan/Testing/Temporary/LastTestsFailed.log build-asan/unit-failed.log 2>/dev/null
  fi
else
  builder=
  tail -n 40 "$log"
  failed+=("the sanitized build")
fi

wait "$linter" || failed+=("the lint checks")
linter=
echo "test: the lint checks, beside the unit tests:"
cat "$lint_log"

if ((${#failed[@]})); then
  # Named again here, at the end, where a log cut to its last lines still
  # shows them.
  for list in build/system-failed.log build-asan/unit-failed.log; do
    if [ -s "$list" ]; then
      echo "test: failed ($list):" >&2
      sed 's/^/  /' "$list" >&2
    fi
  done
  echo "test: failed: ${failed[*]}" >&2
  exit 1
fi
