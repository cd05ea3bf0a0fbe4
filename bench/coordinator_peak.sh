#!/bin/bash
# Peak RSS (VmHWM) of a cluster coordinator running one pipeline: a
# coordinator and 2 workers x 16 slots over tcp loopback, --http-bind off,
# `apollo11 submit --wait`. One line: BUILD hwm=MB state=STATE MS wall=S.
# usage: bench/coordinator_peak.sh BIN_DIR PIPELINE.yaml  (e.g. build-dev/cli, a
# 100k DAG from bench/gen_dag.py --tasks 100000 --depth 10 --kind noop)
bin=$1; S=$(mktemp -d)
$bin/apollo11-node start --role=coordinator --state-dir $S/c --bind tcp://127.0.0.1:0 --api-bind tcp://127.0.0.1:0 --http-bind off --log-level warn > $S/c.out 2>$S/c.err &
cp=$!
for i in $(seq 200); do grep -q workers $S/c.out 2>/dev/null && break; sleep 0.1; done
wep=$(python3 -c "import json;print(json.loads(open('$S/c.out').readline())['workers'])")
aep=$(python3 -c "import json;print(json.loads(open('$S/c.out').readline())['api'])")
for w in w1 w2; do $bin/apollo11-node start --role=worker --connect $wep --slots 16 --worker-id $w --state-dir $S/$w --http-bind off --log-level warn > /dev/null 2>&1 & done
sleep 1
t0=$(date +%s.%N)
$bin/apollo11 submit $2 --wait --json --coordinator $aep > $S/submit.out 2>&1
t1=$(date +%s.%N)
state=$(python3 -c "import json,sys;t=open('$S/submit.out').read();d=json.loads(t[t.index('{'):]);print(d['state'], d['duration_ms'])")
echo "$(basename $(dirname $bin)) hwm=$(grep VmHWM /proc/$cp/status | awk '{print $2/1024 " MB"}') state=$state wall=$(echo "$t1-$t0"|bc)"
pkill -TERM -f "worker-id w[12] --state-dir $S" ; kill -TERM $cp; wait 2>/dev/null
rm -rf $S
