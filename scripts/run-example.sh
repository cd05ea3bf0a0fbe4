#!/usr/bin/env bash
# Installs what is missing (Debian packages), builds the two binaries it runs
# (apollo11 and apollo11-node), and runs the example pipeline for real on
# this machine (embedded: coordinator and worker actors in one process,
# journal in the CLI's default state dir, so `apollo11 runs` finds it
# afterwards). This is the README's first command. Pass another pipeline
# file to run that instead.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# The same build type and flags as scripts/test.sh's release build (unity
# batches, line tables only), so the test command reuses what is built here.
cmake -S . -B build -G Ninja -DCMAKE_UNITY_BUILD=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" >/dev/null
log=build/run-example-build.log
started=$SECONDS
cmake --build build -j "$(nproc)" --target apollo11 apollo11-node >"$log" 2>&1 &
builder=$!
# One line of progress (ninja's [done/total]) instead of every compile line.
while kill -0 "$builder" 2>/dev/null; do
  step=$(tail -n 1 "$log" 2>/dev/null | grep -o '^\[[0-9]*/[0-9]*\]' || true)
  printf '\r== building apollo11 and apollo11-node %s %ds ' "$step" "$((SECONDS - started))"
  sleep 1
done
if ! wait "$builder"; then
  printf '\n'
  tail -n 40 "$log"
  echo "the build failed; the whole log is in $log" >&2
  exit 1
fi
printf '\r== built apollo11 and apollo11-node in %ds%*s\n' "$((SECONDS - started))" 20 ''

pipeline=${1:-examples/hello/pipeline.yaml}
echo "== apollo11 validate $pipeline"
./build/cli/apollo11 validate "$pipeline"
echo "== apollo11 run $pipeline"
status=0
./build/cli/apollo11 run "$pipeline" || status=$?
run_id=$(./build/cli/apollo11 runs --limit 1 --json |
         python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["run_id"])')
echo "== apollo11 history $run_id   (every transition, with its reason)"
./build/cli/apollo11 history "$run_id"
echo "== more: ./build/cli/apollo11 runs, ./build/cli/apollo11 status $run_id"
exit $status
