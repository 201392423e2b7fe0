# shellcheck shell=bash
# Sourced by scripts/test. `ensure_test_tools` installs the programs the tests run and the machine
# lacks: zsh, fish and groff (the completion and man-page checks), openssl and ssh-keygen (the key
# tests read keys with them) and Python's `cryptography` (the JWKS tests). With Debian's package
# manager, as root or through passwordless sudo; otherwise it installs nothing and says the one
# command to run. VAULT_SEED_TEST_SKIP=zsh,fish,groff leaves those checks out instead, and
# VAULT_SEED_APT_GET names another apt-get (the tests of this file use it).

# The Debian package of each tool (or Python module, `py:NAME`).
_vs_package() {
  case "$1" in
    groff) echo groff-base ;;
    ssh-keygen) echo openssh-client ;;
    py:cryptography) echo python3-cryptography ;;
    *) echo "$1" ;;
  esac
}

# The tools and modules the tests need that are missing, one per line.
_vs_missing_tools() {
  local tool
  for tool in zsh fish groff openssl ssh-keygen; do
    case ",${VAULT_SEED_TEST_SKIP:-}," in *",$tool,"*) continue ;; esac
    command -v "$tool" >/dev/null 2>&1 || echo "$tool"
  done
  python3 -c 'import cryptography' >/dev/null 2>&1 || echo py:cryptography
}

ensure_test_tools() {
  local missing pkgs=() names=() tool apt sudo=()
  missing=$(_vs_missing_tools)
  [ -z "$missing" ] && return 0
  for tool in $missing; do
    names+=("${tool#py:}")
    pkgs+=("$(_vs_package "$tool")")
  done
  apt=${VAULT_SEED_APT_GET:-apt-get}
  local skip_help=""
  case " ${names[*]} " in *" zsh "* | *" fish "* | *" groff "*)
    skip_help=" (or leave the shell and man-page checks out with VAULT_SEED_TEST_SKIP=zsh,fish,groff)" ;;
  esac
  if ! command -v "$apt" >/dev/null 2>&1; then
    echo "error: the tests need ${names[*]}, which this machine lacks, and there is no \`apt-get\` to install them with" >&2
    echo "  help: install them with your package manager (Debian's names: ${pkgs[*]}), then run scripts/test again$skip_help" >&2
    return 2
  fi
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
      sudo=(sudo -n)
    else
      echo "error: the tests need ${names[*]}, which this machine lacks; installing them needs root" >&2
      echo "  help: sudo apt-get install -y --no-install-recommends ${pkgs[*]}" >&2
      echo "  then run scripts/test again$skip_help" >&2
      return 2
    fi
  fi
  echo "== the tests need ${names[*]}: installing ${pkgs[*]} with apt-get" >&2
  # sudo drops the environment, so DEBIAN_FRONTEND goes through env.
  local run=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive "$apt")
  if ! "${run[@]}" update -qq -o Acquire::Retries=3 >&2 ||
    ! "${run[@]}" install -y -qq --no-install-recommends -o Acquire::Retries=3 "${pkgs[@]}" >/dev/null; then
    echo "error: \`apt-get install ${pkgs[*]}\` failed (its message is above)" >&2
    echo "  help: check that Debian's package archive is reachable, then run scripts/test again" >&2
    return 1
  fi
  missing=$(_vs_missing_tools)
  if [ -n "$missing" ]; then
    echo "error: after installing ${pkgs[*]}, still missing: $(echo "$missing" | sed 's/^py://' | tr '\n' ' ')" >&2
    echo "  help: the \`python3\` on PATH ($(command -v python3)) may not be Debian's: \`python3 -m pip install cryptography\`" >&2
    return 1
  fi
}
