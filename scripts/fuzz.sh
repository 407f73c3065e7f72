#!/usr/bin/env bash
# `make fuzz`: builds the fuzz targets (fuzz/, the fuzz preset: clang 14,
# libFuzzer, ASan and UBSan) and runs each for FUZZ_SECONDS, one at a time.
#
#   FUZZ_SECONDS=180   how long each target runs
#   FUZZ_TARGETS="item_json endpoint"   a subset (default: every target)
#   FUZZ_MERGE=1       merge the new inputs that add coverage back into
#                      fuzz/corpus/<name> (-merge=1, so the repository's
#                      corpus stays small)
#   FUZZ_JOBS=2        build parallelism
#   FUZZ_PARALLEL=1    how many targets run at once (each takes one core)
#
# Each target starts from a working corpus, build-fuzz/corpus/<name>, seeded
# from fuzz/corpus/<name> and kept between runs. A run that finds a crash or
# a broken property leaves the input in build-fuzz/findings/<name>/ and says
# so; the script then exits non-zero after the other targets have run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
seconds="${FUZZ_SECONDS:-180}"
jobs="${FUZZ_JOBS:-2}"
build="build-fuzz"

scripts/setup.sh
cmake --preset fuzz >/dev/null
nice cmake --build --preset fuzz -j "$jobs"

all=()
for f in fuzz/*_fuzz.cc; do
  name="$(basename "$f" _fuzz.cc)"
  all+=("$name")
done
read -r -a targets <<<"${FUZZ_TARGETS:-${all[*]}}"

# The longest input worth trying, by target: answers and documents get room,
# names and flags little.
max_len() {
  case "$1" in
    dynamodb_reply | dynamodb_streams | sqs_reply | json_body | item_json | fleet_message | \
      sqs_dead_letters | sqs_fifo_reply | movies_stored) echo 8192 ;;
    credentials_files | credentials_answers | s3_xml | frame_times | packed_text | app_requests | \
      json_client_errors) echo 4096 ;;
    *) echo 1024 ;;
  esac
}

dict() {
  case "$1" in
    dynamodb_reply | dynamodb_streams | sqs_reply | json_body | item_json | fleet_message | \
      sqs_dead_letters | sqs_fifo_reply) echo fuzz/dicts/json.dict ;;
    movies_stored) echo fuzz/dicts/movies.dict ;;
    app_requests) echo fuzz/dicts/app_requests.dict ;;
    json_client_errors) echo fuzz/dicts/json_client.dict ;;
    s3_xml) echo fuzz/dicts/xml.dict ;;
    credentials_answers) echo fuzz/dicts/credentials.dict ;;
    http_request | endpoint | store_uri) echo fuzz/dicts/http.dict ;;
  esac
}

for name in "${targets[@]}"; do
  if [[ ! -x "$build/bin/${name}_fuzz" ]]; then
    echo "fuzz: no target $name (known: ${all[*]})" >&2
    exit 2
  fi
done

# Runs one target and leaves its summary line in $build/result-<name>; its
# exit status says whether it found something.
run_target() {
  local name="$1"
  local binary="$build/bin/${name}_fuzz"
  local corpus="$build/corpus/$name"
  local findings="$build/findings/$name"
  mkdir -p "$corpus" "$findings"
  cp -n fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null || true
  local log="$build/fuzz-$name.log"
  local args=(-max_total_time="$seconds" -print_final_stats=1 -max_len="$(max_len "$name")"
              -artifact_prefix="$findings/" -timeout=10 -rss_limit_mb=2048)
  local d
  d="$(dict "$name")"
  if [[ -n "$d" ]]; then args+=(-dict="$d"); fi
  echo "fuzz: $name for ${seconds}s"
  local result=ok status=0
  if ! nice "$binary" "${args[@]}" "$corpus" fuzz/corpus/"$name" >"$log" 2>&1; then
    result="FOUND $(grep -o "$findings/[^ ]*" "$log" | tail -1)"
    status=1
    grep -E "property failed|ERROR: |runtime error" "$log" | head -5 >&2 || true
  fi
  stat() { grep -E "^stat::$1:" "$log" | awk '{print $2}' | tail -1; }
  local cov ft line
  cov="$(grep -oE "cov: [0-9]+" "$log" | tail -1 | awk '{print $2}')"
  ft="$(grep -oE "ft: [0-9]+" "$log" | tail -1 | awk '{print $2}')"
  line="$(printf '%-20s execs %-10s exec/s %-7s cov %-6s ft %-6s corpus %-5s %s' "$name" \
    "$(stat number_of_executed_units)" "$(stat average_exec_per_sec)" "${cov:-?}" "${ft:-?}" \
    "$(find "$corpus" -type f | wc -l)" "$result")"
  echo "$line" >"$build/result-$name"
  echo "$line"
  if [[ "${FUZZ_MERGE:-0}" == 1 && "$result" == ok ]]; then
    nice "$binary" -merge=1 -max_len="$(max_len "$name")" fuzz/corpus/"$name" "$corpus" \
      >"$build/merge-$name.log" 2>&1
  fi
  return "$status"
}

parallel="${FUZZ_PARALLEL:-1}"
failed=0
running=0
for name in "${targets[@]}"; do
  if ((running >= parallel)); then
    wait -n || failed=1
    running=$((running - 1))
  fi
  run_target "$name" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done

summary=()
for name in "${targets[@]}"; do summary+=("$(cat "$build/result-$name")"); done
echo
printf '%s\n' "${summary[@]}"
if ((failed)); then
  echo "fuzz: ${#targets[@]} targets for ${seconds}s each: FINDINGS (reproduce: build-fuzz/bin/<name>_fuzz <file>)"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets for ${seconds}s each: nothing found"
