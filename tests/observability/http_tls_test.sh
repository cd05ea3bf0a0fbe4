#!/usr/bin/env bash
# HTTPS on a node's HTTP port, seen from outside (issue 37): a CA and server
# certificates made here with openssl(1), the node driven with curl(1) and
# openssl s_client. Checks: HTTPS answers with the CA's certificate; plain
# HTTP on the port is told to use https; TLS 1.1 is refused (while a control
# server shows this client does speak 1.1, so the refusal is the node's);
# a renewed certificate is served after SIGHUP with no restart, a broken one
# is not taken; with --http-tls-client-ca a client needs a certificate.
# Usage: http_tls_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
node_bin=$build/cli/apollo11-node
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; for f in node*.err; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# A CA, and certificates for 127.0.0.1 signed by it.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key \
  -out ca.pem -days 2 -subj /CN=apollo11-test-ca 2>/dev/null
issue() {  # issue NAME CN [extension]
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1.key" \
    -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$1.pem" \
    -days 1 -extfile <(printf '%s\n' "${3:-subjectAltName=IP:127.0.0.1}") 2>/dev/null
}
issue first first-cert
issue second second-cert
issue client client-cert "extendedKeyUsage=clientAuth"
cp first.pem served.pem
cp first.key served.key

start_node() {  # start_node NAME PORT EXTRA...
  local name=$1 port=$2
  shift 2
  "$node_bin" start --role=all --state-dir "$tmp/$name" --bind tcp://127.0.0.1:0 \
    --api-bind tcp://127.0.0.1:0 --http-bind "127.0.0.1:$port" \
    --http-tls-cert served.pem --http-tls-key served.key "$@" 2>"$name.err" >/dev/null &
  pids+=($!)
  for _ in $(seq 100); do
    grep -q 'serving HTTPS on' "$name.err" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "$name did not start"
}
served_cn() {  # the CN of the certificate served on PORT
  openssl s_client -connect "127.0.0.1:$1" -CAfile ca.pem </dev/null 2>/dev/null |
    openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//'
}

port=$(free_port)
start_node node1 "$port"
node_pid=${pids[-1]}

# HTTPS with the CA: answered.
out=$(curl -sS --cacert ca.pem "https://127.0.0.1:$port/api/whoami") || fail "curl over HTTPS: $out"
[[ $out == *'"name":"anonymous"'* ]] || fail "unexpected whoami over HTTPS: $out"
curl -sS --cacert ca.pem --tlsv1.2 --tls-max 1.2 -o /dev/null "https://127.0.0.1:$port/healthz" ||
  fail "TLS 1.2 was refused"
echo "ok: HTTPS answers, TLS 1.2 and up"

# The CLI's own HTTP client speaks HTTPS with the CA, and refuses without it.
cli_bin=$build/cli/apollo11
out=$("$cli_bin" cluster --http "https://127.0.0.1:$port" --cacert ca.pem 2>&1) ||
  fail "apollo11 cluster over HTTPS: $out"
[[ $out == *"no HA: a single coordinator"* ]] || fail "apollo11 cluster over HTTPS said: $out"
if out=$("$cli_bin" cluster --http "https://127.0.0.1:$port" 2>&1); then
  fail "apollo11 cluster trusted an unknown CA: $out"
fi
[[ $out == *"--cacert"* ]] || fail "an unknown CA's refusal does not say what to give: $out"
echo "ok: apollo11 cluster speaks HTTPS with --cacert"

# Plain HTTP on the HTTPS port: told to use https, not left hanging.
code=$(curl -s -o plain.out -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)
[[ $code == 400 ]] || fail "plain HTTP got $code, want 400"
grep -q "this port serves HTTPS" plain.out || fail "plain HTTP's answer: $(cat plain.out)"
echo "ok: plain HTTP is refused (400, use https://)"

# TLS 1.1: a control server shows this client speaks it; the node refuses it.
control=$(free_port)
openssl s_server -accept "$control" -cert first.pem -key first.key -tls1_1 \
  -cipher 'DEFAULT:@SECLEVEL=0' -www >/dev/null 2>&1 &
pids+=($!)
sleep 0.5
control_out=$(openssl s_client -connect "127.0.0.1:$control" -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' \
  </dev/null 2>&1 || true)
# A session was made when s_client names its cipher ("New, ..., Cipher is
# X"; "(NONE)" when the handshake failed).
session() { grep -q "^New, .*Cipher is [A-Z]" <<<"$1" && grep -q "Protocol  *: TLSv1.1" <<<"$1"; }
session "$control_out" || fail "the control server did not speak TLS 1.1 with this client: $control_out"
node_out=$(openssl s_client -connect "127.0.0.1:$port" -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' \
  </dev/null 2>&1 || true)
if session "$node_out"; then fail "the node accepted TLS 1.1: $node_out"; fi
grep -qi "protocol version\|no protocols available\|unsupported protocol" <<<"$node_out" ||
  fail "TLS 1.1 was not refused with a protocol alert: $node_out"
echo "ok: TLS 1.1 is refused"

# A renewed certificate is served after SIGHUP, without a restart.
[[ $(served_cn "$port") == first-cert ]] || fail "served $(served_cn "$port"), want first-cert"
cp second.pem served.pem
cp second.key served.key
kill -HUP "$node_pid"
for _ in $(seq 100); do
  grep -q "reload: HTTPS serves" node1.err && break
  sleep 0.1
done
[[ $(served_cn "$port") == second-cert ]] || fail "after SIGHUP served $(served_cn "$port")"
kill -0 "$node_pid" || fail "the node exited on SIGHUP"
echo "ok: a renewed certificate is served after SIGHUP (same process)"

# A broken certificate is not taken: the old one stays.
echo "not a certificate" >served.pem
kill -HUP "$node_pid"
# The whole reload is refused (as for any bad setting), naming the file.
refusal="reload failed, keeping the running configuration: --http-tls-cert served.pem does not load"
for _ in $(seq 100); do
  grep -q "$refusal" node1.err && break
  sleep 0.1
done
grep -q "$refusal" node1.err || fail "a broken certificate was not reported"
[[ $(served_cn "$port") == second-cert ]] || fail "after a broken reload served $(served_cn "$port")"
echo "ok: a broken certificate is refused at reload, the old one is still served"

# With a client CA, a client needs a certificate signed by it.
cp second.pem served.pem
port2=$(free_port)
start_node node2 "$port2" --http-tls-client-ca ca.pem
if curl -sS --cacert ca.pem -o /dev/null "https://127.0.0.1:$port2/api/whoami" 2>/dev/null; then
  fail "a client without a certificate was answered"
fi
out=$(curl -sS --cacert ca.pem --cert client.pem --key client.key "https://127.0.0.1:$port2/api/whoami") ||
  fail "a client with a certificate was refused: $out"
[[ $out == *anonymous* ]] || fail "unexpected answer with a client certificate: $out"
echo "ok: --http-tls-client-ca requires a client certificate"

# Bad flags are refused at start with a reason.
err=$("$node_bin" start --role=all --state-dir "$tmp/bad" --http-tls-cert served.pem 2>&1 || true)
[[ $err == *"give --http-tls-cert and --http-tls-key together"* ]] || fail "cert without key: $err"
err=$("$node_bin" start --role=all --state-dir "$tmp/bad" --http-bind 127.0.0.1:0 \
  --http-tls-cert served.pem --http-tls-key first.key 2>&1 || true)
[[ $err == *"is not the key of --http-tls-cert"* ]] || fail "mismatched key: $err"
echo "ok: bad TLS flags are refused at start"
echo "PASS: HTTPS checks"
