#!/usr/bin/env bash
# Does a load split over 4 generators, merged, measure what one generator
# at the total rate measures? clusterdns serves a synthetic cluster pinned
# to CPU 0; in alternating rounds one `loadtest run` and four (`--index i
# --of 4`, one shared `--start-at`, all pinned to CPU 1) ramp the same
# pods profile from RATE to 5x RATE in 5 steps, and `loadtest merge`
# combines the four. Prints each step's achieved qps and p99 side by side
# and the medians over the rounds; reports land in DIR (default /tmp):
# single-R.*, merged-R.*.
#
# usage: [RATE=first step qps] loadtest/bench/merge-vs-single.sh [SERVICES] [NAMESPACES] [STEP_SECONDS] [ROUNDS] [DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
SERVICES=${1:-10000}; NAMESPACES=${2:-100}; STEP=${3:-5}; ROUNDS=${4:-2}; OUT=${5:-/tmp}
cargo build --release -q -p clusterdns -p loadtest
W=$(mktemp -d /tmp/clusterdns-merge.XXXX)
LT=./target/release/loadtest
. loadtest/bench/lib.sh
synthetic "$W" "$SERVICES" "$NAMESPACES"
serve_clusterdns "$W" 5330
trap 'kill $CD 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
wait_answer 5330 svc-0.ns-0.svc.cluster.local
ramp=(run --target 127.0.0.1:5330 --pods --services "$SERVICES" --namespaces "$NAMESPACES" --lookups 50000
  --rate "${RATE:-10000}" --ramp 1x..5x --steps 5 --step-duration "$STEP" --pid "$CD")
for r in $(seq 1 "$ROUNDS"); do
  taskset -c 1 $LT "${ramp[@]}" --out "$OUT/single-$r" >/dev/null 2>&1
  start=$(( $(date +%s) + 2 ))
  pids=()
  for i in 0 1 2 3; do
    taskset -c 1 $LT "${ramp[@]}" --index "$i" --of 4 --start-at "$start" --log-report > "$W/gen-$r-$i.log" 2>/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
  $LT merge "$W"/gen-"$r"-*.log --out "$OUT/merged-$r" | grep -E '^note|^knee' | sed "s/^/round $r, 4 merged: /" || true
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics as st, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(name):
    return json.load(open(f"{out}/{name}.json"))
rows = {}
for r in range(1, rounds + 1):
    one, four = load(f"single-{r}"), load(f"merged-{r}")
    print(f"round {r}: offered   single qps  merged qps   single p99  merged p99")
    for a, b in zip(one["steps"], four["steps"]):
        print(f"        {a['offered_qps']:9.0f}  {a['achieved_qps']:10.0f}  {b['achieved_qps']:10.0f}  {a['p99_ms']:8.3f} ms {b['p99_ms']:8.3f} ms")
        rows.setdefault(round(a["offered_qps"]), []).append((a["achieved_qps"], b["achieved_qps"], a["p99_ms"], b["p99_ms"]))
print("medians over the rounds: offered, qps single/merged, p99 single/merged")
for offered, v in sorted(rows.items()):
    m = [st.median(x[i] for x in v) for i in range(4)]
    print(f"  {offered:9d}  {m[0]:9.0f} / {m[1]:9.0f} ({(m[1] / m[0] - 1) * 100:+.1f}%)   {m[2]:.3f} / {m[3]:.3f} ms ({(m[3] / m[2] - 1) * 100:+.1f}%)")
PY
