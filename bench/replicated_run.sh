#!/bin/bash
# One large run on a leader that replicates to a standby: a `--role all
# --slots 16` node with --replication async (MODE=sync for sync) and one
# standby following it, `apollo11 submit --wait`, then the standby's journal
# read for the run (both stopped first). Prints the run's state, the peak RSS
# of both, the standby's `runs` listing and its tasks counted by state.
# usage: bench/replicated_run.sh BIN_DIR PIPELINE.yaml  (e.g. build-dev/cli, a
# 1M DAG from bench/gen_dag.py --tasks 1000000 --depth 10 --kind noop)
set -u
B=$1; P=$2; W=$(mktemp -d)
$B/apollo11-node start --role all --slots 16 --state-dir $W/leader --bind tcp://127.0.0.1:0 \
  --api-bind tcp://127.0.0.1:0 --http-bind off --log-level warn --replication-bind tcp://127.0.0.1:0 --insecure \
  --replication-name c1 --replication ${MODE:-async} > $W/leader.out 2> $W/leader.err &
L=$!
for _ in $(seq 100); do [ -s $W/leader.out ] && break; sleep 0.1; done
rep=$(python3 -c "import json;print(json.loads(open('$W/leader.out').readline())['replication'])")
api=$(python3 -c "import json;print(json.loads(open('$W/leader.out').readline())['api'])")
$B/apollo11-node start --role coordinator --state-dir $W/standby --replication-follow $rep --insecure \
  --replication-name s1 --http-bind off --log-level warn > $W/standby.out 2> $W/standby.err &
S=$!
sleep 1
t0=$(date +%s.%N)
/usr/bin/time -f "cli %M KB" $B/apollo11 submit $P --wait --json --coordinator $api > $W/submit.out 2> $W/submit.err
echo "submit rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$t0,1))")"
python3 -c "import json;t=open('$W/submit.out').read();d=json.loads(t[t.index('{'):]);print('state',d['state'],'run',d['run_id'],'duration_ms',d.get('duration_ms'),'omitted',d.get('tasks_omitted'))"
echo "leader hwm $(awk '/VmHWM/{print $2/1024 " MB"}' /proc/$L/status)  standby hwm $(awk '/VmHWM/{print $2/1024 " MB"}' /proc/$S/status)"
sleep 3
kill -TERM $L $S; wait $L $S 2>/dev/null
grep -i -E "refus|error|too large|frame" $W/standby.err $W/leader.err | head -5
$B/apollo11 runs --state-dir $W/standby 2>&1 | head -3
run=$(python3 -c "import json;t=open('$W/submit.out').read();d=json.loads(t[t.index('{'):]);print(d['run_id'])")
# Every task as the standby's journal has it, counted by state.
$B/apollo11 status "$run" --state-dir $W/standby --json 2>/dev/null | python3 -c "
import collections, json, sys
d = json.load(sys.stdin)
print('standby: run', d['state'], dict(collections.Counter(t['state'] for t in d['tasks'].values())))"
[ -n "${KEEP:-}" ] && echo "kept $W" || rm -rf "$W"
