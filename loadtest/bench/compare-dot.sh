#!/usr/bin/env bash
# What DNS over TLS to the upstream costs: two clusterdns instances (no
# cache, so every query goes upstream), one forwarding to unbound over
# plain UDP, one over DNS over TLS (tls://, one pipelined connection), to
# the same unbound serving NAMES local names on both a plain and a TLS
# port (test certificates made here with openssl). Each clusterdns on
# CPU 0, dnsperf and unbound on CPU 1. Rows per round: qps, clusterdns's
# CPU share, qps per clusterdns core, mean latency; then medians and the
# tls/udp ratio. Loopback only; every run is bounded by -l SECONDS.
#
# usage: loadtest/bench/compare-dot.sh [NAMES] [SECONDS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
NAMES=${1:-1000}; SECS=${2:-10}; ROUNDS=${3:-3}
. loadtest/bench/lib.sh
tls_bench_setup dot

bench_certs "$W"

for i in $(seq 1 "$NAMES"); do echo "  local-data: \"h$i.example.org. 3600 IN A 192.0.2.$((i % 250 + 1))\""; done > "$W/names.conf"
for i in $(seq 1 "$NAMES"); do echo "h$i.example.org A"; done > "$W/forwarded.txt"
printf "server:\n  interface: 127.0.0.1@5330\n  interface: 127.0.0.1@5331\n  tls-port: 5331\n  tls-service-key: \"$W/srv.key\"\n  tls-service-pem: \"$W/srv.pem\"\n  incoming-num-tcp: 100\n  do-daemonize: no\n  use-syslog: no\n  logfile: \"\"\n  chroot: \"\"\n  username: \"\"\n  directory: \"$W\"\n  pidfile: \"$W/up.pid\"\n  access-control: 127.0.0.0/8 allow\n  do-ip6: no\n  num-threads: 1\n  verbosity: 0\n  module-config: \"iterator\"\n  local-zone: \"example.org.\" static\n  local-data: \"example.org. 3600 IN SOA ns.example.org. h.example.org. 1 3600 600 86400 3600\"\n  include: \"$W/names.conf\"\n" > "$W/upstream.conf"
printf '.:5332 {\n    bind 127.0.0.1\n    forward . 127.0.0.1:5330\n}\n' > "$W/Corefile.udp"
printf '.:5333 {\n    bind 127.0.0.1\n    forward . tls://127.0.0.1%%dns.test:5331 {\n        tls %s/ca.pem\n    }\n}\n' "$W" > "$W/Corefile.tls"

taskset -c 1 "$UNBOUND" -d -c "$W/upstream.conf" 2>"$W/upstream.log" &
UP=$!
taskset -c 0 "$BIN" -conf "$W/Corefile.udp" 2>"$W/udp.log" &
CU=$!
taskset -c 0 "$BIN" -conf "$W/Corefile.tls" 2>"$W/tls.log" &
CT=$!
trap 'kill $UP $CU $CT 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
for port in 5332 5333; do wait_answer $port h1.example.org; done
echo "# $NAMES names, no cache; clusterdns on CPU 0, dnsperf and unbound on CPU 1, ${SECS}s per row, $ROUNDS rounds"
for round in $(seq 1 "$ROUNDS"); do
  measure udp $CU 5332 "$W/forwarded.txt"
  measure tls $CT 5333 "$W/forwarded.txt"
done | tee "$W/rows.txt"
echo "# medians over $ROUNDS rounds (qps, clusterdns cpu share, qps per clusterdns core, mean latency ms)"
python3 - "$W/rows.txt" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(f[0], []).append((float(f[2]), float(f[5]), float(f[6]), float(f[9])))
med = {k: [st.median(x[i] for x in v) for i in range(4)] for k, v in rows.items()}
for k, m in med.items():
    print(f"{k:4s} {m[0]:10.0f} qps  cpu {m[1]:.2f}  {m[2]:10.0f} qps/core  mean {m[3]:.3f} ms")
if med.get("udp") and med.get("tls"):
    u, t = med["udp"], med["tls"]
    print(f"tls/udp: qps {t[0]/u[0]:.2f}  qps per core {t[2]/u[2]:.2f}  mean latency {t[3]/u[3]:.2f}x")
PY
echo "# TLS connections clusterdns -> unbound: $(ss -Htn state established dst 127.0.0.1:5331 | wc -l)"
