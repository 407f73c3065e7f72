#!/usr/bin/env bash
# Installs what leasehold needs to build and test, on Debian 12. Idempotent:
# packages already present are not touched, and nothing is fetched when
# everything is there.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config make
  libboost1.81-dev libboost-json1.81-dev
  libsqlite3-dev sqlite3 libssl-dev
  openssl  # the command: a self-signed certificate for make bench's wss:// upstream
  libcli11-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev
  libfaketime
  clang  # the thread-safety analysis (make test)
  libargon2-dev  # password hashes (leasehold serve)
  # OpenCV for the movie tracer (src/tracer/): these four modules, not
  # libopencv-dev, which brings every module and about 400 MB more
  # (cmake/FindOpenCV.cmake finds them without OpenCV's CMake package).
  libopencv-core-dev libopencv-imgcodecs-dev libopencv-imgproc-dev libopencv-videoio-dev
  chromium  # the browser tests, driven by playwright-core from package.json
  prometheus  # promtool checks the /metrics output in a test
  curl  # the serve process tests
  python3-botocore
  python3-websockets  # tests/fleet/upstream.py, the independent WebSocket upstream
)

# npm installs uPlot, which the build embeds (the Analyze page's plots), and
# Node.js runs dynalite and the browser tests; most machines have them.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The npm tools pinned in package-lock.json (dynalite, the AWS SDK,
# playwright-core) need Node.js 20 or later; Debian 12's own nodejs is 18.
# Say so plainly: the C++ build needs only npm's copy of uPlot, and its
# tests do not need node, but the DynamoDB and browser tests will fail
# under an older one.
node_major=$(node -p 'process.versions.node.split(".")[0]')
if ((node_major < 20)); then
  echo "setup: warning: node $(node --version) is older than 20; the dynalite and browser" \
       "tests need Node.js 20 or later (for example from a newer Debian release)" >&2
fi

# uPlot (built into the binary) and the test tools, pinned in package-lock.json.
# npm records what it installed in node_modules/.package-lock.json; reinstall
# only when that is missing or older than the lock file.
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ ! -f "$repo_root/node_modules/.package-lock.json" ||
      "$repo_root/package-lock.json" -nt "$repo_root/node_modules/.package-lock.json" ]]; then
  echo "setup: installing node_modules (npm ci)"
  (cd "$repo_root" && npm ci --no-audit --no-fund --loglevel=error)
fi
