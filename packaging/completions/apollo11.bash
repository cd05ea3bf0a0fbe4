# bash completion for apollo11 and apollo11-node. Subcommands are listed
# here; each subcommand's flags are read from its own --help, so they never
# go stale. Installed as /usr/share/bash-completion/completions/apollo11
# (and a link named apollo11-node).

_apollo11_flags() {
  "$1" "${@:2}" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}

_apollo11() {
  local cur prev cmd sub
  COMPREPLY=()
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  cmd=${COMP_WORDS[0]}
  sub=${COMP_WORDS[1]}
  local subs
  if [[ ${cmd##*/} == apollo11-node ]]; then
    subs="start"
  else
    subs="validate run rerun history runs status submit cancel workers explain confirm keygen token logs gc trace audit pipelines trigger pause unpause backfill cluster"
  fi
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W "$subs --help --version" -- "$cur"))
    return
  fi
  if [[ $sub == token && $COMP_CWORD -eq 2 && $cur != -* ]]; then
    COMPREPLY=($(compgen -W "create" -- "$cur"))
    return
  fi
  if [[ $sub == token && $COMP_CWORD -eq 4 && $cur != -* ]]; then
    COMPREPLY=($(compgen -W "viewer operator admin" -- "$cur"))
    return
  fi
  if [[ $sub == pipelines && $COMP_CWORD -eq 2 && $cur != -* ]]; then
    COMPREPLY=($(compgen -W "list add show versions diff rm" -- "$cur"))
    return
  fi
  case $prev in
    --role) COMPREPLY=($(compgen -W "coordinator worker all" -- "$cur")); return ;;
    --log-level) COMPREPLY=($(compgen -W "trace debug info warn error off" -- "$cur")); return ;;
    --log-format) COMPREPLY=($(compgen -W "json text" -- "$cur")); return ;;
    --containment) COMPREPLY=($(compgen -W "auto cgroup process-tree" -- "$cur")); return ;;
    --config|--state-dir|--curve-key|--authorized-keys|--server-key|--api-token-file|--key|\
    --api-tokens|--append|--http-tls-cert|--http-tls-key|--http-tls-client-ca|--secrets-dir)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_apollo11_flags "$cmd" "$sub")" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}

complete -F _apollo11 apollo11 apollo11-node
