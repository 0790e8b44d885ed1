#!/usr/bin/env bash
# Fair under overload (issue 42): one client floods, twenty polite ones ask.
#
# clusterdns (this checkout's release build), BASE (another clusterdns
# binary, say main's, if set) and Debian's Knot (rate limiting off) serve the
# synthetic cluster (10,000 Services), each pinned to CPU 0; the clients run
# on CPU 1 (loadtest/bench/fairload.c, built here with gcc). For each server
# in turn, ROUNDS times (rows alternate, so the noise of a shared machine
# falls on all alike):
#   sat     dnsperf's saturation (closed loop, 32 clients x 400 outstanding)
#   alone   20 polite clients (127.0.0.10-29, own sockets) at 200 qps each
#           for SECS: answered fraction (within 1 s), p50, p99 from send time
#           to the kernel's receive timestamp of the reply (SO_TIMESTAMPNS: the
#           client's own wait for the core it shares with the flooder is not
#           counted)
#   flood   the same while one client at 127.0.0.2 (4 ports) sends as fast as
#           it can (FLOOD=gso, the default: UDP_SEGMENT sends of 64 queries
#           each, the kernel cutting them into datagrams, so that one core
#           offers several times what one server core answers without
#           capping the server; FLOOD=mmsg: sendmmsg of 64, what one core
#           offered before, about 1.5x), or at FLOOD_X times the server's
#           sat when FLOOD_X is set; the polite clients start FLOOD_LEAD seconds
#           (default 1) after the flood, so the numbers are the flood's steady
#           state (with FLOOD_LEAD=0 the detection of the flooder is inside).
#           Also the flooder's offered and answered rates.
# Then the medians per server, the flooder's offered and answered rates as
# multiples of its saturation, and how noisy the run was: each server's
# spread of saturation and alone-p99 over the rounds, and the load average.
#
# BIN=PATH runs another binary as "clusterdns" than the one cargo builds here.
#
# QUOTA=PCT (no longer needed with FLOOD=gso) caps each server at PCT% of CPU 0 (lib.sh's limit_cpu, a cgroup
# v1 CFS quota, as over2x.sh does), after the warm-up and before the rounds,
# so that one generator core can flood at 2x the (capped) saturation or more:
# sat is then measured under the same cap, and the flooder's multiples of it
# are what the issue asks. Without QUOTA the flood is what one core offers.
# Beware: the kernel enforces a quota at its tick (HZ=250 here: 4 ms), so a
# capped server runs several ms over its quota and then stalls for up to
# ~10 ms (measured: a busy loop under 1 ms per 3.3 ms sees gaps of 8-10 ms),
# and those stalls, not the server, set every capped p99.
# SHARES=N (with QUOTA) weights each server's group N (cpu.shares, default
# 1024) against other processes on CPU 0: on a shared machine, what the
# cap costs apart from what waiting behind others' work costs.
#
# PORT=N (default 25360) is the first of the three ports used.
#
# usage: [PORT=25360] [BASE=/tmp/base] [BIN=PATH] [FLOOD_LEAD=1] [FLOOD=gso|mmsg] [FLOOD_X=N] [QUOTA=PCT [SHARES=N]] loadtest/bench/fair.sh [ROUNDS] [SECS]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}; SECS=${2:-6}; LEAD=${FLOOD_LEAD:-1}; P=${PORT:-25360}
FLOOD=${FLOOD:-gso}; FLOOD_X=${FLOOD_X:-0}
for t in dnsperf knotd gcc; do
  command -v $t >/dev/null || { echo "installing the peers"; apt-get install -y -qq dnsperf knot gcc >/dev/null; break; }
done
[ -n "${BIN:-}" ] || cargo build --release -q --bin clusterdns
[ -x target/release/loadtest ] || cargo build --release -q -p loadtest
. loadtest/bench/lib.sh
W=$(mktemp -d /tmp/clusterdns-fair.XXXX)
ROWS=$W/rows
gcc -O2 -o "$W/fairload" loadtest/bench/fairload.c
synthetic "$W" 10000 100
for i in $(seq 0 999); do echo "svc-$i.ns-$((i % 100)).svc.cluster.local"; done > "$W/names"
sed 's/$/ A/' "$W/names" > "$W/dnsperf.txt"
CLUSTERDNS=${BIN:-} serve_pair "$W" "$P" $((P + 1))
servers=("clusterdns:$P:$CD" "knot:$((P + 1)):$KN")
pids=("$CD" "$KN")
if [ -n "${BASE:-}" ]; then
  mkdir -p "$W/base" && cp "$W/cluster.json" "$W/base/"
  CD_NEW=$CD
  CLUSTERDNS=$BASE serve_clusterdns "$W/base" $((P + 2))
  BASE_PID=$CD CD=$CD_NEW
  wait_answer $((P + 2)) svc-0.ns-0.svc.cluster.local
  servers=("clusterdns:$P:$CD" "base:$((P + 2)):$BASE_PID" "knot:$((P + 1)):$KN")
  pids+=("$BASE_PID")
