#!/usr/bin/env bash
# Builds the dashboard (web/) into one generated C++ file that embeds it.
# Usage: build-dashboard.sh SOURCE_DIR WORK_DIR OUTPUT_CC
#   SOURCE_DIR  the repository's web/ (package.json, package-lock.json, src/)
#   WORK_DIR    a directory in the build tree: the sources are copied there,
#               `npm ci` installs the locked packages there (again only when
#               the lockfile changed), tsc type-checks, esbuild bundles
#   OUTPUT_CC   the .cc that scripts/embed_assets.py writes
# The notices of the bundled npm packages and the compiled-in C++ headers
# (scripts/third_party_notices.py, with the repository's NOTICE) are embedded
# as licenses.txt and left in WORK_DIR/dist for the .deb.
# CMake runs it as a custom command; nothing it writes is committed.
set -euo pipefail

src=$1
work=$2
out=$3
here=$(cd "$(dirname "$0")" && pwd)

for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "build-dashboard: '$tool' is not installed; run scripts/setup.sh (Debian packages nodejs, npm)" >&2
    exit 1
  fi
done

mkdir -p "$work"
cp "$src/package.json" "$src/package-lock.json" "$src/tsconfig.json" "$work/"
rm -rf "$work/src" "$work/static" "$work/tests"
cp -R "$src/src" "$src/static" "$src/tests" "$work/"

cd "$work"
if ! cmp -s package-lock.json .installed-lock 2>/dev/null || [[ ! -d node_modules ]]; then
  echo "build-dashboard: npm ci (the locked packages of web/package-lock.json)" >&2
  if ! npm ci --no-audit --no-fund --loglevel=error >&2; then
    echo "build-dashboard: 'npm ci' failed: the npm registry must be reachable for the first build (or a filled npm cache)" >&2
    exit 1
  fi
  cp package-lock.json .installed-lock
fi

./node_modules/.bin/tsc --noEmit -p tsconfig.json
rm -rf dist
mkdir -p dist
cp static/* dist/
./node_modules/.bin/esbuild src/main.ts --bundle --minify --target=es2020 \
  --format=iife --outfile=dist/app.js --log-level=warning --metafile=meta.json
cp node_modules/uplot/dist/uPlot.min.css dist/uplot.css
# The HTTP API's description, served at /api/v1/openapi.json.
cp "$src/../docs/api/openapi.json" dist/openapi.json
python3 "$here/third_party_notices.py" "$src/.." meta.json node_modules dist/licenses.txt
python3 "$here/embed_assets.py" dist "$out"
