#!/usr/bin/env bash
# loadtest and dnsperf against the same server at the same fixed rate: the
# achieved qps and mean latency must agree within 10%. The server is pinned
# to CPU 0, each generator in turn to CPU 1. Loopback only; bounded runs.
#
# Two servers: clusterdns answering cluster names (latency ~20 us, where the
# tools' own overhead differs by ~15 us: qps agree, latency is reported), and
# clusterdns forwarding to an upstream that answers after 2 ms (a network-
# like latency: both must agree within 10% on qps and mean latency).
#
# usage: loadtest/bench/agree-dnsperf.sh [RATE] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
RATE=${1:-50000}; SECS=${2:-10}
command -v dnsperf >/dev/null || { echo "installing dnsperf"; apt-get install -y -qq dnsperf >/dev/null; }
cargo build --release -q
W=$(mktemp -d /tmp/clusterdns-agree.XXXX)
cat > "$W/Corefile" <<EOC
cluster.local:5320 {
    bind 127.0.0.1
    kubernetes cluster.local {
        snapshot $PWD/zones/cluster.yaml
    }
}
example.org:5320 {
    bind 127.0.0.1
    forward . 127.0.0.1:5321 {
        max_concurrent 100000
    }
}
EOC
# The slow upstream: every query answered (A 192.0.2.1) after 2 ms.
cat > "$W/slow.py" <<'PY'
import asyncio, struct
class Slow(asyncio.DatagramProtocol):
    def connection_made(self, t): self.t = t
    def datagram_received(self, q, addr):
        end = q.index(0, 12) + 5
        r = q[:2] + b"\x81\x80" + q[4:6] + b"\x00\x01\x00\x00\x00\x00" + q[12:end] + b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\xc0\x00\x02\x01"
        asyncio.get_running_loop().call_later(0.002, self.t.sendto, r, addr)
async def main():
    await asyncio.get_running_loop().create_datagram_endpoint(Slow, local_addr=("127.0.0.1", 5321))
    await asyncio.sleep(3600)
asyncio.run(main())
PY
taskset -c 1 python3 "$W/slow.py" &
SLOW=$!
printf 'kubernetes.default.svc.cluster.local A\nweb.shop.svc.cluster.local A\nweb.shop.svc.cluster.local AAAA\nwww.example.com.shop.svc.cluster.local A\npostgres.db.svc.cluster.local A\n' > "$W/names.txt"
taskset -c 0 ./target/release/clusterdns -conf "$W/Corefile" 2>"$W/server.log" &
SRV=$!
trap 'kill $SRV $SLOW 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
. loadtest/bench/lib.sh
wait_answer 5320 kubernetes.default.svc.cluster.local
compare() { # NAMEFILE RATE LABEL MUST_AGREE_ON_LATENCY
  local dp dq dl lt lq ll
  dp=$(taskset -c 1 dnsperf -s 127.0.0.1 -p 5320 -d "$1" -l "$SECS" -Q "$2" -c 32 -q 2000 2>&1)
  dq=$(echo "$dp" | awk '/Queries per second/ {print $4}')
  dl=$(echo "$dp" | awk '/Average Latency/ {print $4 * 1000}')
  lt=$(taskset -c 1 ./target/release/loadtest run --target 127.0.0.1:5320 --names "$1" --rate "$2" --step-duration "$SECS" --sockets 32 2>/dev/null)
  lq=$(echo "$lt" | awk '$3 ~ /%$/ {print $2; exit}')
  ll=$(echo "$lt" | awk '$3 ~ /%$/ {print $7; exit}')
  echo "$3, $2 qps for ${SECS}s, clusterdns on CPU 0:"
  printf "  dnsperf:  %10.0f qps  mean %.3f ms\n" "$dq" "$dl"
  printf "  loadtest: %10.0f qps  mean %.3f ms\n" "$lq" "$ll"
  python3 - "$dq" "$lq" "$dl" "$ll" "$4" <<'PY'
import sys
dq, lq, dl, ll = map(float, sys.argv[1:5])
strict = sys.argv[5] == "yes"
q = abs(lq - dq) / dq
l = abs(ll - dl) / dl
print(f"  difference: qps {q*100:.1f}%, mean latency {l*100:.1f}%" + ("" if strict else " (latency: tool overhead at microsecond scale, reported only)"))
sys.exit(0 if q <= 0.10 and (l <= 0.10 or not strict) else 1)
PY
}
for i in $(seq 1 200); do echo "h$i.example.org A"; done > "$W/slow.txt"
compare "$W/names.txt" "$RATE" "cluster names" no
compare "$W/slow.txt" 5000 "forwarded to a 2 ms upstream" yes
