# Shared by the side-by-side benchmarks: the synthetic cluster, clusterdns
# and Knot serving it, CPU accounting, one dnsperf row, and the median
# summary. `measure` expects SECS to be set.

# cpu_split PID: user and system ticks, as "USER SYS" (fields 14 and 15 of
# /proc/PID/stat, counted after the command name, which may hold spaces:
# "(nsd: main)"): sampled, for the split of a row's CPU time only.
cpu_split() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12, $13}'; }
# cpu_ns PID: nanoseconds on CPU of all of PID's threads (the first field of
# each /proc/PID/task/TID/schedstat: exact, where the ticks are sampled; a
# thread that ends between two reads takes its time with it, so compare
# reads of a server whose threads live through the row).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ns += $1} END {printf "%.0f\n", ns}'; }

# measure NAME PID PORT QUERYFILE: one row (qps, the server's CPU share
# from cpu_ns, qps per server core, mean latency, lost queries); dnsperf
# on CPU 1.
measure() {
  local name=$1 pid=$2 port=$3 file=$4 before after out qps lat share
  before=$(cpu_ns "$pid")
  out=$(taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$file" -l "$SECS" -c 32 -q 400 -T 1 2>&1)
  after=$(cpu_ns "$pid")
  qps=$(echo "$out" | awk '/Queries per second/ {print $4}')
  lat=$(echo "$out" | awk '/Average Latency/ {print $4}')
  lost=$(echo "$out" | awk '/Queries lost/ {print $3}')
  share=$(echo "$before $after $SECS" | awk '{printf "%.2f", ($2-$1)/1e9/$3}')
  printf "%-10s %-9s %10.0f qps  cpu %4s  %10.0f qps/core  mean %7.3f ms  lost %s\n" \
    "$name" "$(basename "$file" .txt)" "$qps" "$share" "$(echo "$qps $share" | awk '{print ($2>0)?$1/$2:0}')" "$(echo "$lat" | awk '{print $1*1000}')" "$lost"
}


# medians ROWS PEER "KINDS": each row's median over the rounds, and the
# clusterdns/PEER ratio of qps per server core (and clusterdns/base when
# rows of a "base" binary are present).
medians() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((f[1], f[0]), []).append((float(f[2]), float(f[5]), float(f[6]), float(f[9])))
peer = sys.argv[2]
for kind in sys.argv[3].split():
    per = {}
    for server in ("clusterdns", peer, "base"):
        v = rows.get((kind, server), [])
        if not v: continue
        med = [st.median(x[i] for x in v) for i in range(4)]
        per[server] = med[2]
        print(f"{server:10s} {kind:9s} {med[0]:10.0f} qps  cpu {med[1]:.2f}  {med[2]:10.0f} qps/core  mean {med[3]:.3f} ms")
    for other in (peer, "base"):
        if "clusterdns" in per and per.get(other):
            print(f"{'ratio':10s} {kind:9s} clusterdns/{other} qps per core = {per['clusterdns']/per[other]:.2f}")
PY
}

# knot_conf DIR PORT ZONEFILE [DOMAIN]: a one-worker Knot serving DOMAIN
# (cluster.local) from ZONEFILE on 127.0.0.1@PORT, its files under DIR/knot;
# prints the config path.
knot_conf() {
  mkdir -p "$1/knot"
  cat > "$1/knot.conf" <<EOC
server:
    listen: 127.0.0.1@$2
    rundir: "$1/knot"
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: "$1/knot"
log:
  - target: stderr
    any: warning
zone:
  - domain: ${4:-cluster.local}
    file: "$3"
    journal-content: none
    zonefile-sync: -1
EOC
  echo "$1/knot.conf"
}

# synthetic DIR SERVICES NAMESPACES: the synthetic cluster as a kubectl dump
# (DIR/cluster.json, for clusterdns) and as a zone file (DIR/cluster.local.zone, for Knot).
synthetic() {
  ./target/release/loadtest export-cluster --services "$2" --namespaces "$3" --endpoints 2 > "$1/cluster.json"
  ./target/release/loadtest export-zone --services "$2" --namespaces "$3" > "$1/cluster.local.zone"
}

# serve_pair DIR CLUSTERDNS_PORT KNOT_PORT: clusterdns ($CLUSTERDNS, default
# the release build) serving DIR/cluster.json
# and Knot serving DIR/cluster.local.zone on 127.0.0.1, each pinned to CPU 0.
# Sets CD and KN (their pids), stops both and removes DIR on exit, and
# returns once both answer (at most 20 s).
serve_pair() {
  local dir=$1 cport=$2 kport=$3
  serve_clusterdns "$dir" "$cport"
  taskset -c 0 knotd -c "$(knot_conf "$dir" "$kport" "$dir/cluster.local.zone")" 2>"$dir/knot.log" &
  KN=$!
  trap "kill $CD $KN 2>/dev/null; wait 2>/dev/null; rm -rf '$dir'" EXIT
  wait_answer "$cport" svc-0.ns-0.svc.cluster.local
  wait_answer "$kport" svc-0.ns-0.svc.cluster.local
}

