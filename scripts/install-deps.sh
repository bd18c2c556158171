#!/usr/bin/env bash
# Installs what redbloom needs from Debian's packages, only what is missing.
#   scripts/install-deps.sh          build dependencies (compiler, CMake, xxHash, CLI11, hiredis,
#                                    OpenSSL, simdjson, Python's headers and pybind11 for the Python
#                                    package, help2man for the man page, librdkafka for the
#                                    Kafka stage)
#   scripts/install-deps.sh --test   also GoogleTest, Google Benchmark, redis-server, valgrind
#                                    (the module's memory checks), what the Python tests import
#                                    (pytest, numpy, Scrapy, redis-py, venv), openssl (the TLS
#                                    tests make their certificates) and man/groff to
#                                    check the installed man page, universal-ctags (the
#                                    source rules test), kcat (the Kafka tests' producer and
#                                    consumer)
set -euo pipefail

packages=(g++ cmake make libxxhash-dev libcli11-dev libhiredis-dev libsimdjson-dev python3-dev
  pybind11-dev help2man libssl-dev pkg-config librdkafka-dev)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(libgtest-dev libbenchmark-dev redis-server valgrind pkg-config python3-pytest
    python3-numpy python3-scrapy python3-redis python3-venv man-db groff-base openssl
    universal-ctags kcat)
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
