#!/usr/bin/env bash
# Side-by-side forwarding caches: clusterdns (`forward` + `cache`) and
# Debian's unbound (a forward-zone with its cache), both forwarding to the
# same upstream (a third process: unbound serving NAMES local names).
# Each cache is pinned to CPU 0, dnsperf and the upstream to CPU 1. Rows:
#   cached     names answered from the cache (warmed first)
#   negative   NXDOMAIN answers from the cache (warmed first)
# Reports qps per server core (qps / the server's CPU share) and medians
# over ROUNDS rounds, against unbound and against the zero-work echo
# (loadtest/bench/echo.c on CPU 0 too: the kernel's UDP path and dnsperf,
# the floor no cache can pass; its replies are the questions with QR set). BASE=PATH adds a second clusterdns binary (say,
# main's) as "base", measured in the same rounds, for before/after ratios.
# Loopback only; every run is bounded by -l SECONDS.
#
# usage: [BASE=PATH] loadtest/bench/compare-forward.sh [NAMES] [SECONDS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
NAMES=${1:-1000}; SECS=${2:-10}; ROUNDS=${3:-3}
for t in dnsperf unbound taskset gcc; do
  command -v $t >/dev/null || [ -x /usr/sbin/$t ] || { echo "installing dnsperf, unbound and gcc"; apt-get install -y -qq dnsperf unbound gcc >/dev/null; break; }
done
UNBOUND=$(command -v unbound || echo /usr/sbin/unbound)
cargo build --release -q
W=$(mktemp -d /tmp/clusterdns-fwd.XXXX)
. loadtest/bench/lib.sh
gcc -O2 -o "$W/echo" loadtest/bench/echo.c

{
  for i in $(seq 1 "$NAMES"); do echo "  local-data: \"h$i.example.org. 3600 IN A 192.0.2.$((i % 250 + 1))\""; done
} > "$W/names.conf"
for i in $(seq 1 "$NAMES"); do echo "h$i.example.org A"; done > "$W/cached.txt"
for i in $(seq 1 "$NAMES"); do echo "nx$i.example.org A"; done > "$W/negative.txt"

common="  do-daemonize: no\n  use-syslog: no\n  logfile: \"\"\n  chroot: \"\"\n  username: \"\"\n  directory: \"$W\"\n  access-control: 127.0.0.0/8 allow\n  do-ip6: no\n  do-not-query-localhost: no\n  num-threads: 1\n  verbosity: 0"
printf "server:\n  interface: 127.0.0.1\n  port: 5310\n  pidfile: \"$W/up.pid\"\n$common\n  module-config: \"iterator\"\n  local-zone: \"example.org.\" static\n  local-data: \"example.org. 3600 IN SOA ns.example.org. h.example.org. 1 3600 600 86400 3600\"\n  include: \"$W/names.conf\"\n" > "$W/upstream.conf"
printf "server:\n  interface: 127.0.0.1\n  port: 5312\n  pidfile: \"$W/fwd.pid\"\n$common\n  module-config: \"iterator\"\n  msg-cache-size: 64m\n  rrset-cache-size: 64m\nforward-zone:\n  name: \".\"\n  forward-addr: 127.0.0.1@5310\n" > "$W/unbound.conf"
corefile() { printf '.:%s {\n    bind 127.0.0.1\n    forward . 127.0.0.1:5310\n    cache 3600\n}\n' "$1" > "$W/Corefile.$1"; }
corefile 5311

taskset -c 1 "$UNBOUND" -d -c "$W/upstream.conf" 2>"$W/upstream.log" &
UP=$!
taskset -c 0 ./target/release/clusterdns -conf "$W/Corefile.5311" 2>"$W/clusterdns.log" &
CD=$!
taskset -c 0 "$UNBOUND" -d -c "$W/unbound.conf" 2>"$W/unbound.log" &
UB=$!
taskset -c 0 "$W/echo" 5314 &
EC=$!
BS=
if [ -n "${BASE:-}" ]; then
  corefile 5313
  taskset -c 0 "$BASE" -conf "$W/Corefile.5313" 2>"$W/base.log" &
  BS=$!
fi
trap 'kill $UP $CD $UB $EC $BS 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
ports="5311 5312${BS:+ 5313}"
for port in $ports; do wait_answer $port h1.example.org; done
# warm every cache with every name
for port in $ports; do
  for f in cached negative; do taskset -c 1 dnsperf -s 127.0.0.1 -p $port -d "$W/$f.txt" -n 1 -c 4 -q 50 >/dev/null 2>&1; done
done
echo "# $NAMES names; each cache on CPU 0, dnsperf and the upstream on CPU 1, ${SECS}s per row, $ROUNDS rounds"
for round in $(seq 1 "$ROUNDS"); do
  for kind in cached negative; do
    measure clusterdns $CD 5311 "$W/$kind.txt"
    measure unbound $UB 5312 "$W/$kind.txt"
    measure echo $EC 5314 "$W/$kind.txt"
    [ -z "$BS" ] || measure base $BS 5313 "$W/$kind.txt"
  done
done | tee "$W/rows.txt"
echo "# medians over $ROUNDS rounds (qps, server cpu share, qps per server core, mean latency ms)"
medians "$W/rows.txt" unbound "cached negative"
medians "$W/rows.txt" echo "cached negative" | grep -E "^echo|clusterdns/echo"
echo "# clusterdns RSS: $(awk '/VmRSS/ {print $2, $3}' /proc/$CD/status)   unbound RSS: $(awk '/VmRSS/ {print $2, $3}' /proc/$UB/status)${BS:+   base RSS: $(awk '/VmRSS/ {print $2, $3}' /proc/$BS/status)}"
