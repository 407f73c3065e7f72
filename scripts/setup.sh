#!/usr/bin/env bash
# Installs what leasehold needs to build and test, on Debian 12. Idempotent:
# packages already present are not touched, and nothing is fetched when
# everything is there.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config make
  libboost1.81-dev libboost-json1.81-dev
  libsqlite3-dev sqlite3 libssl-dev
  libcli11-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libfaketime
)

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
