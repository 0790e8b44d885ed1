#!/usr/bin/env bash
# System calls per forwarded cache miss, counted with perf's syscall
# tracepoints on the server's process (every thread): clusterdns with
# `forward . 127.0.0.1:UP` + `cache 30` to Knot answering a wildcard, sent
# N unique names (`mN.example. A`) at RATE per second by dnsperf -c 8,
# after 3,000 others to warm (the lanes start, their pools of upstream
# ports begin to fill). A count, not a timing: a loaded machine moves it
# little (the share of new ports does depend on the rate: each lane keeps
# 1,024 idle ports before reusing one, and a port lives at most 10 s).
# instr-per-miss.sh counts the user-space instructions of the same path.
# Loopback only; the dnsperf run is bounded by its query count and -l.
#
# usage: [BIN=PATH] loadtest/bench/syscalls-per-miss.sh [N] [RATE]   (default 5000 500)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-5000}; RATE=${2:-500}
for t in dnsperf knotd perf; do
  command -v $t >/dev/null || [ -x /usr/sbin/$t ] || { echo "needs $t (dnsperf, knot, linux-perf)"; exit 1; }
done
[ -n "${BIN:-}" ] || cargo build --release -q --bin clusterdns
. loadtest/bench/lib.sh
W=$(mktemp -d /tmp/clusterdns-spm.XXXX)
UP=5396
printf '$ORIGIN example.\n$TTL 300\n@ IN SOA ns.example. h.example. 1 3600 600 86400 300\n@ IN NS ns.example.\nns IN A 192.0.2.53\n* IN A 192.0.2.1\n' > "$W/example.zone"
knot_conf "$W" "$UP" "$W/example.zone" example. >/dev/null
knotd -c "$W/knot.conf" 2>"$W/knot.log" & KN=$!
printf '.:5397 {\n    bind 127.0.0.1\n    forward . 127.0.0.1:%s\n    cache 30\n}\n' "$UP" > "$W/Corefile"
"${BIN:-./target/release/clusterdns}" -conf "$W/Corefile" > "$W/log" 2>&1 & P=$!
trap 'kill $KN $P 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
for _ in $(seq 1 100); do
  dig +short +tries=1 +time=1 @127.0.0.1 -p 5397 up.example | grep -q '^[0-9]' && break
  sleep 0.2
done
# ask PREFIX COUNT: COUNT unique names at RATE per second; prints the count answered.
ask() {
  awk -v p="$1" -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%s%d.example A\n", p, i }' > "$W/q.txt"
  dnsperf -s 127.0.0.1 -p 5397 -d "$W/q.txt" -n 1 -l $(( $2 / RATE + 30 )) -Q "$RATE" -c 8 -q 200 -t 5 2>&1 |
    awk '/Queries completed/ {print $3}'
}
ask w 3000 >/dev/null
CALLS="recvmmsg sendmmsg sendto recvfrom epoll_wait epoll_ctl write socket connect getsockname close futex"
EV=$(for s in $CALLS; do printf 'syscalls:sys_enter_%s,' "$s"; done)
perf stat -e "${EV%,}" -p "$P" -o "$W/perf.txt" & S=$!
sleep 1
answered=$(ask m "$N")
sleep 0.5; kill -INT $S; wait $S 2>/dev/null || true
echo "# $answered of $N forwarded misses answered at $RATE/s; system calls of the server, per miss"
awk -v n="$answered" '/sys_enter/ {gsub(",", "", $1); printf "%-12s %8d  %6.2f\n", substr($2, 20), $1, $1 / n; t += $1}
  END {printf "%-12s %8d  %6.2f\n", "all", t, t / n}' "$W/perf.txt"
