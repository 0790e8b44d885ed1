#!/usr/bin/env bash
# Serving DNS over TLS and over HTTPS: clusterdns (tls:// and https://
# server blocks) against unbound (tls-port, https-port) and dnsdist
# (addTLSLocal, addDOHLocal) answering the same NAMES local names with the
# same P-256 certificate, each pinned to CPU 0, the clients on CPU 1.
# clusterdns serves the names from a `file` zone with one tokio worker;
# unbound from local-data with one thread; dnsdist (one TCP worker thread,
# plus its acceptor, DoH and health-check threads, all on CPU 0) answers
# every query from its packet cache, filled by one pass over the names
# before the rounds; its backend (unbound's plain port 5344) sees only that
# pass and one health check a second.
#
# Rows per round, servers alternating:
# - dot, doh: qps with dnsperf (`-m dot`, `-m doh`: 32 pipelined
#   connections), the server's CPU share, qps per server core, mean latency.
#   dnsdist has no doh row: dnsperf 2.10's DoH client takes one answer per
#   TLS record it reads and drops the rest, and dnsdist's HTTP/2 (h2o)
#   packs several answers in a record, so dnsperf stalls (a dozen qps).
# - h2: DoH again, with h2load (nghttp2's HTTP/2 load generator: 32
#   connections, 12 streams each, GET /dns-query?dns= over the same names),
#   for all three servers, dnsdist included.
# - hs: new TLS connections per second (`loadtest handshakes`, one thread:
#   SOCKETS connections at a time, each a full TLS 1.3 handshake with an
#   X25519 key exchange and no resumption, one query, then closed), the
#   server's CPU share, handshakes per server core, and the client's own
#   CPU share. The client checks neither certificate nor signature, yet
#   one client core may still not saturate the server: per core is what is
#   compared, so the server's share is measured rather than assumed.
# Then medians and the clusterdns/unbound and clusterdns/dnsdist ratios
# per row kind. Test certificates made here with openssl; loopback only;
# every run bounded by SECONDS.
#
# usage: loadtest/bench/serve-dot-doh.sh [NAMES] [SECONDS] [ROUNDS] [SOCKETS]
set -euo pipefail
cd "$(dirname "$0")/../.."
NAMES=${1:-1000}; SECS=${2:-10}; ROUNDS=${3:-3}; SOCKETS=${4:-32}
. loadtest/bench/lib.sh
tls_bench_setup serve-dot
command -v dnsdist >/dev/null || { echo "installing dnsdist"; apt-get install -y -qq dnsdist >/dev/null; }
command -v h2load >/dev/null || { echo "installing h2load"; apt-get install -y -qq nghttp2-client >/dev/null; }
cargo build --release -q -p loadtest
LOADTEST=${CARGO_TARGET_DIR:-target}/release/loadtest

bench_certs "$W"

for i in $(seq 1 "$NAMES"); do echo "  local-data: \"h$i.example.org. 3600 IN A 192.0.2.$((i % 250 + 1))\""; done > "$W/names.conf"
for i in $(seq 1 "$NAMES"); do echo "h$i.example.org A"; done > "$W/names.txt"
# the same queries as DoH GET paths (RFC 8484: base64url, no padding), for h2load
python3 - "$W/names.txt" > "$W/paths.txt" <<'PY'
import base64, struct, sys
for line in open(sys.argv[1]):
    q = struct.pack(">6H", 0, 0x0100, 1, 0, 0, 0)
    for label in line.split()[0].split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", 1, 1)
    print("/dns-query?dns=" + base64.urlsafe_b64encode(q).decode().rstrip("="))
PY
{ echo '$ORIGIN example.org.'; echo '@ 3600 IN SOA ns.example.org. h.example.org. 1 3600 600 86400 3600'
  for i in $(seq 1 "$NAMES"); do echo "h$i 3600 IN A 192.0.2.$((i % 250 + 1))"; done; } > "$W/example.org.db"
