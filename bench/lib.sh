# shellcheck shell=bash
# Sourced by bench/run, bench/memory, bench/raft, bench/latency, bench/verify-scale and
# bench/spec-load: the tools, the servers, the specs and the measured runs they share. See
# bench/README.md for the method.

. scripts/lib/bao.sh
. scripts/lib/cargo.sh

# bench_need COMMAND PACKAGE: a Debian package the bench needs. Installed with apt-get when
# missing and this is root on Debian (as bao is installed when missing), else an error that says
# how.
bench_need() {
  local cmd=$1 pkg=$2
  command -v "$cmd" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== \`$cmd\` is missing: apt-get install -y $pkg" >&2
    if apt-get install -y -qq "$pkg" >&2 || { apt-get update -qq >&2 && apt-get install -y -qq "$pkg" >&2; }; then
      command -v "$cmd" >/dev/null 2>&1 && return 0
    fi
  fi
  echo "error: \`$cmd\` is missing" >&2
  echo "  help: install Debian's \`$pkg\` package (\`apt-get install -y $pkg\`)" >&2
  exit 2
}

# bench_build [NAME...]: build the release binary (and these examples); sets $seed and
# $example_dir. --no-build (build=0) uses what is there.
bench_build() {
  if [ "${build:-1}" = 1 ]; then
    seed=$(cargo_exe vault-seed --release --quiet --locked --bin vault-seed)
    local ex
    for ex in "$@"; do cargo_exe "$ex" --release --quiet --locked --example "$ex" >/dev/null; done
  else
    # BENCH_SEED: another vault-seed binary to measure (one built from an earlier commit).
    seed=${BENCH_SEED:-$(cargo_target_dir)/release/vault-seed}
  fi
  example_dir=$(cargo_target_dir)/release/examples
  [ -x "$seed" ] || { echo "error: \`$seed\` is missing; run without --no-build" >&2; exit 2; }
}

# Pinning: on two cores or more, the server gets CPU 0 and every client CPU 1, as if they ran on
# two machines (a client's CPU is then never taken out of the server's).
if [ "$(nproc)" -ge 2 ]; then
  server_pin=(taskset -c 0)
  client_pin=(taskset -c 1)
  pinning="server on CPU 0, clients on CPU 1"
else
  server_pin=()
  client_pin=()
  pinning="one core: not pinned"
fi

bench_work=$(mktemp -d)
bao_pid=
bench_stop_server() {
  if [ -n "$bao_pid" ]; then
    kill "$bao_pid" 2>/dev/null || true
    wait "$bao_pid" 2>/dev/null || true
    bao_pid=
  fi
}
bench_cleanup() {
  bench_stop_server
  [ -n "${proxy_pid:-}" ] && { kill "$proxy_pid" 2>/dev/null || true; wait "$proxy_pid" 2>/dev/null || true; }
  rm -rf "$bench_work"
}
trap bench_cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The server's time so far, summed over its threads (/proc/PID/task/*/schedstat): "CPU_S WAIT_S",
# the seconds it ran and the seconds it was ready to run but waited for its CPU (taken by other
# processes on a shared machine: noise, not the client's doing).
server_sched() { cat /proc/"$bao_pid"/task/*/schedstat 2>/dev/null | awk '{c += $1; w += $2} END {printf "%.6f %.6f\n", c / 1e9, w / 1e9}'; }

# The requests the server has handled (`vault_core_handle_request_count` of its telemetry: every
# request it routes, this question included), for a server started `counted`.
vault_requests() {
  curl -fsS -H "X-Vault-Token: $VAULT_TOKEN" "$VAULT_ADDR/v1/sys/metrics?format=prometheus" |
    awk '$1 == "vault_core_handle_request_count" {print $2; found = 1} END {if (!found) print 0}'
}

wait_health() { # CURL_ARGS...: until sys/health answers (sealed or not)
  local i
  for i in $(seq 150); do
    curl -sS -o /dev/null "$@" "$VAULT_ADDR/v1/sys/health" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "error: OpenBao did not start; its log:" >&2
  tail -20 "$bench_work/bao.log" >&2
  exit 1
}

# A fresh dev server (in memory), pinned; sets VAULT_ADDR, VAULT_TOKEN, bao_pid. With a file
# name, a file audit device writes every request and answer there (OpenBao 2 takes audit devices
# only from its configuration: openbao.org/docs/configuration/audit). With `counted` as the
# second argument, the server also counts the requests it handles in its telemetry
# ([`vault_requests`]): a count that costs it nothing measurable, where the audit device costs
# it about a third of its CPU.
dev_server() {
  bench_stop_server
  local port config=()
  port=$(free_port)
  : >"$bench_work/server.hcl"
  if [ -n "${1:-}" ]; then
    printf 'audit "file" "bench" {\n  options {\n    file_path = "%s"\n  }\n}\n' "$1" >>"$bench_work/server.hcl"
  fi
  if [ "${2:-}" = counted ]; then
    printf 'telemetry {\n  disable_hostname = true\n  prometheus_retention_time = "1h"\n}\n' >>"$bench_work/server.hcl"
  fi
  [ -s "$bench_work/server.hcl" ] && config=(-config="$bench_work/server.hcl")
  export VAULT_ADDR=http://127.0.0.1:$port VAULT_TOKEN=bench-root
  export BAO_ADDR=$VAULT_ADDR BAO_TOKEN=$VAULT_TOKEN
  unset VAULT_CACERT BAO_CACERT
  HOME=$bench_work "${server_pin[@]}" bao server -dev -dev-root-token-id=bench-root \
    -dev-listen-address="127.0.0.1:$port" "${config[@]}" >"$bench_work/bao.log" 2>&1 &
  bao_pid=$!
  wait_health
}

# A certificate for 127.0.0.1 signed by a CA made here (openssl's command line), once.
tls_files() {
  [ -f "$bench_work/tls/server.pem" ] && return 0
  bench_need openssl openssl
  local d=$bench_work/tls
  mkdir -p "$d"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=vault-seed bench CA" -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$d/ext"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
    -days 2 -extfile "$d/ext" -out "$d/server.pem" 2>/dev/null
}

# A fresh single-node raft server (on disk, fsync per write) with a TLS listener, initialised,
# unsealed, pinned; sets VAULT_ADDR, VAULT_TOKEN, VAULT_CACERT, bao_pid. As tests/suite/common's
# `OpenBao::persistent`.
raft_tls_server() {
  bench_stop_server
  tls_files
  local port cport d=$bench_work/raft
  port=$(free_port)
  cport=$(free_port)
  rm -rf "$d"
  mkdir -p "$d/data"
  cat >"$d/bao.hcl" <<EOF
storage "raft" {
  path = "$d/data"
  node_id = "node1"
}
listener "tcp" {
  address = "127.0.0.1:$port"
  cluster_address = "127.0.0.1:$cport"
  tls_cert_file = "$bench_work/tls/server.pem"
  tls_key_file = "$bench_work/tls/server.key"
}
api_addr = "https://127.0.0.1:$port"
cluster_addr = "https://127.0.0.1:$cport"
disable_mlock = true
EOF
  export VAULT_ADDR=https://127.0.0.1:$port VAULT_CACERT=$bench_work/tls/ca.pem
  export BAO_ADDR=$VAULT_ADDR BAO_CACERT=$VAULT_CACERT
  unset VAULT_TOKEN BAO_TOKEN
  HOME=$bench_work "${server_pin[@]}" bao server -config="$d/bao.hcl" >"$bench_work/bao.log" 2>&1 &
  bao_pid=$!
  wait_health --cacert "$VAULT_CACERT"
  local init
  init=$(bao operator init -key-shares=1 -key-threshold=1 -format=json)
  export VAULT_TOKEN BAO_TOKEN
  VAULT_TOKEN=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["root_token"])' <<<"$init")
  BAO_TOKEN=$VAULT_TOKEN
  bao operator unseal "$(python3 -c 'import json,sys; print(json.load(sys.stdin)["unseal_keys_b64"][0])' <<<"$init")" >/dev/null
  local i
  for i in $(seq 100); do bao token lookup >/dev/null 2>&1 && break; sleep 0.1; done
}

api() { # METHOD PATH [JSON|@FILE]
  curl -fsS ${VAULT_CACERT:+--cacert "$VAULT_CACERT"} -X "$1" -H "X-Vault-Token: $VAULT_TOKEN" \
    ${3:+-d "$3"} "$VAULT_ADDR/v1/$2" >/dev/null
}

# A fresh KV v2 mount named $1, ready for writes.
new_mount() {
  api POST "sys/mounts/$1" '{"type":"kv","options":{"version":"2"}}'
  local i
  # A new KV v2 mount upgrades in the background before its first write is accepted.
  for i in $(seq 100); do api GET "$1/config" 2>/dev/null && return 0; sleep 0.1; done
  echo "error: KV v2 mount \`$1\` never became ready" >&2
  exit 1
}

# gen_specs DIR MOUNT COPIES: COPIES copies of secret-specs/core-service.toml (the real spec's
# six paths in one folder, without the three another application provides), each its own
# application `core-service-NNNN` at
# `ask/core-service-NNNN/{env}` on MOUNT, environment `bench`.
gen_specs() {
  rm -rf "$1"
  mkdir -p "$1"
  python3 - "$1" "$2" "$3" <<'EOF'
import re, sys
d, mount, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
src = open("secret-specs/core-service.toml").read()
# The paths another application provides (ask-db's passwords) are the same in every copy and
# are never written: the bench seeds the six paths vault-seed owns.
src = "".join(t for t in re.split(r"(?m)^(?=\[)", src) if "provided_by = " not in t)
src = re.sub(r'(?m)^mount = "secret"$', f'mount = "{mount}"', src)
src = src.replace("[environments.auh1-dev]", "[environments.bench]")
src = re.sub(r'(?m)^vault_addr = .*\n', "", src)
for i in range(1, copies + 1):
    name = f"core-service-{i:04}"
    text = src.replace('name = "core-service"', f'name = "{name}"')
    text = text.replace('path = "ask/core-service/{env}"', f'path = "ask/{name}/{{env}}"')
    open(f"{d}/{name}.toml", "w").write(text)
EOF
}

# eso_setup SPECDIR ENV: what `verify` checks besides the values, as a platform sets it up: ESO's
# policy (from `vault-seed policy`) and the Kubernetes auth role `eso` that carries it.
eso_setup() {
  "$seed" --specs "$1" policy "$2" | python3 -c 'import json, sys; print(json.dumps({"policy": sys.stdin.read()}))' >"$bench_work/policy.json"
  api PUT sys/policies/acl/eso-ask-push "@$bench_work/policy.json"
  api POST sys/auth/kubernetes '{"type":"kubernetes"}'
  api POST auth/kubernetes/role/eso '{"bound_service_account_names":["external-secrets"],"bound_service_account_namespaces":["external-secrets"],"token_policies":["eso-ask-push"]}'
}

# gen_requests FILE MODE MOUNT COPIES [CONCURRENCY]: the requests vault-seed sends for one case on
# the specs of `gen_specs`, one a line (`METHOD PATH BODY`, BODY `-` or compact JSON), for wrk
# (bench/wrk/seed.lua) and the reqwest ceiling (examples/bench_ceiling.rs). Every case starts with
# the token lookup and the mount detection (sent together), with a `HEAD sys/health` per
# connection vault-seed opens ahead (CONCURRENCY - 2, 16 by default: src/seed's warm-up), then:
#   apply         a LIST per folder, then per path the `cas=0` data
#                 write and the custom_metadata write (KV v2 takes custom_metadata only at
#                 `<mount>/metadata/<path>`: a second request)
#   apply-nometa  the same without the custom_metadata writes (`apply --no-metadata`)
#   read          a LIST per folder, a read per path (a re-run, `plan`)
# A metadata write goes LAG lines after its data write, so that a client without vault-seed's
# wait (data write answered, then metadata) never sends it first. Values are filler of each
# generator's length (hex32 64, fernet 44, masterkey 32, placeholder 11): never secrets.
gen_requests() {
  python3 - "$@" <<'EOF'
import json, os, sys
out, mode, mount, copies = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
conc = int(sys.argv[5]) if len(sys.argv) > 5 else 16
LAG = 64
secrets = [  # secret-specs/core-service.toml: name, field, value length, generator
    ("SECURITY__API_KEY_SALT", "password", 64, "hex32"),
    ("SECURITY__MASTER_ENCRYPTION_KEY", "password", 44, "fernet"),
    ("APP__CORE_SERVICES_MACHINE_TOKEN", "password", 64, "hex32"),
    ("ZITADEL_MASTERKEY", "password", 32, "masterkey"),
    ("IAM_SERVICE__PAT", "value", 11, "placeholder"),
    ("HATCHET__CLIENT_TOKEN", "value", 11, "placeholder"),
]
j = lambda v: json.dumps(v, separators=(",", ":"))
lines = ["GET auth/token/lookup-self -", f"GET sys/internal/ui/mounts/{mount} -"]
# BENCH_NO_WARMUP=1: for a vault-seed from before the warm-up (before 9efad7a), to compare.
if os.environ.get("BENCH_NO_WARMUP") != "1":
    # The token check's and the mount detection's connections, both out at once, and one per
    # warm-up up to the concurrency (src/seed's `run`).
    lines += ["HEAD sys/health -"] * (min(conc, copies * len(secrets)) - 2)
folders = [f"ask/core-service-{i:04}/bench" for i in range(1, copies + 1)]
lines += [f"LIST {mount}/metadata/{f} -" for f in folders]
pending = []
for i, f in enumerate(folders, 1):
    for name, field, n, gen in secrets:
        p = f"{f}/{name}"
        if mode == "read":
            lines.append(f"GET {mount}/data/{p} -")
        else:
            lines.append(f"POST {mount}/data/{p} " + j({"options": {"cas": 0}, "data": {field: "x" * n}}))
            if mode == "apply":
                meta = {"managed-by": "vault-seed", "vault-seed/generators": f"{field}={gen}",
                        "vault-seed/last-action": "create",
                        "vault-seed/last-action-at": "2026-01-01T00:00:00.000000000Z",
                        "vault-seed/spec": f"core-service-{i:04}.toml"}
                pending.append((len(lines) + LAG, f"POST {mount}/metadata/{p} " + j({"custom_metadata": meta})))
        while pending and pending[0][0] <= len(lines):
            lines.append(pending.pop(0)[1])
lines += [m for _, m in pending]
open(out, "w").write("\n".join(lines) + "\n")
EOF
}

# client CMD...: run a client pinned. With BENCH_SCHED=1, under `perf record` of every CPU's
# scheduler switches and wakeups, and $bench_work/sched gets "span_s idle_s stolen_s" of the
# server (bench/sched_idle.py): when it idled waiting for requests, and when it was ready but
# another process had its CPU. The wall time then includes perf's start; use the span.
client() {
  if [ "${BENCH_SCHED:-0}" = 1 ]; then
    ls "/proc/$bao_pid/task" >"$bench_work/tids"
    local rc=0
    perf record -q -e sched:sched_switch -e sched:sched_wakeup -a -o "$bench_work/perf.data" \
      -- "${client_pin[@]}" "$@" || rc=$?
    # Threads the server started during the run too (Go starts them under load).
    ls "/proc/$bao_pid/task" >>"$bench_work/tids"
    perf script -i "$bench_work/perf.data" 2>/dev/null | python3 bench/sched_idle.py "$bench_work/tids" >"$bench_work/sched"
    rm -f "$bench_work/perf.data"
    return "$rc"
  fi
  echo "- - -" >"$bench_work/sched"
  "${client_pin[@]}" "$@"
}

now() { date +%s.%N; }
sched_delta() { echo "$1 $2" | awk '{printf "%.6f %.6f", $3 - $1, $4 - $2}'; } # BEFORE AFTER
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# col FILE FIELD -> median of that column; range FILE FIELD -> "min-max"
col() { [ -s "$1" ] && awk -v f="$2" '$f != "-" {print $f}' "$1" | median; }
range() { awk -v f="$2" 'NR == 1 || $f < lo {lo = $f} NR == 1 || $f > hi {hi = $f} END {printf "%.2f-%.2f", lo, hi}' "$1"; }

# seed_run OUT SPECDIR ARGS...: vault-seed pinned, under GNU time. Appends to OUT
# "wall_s rss_kib requests client_cpu_s server_cpu_s server_wait_s span_s idle_s stolen_s" (the
# last three with BENCH_SCHED=1, else "-").
seed_run() {
  local out=$1 specs=$2
  shift 2
  local t0 t1 s0 s1 rss req cpu
  s0=$(server_sched)
  t0=$(now)
  client /usr/bin/time -v -o "$bench_work/time.txt" "$seed" --specs "$specs" -v "$@" \
    >"$bench_work/seed.out" 2>"$bench_work/seed.err" || {
    echo "error: vault-seed $* failed:" >&2
    grep -v -i -e value -e password "$bench_work/seed.err" | tail -5 >&2
    exit 1
  }
  t1=$(now)
  s1=$(server_sched)
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$bench_work/time.txt")
  cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u + s}' "$bench_work/time.txt")
  req=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' "$bench_work/seed.err" | tail -1)
  echo "$(echo "$t1 - $t0" | bc -l) $rss ${req:--} $cpu $(sched_delta "$s0" "$s1") $(cat "$bench_work/sched")" >>"$out"
  # OUT.start: the seconds from the start to the token check's answer (`-v`'s `token ok`, its
  # time in UTC): starting and loading the specs, before which vault-seed sends nothing (a spec
  # error is reported before any request), and one round trip.
  local ok
  ok=$(awk '/ token ok / {print $1; exit}' "$bench_work/seed.err")
  if [ -n "$ok" ]; then
    echo "$(date -d "$ok" +%s.%N) - $t0" | bc -l >>"$out.start"
  else
    echo - >>"$out.start"
  fi
}

# seed_requests OUT SPECDIR ARGS...: one vault-seed run, unmeasured, with its request log alone
# (`RUST_LOG=vault_seed::request=trace`: each request's method and path as sent); OUT gets the
# list sorted, as `METHOD /v1/PATH` lines.
seed_requests() {
  local out=$1 specs=$2
  shift 2
  RUST_LOG=off,vault_seed::request=trace "$seed" --specs "$specs" "$@" >/dev/null 2>"$bench_work/list.err" || {
    echo "error: vault-seed $* failed:" >&2
    grep -v -e ' vault_seed::request: ' "$bench_work/list.err" | tail -5 >&2
    exit 1
  }
  sed -n 's/.* vault_seed::request: //p' "$bench_work/list.err" | LC_ALL=C sort >"$out"
}

# replay_requests REQUESTS_FILE OUT: the replay's requests (gen_requests' file), sorted as
# seed_requests sorts vault-seed's.
replay_requests() { awk '{print $1 " /v1/" $2}' "$1" | LC_ALL=C sort >"$2"; }

# check_requests NAME REQUESTS_FILE SPECDIR ARGS...: the replay's requests are vault-seed's, method
# and path, from vault-seed's request log (a run of its own, unmeasured: logging costs time)
# against the replay's file; else stop and show the first lines that differ.
check_requests() {
  local name=$1 file=$2 specs=$3
  shift 3
  seed_requests "$bench_work/$name.seed.list" "$specs" "$@"
  replay_requests "$file" "$bench_work/$name.replay.list"
  if ! cmp -s "$bench_work/$name.seed.list" "$bench_work/$name.replay.list"; then
    echo "error: the replay's requests for \`$name\` are not vault-seed's (< vault-seed, > replay):" >&2
    diff "$bench_work/$name.seed.list" "$bench_work/$name.replay.list" | grep '^[<>]' | head -10 >&2
    echo "  help: vault-seed's requests changed: make gen_requests in bench/lib.sh send the same" >&2
    exit 1
  fi
}

# check_count SEED_FILE OTHER_FILE: in every measured run the other client sent as many requests
# as vault-seed logged (`-v`), or the ratio compares different work.
check_count() {
  local a b
  a=$(awk '{print $3}' "$1" | sort -u | tr '\n' ' ')
  b=$(awk '{print $3}' "$2" | sort -u | tr '\n' ' ')
  if [ "$a" != "$b" ]; then
    echo "error: vault-seed sent ${a}requests and $(basename "${2%.*}") ${b}for the same case ($(basename "$1"))" >&2
    echo "  help: vault-seed's requests changed: make gen_requests in bench/lib.sh send the same" >&2
    exit 1
  fi
}

# wrk_run OUT REQUESTS_FILE CONCURRENCY [fast]: wrk pinned, bench/wrk/seed.lua; `fast` without
# its response() callback (wrk then parses no answer). Appends to OUT
# "wall_s over_399 requests client_cpu_s server_cpu_s server_wait_s span_s idle_s stolen_s", where
# over_399 is the answers above 399 (404s: LISTs of folders not written yet), which bench/run
# compares between the two ways.
wrk_run() {
  local out=$1 file=$2 conc=$3 fast=${4:-} t0 t1 s0 s1 line over scheme=${VAULT_ADDR%%://*}
  [ "$scheme" = http ] || { echo "error: wrk_run speaks plain http only" >&2; exit 2; }
  s0=$(server_sched)
  t0=$(now)
  client /usr/bin/time -f "%U %S" -o "$bench_work/wtime.txt" \
    wrk -t 1 -c "$conc" -d 3600 --timeout 60s -s bench/wrk/seed.lua "$VAULT_ADDR" \
    -- "$file" "$VAULT_TOKEN" ${fast:+"$conc"} >"$bench_work/wrk.out" 2>"$bench_work/wrk.err" || true
  t1=$(now)
  s1=$(server_sched)
  line=$(grep '^requests=' "$bench_work/wrk.err" | tail -1)
  case "$fast:$line" in
    :*" bad=0") over=$(sed -n 's/.*not_found=\([0-9]*\).*/\1/p' <<<"$line") ;;
    fast:*" socket_errors=0") over=$(sed -n 's/.*status_over_399=\([0-9]*\).*/\1/p' <<<"$line") ;;
    *) echo "error: wrk ($(basename "$file")${fast:+, fast}) did not finish cleanly: ${line:-no summary}" >&2; tail -n 5 "$bench_work/wrk.err" "$bench_work/wrk.out" >&2; exit 1 ;;
  esac
  local req=${line#requests=}
  req=${req%% *}
  echo "$(echo "$t1 - $t0" | bc -l) $over $req $(awk '{print $1 + $2}' "$bench_work/wtime.txt") $(sched_delta "$s0" "$s1") $(cat "$bench_work/sched")" >>"$out"
}
wrk_fast_run() { wrk_run "$@" fast; }

load() { cut -d' ' -f1-3 /proc/loadavg; }

# ceiling_run OUT REQUESTS_FILE CONCURRENCY: examples/bench_ceiling.rs pinned (vault-seed's HTTP
# stack, nothing else). Appends to OUT "wall_s - requests client_cpu_s server_cpu_s server_wait_s span_s idle_s stolen_s".
ceiling_run() {
  local out=$1 file=$2 conc=$3
  local t0 t1 s0 s1 line
  s0=$(server_sched)
  t0=$(now)
  line=$(client /usr/bin/time -f "%U %S" -o "$bench_work/ctime.txt" \
    "$example_dir/bench_ceiling" "$VAULT_ADDR" "$file" "$conc")
  t1=$(now)
  s1=$(server_sched)
  case "$line" in
    *" bad=0") ;;
    *) echo "error: bench_ceiling ($(basename "$file")): $line" >&2; exit 1 ;;
  esac
  local req=${line#requests=}
  req=${req%% *}
  echo "$(echo "$t1 - $t0" | bc -l) - $req $(awk '{print $1 + $2}' "$bench_work/ctime.txt") $(sched_delta "$s0" "$s1") $(cat "$bench_work/sched")" >>"$out"
}

# scale_specs DIR N: issue 46's platform, for bench/verify-scale and bench/spec-load: N copies
# of the real spec (without the paths another application provides and without `[argocd]`),
# application `app-NNNNN` at `ask/app-NNNNN/{env}`, environment
# `bench`, in namespace `apps-NNNN` (ten a namespace), one ExternalSecret `app-NNNNN-secret`.
scale_specs() {
  rm -rf "$1"
  mkdir -p "$1"
  python3 - "$1" "$2" <<'EOF'
import re, sys
d, n = sys.argv[1], int(sys.argv[2])
src = open("secret-specs/core-service.toml").read()
src = "".join(t for t in re.split(r"(?m)^(?=\[)", src)
              if "provided_by = " not in t and not t.startswith("[argocd"))
src = src.replace("[environments.auh1-dev]", "[environments.bench]")
src = re.sub(r'(?m)^vault_addr = .*\n', "", src)
src = re.sub(r'(?m)^external_secrets = .*$', 'external_secrets = ["APP-secret"]', src)
for i in range(1, n + 1):
    app, ns = f"app-{i:05}", f"apps-{(i - 1) // 10:04}"
    text = src.replace('name = "core-service"', f'name = "{app}"')
    text = text.replace('path = "ask/core-service/{env}"', f'path = "ask/{app}/{{env}}"')
    text = re.sub(r'(?m)^(kube_namespace|namespace) = "ask"$', rf'\1 = "{ns}"', text)
    text = text.replace("APP-secret", f"{app}-secret")
    open(f"{d}/{app}.toml", "w").write(text)
EOF
}
