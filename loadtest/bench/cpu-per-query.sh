#!/usr/bin/env bash
# What a query costs, side by side in one run: clusterdns against the
# zero-work floor (loadtest/bench/echo.c: recvmmsg, flip QR, sendmmsg) and
# against Knot, NSD and unbound serving the same names. Every server is
# pinned to CPU 0 and dnsperf to CPU 1 (SERVER_CPU=1 CLIENT_CPU=0: the
# other way round); rows alternate between the servers for ROUNDS rounds
# and the summary gives each row's median. CLIENT='-c 8 -q 500' changes
# dnsperf's client sockets and queries outstanding (default -c 32 -q 400).
#
#   fixed    UDP at a fixed 50k qps: server CPU µs per answered query (CPU
#            time from /proc/PID/task/*/schedstat ÷ queries answered), split
#            into user space and kernel by /proc/PID/stat's ticks, loss,
#            mean latency;
#            echo-ts is the echo with kernel receive timestamps (SO_TIMESTAMPNS)
#   udp      UDP at saturation: qps per server core (qps ÷ server CPU share)
#   tcp      TCP at saturation, 32 persistent connections with up to 400
#            queries outstanding (pipelined): qps per server core
#
# Names: the synthetic 10,000 Services (100 namespaces × 100), queried as
# 70% A of a Service, 10% AAAA of a v4-only Service (NODATA), 20% NXDOMAIN.
# NAMESPACES=N and PER_NS=M (default 100 each) size the cluster: 1000×100
# cycles 100,000 names, more than a worker's memo holds (its misses).
# BASE=PATH adds a second clusterdns binary (say, main's) as "base", for
# before/after numbers from the same run; BIN=PATH runs another binary as
# "clusterdns" than the one cargo builds here. EXTRA='LINES' (\n between
# lines) adds directives to the "clusterdns" server block only, e.g.
# EXTRA='acl secret.shop.svc.cluster.local {\n block\n}' for the cost of
# an acl. BIND= (empty) serves clusterdns and base on the wildcard address
# (`.:53` without `bind`). Only the servers of TESTS's rows are started;
# ONLY='clusterdns echo knot' keeps only those rows (and servers): more
# rounds in the same time, and no idle neighbours on the server's CPU.
# Loopback only; every dnsperf run is bounded by -l SECONDS.
#
# usage: loadtest/bench/cpu-per-query.sh [SECONDS] [ROUNDS] [TESTS]   (TESTS default "fixed udp tcp")
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-5}; ROUNDS=${2:-3}; TESTS=${3:-fixed udp tcp}; CLIENT=${CLIENT:--c 32 -q 400}
for t in dnsperf knotd nsd unbound gcc; do
  command -v $t >/dev/null || [ -x /usr/sbin/$t ] || {
    echo "installing the peers"; apt-get install -y -qq dnsperf knot nsd unbound gcc >/dev/null; break; }
done
[ -n "${BIN:-}" ] || cargo build --release -q --bin clusterdns
W=$(mktemp -d /tmp/clusterdns-cpq.XXXX)
. loadtest/bench/lib.sh
gcc -O2 -o "$W/echo" loadtest/bench/echo.c
python3 loadtest/bench/gen.py "$W" "${NAMESPACES:-100}" "${PER_NS:-100}" >/dev/null
python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
hits, nodata, nx = (open(f"{w}/{k}.txt").read().split("\n")[:-1] for k in ("hits", "nodata", "nxdomain"))
mix = []
for i in range(len(hits)):
    k = i % 10
    mix.append(hits[i] if k < 7 else nodata[i] if k == 7 else nx[i])
open(f"{w}/mix.txt", "w").write("\n".join(mix) + "\n")
PY

trap 'kill ${PIDS[*]} 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT

cluster_corefile 5340
if [ -n "${EXTRA:-}" ]; then
  { head -n 2 "$W/Corefile.5340"; printf '%b\n' "$EXTRA"; tail -n +3 "$W/Corefile.5340"; } > "$W/Corefile.x"
  mv "$W/Corefile.x" "$W/Corefile.5340"
