#!/usr/bin/env bash
# Latency tail at a moderate open-loop rate, side by side in one run:
# clusterdns, BASE (another clusterdns binary, optional), the zero-work
# echo (loadtest/bench/echo.c: the floor of the kernel's UDP path, the
# generator and the machine) and Knot, serving the same synthetic 10,000
# Services. `loadtest run --pods` at RATE qps (default 20,000) offers the
# pods profile open loop: each latency counts from the query's scheduled
# send time. Servers on CPU 0, loadtest on CPU 1, rows alternating between
# the servers for ROUNDS rounds; the summary gives each server's median
# p50, p99 and p99.9 and the clusterdns/echo p99 ratio. wait% is the time
# the server's threads were runnable but not running (run_delay in
# /proc/PID/task/*/schedstat), as a share of the row's wall time (which
# includes about a second of the generator building its queries): when it
# is not near zero, the p99 is the scheduler's.
#
# ISOLATE=1 runs the whole benchmark in a session of its own whose
# scheduler autogroup gets nice -20. With autogroups on (the kernel's
# default, /proc/sys/kernel/sched_autogroup_enabled), each session shares
# the CPUs equally with every other session whatever its processes' nice,
# so on a machine busy with other sessions' builds the generator and the
# servers wait milliseconds for their turn: that, not any server, is then
# the p99. Isolated, what is left of the echo's tail is the generator's and
# the kernel's own. Loopback only; every run is bounded by --step-duration.
#
# usage: [BASE=PATH] [RATE=QPS] [ISOLATE=1] loadtest/bench/tail.sh [SECONDS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${ISOLATE:-0}" = 1 ]; then
  ISOLATE=2 exec setsid -w "$0" "$@"
elif [ "${ISOLATE:-0}" = 2 ]; then
  echo -20 > /proc/self/autogroup
fi
SECS=${1:-10}; ROUNDS=${2:-3}; RATE=${RATE:-20000}
for t in knotd gcc; do
  command -v $t >/dev/null || { echo "installing the peers"; apt-get install -y -qq knot gcc >/dev/null; break; }
done
cargo build --release -q -p clusterdns -p loadtest
W=$(mktemp -d /tmp/clusterdns-tail.XXXX)
. loadtest/bench/lib.sh
gcc -O2 -o "$W/echo" loadtest/bench/echo.c
synthetic "$W" 10000 100

trap 'kill ${PIDS[*]} 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
cluster_corefile 5360; start clusterdns 5360 ./target/release/clusterdns -conf "$W/Corefile.5360"
if [ -n "${BASE:-}" ]; then cluster_corefile 5361; start base 5361 "$BASE" -conf "$W/Corefile.5361"; fi
start echo 5362 "$W/echo" 5362
start knot 5363 knotd -c "$(knot_conf "$W" 5363 "$W/cluster.local.zone")"
for s in "${SERVERS[@]}"; do
  IFS=: read -r name port _ <<<"$s"
  [ "$name" = echo ] || wait_answer "$port" svc-0.ns-0.svc.cluster.local
done

echo "# pods profile at $RATE qps open loop, ${SECS}s per row, $ROUNDS rounds; servers on CPU 0, loadtest on CPU 1, $(cut -d/ -f2 /proc/self/autogroup); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# server       achieved  loss%   p50_ms   p99_ms p99.9_ms  mean_ms  wait%"
waited() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ns += $2} END {print ns + 0}'; }
for round in $(seq 1 "$ROUNDS"); do
  for s in "${SERVERS[@]}"; do
    IFS=: read -r name port pid <<<"$s"
    w0=$(waited "$pid"); t0=$(date +%s%N)
    out=$(taskset -c 1 ./target/release/loadtest run --target "127.0.0.1:$port" --pods \
      --services 10000 --namespaces 100 --lookups 50000 --rate "$RATE" --step-duration "$SECS" 2>&1)
    share=$(echo "$w0 $(waited "$pid") $t0 $(date +%s%N)" | awk '{printf "%.2f", ($2-$1)/($4-$3)*100}')
    echo "$out" | awk -v n="$name" -v w="$share" '$1 ~ /^[0-9.]+$/ && NF >= 8 {gsub(/%/, "", $3);
      printf "%-12s %9.0f %6.3f %8.3f %8.3f %8.3f %8.3f %6.2f\n", n, $2, $3, $4, $5, $6, $7, w}'
  done
done | tee "$W/rows.txt"
echo "# medians over $ROUNDS rounds; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$W/rows.txt" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(f[0], []).append([float(x) for x in f[1:]])
med = {k: [st.median(r[i] for r in v) for i in range(7)] for k, v in rows.items()}
for name, m in med.items():
    print(f"{name:12s} {m[0]:9.0f} qps  loss {m[1]:.3f}%  p50 {m[2]:.3f}  p99 {m[3]:.3f}  p99.9 {m[4]:.3f}  mean {m[5]:.3f} ms  wait {m[6]:.2f}%")
for peer in ("echo", "knot", "base"):
    if "clusterdns" in med and peer in med and med[peer][3]:
        print(f"ratio clusterdns/{peer} p99 = {med['clusterdns'][3] / med[peer][3]:.2f}")
PY
