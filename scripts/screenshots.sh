#!/usr/bin/env bash
# Regenerates docs/screenshots, every PNG there: each dashboard page at
# 1366x768 on a 300-task run, a 10,000-task run, a small run with a handled
# timeout, its alerts and a task flagged slow (web/tests/screenshots.mjs),
# each page also checked by axe-core. Builds nothing: it runs the apollo11-node and
# apollo11 of an existing build, and the npm packages that build installed.
# Usage: scripts/screenshots.sh [BUILD_DIR] [-- ARGS for screenshots.mjs]
#   BUILD_DIR  default build
#   ARGS       e.g. --only run-300,pipeline; --assets DIR to shoot a dashboard
#              bundled since the node was built (docs/dashboard.md)
# Exits 1 if a page has a serious or critical accessibility violation (the
# shots are written anyway). Takes about a minute; Debian's chromium needed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
build=build
if [[ $# -gt 0 && $1 != -- ]]; then build=$1; shift; fi
[[ ${1:-} == -- ]] && shift
build=$(cd "$build" && pwd)

for f in "$build/cli/apollo11-node" "$build/cli/apollo11"; do
  if [[ ! -x $f ]]; then
    echo "screenshots: no $f: build the project first (cmake --build $build)" >&2
    exit 1
  fi
done
# The npm packages (playwright-core, axe-core): the build's (its `npm ci` of
# web/package-lock.json), else web/node_modules if `npm ci` was run there.
modules=
for dir in "$build/web" "$repo/web"; do
  if [[ -d $dir/node_modules/playwright-core && -d $dir/node_modules/axe-core ]]; then modules=$dir; break; fi
done
if [[ -z $modules ]]; then
  echo "screenshots: no node_modules with playwright-core and axe-core in $build/web or web/: build the project (or run npm ci in web/)" >&2
  exit 1
fi

# The scripts as they are in the repository, run from a directory beside
# those node_modules so that node finds them.
tools=$(mktemp -d "$modules/.screenshots.XXXXXX")
scratch=$(mktemp -d "${TMPDIR:-/tmp}/apollo11-screenshots.XXXXXX")
trap 'rm -rf "$tools" "$scratch"' EXIT
cp "$repo"/web/tests/{screenshots,harness,a11y}.mjs "$tools/"

# $APOLLO11_SCREENSHOTS_DIR: write the PNGs there instead (the docs test).
node "$tools/screenshots.mjs" --node "$build/cli/apollo11-node" --cli "$build/cli/apollo11" \
  --out "$scratch" --shots "${APOLLO11_SCREENSHOTS_DIR:-$repo/docs/screenshots}" "$@"
