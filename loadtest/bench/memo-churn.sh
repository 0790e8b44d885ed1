#!/usr/bin/env bash
# Query throughput under Service churn against a quiet cluster, same run:
# `loadtest cluster` serves N synthetic Services from the fake API, changes
# R of them per second (each change queried until served) and offers the
# pods profile at QPS meanwhile; the server is pinned to CPU 0 and the
# load to CPU 1. Rows alternate quiet (0 changes/s) and churn for every
# binary, ROUNDS times; the summary gives each row's median qps per server
# core (answered ÷ server CPU seconds) and churn ÷ quiet per binary.
# BASE=PATH adds a second clusterdns binary (say, main's) as "base".
#
# usage: loadtest/bench/memo-churn.sh [SECONDS] [ROUNDS] [QPS] [SERVICES] [CHURN]
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-10}; ROUNDS=${2:-3}; QPS=${3:-30000}; SERVICES=${4:-10000}; CHURN=${5:-5}
cargo build --release -q -p clusterdns -p loadtest
W=$(mktemp -d /tmp/clusterdns-churn.XXXX)
trap 'rm -rf "$W"' EXIT
BINS=("new:$PWD/target/release/clusterdns")
[ -n "${BASE:-}" ] && BINS+=("base:$BASE")
for round in $(seq "$ROUNDS"); do
  for b in "${BINS[@]}"; do
    name=${b%%:*}; bin=${b#*:}
    for churn in 0 "$CHURN"; do
      out=$(taskset -c 1 ./target/release/loadtest cluster --server "$bin" --services "$SERVICES" \
        --churn "$churn" --rate "$QPS" --seconds "$SECS" --pin-server 0)
      # the capacity row: offered achieved loss p50 p99 p99.9 mean qps/core rcodes
      row=$(awk '/^ *[0-9]/ && NF >= 8 {print $2, $3, $8}' <<<"$out" | tail -1)
      echo "$round $name $churn $row" | tee -a "$W/rows"
    done
  done
done
echo "binary churn/s  median answered/s  median qps/core  (rows: round binary churn answered loss qps/core)"
python3 - "$W/rows" "$CHURN" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
med = {}
for name in dict.fromkeys(r[1] for r in rows):
    for churn in ("0", sys.argv[2]):
        sel = [r for r in rows if r[1] == name and r[2] == churn]
        med[name, churn] = statistics.median(float(r[5]) for r in sel)
        print(f"{name:6} {churn:>7}  {statistics.median(float(r[3]) for r in sel):>17.0f}  {med[name, churn]:>15.0f}")
    print(f"{name:6} churn/quiet qps/core: {med[name, sys.argv[2]] / med[name, '0']:.3f}")
PY
