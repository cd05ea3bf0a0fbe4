#!/bin/bash
# A/B of the cost of metrics (docs/PERFORMANCE.md): noop cluster throughput,
# a coordinator and 2 worker processes with 2 slots each over tcp loopback;
# binaries from BIN_A run with --http-bind off (no metrics collected), from
# BIN_B with metrics on; the order alternates each round. One line per run:
# "off|on DURATION_MS STATE".
# usage: bench/metrics_ab.sh BIN_A BIN_B ROUNDS TASKS  (e.g. build-dev/cli twice)
A=$1; B=$2; ROUNDS=$3; TASKS=$4
W=$(mktemp -d)
python3 "$(dirname "$0")/gen_dag.py" --tasks $TASKS --depth 10 --kind noop --seed 1 --out $W/dag >/dev/null
run_one() {  # $1 = bin dir, $2 = label, $3 = extra flags for every node
  local bin=$1 S=$W/state-$2-$RANDOM
  mkdir -p $S
  $bin/apollo11-node start --role=coordinator --state-dir $S/c --bind tcp://127.0.0.1:0 --api-bind tcp://127.0.0.1:0 $3 --log-level warn > $S/c.out 2>$S/c.err &
  local cp=$!
  for i in $(seq 100); do [ -s $S/c.out ] && break; sleep 0.05; done
  local wep=$(python3 -c "import json;print(json.loads(open('$S/c.out').readline())['workers'])")
  local aep=$(python3 -c "import json;print(json.loads(open('$S/c.out').readline())['api'])")
  $bin/apollo11-node start --role=worker --connect $wep --slots 2 --worker-id w1 --state-dir $S/w1 $3 --log-level warn > /dev/null 2>&1 &
  local w1=$!
  $bin/apollo11-node start --role=worker --connect $wep --slots 2 --worker-id w2 --state-dir $S/w2 $3 --log-level warn > /dev/null 2>&1 &
  local w2=$!
  for i in $(seq 100); do n=$($bin/apollo11 workers --json --coordinator $aep 2>/dev/null | python3 -c "import json,sys;print(len(json.load(sys.stdin)))" 2>/dev/null); [ "$n" = "2" ] && break; sleep 0.1; done
  local out=$($bin/apollo11 submit $W/dag/pipeline.yaml --wait --json --coordinator $aep 2>&1)
  local ms=$(echo "$out" | python3 -c "import json,sys;t=sys.stdin.read();d=json.loads(t[t.index('{'):]);print(d['duration_ms'], d['state'])" 2>&1)
  echo "$2 $ms"
  kill -TERM $w1 $w2 2>/dev/null; wait $w1 $w2 2>/dev/null
  kill -TERM $cp; wait $cp 2>/dev/null
  rm -rf $S
}
for r in $(seq $ROUNDS); do
  if [ $((r % 2)) = 1 ]; then run_one $A off "--http-bind off"; run_one $B on "--http-bind 127.0.0.1:0"; else run_one $B on "--http-bind 127.0.0.1:0"; run_one $A off "--http-bind off"; fi
done
rm -rf "$W"
