#!/usr/bin/env bash
# User-space instructions per query, counted by valgrind's callgrind: a
# figure a busy or shared machine does not move (no hardware counters are
# needed), for before/after comparisons of the query path where CPU time is
# too noisy to resolve a few percent. Kernel time (the socket calls) is not
# counted: compare with cpu-per-query.sh, which counts it, for what a
# query costs in all.
#
# Each variant runs under callgrind on the synthetic 10,000 Services and
# the same query mix as cpu-per-query.sh (70% A, 10% AAAA NODATA, 20%
# NXDOMAIN). After WARM queries (the memo and the cache-hit replay learn
# the names) the counters are zeroed, QUERIES queries are sent at RATE per
# second, and the instructions counted are divided by the queries answered.
# Both runs send from one socket on one fixed port, so the kernel hands
# them to the same worker, whose memo the warm-up filled (from other
# ports, a share of the queries would miss the memo and take the full
# path, a difference of 10-30% between runs). Where a variant differs,
# KEEP=1 keeps callgrind's files to read with callgrind_annotate
# (--inclusive=yes, --tree=calling).
# WARM=0 skips the warm-up: the first pass over the mix's names finds the
# memo and the replay empty, so most queries take the full path (the
# store's lookups, route, settle); with QUERIES at most the mix's 10,000
# names this gates what a warm run never reaches.
# Variants (all in one run, alternating for ROUNDS rounds):
#   clusterdns       BIN (default the release build)
#   clusterdns+x     BIN with EXTRA's lines in the server block (when EXTRA is set)
#   base, base+x     the same with BASE (when BASE is set)
# EXTRA='LINES' (\n between lines), e.g.
# EXTRA='acl secret.shop.svc.cluster.local {\n block\n}' for one acl rule.
# CACHE=1 also simulates the caches (callgrind --cache-sim=yes, CACHES the
# geometry, default this machine's per-core L1d and L2 as D1 and LL) and
# adds D1 and LL data misses (reads + writes) per query to each row.
# CG='OPTIONS' adds callgrind options, e.g. CG=--dump-instr=yes with KEEP=1
# for instruction addresses (the code's footprint: loadtest/bench/footprint.py).
# BIND= (empty) serves on the wildcard address instead of `bind 127.0.0.1`
# (the UDP sockets then read each datagram's destination, IP_PKTINFO).
# PORT=N serves on another port than 5350 (dnsperf sends from N + 40000),
# for two runs side by side. Loopback only; every dnsperf run is bounded by
# its query count and -l.
#
# usage: loadtest/bench/instr-per-query.sh [QUERIES] [ROUNDS]   (default 40000 1; RATE=2000 WARM=20000)
set -euo pipefail
cd "$(dirname "$0")/../.."
. loadtest/bench/lib.sh
QUERIES=${1:-40000}; ROUNDS=${2:-1}; RATE=${RATE:-2000}; WARM=${WARM:-20000}; BIND=${BIND-127.0.0.1}; PORT=${PORT:-5350}
CACHES=${CACHES:---D1=32768,8,64 --LL=1048576,8,64}
SIM=(); [ -z "${CACHE:-}" ] || read -ra SIM <<<"--cache-sim=yes $CACHES"
read -ra CGX <<<"${CG:-}"
for t in dnsperf valgrind; do
  command -v $t >/dev/null || { echo "installing $t"; apt-get install -y -qq dnsperf valgrind >/dev/null; }
done
[ -n "${BIN:-}" ] || cargo build --release -q --bin clusterdns
W=$(mktemp -d /tmp/clusterdns-ipq.XXXX); [ -z "${KEEP:-}" ] || echo "# files kept in $W"
PID=
trap '[ -n "$PID" ] && kill $PID 2>/dev/null; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
python3 loadtest/bench/gen.py "$W" 100 100 >/dev/null
python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
hits, nodata, nx = (open(f"{w}/{k}.txt").read().split("\n")[:-1] for k in ("hits", "nodata", "nxdomain"))
mix = [hits[i] if i % 10 < 7 else nodata[i] if i % 10 == 7 else nx[i] for i in range(len(hits))]
open(f"{w}/mix.txt", "w").write("\n".join(mix) + "\n")
PY

