#!/usr/bin/env bash
# What a forwarded cache miss costs, side by side in one run: clusterdns
# (`forward . 127.0.0.1:UP` + `cache 30`) against Debian's unbound (one
# thread, its cache on, a forward-zone to the same upstream), both sent
# unique names (`rRsSqN.example. A`: a new prefix per server and round, so
# nothing hits any cache) at a fixed RATE. The upstream is Knot answering
# a wildcard (`*.example. A`). Each server is pinned to CPU 0, dnsperf and
# Knot to CPU 1 (taskset -a: every thread); rows alternate between the
# servers for ROUNDS rounds. A row: queries answered, loss, the server's
# CPU µs per answered query (every thread's schedstat, lib.sh cpu_ns ÷ answered), mean
# latency. BASE=PATH adds a second clusterdns binary (say, main's) as
# "base", measured in the same rounds; BIN=PATH runs another binary as
# "clusterdns" than the release build here.
#
# Then the randomisation of what leaves for the upstream: each server
# forwards 5,000 more unique names at 2,000 qps (clusterdns's pools of
# ports fill and are reused from the 1,025th query of a lane on), tcpdump
# on lo records them, and the last 1,000 are counted: distinct source
# ports and distinct IDs.
# Loopback only; every dnsperf run is bounded by its query count and -l.
#
# usage: [BASE=PATH] [BIN=PATH] loadtest/bench/forward-miss.sh [SECONDS] [ROUNDS]   (RATE=5000)
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-10}; ROUNDS=${2:-3}; RATE=${RATE:-5000}
for t in dnsperf knotd unbound tcpdump; do
  command -v $t >/dev/null || [ -x /usr/sbin/$t ] || {
    echo "installing dnsperf, knot, unbound, tcpdump"; apt-get install -y -qq dnsperf knot unbound tcpdump >/dev/null; break; }
done
UNBOUND=$(command -v unbound || echo /usr/sbin/unbound)
[ -n "${BIN:-}" ] || cargo build --release -q --bin clusterdns
BIN=${BIN:-./target/release/clusterdns}
W=$(mktemp -d /tmp/clusterdns-miss.XXXX)
. loadtest/bench/lib.sh
UP=5360

printf '$ORIGIN example.\n$TTL 300\n@ IN SOA ns.example. h.example. 1 3600 600 86400 300\n@ IN NS ns.example.\nns IN A 192.0.2.53\n* IN A 192.0.2.1\n' > "$W/example.zone"
knot_conf "$W" "$UP" "$W/example.zone" example. >/dev/null
common="  do-daemonize: no\n  use-syslog: no\n  logfile: \"\"\n  chroot: \"\"\n  username: \"\"\n  directory: \"$W\"\n  access-control: 127.0.0.0/8 allow\n  do-ip6: no\n  do-not-query-localhost: no\n  num-threads: 1\n  verbosity: 0"
printf "server:\n  interface: 127.0.0.1\n  port: 5362\n  pidfile: \"$W/ub.pid\"\n$common\n  module-config: \"iterator\"\n  msg-cache-size: 64m\n  rrset-cache-size: 64m\nforward-zone:\n  name: \".\"\n  forward-addr: 127.0.0.1@$UP\n" > "$W/unbound.conf"
corefile() { printf '.:%s {\n    bind 127.0.0.1\n    forward . 127.0.0.1:%s\n    cache 30\n}\n' "$1" "$UP" > "$W/Corefile.$1"; }

PIDS=()
trap 'kill ${PIDS[*]} 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
taskset -a -c 1 knotd -c "$W/knot.conf" 2>"$W/knot.log" & PIDS+=($!)
corefile 5361
taskset -a -c 0 "$BIN" -conf "$W/Corefile.5361" 2>"$W/clusterdns.log" & CD=$!; PIDS+=($CD)
taskset -a -c 0 "$UNBOUND" -d -c "$W/unbound.conf" 2>"$W/unbound.log" & UB=$!; PIDS+=($UB)
SERVERS="clusterdns:5361:$CD unbound:5362:$UB"
if [ -n "${BASE:-}" ]; then
  corefile 5363
  taskset -a -c 0 "$BASE" -conf "$W/Corefile.5363" 2>"$W/base.log" & BS=$!; PIDS+=($BS)
  SERVERS="$SERVERS base:5363:$BS"
fi
for s in $SERVERS; do IFS=: read -r _ port _ <<<"$s"; wait_answer "$port" warm.example; done

# names FILE PREFIX COUNT: COUNT unique names under PREFIX.
names() { awk -v p="$2" -v n="$3" 'BEGIN { for (i = 0; i < n; i++) printf "%sq%d.example A\n", p, i }' > "$1"; }

# row NAME PID PORT ROUND: one fixed-rate run of unique names.
row() {
  local name=$1 pid=$2 port=$3 round=$4 before after out done lost lat
  names "$W/q.txt" "r${round}${name}" $((RATE * SECS))
  before=$(cpu_ns "$pid")
  out=$(taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$W/q.txt" -n 1 -l $((SECS + 10)) -Q "$RATE" -c 8 -q 500 -t 5 2>&1)
  after=$(cpu_ns "$pid")
  done=$(echo "$out" | awk '/Queries completed/ {print $3}')
  lost=$(echo "$out" | awk '/Queries lost/ {print $3}')
  lat=$(echo "$out" | awk '/Average Latency/ {print $4}')
  printf "%-10s %8s answered  lost %6s  %8.1f us/query  mean %7.3f ms\n" "$name" "$done" "$lost" \
    "$(echo "$before $after $done" | awk '{print ($3>0)?($2-$1)/1e3/$3:0}')" "$(echo "$lat" | awk '{print $1*1000}')"
}

echo "# forwarded misses at $RATE qps, ${SECS}s per row, $ROUNDS rounds; servers on CPU 0, dnsperf and Knot on CPU 1"
for round in $(seq 1 "$ROUNDS"); do
  for s in $SERVERS; do IFS=: read -r name port pid <<<"$s"; row "$name" "$pid" "$port" "$round"; done
done | tee "$W/rows.txt"
echo "# medians (lost, CPU us per answered query, mean latency ms)"
python3 - "$W/rows.txt" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(f[0], []).append((float(f[4]), float(f[5]), float(f[8])))
med = {k: [st.median(x[i] for x in v) for i in range(3)] for k, v in rows.items()}
for k, m in med.items():
    print(f"{k:10s} lost {m[0]:6.0f}  {m[1]:8.1f} us/query  mean {m[2]:.3f} ms")
for a, b in (("clusterdns", "unbound"), ("base", "unbound"), ("clusterdns", "base")):
    if a in med and b in med and med[b][1]:
        print(f"ratio {a}/{b} CPU per miss = {med[a][1] / med[b][1]:.2f}")
PY

echo "# randomisation: the last 1000 of 5000 queries each server forwards (distinct source ports, distinct IDs)"
for s in $SERVERS; do
  IFS=: read -r name port _ <<<"$s"
  names "$W/q.txt" "rand${name}" 5000
  tcpdump -i lo -c 5000 -w "$W/$name.pcap" "udp and dst port $UP" 2>/dev/null & TD=$!
  sleep 1
  taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$W/q.txt" -n 1 -l 20 -Q 2000 -c 8 -q 500 >/dev/null 2>&1
  sleep 1; kill $TD 2>/dev/null || true; wait $TD 2>/dev/null || true
  python3 loadtest/bench/ports-ids.py "$name" "$W/$name.pcap" 1000
done
