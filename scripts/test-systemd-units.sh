#!/usr/bin/env bash
# Checks packaging/systemd/*.service with `systemd-analyze verify` (every
# role of the template), with ExecStart pointed at BUILD_DIR's binary so the
# check does not need the package installed. Any warning fails. Exits 77
# (CTest's skip) without systemd-analyze.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze not found: the units are not checked"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for role in coordinator worker all; do
  unit="$tmp/apollo11-node@$role.service"
  sed "s|/usr/bin/apollo11-node|$build/cli/apollo11-node|" packaging/systemd/apollo11-node@.service >"$unit"
  if ! out=$(systemd-analyze verify --man=no "$unit" 2>&1) || [[ -n $out ]]; then
    echo "FAIL: apollo11-node@$role.service:"; echo "$out"; fail=1
  fi
done
for key in Type=notify ExecReload= DynamicUser=yes StateDirectory=apollo11 ProtectSystem=strict \
           NoNewPrivileges=yes LoadCredential=; do
  grep -q "^$key" packaging/systemd/apollo11-node@.service || { echo "FAIL: no $key"; fail=1; }
done
[[ $fail == 0 ]] && echo "PASS: systemd-analyze verify apollo11-node@{coordinator,worker,all}"
exit $fail