# corefile PORT EXTRA: the server block, EXTRA's lines first in it.
corefile() {
  printf '.:%s {\n' "$1"
  [ -z "$BIND" ] || printf '    bind %s\n' "$BIND"
  [ -z "$2" ] || printf '%b\n' "$2"
  printf '    kubernetes cluster.local {\n        snapshot %s\n    }\n}\n' "$W/cluster.json"
}

# dnsperf_n N: N queries from the mix at RATE per second; prints the count answered.
dnsperf_n() {
  local secs=$(( $1 / RATE + 30 ))
  dnsperf -s 127.0.0.1 -p "$PORT" -x "$((PORT + 40000))" -d "$W/mix.txt" -n $(( ($1 + 9999) / 10000 )) -l "$secs" -Q "$RATE" -c 1 -q 100 -T 1 2>&1 |
    awk '/Queries completed/ {print $3}'
}

# variant NAME BINARY EXTRA: one row, NAME and instructions per answered query.
variant() {
  local name=$1 bin=$2 extra=$3 out answered ir
  corefile "$PORT" "$extra" > "$W/Corefile"
  out="$W/callgrind.$name"
  # names written out in every dump, so that the counted one (.1) reads alone
  valgrind --tool=callgrind --compress-strings=no "${SIM[@]}" "${CGX[@]}" --callgrind-out-file="$out" "$bin" -conf "$W/Corefile" >"$W/$name.log" 2>&1 &
  PID=$!
  for _ in $(seq 1 300); do
    dig +short +tries=1 +time=1 @127.0.0.1 -p "$PORT" svc-0.ns-0.svc.cluster.local | grep -q '^[0-9]' && break
    sleep 0.5
  done
  [ "$WARM" = 0 ] || dnsperf_n "$WARM" >/dev/null
  callgrind_control -z "$PID" >/dev/null 2>&1
  answered=$(dnsperf_n "$QUERIES")
  callgrind_control -d "$PID" >/dev/null 2>&1
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  ir=$(callgrind_ir "$out".1)
  printf '%-14s %9s answered  %12s Ir  %8.0f Ir/query' "$name" "$answered" "$ir" "$(echo "$ir $answered" | awk '{print ($2>0)?$1/$2:0}')"
  [ -z "${CACHE:-}" ] || awk -v q="$answered" '/^events:/ {for (i = 2; i <= NF; i++) e[$i] = i}
    /^summary:/ {printf "  %6.2f D1miss/query  %6.2f LLmiss/query", ($(e["D1mr"]) + $(e["D1mw"])) / q, ($(e["DLmr"]) + $(e["DLmw"])) / q}' "$out".1
  echo
  [ -n "${KEEP:-}" ] || rm -f "$out" "$out".*
}

echo "# $QUERIES queries at $RATE/s after $WARM to warm (0: none, the full path); user-space instructions (callgrind Ir) per answered query"
for _ in $(seq 1 "$ROUNDS"); do
  variant clusterdns "${BIN:-./target/release/clusterdns}" ""
  [ -z "${EXTRA:-}" ] || variant clusterdns+x "${BIN:-./target/release/clusterdns}" "$EXTRA"
  [ -z "${BASE:-}" ] || variant base "$BASE" ""
  [ -z "${BASE:-}" ] || [ -z "${EXTRA:-}" ] || variant base+x "$BASE" "$EXTRA"
done | tee "$W/rows.txt"
echo "# medians"
python3 - "$W/rows.txt" <<'PY'
import sys, statistics as st
rows, miss = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(f[0], []).append(float(f[5]))
    if len(f) > 9:
        miss.setdefault(f[0], []).append((float(f[7]), float(f[9])))
med = {k: st.median(v) for k, v in rows.items()}
for k, v in med.items():
    m = miss.get(k)
    extra = f"  {st.median(d for d, _ in m):6.2f} D1miss/query  {st.median(l for _, l in m):6.2f} LLmiss/query" if m else ""
    print(f"{k:14s} {v:9.0f} Ir/query{extra}")
for a, b in (("clusterdns+x", "clusterdns"), ("base+x", "base"), ("clusterdns", "base"), ("clusterdns+x", "base+x"), ("clusterdns+x", "base")):
    if a in med and b in med and med[b]:
        print(f"ratio {a}/{b} = {med[a] / med[b]:.3f}")
PY
