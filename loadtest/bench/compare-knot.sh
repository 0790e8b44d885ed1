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
. loadtest/bench/lib.sh
KNOT_CONF=$(knot_conf "$W" 5302 "$W/cluster.local.zone")

taskset -c 0 ./target/release/clusterdns -conf "$W/Corefile" 2>"$W/clusterdns.log" &
CD=$!
taskset -c 0 knotd -c "$KNOT_CONF" 2>"$W/knot.log" &
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
medians "$W/rows.txt" knot "hits nodata nxdomain"
echo "# clusterdns RSS: $(awk '/VmRSS/ {print $2, $3}' /proc/$CD/status)   knot RSS: $(awk '/VmRSS/ {print $2, $3}' /proc/$KN/status)"
