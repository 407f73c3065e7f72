#!/usr/bin/env bash
# make test: the optimised build and its system tests, then the unit tests
# under ASan+UBSan. Measured on 2 cores, the system tests keep under half of
# the CPU busy: they spend most of their time waiting on processes, timers,
# sockets and browsers. So:
# - the sanitized build starts first, at the lowest CPU priority (nice 19),
#   and takes only the CPU that the optimised build (its links above all)
#   and then the system tests leave idle; the lint checks (clang's
#   thread-safety analysis above all, CPU and nothing else) join it once the
#   optimised build is done;
# - the system tests, and then the unit tests, run one more at a time than
#   there are cores; a browser test counts as two (tests/system_tests.cmake,
#   PROCESSORS).
# Every part goes ahead whatever the others' outcome; the exit status is
# non-zero if any failed or a build did.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}

cmake --preset default >/dev/null || exit 1
cmake --preset asan >/dev/null || exit 1
log=build-asan/test_binaries.log
echo "test: the sanitized build runs beside the rest, at nice 19 (its log: $log)"
# In a session of its own, so that it is stopped whole (ninja and the
# compilers under it) if this script is. A new session is also a new
# autogroup for Linux's scheduler (kernel.sched_autogroup_enabled, on by
# default), which shares the CPU out between groups before nice counts
# within one: at the group's own nice of 0 the build took half of the CPU
# from the tests, so the group's nice is set to 19 too.
setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null
                exec nice -n 19 cmake --build --preset asan -j "$1" --target test_binaries' \
  _ "$jobs" >"$log" 2>&1 &
builder=$!
linter=
stop_background() {
  [ -n "$builder" ] && kill -- -"$builder" 2>/dev/null
  [ -n "$linter" ] && kill "$linter" 2>/dev/null
}
trap stop_background EXIT
trap 'exit 130' INT TERM

cmake --build --preset default -j "$jobs" || exit 1

# Two ctest runs share build/Testing/: what each prints goes to its own
# place, and what failed in the system tests is copied as soon as they end.
# The test binaries' cases are listed once first (-N): each ctest lists a
# binary newer than its list, and GoogleTest's listing writes its file in
# appended parts, so two listing at once wrote some cases twice (run twice).
ctest --preset default -N >/dev/null || exit 1
lint_log=build/lint.log
nice -n 19 ctest --preset default -L lint >"$lint_log" 2>&1 &
linter=$!

failed=()
rm -f build/system-failed.log build-asan/unit-failed.log
if ! ctest --preset default -j "$((jobs + 1))" -LE lint; then
  failed+=("the system tests")
  cp build/Testing/Temporary/LastTestsFailed.log build/system-failed.log 2>/dev/null
fi

if kill -0 "$builder" 2>/dev/null; then
  echo "test: waiting for the sanitized build, at $(tail -n 1 "$log" | cut -d' ' -f1)"
fi
if wait "$builder"; then
  builder=
  if ! ctest --preset asan -j "$((jobs + 1))"; then
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
echo "test: the lint checks, beside the system tests:"
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
