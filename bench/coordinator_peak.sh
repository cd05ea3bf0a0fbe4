#!/bin/bash
# Peak RSS (VmHWM) of a cluster coordinator running one pipeline: a
# coordinator and 2 workers x 16 slots over tcp loopback, --http-bind off,
# `apollo11 submit --wait`. One line: BUILD hwm=MB state=STATE MS wall=S.
# usage: bench/coordinator_peak.sh BIN_DIR PIPELINE.yaml  (e.g. build-dev/cli, a
# 100k DAG from bench/gen_dag.py --tasks 100000 --depth 10 --kind noop)
# WRAP="heaptrack -o FILE" runs the coordinator under a tool (its hwm is then
# the tool's; read the tool's own report).
set -u
bin=$1; pipeline=$2; S=$(mktemp -d)
${WRAP:-} "$bin/apollo11-node" start --role=coordinator --state-dir "$S/c" --bind tcp://127.0.0.1:0 \
  --api-bind tcp://127.0.0.1:0 --http-bind off --log-level warn > "$S/c.out" 2> "$S/c.err" &
cp=$!
for _ in $(seq 200); do grep -q workers "$S/c.out" 2>/dev/null && break; sleep 0.1; done
endpoint() { python3 -c "import json,sys; print(next(json.loads(l) for l in open(sys.argv[1]) if l.startswith('{'))[sys.argv[2]])" "$S/c.out" "$1"; }
wep=$(endpoint workers); aep=$(endpoint api)
workers=()
for w in w1 w2; do
  "$bin/apollo11-node" start --role=worker --connect "$wep" --slots 16 --worker-id $w \
    --state-dir "$S/$w" --http-bind off --log-level warn > /dev/null 2>&1 &
  workers+=($!)
done
sleep 1
t0=$(date +%s.%N)
"$bin/apollo11" submit "$pipeline" --wait --json --coordinator "$aep" > "$S/submit.out" 2>&1
t1=$(date +%s.%N)
state=$(python3 -c "import json,sys; t=open(sys.argv[1]).read(); d=json.loads(t[t.index('{'):]); print(d['state'], d['duration_ms'])" "$S/submit.out")
hwm=$(awk '/VmHWM/ {printf "%.1f MB", $2 / 1024}' "/proc/$cp/status")
wall=$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 3))" "$t0" "$t1")
echo "$(basename "$(dirname "$bin")") hwm=$hwm state=$state wall=$wall"
kill -TERM "${workers[@]}"; wait "${workers[@]}" 2>/dev/null
pkill -TERM -P $cp 2>/dev/null  # under WRAP, the coordinator is the wrapper's child
kill -TERM $cp; wait $cp 2>/dev/null
[ -n "${KEEP:-}" ] && echo "kept $S" || rm -rf "$S"
