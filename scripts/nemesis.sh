#!/usr/bin/env bash
# make nemesis: the whole system under a seeded random schedule of faults,
# then a checker over what it wrote (tests/nemesis/nemesis.py,
# docs/reliability.md), once on each store of NEMESIS_STORES.
#   NEMESIS_SECONDS  how long faults are injected on each store (default 600)
#   NEMESIS_STORES   any of sqlite, dynamodb-local, dynalite (default
#                    "sqlite dynamodb-local")
#   NEMESIS_SEED     the schedule's seed (default: a random one, printed)
#   NEMESIS_SKEW_MS  how far apart the processes' clocks may be (default 500,
#                    the workers' --max-clock-skew; more runs past the model)
#   NEMESIS_PLANT    lease-overtrust or sink-unchecked: run a build with that
#                    bug planted (build-plant-NAME, configured and built here)
#   NEMESIS_ARGS     more flags for nemesis.py (its --help)
# Each run prints its faults by kind with the recoveries, every violation
# with the events around it, and `nemesis: F faults, V violations`; the last
# line sums the runs. Exit 1 if any run found a violation.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=build/bin/leasehold
if [[ -n "${NEMESIS_PLANT:-}" ]]; then
  dir="build-plant-${NEMESIS_PLANT}"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
    -DLEASEHOLD_TESTS=system -DLEASEHOLD_PLANT="$NEMESIS_PLANT" >/dev/null
  # bin/leasehold: the build tree's binary, with the upstream simulator (the
  # target named leasehold may be taken for product/bin/leasehold).
  ninja -C "$dir" -j "${JOBS:-$(nproc)}" bin/leasehold
  bin="$dir/bin/leasehold"
fi

faults=0 violations=0 status=0
for store in ${NEMESIS_STORES:-sqlite dynamodb-local}; do
  seed_flag=()
  if [[ -n "${NEMESIS_SEED:-}" ]]; then seed_flag=(--seed "$NEMESIS_SEED"); fi
  out="$(mktemp)"
  # shellcheck disable=SC2086  # NEMESIS_ARGS is a list of flags
  if python3 tests/nemesis/nemesis.py --bin "$bin" --store "$store" \
      --seconds "${NEMESIS_SECONDS:-600}" --skew-ms "${NEMESIS_SKEW_MS:-500}" \
      --tool-dir build/bin "${seed_flag[@]}" ${NEMESIS_ARGS:-} | tee "$out"; then :; else
    status=1
  fi
  last="$(tail -n 1 "$out")"
  rm -f "$out"
  if [[ "$last" =~ ^nemesis:\ ([0-9]+)\ faults,\ ([0-9]+)\ violations$ ]]; then
    faults=$((faults + BASH_REMATCH[1]))
    violations=$((violations + BASH_REMATCH[2]))
  else
    echo "nemesis: the run on $store did not finish" >&2
    status=1
  fi
done
echo "nemesis: $faults faults, $violations violations"
exit "$status"
