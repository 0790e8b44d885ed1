#!/usr/bin/env bash
# The capacity knee of clusterdns and of Debian's Knot, side by side, with
# the same workload: the pods profile over one synthetic cluster (served by
# clusterdns from a kubectl dump, by Knot from the zone `loadtest
# export-zone` writes). Each server pinned to CPU 0, loadtest to CPU 1; the
# knee is the highest offered rate with p99 <= SLO and loss <= 0.1%.
# Reports land in DIR (default /tmp): knee-clusterdns.{json,svg}, knee-knot.{json,svg}.
#
# usage: loadtest/bench/knee-vs-knot.sh [SERVICES] [NAMESPACES] [STEP_SECONDS] [DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
SERVICES=${1:-10000}; NAMESPACES=${2:-100}; STEP=${3:-3}; OUT=${4:-/tmp}
command -v knotd >/dev/null || { echo "installing knot"; apt-get install -y -qq knot >/dev/null; }
cargo build --release -q
W=$(mktemp -d /tmp/clusterdns-knee.XXXX)
LT=./target/release/loadtest
. loadtest/bench/lib.sh
synthetic "$W" "$SERVICES" "$NAMESPACES"
serve_pair "$W" 5330 5331
common=(--pods --services "$SERVICES" --namespaces "$NAMESPACES" --lookups 50000 --rate 40000 --factor 1.25 --step-duration "$STEP")
echo "# clusterdns"
taskset -c 1 $LT knee --target 127.0.0.1:5330 "${common[@]}" --pid $CD --out "$OUT/knee-clusterdns" 2>/dev/null | tail -3
echo "# knot"
taskset -c 1 $LT knee --target 127.0.0.1:5331 "${common[@]}" --pid $KN --out "$OUT/knee-knot" 2>/dev/null | tail -3
