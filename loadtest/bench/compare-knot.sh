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

. loadtest/bench/lib.sh
serve_pair "$W" 5301 5302
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