fi

tests_for() { # which servers take part in TEST (of ONLY's, when it is set)
  local all s out=""
  case $1 in
    fixed) all="clusterdns base echo echo-ts knot" ;;
    udp) all="clusterdns base echo knot nsd unbound" ;;
    tcp) all="clusterdns base knot nsd unbound" ;;
  esac
  for s in $all; do
    if [[ -z ${ONLY:-} || " $ONLY " == *" $s "* ]]; then out+="$s "; fi
  done
  echo "$out"
}

# serve NAME PORT COMMAND...: starts NAME when a test of TESTS has its row
# (an idle server pinned to the server's CPU still wakes for its timers).
serve() {
  local t
  for t in $TESTS; do
    if [[ " $(tests_for "$t") " == *" $1 "* ]]; then start "$@"; return; fi
  done
}

serve clusterdns 5340 "${BIN:-./target/release/clusterdns}" -conf "$W/Corefile.5340"
if [ -n "${BASE:-}" ]; then cluster_corefile 5341; serve base 5341 "$BASE" -conf "$W/Corefile.5341"; fi
serve echo 5342 "$W/echo" 5342
serve echo-ts 5346 "$W/echo" 5346 ts
serve knot 5343 knotd -c "$(knot_conf "$W" 5343 "$W/cluster.local.zone")"
cat > "$W/nsd.conf" <<EOC
server:
    ip-address: 127.0.0.1@5344
    server-count: 1
    username: ""
    chroot: ""
    zonesdir: "$W"
    pidfile: "$W/nsd.pid"
    xfrdfile: "$W/xfrd.state"
    zonelistfile: "$W/zone.list"
    database: ""
    logfile: "$W/nsd.log"
    tcp-count: 200
    rrl-ratelimit: 0
remote-control:
    control-enable: no
zone:
    name: cluster.local
    zonefile: cluster.local.zone
EOC
serve nsd 5344 nsd -d -c "$W/nsd.conf"
cat > "$W/unbound.conf" <<EOC
server:
    interface: 127.0.0.1
    port: 5345
    do-daemonize: no
    use-syslog: no
    logfile: ""
    chroot: ""
    username: ""
    directory: "$W"
    pidfile: "$W/unbound.pid"
    num-threads: 1
    do-ip6: no
    incoming-num-tcp: 200
    verbosity: 0
auth-zone:
    name: "cluster.local."
    zonefile: "$W/cluster.local.zone"
    for-downstream: yes
    for-upstream: no
    fallback-enabled: no
EOC
serve unbound 5345 "$(command -v unbound || echo /usr/sbin/unbound)" -d -c "$W/unbound.conf"
for s in "${SERVERS[@]}"; do
  IFS=: read -r name port _ <<<"$s"
  [[ $name == echo* ]] || wait_answer "$port" svc-0.ns-0.svc.cluster.local
done

# User and system CPU ticks of PID and its descendants (NSD serves from a
# forked child), and the nanoseconds they ran, as "USER SYS NS". The ticks
# are sampled at the clock tick (a 5 s row holds a few hundred, ±5%); the
# nanoseconds, summed over every thread's /proc/PID/task/TID/schedstat, are
# the scheduler's exact count, and give the row's CPU time: the ticks only
# split it into user space and kernel.
ticks() {
  local u s n p cu cs cn
  read -r u s < <(cpu_split "$1")
  n=$(cpu_ns "$1")
  for p in $(pgrep -P "$1" || true); do
    read -r cu cs cn < <(ticks "$p"); u=$((u + cu)); s=$((s + cs)); n=$((n + cn))
  done
  echo "$u $s $n"
}