fi
trap "unlimit_cpu; kill ${pids[*]} 2>/dev/null; wait 2>/dev/null; rm -rf '$W'" EXIT
FL="taskset -c 1 $W/fairload"

# row NAME PORT: one server's sat, alone and flood, as one line in ROWS.
row() {
  local name=$1 port=$2 sat alone flood fl
  sat=$(taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$W/dnsperf.txt" -l 3 -c 32 -q 400 -T 1 2>&1 |
    awk '/Queries per second/ {printf "%.0f", $4}')
  alone=$($FL polite "$port" "$SECS" "$W/names" 20 200 10)
  $FL flood "$port" "$(awk -v s="$SECS" -v l="$LEAD" 'BEGIN {print s + l + 1}')" "$W/names" 127.0.0.2 4 "$FLOOD" \
    "$(awk -v s="$sat" -v x="$FLOOD_X" 'BEGIN {print s * x}')" > "$W/flood" &
  sleep "$LEAD"
  flood=$($FL polite "$port" "$SECS" "$W/names" 20 200 10)
  wait $!
  fl=$(cat "$W/flood")
  # name sat | alone: fraction p50 p99 | flood: fraction p50 p99 | flooder: sent/s answered/s
  echo "$name $sat $(echo "$alone" | awk '{print $7, $9, $11}') $(echo "$flood" | awk '{print $7, $9, $11}') $(echo "$fl" | awk '{print $7, $9}')" |
    tee -a "$ROWS"
}

# A warm-up for each server first (the first seconds after a start are slower).
for s in "${servers[@]}"; do
  IFS=: read -r _ port _ <<<"$s"
  taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$W/dnsperf.txt" -l 2 -c 8 -q 100 -Q 20000 -T 1 >/dev/null 2>&1 || true
done
if [ -n "${QUOTA:-}" ]; then
  limit_cpu "$QUOTA" "${pids[@]}"
  echo "# each server capped at $QUOTA% of CPU 0"
  if [ -n "${SHARES:-}" ]; then
    for g in "${CGROUPS[@]}"; do echo "$SHARES" > "$g/cpu.shares"; done
    echo "# each server's group weighted $SHARES (cpu.shares) against the machine's other work"
  fi
fi
echo "# the flood: $FLOOD sends$([ "$FLOOD_X" = 0 ] && echo ", as fast as one core can" || echo ", paced at ${FLOOD_X}x each server's sat")"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
echo "# server sat_qps | alone: fraction p50_ms p99_ms | flood: fraction p50_ms p99_ms | flooder: offered_qps answered_qps"
for _ in $(seq 1 "$ROUNDS"); do
  for s in "${servers[@]}"; do
    IFS=: read -r name port _ <<<"$s"
    row "$name" "$port"
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$ROWS" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(f[0], []).append([float(x) for x in f[1:]])
print("# medians (min..max over rounds for the noisy ones)")
for name, v in rows.items():
    m = [st.median(r[i] for r in v) for i in range(9)]
    lo = lambda i: min(r[i] for r in v)
    hi = lambda i: max(r[i] for r in v)
    print(f"{name:10s} sat {m[0]:7.0f} qps ({lo(0):.0f}..{hi(0):.0f})")
    print(f"{name:10s} alone  polite answered {m[1]*100:7.3f}%  p50 {m[2]:7.3f} ms  p99 {m[3]:7.3f} ms ({lo(3):.3f}..{hi(3):.3f})")
    print(f"{name:10s} flood  polite answered {m[4]*100:7.3f}% ({lo(4)*100:.3f}..{hi(4)*100:.3f})  p50 {m[5]:7.3f} ms  p99 {m[6]:7.3f} ms ({lo(6):.3f}..{hi(6):.3f}), {m[6]/(m[3] or float('nan')):.1f}x alone")
    sat = m[0] or float("nan")
    print(f"{name:10s} flooder offered {m[7]:7.0f} qps ({m[7]/sat:.2f}x sat)  answered {m[8]:7.0f} qps ({m[8]/sat:.2f}x sat)")
PY
