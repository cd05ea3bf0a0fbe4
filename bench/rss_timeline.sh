#!/usr/bin/env bash
# The coordinator's memory over one cluster run: starts a coordinator and two
# workers (4 slots each, --prefetch 64) on loopback, submits PIPELINE with
# `apollo11 submit --wait`, samples the coordinator's VmRSS every 0.1 s, and
# prints the wall time, VmHWM, RssAnon and RssFile at the end. The samples
# (seconds since start, then VmRSS, RssAnon and RssFile in KB) are left in
# OUT/rss.trace. docs/PERFORMANCE.md, "Memory at 100k and 1M tasks", says
# where the coordinator's peak sits.
#   bench/rss_timeline.sh BIN_DIR PIPELINE OUT
#   e.g. bench/rss_timeline.sh build/cli /tmp/scale-100000/pipeline.yaml /tmp/rss
# (python3 -c 'import sys; sys.path.insert(0, "bench"); import gen_dag;
#  gen_dag.generate("/tmp/scale-100000", 100000, 10, "noop", seed=2)' writes
# the harness's 100k noop DAG.)
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: bench/rss_timeline.sh BIN_DIR PIPELINE OUT" >&2
  exit 2
fi
bin=$1 pipeline=$2 out=$3
rm -rf "$out"
mkdir -p "$out"

"$bin/apollo11-node" start --role=coordinator --state-dir "$out/c" --bind tcp://127.0.0.1:0 \
  --api-bind tcp://127.0.0.1:0 --http-bind 127.0.0.1:0 --log-level warn >"$out/c.out" 2>"$out/c.err" &
coordinator=$!
pids=("$coordinator")
# shellcheck disable=SC2317  # called by the trap
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT

for _ in $(seq 150); do
  grep -q '"workers"' "$out/c.out" 2>/dev/null && break
  sleep 0.2
done
field() { { grep -o "\"$1\":\"[^\"]*\"" "$out/c.out" || true; } | cut -d'"' -f4; }
workers=$(field workers)
api=$(field api)
if [[ -z $workers || -z $api ]]; then
  echo "the coordinator did not serve: $(head -3 "$out/c.err")" >&2
  exit 1
fi
for i in 0 1; do
  "$bin/apollo11-node" start --role=worker --connect "$workers" --slots 4 --prefetch 64 \
    --worker-id "w$i" --state-dir "$out/w$i" --log-level warn >/dev/null 2>"$out/w$i.err" &
  pids+=($!)
done
sleep 2

since() { awk -v now="$(date +%s.%N)" -v t0="$1" 'BEGIN { printf "%.2f", now - t0 }'; }
start=$(date +%s.%N)
(
  while kill -0 "$coordinator" 2>/dev/null; do
    kb=$(awk '/^(VmRSS|RssAnon|RssFile)/ {printf "%s ", $2}' "/proc/$coordinator/status" \
      2>/dev/null || true)
    echo "$(since "$start") ${kb:-0 0 0}"
    sleep 0.1
  done
) >"$out/rss.trace" &
pids+=($!)

rc=0
"$bin/apollo11" submit "$pipeline" --wait --json --coordinator "$api" >"$out/submit.json" \
  2>"$out/submit.err" || rc=$?
wall=$(since "$start")
status=$(grep -E '^(VmHWM|RssAnon|RssFile)' "/proc/$coordinator/status" | tr -s ' \t' ' ' | tr '\n' ' ')
echo "submit exit $rc, wall $wall s; coordinator: $status"
exit "$rc"
