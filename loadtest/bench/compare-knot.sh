#!/usr/bin/env bash
# Side-by-side: clusterdns and Debian's Knot serving the same cluster names,
# each pinned to CPU 0, dnsperf pinned to CPU 1. Reports qps, the server's
# CPU share, qps per server core and mean latency for hits, NODATA and
# NXDOMAIN. Loopback only; every run is bounded by -l SECONDS.
#
# Rows alternate between the servers for ROUNDS rounds; the summary gives
# each row's median, since loopback numbers on a shared machine drift.
#
# usage: loadtest/bench/compare-knot.sh [NAMESPACES] [SERVICES_PER_NS] [SECONDS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
NS=${1:-100}; PER=${2:-100}; SECS=${3:-10}; ROUNDS=${4:-3}
for t in dnsperf knotd taskset; do
  command -v $t >/dev/null || { echo "installing dnsperf and knot"; apt-get install -y -qq dnsperf knot >/dev/null; break; }
done
cargo build --release -q
W=$(mktemp -d /tmp/clusterdns-bench.XXXX)
python3 loadtest/bench/gen.py "$W" "$NS" "$PER"

cat > "$W/Corefile" <<EOC
cluster.local:5301 {
    bind 127.0.0.1
    kubernetes cluster.local {
        snapshot $W/cluster.json
    }
}
EOC
mkdir -p "$W/knot"
cat > "$W/knot.conf" <<EOC
server:
    listen: 127.0.0.1@5302
    rundir: "$W/knot"
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: "$W/knot"
log:
  - target: stderr
    any: warning
zone:
  - domain: cluster.local
    file: "$W/cluster.local.zone"
    journal-content: none
    zonefile-sync: -1
EOC

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
measure() { # name pid port queryfile
  local name=$1 pid=$2 port=$3 file=$4 hz before after out qps lat share
  hz=$(getconf CLK_TCK)
  before=$(cpu_ticks "$pid")
  out=$(taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$file" -l "$SECS" -c 32 -q 400 -T 1 2>&1)
  after=$(cpu_ticks "$pid")
  qps=$(echo "$out" | awk '/Queries per second/ {print $4}')
  lat=$(echo "$out" | awk '/Average Latency/ {print $4}')
  lost=$(echo "$out" | awk '/Queries lost/ {print $3}')
  share=$(echo "$before $after $hz $SECS" | awk '{printf "%.2f", ($2-$1)/$3/$4}')
  printf "%-10s %-9s %10.0f qps  cpu %4s  %10.0f qps/core  mean %7.3f ms  lost %s\n" \
    "$name" "$(basename "$file" .txt)" "$qps" "$share" "$(echo "$qps $share" | awk '{print ($2>0)?$1/$2:0}')" "$(echo "$lat" | awk '{print $1*1000}')" "$lost"
}

taskset -c 0 ./target/release/clusterdns -conf "$W/Corefile" 2>"$W/clusterdns.log" &
CD=$!
taskset -c 0 knotd -c "$W/knot.conf" 2>"$W/knot.log" &
KN=$!
trap 'kill $CD $KN 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
for i in $(seq 1 100); do
  dig +short @127.0.0.1 -p 5301 svc-0.ns-0.svc.cluster.local | grep -q . && dig +short @127.0.0.1 -p 5302 svc-0.ns-0.svc.cluster.local | grep -q . && break
  sleep 0.2
done
echo "# $((NS*PER)) services; each server on CPU 0, dnsperf on CPU 1, ${SECS}s per row, $ROUNDS rounds"
for round in $(seq 1 "$ROUNDS"); do
  for kind in hits nodata nxdomain; do
    measure clusterdns $CD 5301 "$W/$kind.txt"
    measure knot $KN 5302 "$W/$kind.txt"
  done
done | tee "$W/rows.txt"
echo "# medians over $ROUNDS rounds (qps, server cpu share, qps per server core, mean latency ms)"
python3 - "$W/rows.txt" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((f[1], f[0]), []).append((float(f[2]), float(f[5]), float(f[6]), float(f[9])))
for kind in ("hits", "nodata", "nxdomain"):
    per = {}
    for server in ("clusterdns", "knot"):
        v = rows.get((kind, server), [])
        if not v: continue
        med = [st.median(x[i] for x in v) for i in range(4)]
        per[server] = med[2]
        print(f"{server:10s} {kind:9s} {med[0]:10.0f} qps  cpu {med[1]:.2f}  {med[2]:10.0f} qps/core  mean {med[3]:.3f} ms")
    if len(per) == 2:
        print(f"{'ratio':10s} {kind:9s} clusterdns/knot qps per core = {per['clusterdns']/per['knot']:.2f}")
PY
echo "# clusterdns RSS: $(awk '/VmRSS/ {print $2, $3}' /proc/$CD/status)   knot RSS: $(awk '/VmRSS/ {print $2, $3}' /proc/$KN/status)"
