#!/usr/bin/env bash
# What `make serve` runs: `leasehold serve` on an embedded SQLite store in a
# temporary directory, with a demo user, until Ctrl-C.
#
#   PORT      where to listen on 127.0.0.1 (default 8080)
#   LEASEHOLD_BIN  another build of the binary
#
# The store and everything in it are removed when the server stops. The
# lease demo of earlier versions is scripts/demo.sh.
set -euo pipefail

cd "$(dirname "$0")/.."
bin=${LEASEHOLD_BIN:-build/bin/leasehold}
port=${PORT:-8080}
if [[ ! -x $bin ]]; then
  echo "serve: $bin is missing; run 'make build' first" >&2
  exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/leasehold-serve.XXXXXX")
server=""
cleanup() {
  if [[ -n $server ]]; then kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 0' INT TERM
export LEASEHOLD_STORE="sqlite:$tmp/leasehold.db"

"$bin" store init >/dev/null
password=$(head -c 12 /dev/urandom | base64 | tr -d '/+=' | head -c 16)
printf '%s\n' "$password" |
  "$bin" user add demo --display-name "Demo User" --admin --password-stdin >/dev/null

"$bin" serve --listen "127.0.0.1:$port" --media-dir "$tmp/media" 2>"$tmp/serve.log" &
server=$!
for _ in $(seq 100); do  # up to 10 s to listen
  grep -q '"msg":"listening"' "$tmp/serve.log" 2>/dev/null && break
  if ! kill -0 "$server" 2>/dev/null; then
    cat "$tmp/serve.log" >&2
    server=""
    exit 1
  fi
  sleep 0.1
done

cat <<MSG

  leasehold is serving on http://127.0.0.1:$port/

  Sign in as   demo
  password     $password

  The store is $tmp/leasehold.db (removed on exit).
  Server log lines follow. Ctrl-C stops the server.

MSG
tail -n +1 -f "$tmp/serve.log" --pid "$server"
