#!/usr/bin/env bash
# Twice the capacity under a CPU quota, then pauses at moderate load.
#
# 1. clusterdns (this checkout's release build), BASE (another clusterdns
#    binary, if set) and Debian's Knot serve the same synthetic cluster,
#    each pinned to CPU 0 and capped at QUOTA% of it (lib.sh's limit_cpu),
#    and are offered RATE qps of the pods profile for SECS seconds each,
#    in alternating rounds (loadtest on CPU 1, open loop). RATE should be
#    about twice what QUOTA buys (at 12%: about 45k answered, so 90000).
#    Prints each round's row and the medians: answered qps, loss, p50, p99.
# 2. Uncapped, at MODERATE qps (default 20000) for SECS seconds, each
#    clusterdns is stopped for 50 ms PAUSES times (SIGSTOP/SIGCONT, 400 ms
#    apart): a pause must be absorbed by the receive queue, not dropped.
#
# usage: [QUOTA=12] [RATE=90000] [BASE=/tmp/base] [MODERATE=20000] [PAUSES=10]
#        loadtest/bench/over2x.sh [ROUNDS] [SECS]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}; SECS=${2:-10}
QUOTA=${QUOTA:-12}; RATE=${RATE:-90000}; MODERATE=${MODERATE:-20000}; PAUSES=${PAUSES:-10}
command -v knotd >/dev/null || { echo "installing knot"; apt-get install -y -qq knot >/dev/null; }
# The server alone, as cpu-per-query.sh and a BASE binary build it.
cargo build --release -q --bin clusterdns
[ -x target/release/loadtest ] || cargo build --release -q -p loadtest
. loadtest/bench/lib.sh
LT=./target/release/loadtest
W=$(mktemp -d /tmp/clusterdns-over2x.XXXX)
ROWS=$W/rows
synthetic "$W" 10000 100
serve_pair "$W" 5330 5331
servers=("clusterdns:5330:$CD" "knot:5331:$KN")
pids=("$CD" "$KN")
if [ -n "${BASE:-}" ]; then
  mkdir -p "$W/base" && cp "$W/cluster.json" "$W/base/"
  CD_NEW=$CD
  CLUSTERDNS=$BASE serve_clusterdns "$W/base" 5332
  BASE_PID=$CD CD=$CD_NEW
  wait_answer 5332 svc-0.ns-0.svc.cluster.local
  servers+=("base:5332:$BASE_PID")
  pids+=("$BASE_PID")
fi
trap "unlimit_cpu; kill ${pids[*]} 2>/dev/null; wait 2>/dev/null; rm -rf '$W'" EXIT
workload=(--pods --services 10000 --namespaces 100 --lookups 50000)

# run NAME PORT PID RATE: one loadtest step; appends "NAME <the report row>" to ROWS.
run() {
  taskset -c 1 $LT run --target "127.0.0.1:$2" "${workload[@]}" --rate "$4" --step-duration "$SECS" \
    --pid "$3" 2>/dev/null | awk -v n="$1" '$1 ~ /^[0-9]+$/ && NF >= 8 {print n, $0}' | tee -a "$ROWS"
}

limit_cpu "$QUOTA" "${pids[@]}"
echo "# offered $RATE qps, each server capped at $QUOTA% of CPU 0, $ROUNDS rounds of ${SECS}s"
echo "# server offered achieved loss p50 p99 p99.9 mean qps/core rcodes"
for round in $(seq 1 "$ROUNDS"); do
  for s in "${servers[@]}"; do
    IFS=: read -r name port pid <<<"$s"
    run "$name" "$port" "$pid" "$RATE"
  done
done
python3 - "$ROWS" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(f[0], []).append((float(f[2]), float(f[3].rstrip('%')), float(f[4]), float(f[5]), float(f[6])))
print("# medians")
for name, v in rows.items():
    m = [st.median(x[i] for x in v) for i in range(5)]
    print(f"{name:10s} answered {m[0]:8.0f} qps  loss {m[1]:6.2f}%  p50 {m[2]:7.3f} ms  p99 {m[3]:7.3f} ms  p99.9 {m[4]:7.3f} ms")
PY
unlimit_cpu; CGROUPS=()

[ "$PAUSES" -gt 0 ] || exit 0
: > "$ROWS"
echo "# uncapped at $MODERATE qps, stopped for 50 ms $PAUSES times"
for s in "${servers[@]}"; do
  IFS=: read -r name port pid <<<"$s"
  [ "$name" = knot ] && continue
  ( sleep 1; for _ in $(seq 1 "$PAUSES"); do kill -STOP "$pid"; sleep 0.05; kill -CONT "$pid"; sleep 0.4; done ) &
  run "$name" "$port" "$pid" "$MODERATE"
  wait $!
done
