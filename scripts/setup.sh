#!/usr/bin/env bash
# Installs the Debian 12 packages Apollo-11 builds, tests and runs with.
# Flags: --with-tests (test tools), --with-bench (benchmark peers); both may
# be given. Idempotent: when every package is already installed it prints
# nothing and exits 0. Needs root (or sudo) only when something is missing.
set -euo pipefail

# Build and runtime libraries (found by CMake, see CMakeLists.txt).
BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libboost-dev
  liblmdb-dev lmdb-utils libyaml-cpp-dev
  zlib1g-dev  # storage: large pipeline snapshots are stored deflated
  catch2 libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libcpp-httplib-dev libcurl4-openssl-dev libbenchmark-dev
  libssl-dev  # API token hashes (OpenSSL's SHA-256 and constant-time compare)
  python3
  libsystemd-dev  # pkg: sd_notify for Type=notify units
  help2man  # pkg: man pages generated from --help at build time
  file  # pkg: `cpack -G DEB` runs file(1) to find the binaries dpkg-shlibdeps reads
  libpq-dev libmariadb-dev libsqlite3-dev  # db tasks (part db)
)
# Extra tools the test suite and the benchmarks use.
TEST_PACKAGES=(clang libclang-rt-14-dev hyperfine procps curl python3-jsonschema python3-yaml faketime)
TEST_PACKAGES+=(universal-ctags)  # tests/layering/check_sizes.py measures functions with it (issue 35)
# obs (issue 19): promtool checks a node's /metrics; util-linux's `script` gives `run` a terminal.
TEST_PACKAGES+=(prometheus util-linux)
# web (issue 17): the dashboard's browser tests drive Debian's chromium.
TEST_PACKAGES+=(chromium)
TEST_PACKAGES+=(postgresql mariadb-server)  # db tasks against real servers (part db)
TEST_PACKAGES+=(etcd-server etcd-client)  # HA election tests against a real etcd (part election)
TEST_PACKAGES+=(openssl)  # certificates for the etcd that requires TLS (ha_etcd_secure)
TEST_PACKAGES+=(man-db)  # docs_man_pages_complete renders the man pages with man(1)
TEST_PACKAGES+=(lintian)  # scripts/test-deb.sh: the .deb passes lintian (issue 37)
TEST_PACKAGES+=(nginx-light)  # the reverse-proxy recipe of docs/operations.md, in a real nginx
TEST_PACKAGES+=(mold)  # the CI builds link with it (CMake option APOLLO11_MOLD)
# clients/python's test installs the package with pip into a venv, as its
# README says (without these it would only print that it skipped that step).
TEST_PACKAGES+=(python3-venv python3-pip python3-setuptools python3-wheel)

# Peers and tools the benchmark harness (bench/harness.py) runs: Dask
# distributed, hyperfine, ninja, GNU time (peak RSS).
BENCH_PACKAGES=(python3-distributed hyperfine ninja-build time)
BENCH_PACKAGES+=(strace)  # journal (issue 18): syncs and pages written per task, harness section 8

want=("${BUILD_PACKAGES[@]}")
# web (issue 17): node and npm bundle the dashboard at build time. A machine
# that already has both (another packaging of Node.js) keeps its own.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  want+=(nodejs npm)
fi
for arg in "$@"; do
  case "$arg" in
    --with-tests) want+=("${TEST_PACKAGES[@]}") ;;
    --with-bench) want+=("${BENCH_PACKAGES[@]}") ;;
  esac
done

missing=()
for pkg in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  SUDO="sudo"
fi
echo "apollo11 setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