# serve_clusterdns DIR PORT: clusterdns serving DIR/cluster.json on
# 127.0.0.1:PORT, pinned to CPU 0; sets CD (its pid). The caller stops it.
serve_clusterdns() {
  cat > "$1/Corefile" <<EOC
.:$2 {
    bind 127.0.0.1
    kubernetes cluster.local {
        snapshot $1/cluster.json
    }
}
EOC
  taskset -c 0 "${CLUSTERDNS:-./target/release/clusterdns}" -conf "$1/Corefile" 2>"$1/clusterdns.log" &
  CD=$!
}

# wait_answer PORT NAME: returns once 127.0.0.1@PORT answers NAME with an
# address (not dig's ";; communications error", which is on stdout too),
# after at most 100 tries.
wait_answer() {
  for _ in $(seq 1 100); do
    dig +short +tries=1 +time=1 @127.0.0.1 -p "$1" "$2" | grep -q '^[0-9]' && return
    sleep 0.2
  done
}

# start NAME PORT COMMAND...: COMMAND pinned to CPU ${SERVER_CPU:-0}, its output in
# $W/NAME.log; appends NAME:PORT:PID to SERVERS (the order rows alternate
# in) and the pid to PIDS, which the caller's EXIT trap kills.
SERVERS=()
PIDS=()
start() {
  local name=$1 port=$2; shift 2
  taskset -c "${SERVER_CPU:-0}" "$@" >"$W/$name.log" 2>&1 &
  PIDS+=($!); SERVERS+=("$name:$port:$!")
}

# cluster_corefile PORT: $W/Corefile.PORT, clusterdns on 127.0.0.1:PORT
# serving the synthetic cluster $W/cluster.json (BIND= empty: on the
# wildcard address, as `.:53` without `bind` serves).
cluster_corefile() {
  local bind=""
  [ -n "${BIND-127.0.0.1}" ] && bind="    bind ${BIND-127.0.0.1}\n"
  printf ".:%s {\n${bind}    kubernetes cluster.local {\n        snapshot %s\n    }\n}\n" \
    "$1" "$W/cluster.json" > "$W/Corefile.$1"
}

# limit_cpu PCT PID...: caps each server at PCT% of one core, each in its
# own cgroup v1 CFS quota with a short period: 2 ms, or longer where the
# kernel's 1 ms minimum quota needs it (25% → 1 ms of every 4 ms), so a
# throttled server stalls a few ms at a time, like a pod with a CPU limit. One generator
# core can then offer twice a server's knee. The caller's EXIT trap must
# call unlimit_cpu, which removes the groups.
CGROUPS=()
limit_cpu() {
  local pct=$1 pid group; shift
  for pid in "$@"; do
    group=/sys/fs/cgroup/cpu/clusterdns-bench-$$-$pid
    mkdir -p "$group"
    local period=2000 quota=$((pct * 20))
    if [ "$quota" -lt 1000 ]; then period=$((100000 / pct)); quota=1000; fi
    echo "$period" > "$group/cpu.cfs_period_us"
    echo "$quota" > "$group/cpu.cfs_quota_us"
    echo "$pid" > "$group/cgroup.procs"
    CGROUPS+=("$group")
  done
}
unlimit_cpu() {
  local group pid
  for group in "${CGROUPS[@]}"; do
    [ -d "$group" ] || continue
    while read -r pid; do echo "$pid" > /sys/fs/cgroup/cpu/cgroup.procs 2>/dev/null || true; done < "$group/cgroup.procs"
    rmdir "$group" 2>/dev/null || true
  done
}

# callgrind_ir FILE: the user-space instructions callgrind counted in FILE
# (its `summary:` line; the `totals:` line repeats the same count).
callgrind_ir() { awk '/^summary:/ {print $2}' "$1"; }

# bench_certs DIR: a P-256 CA (ca.pem) and a server certificate for
# dns.test and 127.0.0.1 (srv.pem, srv.key) in DIR, for DoT/DoH benches.
bench_certs() {
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
  ( cd "$1"
    openssl req -x509 -days 2 -subj "/CN=bench CA" -keyout ca.key -out ca.pem "${ec[@]}" 2>/dev/null
    openssl req -subj /CN=dns.test -keyout srv.key -out srv.csr "${ec[@]}" 2>/dev/null
    printf 'subjectAltName=DNS:dns.test,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > srv.ext
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile srv.ext -out srv.pem 2>/dev/null )
}

# tls_bench_setup TAG: what the DoT/DoH benches need (dnsperf, unbound,
# taskset, openssl; installed when missing), clusterdns built, and sets
# UNBOUND, BIN and W (a fresh work directory named after TAG).
tls_bench_setup() {
  for t in dnsperf unbound taskset openssl; do
    command -v $t >/dev/null || [ -x /usr/sbin/$t ] || { echo "installing dnsperf, unbound, openssl"; apt-get install -y -qq dnsperf unbound openssl >/dev/null; break; }
  done
  UNBOUND=$(command -v unbound || echo /usr/sbin/unbound)
  cargo build --release -q --bin clusterdns
  BIN=${CARGO_TARGET_DIR:-target}/release/clusterdns
  W=$(mktemp -d "/tmp/clusterdns-$1.XXXX")
}
