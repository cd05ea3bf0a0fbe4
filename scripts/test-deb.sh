#!/usr/bin/env bash
# Builds the .deb from BUILD_DIR (default ./build) and checks it: the paths
# it installs (dpkg-deb -c), its Depends (from dpkg-shlibdeps, and the client
# libraries opened on first use by name), and that its
# apollo11 and apollo11-node run from an extracted copy (dpkg -x). With
# --install it also installs the package on this machine (dpkg -i, as root),
# runs the installed binaries and the unit check, and purges it again. It
# also runs lintian on it and checks that the third-party notices name every
# bundled component. Exits 77 (CTest's skip) without dpkg-deb.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD/scripts
build=build
install=0
for arg in "$@"; do
  case "$arg" in
    --install) install=1 ;;
    *) build=$arg ;;
  esac
done
if ! command -v dpkg-deb >/dev/null || ! command -v cpack >/dev/null; then
  echo "SKIP: dpkg-deb or cpack not found: the .deb cannot be built or checked here"
  exit 77
fi
# Packs what is built and never builds: a build under a running test suite
# would relink binaries other tests are running (cpack's own preinstall
# build is off, CMAKE_SKIP_INSTALL_ALL_DEPENDENCY).
for bin in apollo11 apollo11-node; do
  [[ -x $build/cli/$bin ]] || { echo "FAIL: $build/cli/$bin is not built (cmake --build $build first)"; exit 1; }
done
man=0  # built (target apollo11_man, part of all) when help2man was found at configure time
if ls "$build"/man/*.1.gz >/dev/null 2>&1; then man=1; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$build" && cpack -G DEB -B "$tmp/out" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; exit 1; }
version=$(sed -n 's/^#define APOLLO11_VERSION "\(.*\)"/\1/p' "$build/generated/cli/version_config.h")
deb="$tmp/out/apollo11_${version}_$(dpkg --print-architecture).deb"
[[ -f $deb ]] || { echo "FAIL: no $deb"; ls "$tmp/out"; exit 1; }
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

fail=0
listing=$(dpkg-deb -c "$deb" | awk '{print $6}')
expected=(
  ./usr/bin/apollo11 ./usr/bin/apollo11-node
  ./usr/lib/systemd/system/apollo11-node@.service
  ./usr/share/apollo11/schema/pipeline.schema.json
  ./usr/share/apollo11/grafana/apollo11.json
  ./usr/share/apollo11/prometheus/apollo11-rules.yml
  ./usr/share/apollo11/prometheus/apollo11-rules.test.yml
  ./usr/share/doc/apollo11/README.md ./usr/share/doc/apollo11/operations.md
  ./usr/share/bash-completion/completions/apollo11
  ./usr/share/bash-completion/completions/apollo11-node
  ./usr/share/zsh/vendor-completions/_apollo11
  ./etc/apollo11/node.yaml ./etc/apollo11/credentials/
  ./usr/share/doc/apollo11/copyright ./usr/share/doc/apollo11/changelog.gz
  ./usr/share/doc/apollo11/NOTICE ./usr/share/doc/apollo11/THIRD-PARTY-NOTICES.txt
  ./usr/share/doc/apollo11/SECURITY.md ./usr/share/doc/apollo11/CHANGELOG.md
  ./usr/share/lintian/overrides/apollo11
)
if [[ $man == 1 ]]; then
  expected+=(./usr/share/man/man1/apollo11.1.gz ./usr/share/man/man1/apollo11-node.1.gz)
fi
for path in "${expected[@]}"; do
  if ! grep -qxF "$path" <<<"$listing"; then echo "FAIL: the package lacks $path"; fail=1; fi
done
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libzmq5 liblmdb0 libyaml-cpp0.7 libsystemd0 libcurl4 libpq5 libmariadb3 libsqlite3-0; do
  if ! grep -q "$lib" <<<"$depends"; then echo "FAIL: Depends lacks $lib: $depends"; fail=1; fi
done
if ! grep -qx /etc/apollo11/node.yaml < <(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles); then
  echo "FAIL: /etc/apollo11/node.yaml is not a conffile"; fail=1
fi

# lintian: no error and no warning that packaging/debian/lintian-overrides
# does not explain.
if ! command -v lintian >/dev/null; then
  echo "FAIL: lintian is not installed (scripts/setup.sh --with-tests installs it)"; fail=1
elif ! lintian --fail-on error,warning --tag-display-limit 0 "$deb" >"$tmp/lintian.log" 2>&1; then
  echo "FAIL: lintian:"; grep -v "root privileges" "$tmp/lintian.log"; fail=1
else
  echo "lintian: no errors or warnings"
fi

dpkg -x "$deb" "$tmp/root"
# The notices name every bundled npm package and compiled-in header package.
notices=$tmp/root/usr/share/doc/apollo11/THIRD-PARTY-NOTICES.txt
web_deps=$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["dependencies"]))' \
  "$here/../web/package.json")
header_pkgs=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import third_party_notices as t; print(" ".join(t.HEADER_PACKAGES))' \
  "$here")
for name in $web_deps $header_pkgs; do
  if ! grep -q "^$name " "$notices" 2>/dev/null; then echo "FAIL: THIRD-PARTY-NOTICES.txt lacks $name"; fail=1; fi
done
for name in $header_pkgs; do
  if ! grep -qF "($name)" "$here/../NOTICE"; then echo "FAIL: NOTICE does not name $name"; fail=1; fi
done
for bin in apollo11 apollo11-node; do
  out=$("$tmp/root/usr/bin/$bin" --version) || { echo "FAIL: $bin --version"; fail=1; continue; }
  echo "extracted: $out"
  if [[ $out != "$bin $version (commit "*", protocol "*")" ]]; then
    echo "FAIL: unexpected version line: $out"; fail=1
  fi
done

if [[ $install == 1 ]]; then
  if dpkg-query -W apollo11 >/dev/null 2>&1; then
    echo "FAIL: apollo11 is already installed here; not touching it"; exit 1
  fi
  dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail=1; }
  /usr/bin/apollo11 --version && /usr/bin/apollo11-node --version || fail=1
  if command -v systemd-analyze >/dev/null; then
    cp /usr/lib/systemd/system/apollo11-node@.service "$tmp/apollo11-node@coordinator.service"
    systemd-analyze verify --man=no "$tmp/apollo11-node@coordinator.service" || fail=1
  fi
  dpkg --purge apollo11 >/dev/null || fail=1
  if [[ -e /usr/bin/apollo11 ]]; then echo "FAIL: /usr/bin/apollo11 left after purge"; fail=1; fi
  echo "installed with dpkg -i, ran, purged"
fi
[[ $fail == 0 ]] && echo "PASS: .deb checks"
exit $fail