# row TEST NAME PORT PID DNSPERF_ARGS...: TEST NAME qps cpu_share
# qps_per_core µs_per_query mean_ms lost% user_µs sys_µs round (the user
# and kernel µs per query split µs_per_query in the ticks' proportion)
row() {
  local test=$1 name=$2 port=$3 pid=$4 u0 s0 n0 u1 s1 n1 out; shift 4
  read -r u0 s0 n0 < <(ticks "$pid")
  out=$(taskset -c "${CLIENT_CPU:-1}" dnsperf -s 127.0.0.1 -p "$port" -d "$W/mix.txt" -l "$SECS" -T 1 "$@" 2>&1 || true)
  read -r u1 s1 n1 < <(ticks "$pid")
  echo "$out" | awk -v t="$test" -v n="$name" -v usr="$(( u1 - u0 ))" -v sys="$(( s1 - s0 ))" -v ns="$(( n1 - n0 ))" \
    -v secs="$SECS" -v round="$ROUND" '
    /Queries completed/ {done=$3} /Queries lost/ {lost=$4} /Queries per second/ {qps=$4}
    /Average Latency/ {lat=$4}
    END {share=ns/1e9/secs; gsub(/[()%]/, "", lost); per=(done>0)?ns/1e3/done:0
         u=(usr+sys>0)?usr/(usr+sys):0
         printf "%-6s %-10s %9.0f %5.2f %9.0f %7.2f %7.3f %6.2f %6.2f %6.2f %d\n", t, n, qps, share,
           (share>0)?qps/share:0, per, lat*1000, lost, per*u, per*(1-u), round}'
}

echo "# $(( ${NAMESPACES:-100} * ${PER_NS:-100} )) Services, 70% A / 10% AAAA (NODATA) / 20% NXDOMAIN; servers on CPU ${SERVER_CPU:-0}, dnsperf ($CLIENT) on CPU ${CLIENT_CPU:-1}; ${SECS}s per row, $ROUNDS rounds"
echo "# test   server           qps   cpu  qps/core  µs/query mean_ms  lost%  user   sys round"
for ROUND in $(seq 1 "$ROUNDS"); do
  for test in $TESTS; do
    for s in "${SERVERS[@]}"; do
      IFS=: read -r name port pid <<<"$s"
      [[ " $(tests_for "$test") " == *" $name "* ]] || continue
      case $test in
        fixed) row fixed "$name" "$port" "$pid" $CLIENT -Q 50000 ;;
        udp) row udp "$name" "$port" "$pid" $CLIENT ;;
        tcp) row tcp "$name" "$port" "$pid" -m tcp $CLIENT ;;
      esac
    done
  done
done | tee "$W/rows.txt"
echo "# medians over $ROUNDS rounds"
PYTHONPATH=loadtest/bench python3 - "$W/rows.txt" <<'PY'
import sys, statistics as st
from paired import summary
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((f[0], f[1]), []).append([float(x) for x in f[2:]])
med = {k: [st.median(r[i] for r in v) for i in range(8)] for k, v in rows.items()}
def by_round(test, col, name):
    return {int(r[8]): r[col] for r in rows.get((test, name), [])}
for (test, name), m in med.items():
    print(f"{test:6s} {name:10s} {m[0]:9.0f} qps  cpu {m[1]:4.2f}  {m[2]:9.0f} qps/core  {m[3]:6.2f} µs/query"
          f" (user {m[6]:.2f} + kernel {m[7]:.2f})  mean {m[4]:.3f} ms  lost {m[5]:.2f}%")
def ratio(test, col, a, b, what):
    if (test, a) in med and (test, b) in med and med[(test, b)][col]:
        p = summary(by_round(test, col, a), by_round(test, col, b))
        each = f"  (paired: {p})" if p else ""
        print(f"ratio  {test:6s} {a}/{b} {what} = {med[(test, a)][col] / med[(test, b)][col]:.2f}{each}")
for peer in ("echo", "echo-ts", "knot", "base"):
    ratio("fixed", 3, "clusterdns", peer, "µs per query")
    ratio("fixed", 7, "clusterdns", peer, "kernel µs per query")
for test in ("udp", "tcp"):
    for peer in ("knot", "nsd", "unbound", "base"):
        ratio(test, 2, "clusterdns", peer, "qps per core")
PY
