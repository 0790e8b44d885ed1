#!/usr/bin/env bash
# Overload: measure the knee of a server with the pods profile, then offer
# 2x (and 1x) the knee for STEP_SECONDS and report what was answered and
# how fast. Goodput must hold near the knee and the latency of the
# answered queries must stay bounded (open-loop: latency counts from the
# scheduled send time). clusterdns and Debian's Knot side by side, each
# pinned to CPU 0, loadtest to CPU 1. Reports land in DIR (default /tmp).
#
# RATE sets where the knee search starts (default 40000 qps); CLUSTERDNS
# names another clusterdns binary (say, main's, for before/after). On a
# machine where one generator core cannot offer twice a server's knee,
# QUOTA=PCT caps each server at PCT% of its core (lib.sh's limit_cpu) so
# that it can: the knee and the overload are then both measured under the cap.
#
# usage: loadtest/bench/overload.sh [SERVICES] [NAMESPACES] [STEP_SECONDS] [DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
SERVICES=${1:-10000}; NAMESPACES=${2:-100}; STEP=${3:-10}; OUT=${4:-/tmp}
command -v knotd >/dev/null || { echo "installing knot"; apt-get install -y -qq knot >/dev/null; }
# The server alone, as cpu-per-query.sh and a BASE binary build it (building
# the workspace unifies features differently and rebuilds clusterdns).
cargo build --release -q --bin clusterdns
[ -x target/release/loadtest ] || cargo build --release -q -p loadtest
W=$(mktemp -d /tmp/clusterdns-overload.XXXX)
LT=./target/release/loadtest
. loadtest/bench/lib.sh
synthetic "$W" "$SERVICES" "$NAMESPACES"
serve_pair "$W" 5330 5331
if [ -n "${QUOTA:-}" ]; then
  limit_cpu "$QUOTA" "$CD" "$KN"
  trap "unlimit_cpu; kill $CD $KN 2>/dev/null; wait 2>/dev/null; rm -rf '$W'" EXIT
fi
workload=(--pods --services "$SERVICES" --namespaces "$NAMESPACES" --lookups 50000)
for server in clusterdns:5330:$CD knot:5331:$KN; do
  IFS=: read -r name port pid <<<"$server"
  taskset -c 1 $LT knee --target 127.0.0.1:$port "${workload[@]}" --rate "${RATE:-40000}" --factor 1.25 --step-duration 5 \
    --pid "$pid" --out "$OUT/overload-knee-$name" >/dev/null 2>&1
  knee=$(python3 -c "import json,sys; k=json.load(open('$OUT/overload-knee-$name.json'))['knee']; print(int(k['offered_qps']) if k else 0)")
  echo "# $name: knee $knee qps offered"
  [ "$knee" -gt 0 ] || { echo "no knee found for $name"; continue; }
  taskset -c 1 $LT run --target 127.0.0.1:$port "${workload[@]}" --ramp 1x..2x --steps 2 --rate "$knee" \
    --step-duration "$STEP" --pid "$pid" --out "$OUT/overload-$name" 2>/dev/null
  echo "$name after the overload: $(grep VmRSS /proc/$pid/status)"
done
