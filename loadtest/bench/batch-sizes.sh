#!/usr/bin/env bash
# How many queries each UDP batch carries under dnsperf: the server's
# recvmmsg and sendmmsg calls (perf's syscall tracepoints on its process)
# while dnsperf sends SECS seconds at RATE per second with CLIENT's
# options (default `-c 8 -q 500`, as issue 41's outside measurement), to
# the synthetic 10,000 Services and cpu-per-query.sh's mix (70% A, 10%
# NODATA, 20% NXDOMAIN). Queries per recvmmsg is the batch size: the
# worker's per-batch cost (the calls, the clock reads, the queue's
# bookkeeping) is shared by that many queries. It depends on how fast the
# server is against the arrivals, so on a busy machine it is larger than
# on a quiet one (a server that falls behind reads fuller batches);
# compare binaries in the same run. Loopback only; dnsperf is bounded by -l.
#
# usage: [BIN=PATH] [CLIENT='-c 8 -q 500'] loadtest/bench/batch-sizes.sh [RATE] [SECS]   (default 20000 10)
set -euo pipefail
cd "$(dirname "$0")/../.."
RATE=${1:-20000}; SECS=${2:-10}; CLIENT=${CLIENT:--c 8 -q 500}
for t in dnsperf perf; do command -v $t >/dev/null || { echo "needs $t (dnsperf, linux-perf)"; exit 1; }; done
[ -n "${BIN:-}" ] || cargo build --release -q --bin clusterdns
W=$(mktemp -d /tmp/clusterdns-bsz.XXXX)
python3 loadtest/bench/gen.py "$W" 100 100 >/dev/null
python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
hits, nodata, nx = (open(f"{w}/{k}.txt").read().split("\n")[:-1] for k in ("hits", "nodata", "nxdomain"))
mix = [hits[i] if i % 10 < 7 else nodata[i] if i % 10 == 7 else nx[i] for i in range(len(hits))]
open(f"{w}/mix.txt", "w").write("\n".join(mix) + "\n")
PY
printf '.:5391 {\n    bind 127.0.0.1\n    kubernetes cluster.local {\n        snapshot %s\n    }\n}\n' "$W/cluster.json" > "$W/Corefile"
"${BIN:-./target/release/clusterdns}" -conf "$W/Corefile" > "$W/log" 2>&1 & P=$!
trap 'kill $P 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
for _ in $(seq 1 100); do
  dig +short +tries=1 +time=1 @127.0.0.1 -p 5391 svc-0.ns-0.svc.cluster.local | grep -q '^[0-9]' && break
  sleep 0.2
done
# shellcheck disable=SC2086
dnsperf -s 127.0.0.1 -p 5391 -d "$W/mix.txt" -l 3 -Q "$RATE" $CLIENT >/dev/null 2>&1 # warm-up
perf stat -e syscalls:sys_enter_recvmmsg,syscalls:sys_enter_sendmmsg -p "$P" -o "$W/perf.txt" & S=$!
sleep 1
# shellcheck disable=SC2086
done_=$(dnsperf -s 127.0.0.1 -p 5391 -d "$W/mix.txt" -l "$SECS" -Q "$RATE" $CLIENT 2>&1 | awk '/Queries completed/ {print $3}')
sleep 0.5; kill -INT $S; wait $S 2>/dev/null || true
recv=$(awk '/sys_enter_recvmmsg/ {gsub(",", "", $1); print $1}' "$W/perf.txt")
send=$(awk '/sys_enter_sendmmsg/ {gsub(",", "", $1); print $1}' "$W/perf.txt")
echo "$done_ queries answered at $RATE/s ($CLIENT): $recv recvmmsg, $send sendmmsg, $(echo "$done_ $recv" | awk '{printf "%.2f", $1 / $2}') queries a batch"
