#!/usr/bin/env bash
# Checks packaging/completions/apollo11.bash against BUILD_DIR's binaries:
# every subcommand `apollo11 --help` lists is offered, a subcommand's flags
# come from its --help, and apollo11-node offers start and the roles. The zsh
# script is syntax-checked when zsh is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
export PATH="$build/cli:$PATH"
# shellcheck source=/dev/null
source packaging/completions/apollo11.bash
complete_line() {  # complete_line WORD... : COMPREPLY for the last word
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  _apollo11
  printf '%s\n' "${COMPREPLY[@]}" | sort
}
fail=0
offered=$(complete_line apollo11 "")
listed=$(apollo11 --help | sed -n '/^Subcommands:/,$p' | awk 'NR>1 && NF {print $1}' | sort)
for sub in $listed; do
  grep -qx "$sub" <<<"$offered" || { echo "FAIL: subcommand $sub is not completed"; fail=1; }
done
grep -qx -- "--state-dir" < <(complete_line apollo11 run --st) || { echo "FAIL: run --st"; fail=1; }
[[ $(complete_line apollo11-node s) == start ]] || { echo "FAIL: apollo11-node s"; fail=1; }
[[ $(complete_line apollo11-node start --role c) == coordinator ]] || { echo "FAIL: --role c"; fail=1; }
grep -qx -- "--authorized-keys" < <(complete_line apollo11-node start --auth) ||
  { echo "FAIL: start --auth"; fail=1; }
if command -v zsh >/dev/null; then
  zsh -n packaging/completions/_apollo11 || { echo "FAIL: zsh syntax"; fail=1; }
fi
[[ $fail == 0 ]] && echo "PASS: bash completion offers every subcommand and their flags"
exit $fail
