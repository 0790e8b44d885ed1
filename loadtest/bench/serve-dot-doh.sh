#!/usr/bin/env bash
# Serving DNS over TLS and over HTTPS: clusterdns (tls:// and https://
# server blocks) against unbound (tls-port, https-port) answering the same
# NAMES local names, each with one thread on CPU 0, dnsperf on CPU 1
# (`-m dot`, `-m doh`: 32 pipelined connections). Rows per round: qps, the
# server's CPU share, qps per server core, mean latency; then medians and
# the clusterdns/unbound ratio per transport. Test certificates made here
# with openssl; loopback only; every run bounded by -l SECONDS.
#
# usage: loadtest/bench/serve-dot-doh.sh [NAMES] [SECONDS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
NAMES=${1:-1000}; SECS=${2:-10}; ROUNDS=${3:-3}
. loadtest/bench/lib.sh
tls_bench_setup serve-dot

bench_certs "$W"

for i in $(seq 1 "$NAMES"); do echo "  local-data: \"h$i.example.org. 3600 IN A 192.0.2.$((i % 250 + 1))\""; done > "$W/names.conf"
for i in $(seq 1 "$NAMES"); do echo "h$i.example.org A"; done > "$W/names.txt"
{ echo '$ORIGIN example.org.'; echo '@ 3600 IN SOA ns.example.org. h.example.org. 1 3600 600 86400 3600'
  for i in $(seq 1 "$NAMES"); do echo "h$i 3600 IN A 192.0.2.$((i % 250 + 1))"; done; } > "$W/example.org.db"
printf "server:\n  interface: 127.0.0.1@5340\n  interface: 127.0.0.1@5341\n  tls-port: 5340\n  https-port: 5341\n  http-endpoint: \"/dns-query\"\n  tls-service-key: \"$W/srv.key\"\n  tls-service-pem: \"$W/srv.pem\"\n  incoming-num-tcp: 100\n  do-daemonize: no\n  use-syslog: no\n  logfile: \"\"\n  chroot: \"\"\n  username: \"\"\n  directory: \"$W\"\n  pidfile: \"$W/unbound.pid\"\n  access-control: 127.0.0.0/8 allow\n  do-ip6: no\n  do-udp: no\n  num-threads: 1\n  verbosity: 0\n  module-config: \"iterator\"\n  local-zone: \"example.org.\" static\n  local-data: \"example.org. 3600 IN SOA ns.example.org. h.example.org. 1 3600 600 86400 3600\"\n  include: \"$W/names.conf\"\n" > "$W/unbound.conf"
printf 'tls://example.org:5342 {\n    bind 127.0.0.1\n    tls %s/srv.pem %s/srv.key\n    file %s/example.org.db\n}\nhttps://example.org:5343 {\n    bind 127.0.0.1\n    tls %s/srv.pem %s/srv.key\n    https {\n        max_connections 0\n    }\n    file %s/example.org.db\n}\n' "$W" "$W" "$W" "$W" "$W" "$W" > "$W/Corefile"

taskset -c 0 "$UNBOUND" -d -c "$W/unbound.conf" 2>"$W/unbound.log" &
UB=$!
# One worker thread for clusterdns too (its tokio runtime follows the CPUs it may use).
taskset -c 0 "$BIN" -conf "$W/Corefile" 2>"$W/clusterdns.log" &
CD=$!
trap 'kill $UB $CD 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
for port in 5340 5342; do
  for _ in $(seq 1 100); do kdig +short +tls @127.0.0.1 -p $port h1.example.org 2>/dev/null | grep -q '^[0-9]' && break; sleep 0.2; done
done

# row NAME PID PORT MODE: one dnsperf run as `measure` prints it.
row() {
  local name=$1 pid=$2 port=$3 mode=$4 hz before after out qps lat share
  hz=$(getconf CLK_TCK)
  before=$(cpu_ticks "$pid")
  out=$(taskset -c 1 dnsperf -m "$mode" -s 127.0.0.1 -p "$port" -d "$W/names.txt" -l "$SECS" -c 32 -q 400 -T 1 2>&1)
  after=$(cpu_ticks "$pid")
  qps=$(echo "$out" | awk '/Queries per second/ {print $4; exit}')
  lat=$(echo "$out" | awk '/Average Latency/ {print $4; exit}')
  share=$(echo "$before $after $hz $SECS" | awk '{printf "%.2f", ($2-$1)/$3/$4}')
  printf "%-10s %-4s %10.0f qps  cpu %4s  %10.0f qps/core  mean %7.3f ms\n" \
    "$name" "$mode" "${qps:-0}" "$share" "$(echo "${qps:-0} $share" | awk '{print ($2>0)?$1/$2:0}')" "$(echo "${lat:-0}" | awk '{print $1*1000}')"
}
echo "# $NAMES names; each server on CPU 0 (one thread), dnsperf on CPU 1 (-c 32 -q 400), ${SECS}s per row, $ROUNDS rounds"
for round in $(seq 1 "$ROUNDS"); do
  row clusterdns $CD 5342 dot; row unbound $UB 5340 dot
  row clusterdns $CD 5343 doh; row unbound $UB 5341 doh
done | tee "$W/rows.txt"
echo "# medians over $ROUNDS rounds"
python3 - "$W/rows.txt" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((f[1], f[0]), []).append((float(f[2]), float(f[5]), float(f[6]), float(f[9])))
for mode in ("dot", "doh"):
    per = {}
    for server in ("clusterdns", "unbound"):
        v = rows.get((mode, server), [])
        if not v: continue
        m = [st.median(x[i] for x in v) for i in range(4)]
        per[server] = m[2]
        print(f"{server:10s} {mode} {m[0]:10.0f} qps  cpu {m[1]:.2f}  {m[2]:10.0f} qps/core  mean {m[3]:.3f} ms")
    if per.get("unbound"):
        print(f"ratio      {mode} clusterdns/unbound qps per core = {per.get('clusterdns', 0)/per['unbound']:.2f}")
PY