printf "server:\n  interface: 127.0.0.1@5340\n  interface: 127.0.0.1@5341\n  interface: 127.0.0.1@5344\n  tls-port: 5340\n  https-port: 5341\n  http-endpoint: \"/dns-query\"\n  tls-service-key: \"$W/srv.key\"\n  tls-service-pem: \"$W/srv.pem\"\n  incoming-num-tcp: 100\n  do-daemonize: no\n  use-syslog: no\n  logfile: \"\"\n  chroot: \"\"\n  username: \"\"\n  directory: \"$W\"\n  pidfile: \"$W/unbound.pid\"\n  access-control: 127.0.0.0/8 allow\n  do-ip6: no\n  num-threads: 1\n  verbosity: 0\n  module-config: \"iterator\"\n  local-zone: \"example.org.\" static\n  local-data: \"example.org. 3600 IN SOA ns.example.org. h.example.org. 1 3600 600 86400 3600\"\n  include: \"$W/names.conf\"\n" > "$W/unbound.conf"
printf 'tls://example.org:5342 {\n    bind 127.0.0.1\n    tls %s/srv.pem %s/srv.key\n    file %s/example.org.db\n}\nhttps://example.org:5343 {\n    bind 127.0.0.1\n    tls %s/srv.pem %s/srv.key\n    https {\n        max_connections 0\n    }\n    file %s/example.org.db\n}\n' "$W" "$W" "$W" "$W" "$W" "$W" > "$W/Corefile"
cat > "$W/dnsdist.conf" <<EOC
setSecurityPollSuffix("")
setMaxTCPClientThreads(1)
newServer({address="127.0.0.1:5344", name="unbound", checkName="h1.example.org."})
getPool(""):setCache(newPacketCache(10 * $NAMES, {maxTTL=86400}))
addTLSLocal("127.0.0.1:5345", "$W/srv.pem", "$W/srv.key", {provider="openssl"})
addDOHLocal("127.0.0.1:5346", "$W/srv.pem", "$W/srv.key", "/dns-query")
EOC

taskset -c 0 "$UNBOUND" -d -c "$W/unbound.conf" 2>"$W/unbound.log" &
UB=$!
# One worker thread for clusterdns too (its tokio runtime follows the CPUs it may use).
taskset -c 0 "$BIN" -conf "$W/Corefile" 2>"$W/clusterdns.log" &
CD=$!
taskset -c 0 dnsdist --supervised --disable-syslog -C "$W/dnsdist.conf" >"$W/dnsdist.log" 2>&1 &
DD=$!
trap 'kill $UB $CD $DD 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
for port in 5340 5342 5345; do
  for _ in $(seq 1 100); do kdig +short +tls @127.0.0.1 -p $port h1.example.org 2>/dev/null | grep -q '^[0-9]' && break; sleep 0.2; done
done
for port in 5341 5343 5346; do sed "s|^|https://127.0.0.1:$port|" "$W/paths.txt" > "$W/uris.$port"; done
# dnsdist's cache filled: every name once over DoT and once over DoH
taskset -c 1 dnsperf -m dot -s 127.0.0.1 -p 5345 -d "$W/names.txt" -n 1 -c 4 >/dev/null 2>&1
taskset -c 1 h2load -n "$NAMES" -c 1 -m 1 -i "$W/uris.5346" >/dev/null 2>&1

