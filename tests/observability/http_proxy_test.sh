#!/usr/bin/env bash
# The reverse-proxy recipe of docs/operations.md ("Behind a reverse proxy"),
# as written, in a real nginx (Debian's nginx-light) in front of a node
# started with --http-base-path /apollo and a tokens file: the dashboard
# page, its assets, the health probe and the API answer through the proxy,
# and the node still checks each caller's token. Usage:
#   http_proxy_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $nginx_bin ]] || { echo "FAIL: nginx is not installed (scripts/setup.sh --with-tests installs nginx-light)"; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; tail -20 node.err nginx.err 2>/dev/null; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
node_port=$(free_port)
proxy_port=$(free_port)

# The recipe: the document's ```nginx block, its node port made this node's.
recipe=$(awk '/^```nginx$/{on=1; next} on && /^```$/{exit} on' "$src/docs/operations.md")
[[ $recipe == *"location /apollo/"* ]] || fail "no nginx recipe found in docs/operations.md"
recipe=${recipe//127.0.0.1:8011/127.0.0.1:$node_port}
mkdir -p tmp
user_line=""
[[ $EUID == 0 ]] && user_line="user root;"
cat >nginx.conf <<CONF
$user_line
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/nginx.err;
events {}
http {
  access_log off;
  client_body_temp_path $tmp/tmp;
  proxy_temp_path $tmp/tmp;
  fastcgi_temp_path $tmp/tmp;
  uwsgi_temp_path $tmp/tmp;
  scgi_temp_path $tmp/tmp;
  server {
    listen 127.0.0.1:$proxy_port;
$recipe
  }
}
CONF
"$nginx_bin" -t -p "$tmp" -c "$tmp/nginx.conf" >nginx.check 2>&1 || fail "nginx -t: $(cat nginx.check)"

token=$("$build/cli/apollo11" token create ops operator --append tokens 2>/dev/null)
"$build/cli/apollo11-node" start --role=all --state-dir "$tmp/state" --bind tcp://127.0.0.1:0 \
  --api-bind tcp://127.0.0.1:0 --http-bind "127.0.0.1:$node_port" --http-base-path /apollo \
  --api-tokens tokens 2>node.err >/dev/null &
pids+=($!)
"$nginx_bin" -p "$tmp" -c "$tmp/nginx.conf" 2>>nginx.err &
pids+=($!)
proxy=http://127.0.0.1:$proxy_port
for _ in $(seq 100); do
  [[ $(curl -s -o /dev/null -w '%{http_code}' "$proxy/apollo/healthz" || true) == 200 ]] && break
  sleep 0.1
done
[[ $(curl -s -o /dev/null -w '%{http_code}' "$proxy/apollo/healthz") == 200 ]] ||
  fail "/apollo/healthz through the proxy"
echo "ok: the health probe answers through the proxy"

page=$(curl -sS "$proxy/apollo/") || fail "the dashboard page"
[[ $page == *'<meta name="apollo11-base" content="/apollo">'* ]] || fail "the page names no base: $page"
script=$(grep -o 'src="/apollo/assets/app\.[0-9a-f]*\.js"' <<<"$page" | cut -d'"' -f2)
[[ -n $script ]] || fail "the page links no script below the base"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$proxy$script") == 200 ]] || fail "the script $script"
echo "ok: the dashboard and its assets are served below /apollo/"

[[ $(curl -s -o /dev/null -w '%{http_code}' "$proxy/apollo/api/runs") == 401 ]] ||
  fail "an anonymous API read through the proxy was not refused"
who=$(curl -sS -H "Authorization: Bearer $token" "$proxy/apollo/api/whoami")
[[ $who == *'"name":"ops"'* && $who == *'"roles":"operator"'* ]] || fail "whoami through the proxy: $who"
[[ $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "$proxy/apollo/api/runs") == 200 ]] ||
  fail "an operator's read through the proxy"
echo "ok: the node checks each caller's token through the proxy"

# A browser's change through the proxy: its own origin passes the check (the
# unknown run is then 404), another site's is refused.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" \
  -H "Origin: $proxy" "$proxy/apollo/api/runs/r-none/cancel")
[[ $code == 404 ]] || fail "a same-origin change through the proxy got $code, want 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" \
  -H "Origin: http://evil.example" "$proxy/apollo/api/runs/r-none/cancel")
[[ $code == 403 ]] || fail "a cross-origin change through the proxy got $code, want 403"
echo "ok: the Origin check works through the proxy (Host passed as \$http_host)"
# The CLI reaches the node below the base, through the proxy, with a token.
out=$("$build/cli/apollo11" cluster --http "http://127.0.0.1:$proxy_port/apollo" --api-token "$token" 2>&1) ||
  fail "apollo11 cluster through the proxy: $out"
[[ $out == *"no HA: a single coordinator"* ]] || fail "apollo11 cluster through the proxy said: $out"
echo "ok: apollo11 cluster --http URL/BASE through the proxy"
echo "PASS: reverse proxy recipe"
