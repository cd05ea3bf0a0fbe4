#!/usr/bin/env bash
# Starts (or stops) a real 3-member etcd cluster on loopback ports for the
# HA tests, once for the suite (CTest fixture etcd_cluster):
#   etcd_cluster.sh start STATE_FILE   3 members, data in a fresh /tmp dir;
#                                      writes KEY=VALUE lines to STATE_FILE
#   etcd_cluster.sh stop STATE_FILE    stops them and removes the dir
# Keys: DIR, ETCD_ENDPOINTS (comma-separated client URLs), ETCD_PIDS
# (space-separated, member order). Needs Debian's etcd-server
# (scripts/setup.sh --with-tests).
set -euo pipefail

cmd=${1:?start or stop}
state=${2:?state file}


stop() {
  [[ -f $state ]] || return 0
  # shellcheck disable=SC1090
  source "$state"
  for pid in ${ETCD_PIDS:-}; do
    kill -CONT "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
  done
  for pid in ${ETCD_PIDS:-}; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  [[ -n ${DIR:-} && -d $DIR ]] && rm -rf "$DIR"
  rm -f "$state"
}

if [[ $cmd == stop ]]; then
  stop
  exit 0
fi
command -v etcd >/dev/null || { echo "etcd not installed (apt-get install etcd-server)" >&2; exit 1; }

stop  # leftovers of an interrupted run
DIR=$(mktemp -d /tmp/apollo11-etcd.XXXXXX)
names=(e1 e2 e3)
declare -A client peer
# Six distinct ports in one draw: separate draws may repeat a port.
mapfile -t ports < <(python3 "$(dirname "$0")/free_ports.py" 6)
[[ ${#ports[@]} -eq 6 ]] || { echo "could not pick 6 free ports" >&2; exit 1; }
cluster=""
i=0
for n in "${names[@]}"; do
  client[$n]=${ports[i]}
  peer[$n]=${ports[i + 1]}
  i=$((i + 2))
  cluster+="${cluster:+,}$n=http://127.0.0.1:${peer[$n]}"
done
endpoints=""
pids=""
for n in "${names[@]}"; do
  etcd --name "$n" --data-dir "$DIR/$n" \
    --listen-client-urls "http://127.0.0.1:${client[$n]}" \
    --advertise-client-urls "http://127.0.0.1:${client[$n]}" \
    --listen-peer-urls "http://127.0.0.1:${peer[$n]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${peer[$n]}" \
    --initial-cluster "$cluster" --initial-cluster-state new \
    --initial-cluster-token "apollo11-test-$$" \
    --heartbeat-interval 100 --election-timeout 1000 \
    >"$DIR/$n.log" 2>&1 &
  pids+="${pids:+ }$!"
  endpoints+="${endpoints:+,}http://127.0.0.1:${client[$n]}"
done
{
  echo "DIR=$DIR"
  echo "ETCD_ENDPOINTS=$endpoints"
  echo "ETCD_PIDS=\"$pids\""
} >"$state"

# Ready when a lease can be granted (needs a quorum and a raft leader).
first=${endpoints%%,*}
for _ in $(seq 150); do
  if curl -sf -m 1 -X POST "$first/v3/lease/grant" -d '{"TTL":2}' | grep -q '"ID"'; then
    echo "etcd cluster up: $endpoints"
    exit 0
  fi
  sleep 0.2
done
echo "etcd cluster did not come up; logs in $DIR" >&2
tail -5 "$DIR"/*.log >&2 || true
exit 1