# row NAME PID PORT MODE: one dnsperf run (dot, doh), h2load run (h2) or
# handshake run (hs). Per core: the answers (or handshakes) counted over the
# server's CPU seconds; its share: those CPU seconds over the run's wall time.
row() {
  local name=$1 pid=$2 port=$3 mode=$4 before after t0 t1 out rate count lat lost share core
  before=$(cpu_ns "$pid"); t0=$(date +%s.%N)
  case $mode in
    h2) out=$(taskset -c 1 h2load -c 32 -m 12 -D "$SECS" -i "$W/uris.$port" 2>&1)
        rate=$(echo "$out" | awk '/^finished in/ {print $4; exit}')
        count=$(echo "$out" | awk '/^requests:/ {print $8; exit}')
        lost=$(echo "$out" | awk '/^requests:/ {print $10 + $12 + $14; exit}')
        lat=$(echo "$out" | awk '/^time for request:/ {v=$6; u=v; sub(/[0-9.]+/, "", u); v+=0; print (u=="us")?v/1000:(u=="s")?v*1000:v; exit}') ;;
    hs) out=$(taskset -c 1 "$LOADTEST" handshakes --target "127.0.0.1:$port" --names "$W/names.txt" --sockets "$SOCKETS" --seconds "$SECS" 2>&1)
        rate=$(echo "$out" | awk '/^handshakes/ {print $10; exit}')
        count=$(echo "$out" | awk '/^handshakes/ {print $2; exit}')
        lost=$(echo "$out" | awk '/^handshakes/ {print $6; exit}')
        lat=$(echo "$out" | awk '/^handshakes/ {print $12; exit}') ;;
    *)  out=$(taskset -c 1 dnsperf -m "$mode" -s 127.0.0.1 -p "$port" -d "$W/names.txt" -l "$SECS" -c 32 -q 400 -T 1 2>&1)
        rate=$(echo "$out" | awk '/Queries per second/ {print $4; exit}')
        count=$(echo "$out" | awk '/Queries completed/ {print $3; exit}')
        lost=$(echo "$out" | awk '/Queries lost/ {print $3; exit}')
        lat=$(echo "$out" | awk '/Average Latency/ {print $4*1000; exit}') ;;
  esac
  after=$(cpu_ns "$pid"); t1=$(date +%s.%N)
  share=$(echo "$before $after $t0 $t1" | awk '{printf "%.2f", ($2-$1)/1e9/($4-$3)}')
  core=$(echo "$before $after ${count:-0}" | awk '{print ($2>$1)?$3/(($2-$1)/1e9):0}')
  if [ "$mode" = hs ]; then
    printf "%-10s %-4s %10.0f hs/s  cpu %4s  %10.0f hs/core   client-cpu %5s  failed %s\n" \
      "$name" "$mode" "${rate:-0}" "$share" "$core" "${lat:-0}" "${lost:-?}"
  else
    printf "%-10s %-4s %10.0f qps   cpu %4s  %10.0f qps/core  mean %7.3f ms  lost %s\n" \
      "$name" "$mode" "${rate:-0}" "$share" "$core" "${lat:-0}" "${lost:-?}"
  fi
}
echo "# $NAMES names; each server on CPU 0, clients on CPU 1 (dnsperf -c 32 -q 400; h2load -c 32 -m 12; handshakes $SOCKETS at a time), ${SECS}s per row, $ROUNDS rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
  row clusterdns $CD 5342 dot; row unbound $UB 5340 dot; row dnsdist $DD 5345 dot
  row clusterdns $CD 5343 doh; row unbound $UB 5341 doh
  row clusterdns $CD 5343 h2; row unbound $UB 5341 h2; row dnsdist $DD 5346 h2
  row clusterdns $CD 5342 hs; row unbound $UB 5340 hs; row dnsdist $DD 5345 hs
done | tee "$W/rows.txt"
echo "# medians over $ROUNDS rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$W/rows.txt" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((f[1], f[0]), []).append((float(f[2]), float(f[5]), float(f[6]), float(f[9])))
for mode, unit, core, last in (("dot", "qps", "qps/core", "mean ms"), ("doh", "qps", "qps/core", "mean ms"), ("h2", "qps", "qps/core", "mean ms"), ("hs", "hs/s", "hs/core", "client-cpu")):
    per = {}
    for server in ("clusterdns", "unbound", "dnsdist"):
        v = rows.get((mode, server), [])
        if not v: continue
        m = [st.median(x[i] for x in v) for i in range(4)]
        per[server] = m[2]
        print(f"{server:10s} {mode:4s} {m[0]:10.0f} {unit:4s}  cpu {m[1]:.2f}  {m[2]:10.0f} {core}  {last} {m[3]:.3f}")
    for peer in ("unbound", "dnsdist"):
        if per.get(peer) and "clusterdns" in per:
            print(f"ratio      {mode:4s} clusterdns/{peer} {core} = {per['clusterdns']/per[peer]:.2f}")
PY
