#!/usr/bin/env bash
# User-space instructions per forwarded cache miss, counted by valgrind's
# callgrind: repeatable on a busy machine where CPU time is not (see
# instr-per-query.sh; kernel time, the socket calls, is not counted here:
# forward-miss.sh counts it). clusterdns runs under callgrind with
# `forward . 127.0.0.1:UP` + `cache 30` to Knot answering a wildcard;
# after WARM unique names (the upstream ports' pool fills, the cache fills
# to its capacity, as in a long run) the counters are zeroed and QUERIES
# more unique names are sent at RATE per second; the instructions counted
# are divided by the queries answered. BASE=PATH measures a second binary
# the same way in the same run (say, main's); KEEP=1 keeps callgrind's
# files to read with callgrind_annotate.
# Loopback only; every dnsperf run is bounded by its query count and -l.
#
# usage: [BASE=PATH] [BIN=PATH] loadtest/bench/instr-per-miss.sh [QUERIES] [ROUNDS]   (default 10000 1; RATE=500 WARM=12000)
set -euo pipefail
cd "$(dirname "$0")/../.."
QUERIES=${1:-10000}; ROUNDS=${2:-1}; RATE=${RATE:-500}; WARM=${WARM:-12000}
for t in dnsperf valgrind knotd; do
  command -v $t >/dev/null || [ -x /usr/sbin/$t ] || {
    echo "installing dnsperf, valgrind, knot"; apt-get install -y -qq dnsperf valgrind knot >/dev/null; break; }
done
[ -n "${BIN:-}" ] || cargo build --release -q --bin clusterdns
W=$(mktemp -d /tmp/clusterdns-ipm.XXXX); [ -z "${KEEP:-}" ] || echo "# files kept in $W"
. loadtest/bench/lib.sh
UP=5380
PID=
printf '$ORIGIN example.\n$TTL 300\n@ IN SOA ns.example. h.example. 1 3600 600 86400 300\n@ IN NS ns.example.\nns IN A 192.0.2.53\n* IN A 192.0.2.1\n' > "$W/example.zone"
knot_conf "$W" "$UP" "$W/example.zone" example. >/dev/null
knotd -c "$W/knot.conf" 2>"$W/knot.log" & KN=$!
trap 'kill $KN ${PID:-} 2>/dev/null; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
printf '.:5381 {\n    bind 127.0.0.1\n    forward . 127.0.0.1:%s\n    cache 30\n}\n' "$UP" > "$W/Corefile"

# dnsperf_n PREFIX N: N unique names under PREFIX at RATE per second; prints the count answered.
dnsperf_n() {
  awk -v p="$1" -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%sq%d.example A\n", p, i }' > "$W/q.txt"
  dnsperf -s 127.0.0.1 -p 5381 -d "$W/q.txt" -n 1 -l $(( $2 / RATE + 30 )) -Q "$RATE" -c 8 -q 200 -t 5 2>&1 |
    awk '/Queries completed/ {print $3}'
}

# variant NAME BINARY ROUND: one row, NAME and instructions per answered query.
variant() {
  local name=$1 bin=$2 round=$3 out answered ir
  out="$W/callgrind.$name"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" -conf "$W/Corefile" >"$W/$name.log" 2>&1 &
  PID=$!
  for _ in $(seq 1 300); do
    dig +short +tries=1 +time=1 @127.0.0.1 -p 5381 "up$round$name.example" | grep -q '^[0-9]' && break
    sleep 0.5
  done
  dnsperf_n "w$round$name" "$WARM" >/dev/null
  callgrind_control -z "$PID" >/dev/null 2>&1
  answered=$(dnsperf_n "m$round$name" "$QUERIES")
  callgrind_control -d "$PID" >/dev/null 2>&1
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  ir=$(callgrind_ir "$out".1)
  [ -n "${KEEP:-}" ] || rm -f "$out" "$out".*
  printf '%-14s %9s answered  %12s Ir  %8.0f Ir/miss\n' "$name" "$answered" "$ir" "$(echo "$ir $answered" | awk '{print ($2>0)?$1/$2:0}')"
}

echo "# $QUERIES forwarded misses at $RATE/s after $WARM to warm; user-space instructions (callgrind Ir) per answered miss"
for round in $(seq 1 "$ROUNDS"); do
  variant clusterdns "${BIN:-./target/release/clusterdns}" "$round"
  [ -z "${BASE:-}" ] || variant base "$BASE" "$round"
done | tee "$W/rows.txt"
python3 - "$W/rows.txt" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(f[0], []).append(float(f[5]))
med = {k: st.median(v) for k, v in rows.items()}
print("# medians")
for k, v in med.items():
    print(f"{k:14s} {v:9.0f} Ir/miss")
if "clusterdns" in med and med.get("base"):
    print(f"ratio clusterdns/base = {med['clusterdns'] / med['base']:.3f}")
PY
