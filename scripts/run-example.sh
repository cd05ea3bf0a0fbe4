#!/usr/bin/env bash
# Installs what is missing (Debian packages), builds Apollo-11, and runs the
# example pipeline for real on this machine (embedded: coordinator and worker
# actors in one process, journal in ./.apollo11). This is the README's first
# command. Pass another pipeline file to run that instead.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target apollo11 apollo11-node

pipeline=${1:-examples/hello/pipeline.yaml}
echo "== apollo11 validate $pipeline"
./build/cli/apollo11 validate "$pipeline"
echo "== apollo11 run $pipeline"
status=0
./build/cli/apollo11 run "$pipeline" --state-dir .apollo11 || status=$?
run_id=$(./build/cli/apollo11 runs --state-dir .apollo11 --limit 1 --json |
         python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["run_id"])')
echo "== apollo11 history $run_id   (every transition, with its reason)"
./build/cli/apollo11 history "$run_id" --state-dir .apollo11
exit $status
