#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ (clang, ASan+UBSan) and runs each for
# SECONDS (default 60) from a scratch copy of its seed corpus, so the repository
# is never written to. Fails if any target crashes, leaks, times out or runs out
# of memory; the reproducer is kept in the scratch dir and its path printed.
# Prints, per target: executions, executions per second, coverage (cov: edges),
# and the corpus units it added. See docs/fuzzing.md.
#   scripts/fuzz.sh [SECONDS]      FUZZ_JOBS (default 1) runs that many targets at once;
#   FUZZ_UNITY=ON builds in batches of files (scripts/test.sh, a cold build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]] || [[ $seconds -eq 0 ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS]  (a whole number > 0, default 60)" >&2
  exit 2
fi

# clang and its runtime (libFuzzer, sanitizers) come from Debian, like every
# other tool the tests use.
bash scripts/setup.sh --with-tests

build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
targets=(transport_decode dsl_parser pipeline_json journal_record dispatcher_frames etcd_codec
  replication_frame)
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
echo "== fuzz build ($build)"
# Line tables only: reports keep file:line at less compile time (scripts/test.sh).
CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
  -DAPOLLO11_FUZZ=ON -DAPOLLO11_BUILD_TESTS=OFF -DAPOLLO11_WERROR=ON \
  "-DCMAKE_UNITY_BUILD=${FUZZ_UNITY:-OFF}" "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/apollo11-fuzz.XXXXXX")
echo "== fuzzing each target for ${seconds}s (scratch: $scratch)"

# Per-target extra flags: yaml-cpp 0.7 can allocate without bound on some
# invalid YAML (dsl/yaml_prescan.h PreScanner guards the known cases). Each
# target's per-input heap budget (fuzz/heap_budget.h, 512 MiB) turns a new case
# into a crash reproducer; the 2 GiB RSS cap is the backstop for growth the
# budget does not see (libFuzzer's own report of it may hang: see docs/fuzzing.md).
extra_flags() {
  case $1 in
    dsl_parser) echo "-rss_limit_mb=2048 -dict=$root/fuzz/dsl_parser.dict" ;;
    pipeline_json) echo "-rss_limit_mb=2048 -dict=$root/fuzz/pipeline_json.dict" ;;
    *) echo "-rss_limit_mb=2048" ;;
  esac
}

run_target() {  # run_target NAME: fuzzes one target; its log is $scratch/NAME.log
  local name=$1 dir=$scratch/$1
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp "$root/fuzz/corpus/$name/"* "$dir/corpus/"
  local seeds
  seeds=$(find "$dir/corpus" -type f | wc -l)
  echo "$seeds" > "$dir/seeds"
  # -timeout: one input taking longer is a hang (reported as a failure).
  # shellcheck disable=SC2046
  # The outer timeout: a fuzzer stuck in its own out-of-memory report (seen
  # once with dsl_parser, 2026-12-01) fails the run instead of hanging CI.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    timeout -k 10 $((seconds + 120)) "$build/fuzz/fuzz_$name" "$dir/corpus" -max_total_time="$seconds" -timeout=25 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" $(extra_flags "$name") \
    > "$dir.log" 2>&1
}

summarise() {  # summarise NAME RC: one line of figures, or the failure
  local name=$1 rc=$2 log=$scratch/$1.log
  local execs rate cov units
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$({ grep -o 'cov: [0-9]*' "$log" || true; } | tail -1 | cut -d' ' -f2)
  units=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
  printf '%-18s execs %-10s execs/s %-7s cov %-6s new units %-5s (seeds %s)\n' "$name" \
    "${execs:-?}" "${rate:-?}" "${cov:-?}" "${units:-?}" "$(cat "$scratch/$name/seeds")"
  if [[ $rc -ne 0 ]]; then
    echo "FAIL: fuzz_$name exited $rc; last lines of $log:" >&2
    tail -40 "$log" >&2
    echo "reproducer(s): $(find "$scratch/$name/artifacts" -type f | tr '\n' ' ')" >&2
    # The scratch dir dies with a CI machine: a small reproducer is printed
    # whole, so the log alone rebuilds it (base64 -d > FILE).
    local repro
    while IFS= read -r repro; do
      if [[ $(stat -c %s "$repro") -le 16384 ]]; then
        echo "base64 of $(basename "$repro"):" >&2
        base64 -w 0 "$repro" >&2
        echo >&2
      fi
    done < <(find "$scratch/$name/artifacts" -type f)
    echo "replay: $build/fuzz/fuzz_$name REPRODUCER" >&2
    return 1
  fi
}

jobs=${FUZZ_JOBS:-1}
declare -A rcs
pids=()
names=()
failed=0
for name in "${targets[@]}"; do
  run_target "$name" &
  pids+=($!)
  names+=("$name")
  if [[ ${#pids[@]} -ge $jobs ]]; then
    rc=0; wait "${pids[0]}" || rc=$?
    rcs[${names[0]}]=$rc
    pids=("${pids[@]:1}"); names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  rc=0; wait "${pids[$i]}" || rc=$?
  rcs[${names[$i]}]=$rc
done
for name in "${targets[@]}"; do
  summarise "$name" "${rcs[$name]}" || failed=1
done

if [[ $failed -ne 0 ]]; then
  echo "fuzzing found a failure: fix it, add the reproducer as a regression test and to fuzz/corpus (docs/fuzzing.md)" >&2
  exit 1
fi
rm -rf "$scratch"
echo "fuzzing: no crash in ${#targets[@]} targets"
