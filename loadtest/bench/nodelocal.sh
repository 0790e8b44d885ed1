#!/usr/bin/env bash
# Pods through the node-local cache vs pods straight to the cluster DNS,
# side by side in network namespaces: query latency (loadtest run) and
# conntrack table growth on the node.
#
#   loadtest/bench/nodelocal.sh [RATE] [ROUNDS] [SECONDS]      (root; default 20000 3 5)
#
# Topology (as tests/nodelocal.rs): namespace "node" runs the cluster DNS
# (clusterdns serving a synthetic cluster of 1,000 Services on 10.10.0.2,
# reached through kube-proxy-like DNAT from the kube-dns IP 10.96.0.10 and
# the kube-dns-upstream IP 10.96.0.11) and the node-local clusterdns on
# 169.254.20.10 (`nodelocal`, transparent mode off); namespace "pod" runs
# loadtest through a veth pair. Both servers on core 0, loadtest on core 1.
# Alternating rounds: node-local, then cluster DNS; each round reports p50,
# p99 and the conntrack entries added (`conntrack -C` before and after;
# flows expire after 30 s for UDP, so each round starts from a flush).
set -euo pipefail
cd "$(dirname "$0")/../.."
RATE=${1:-20000}; ROUNDS=${2:-3}; SECS=${3:-5}
[ -n "${NOBUILD:-}" ] || { cargo build --release -q --bin clusterdns && cargo build --release -q -p loadtest --bin loadtest; }
BIN=$PWD/target/release
W=$(mktemp -d /tmp/nodelocal-bench.XXXX)
N=nlb-node-$$; P=nlb-pod-$$
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  sleep 1
  ip netns del "$N" 2>/dev/null || true; ip netns del "$P" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
ip netns add "$N"; ip netns add "$P"
n() { ip netns exec "$N" "$@"; }
p() { ip netns exec "$P" "$@"; }
n sh -c "ip link set lo up && ip link add vn type veth peer name vp netns $P && ip addr add 10.200.0.1/24 dev vn && ip link set vn up && ip addr add 10.10.0.2/32 dev lo && ip route add 10.96.0.0/16 dev vn && ip link add nl0 type veth peer name nl0p"
p sh -c "ip link set lo up && ip addr add 10.200.0.2/24 dev vp && ip link set vp up && ip route add default via 10.200.0.1"
for proto in udp tcp; do
  n iptables -t nat -A PREROUTING -d 10.96.0.10 -p $proto --dport 53 -j DNAT --to-destination 10.10.0.2
  n iptables -t nat -A OUTPUT -d 10.96.0.11 -p $proto --dport 53 -j DNAT --to-destination 10.10.0.2
done
n iptables -A INPUT -m conntrack --ctstate INVALID -j DROP
"$BIN/loadtest" export-cluster --services 1000 --namespaces 10 > "$W/cluster.json"
python3 - "$W/cluster.json" > "$W/names" <<'PY'
import json, sys
for i in json.load(open(sys.argv[1]))["items"]:
    if i.get("kind") == "Service":
        print(f'{i["metadata"]["name"]}.{i["metadata"]["namespace"]}.svc.cluster.local A')
PY
cat > "$W/cluster.Corefile" <<EOC
.:53 {
    bind 10.10.0.2
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        snapshot $W/cluster.json
    }
}
EOC
cat > "$W/node.Corefile" <<EOC
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    bind 169.254.20.10
    forward . 10.96.0.11 {
        force_tcp
    }
    cache {
        success 9984 30
        denial 9984 5
    }
    nodelocal {
        interface nl0
        check 60s
        lockdir $W/lockdir
    }
}
EOC
n taskset -c 0 "$BIN/clusterdns" -conf "$W/cluster.Corefile" 2> "$W/cluster.log" &
CPID=$!; PIDS+=("$CPID")
n taskset -c 0 "$BIN/clusterdns" -conf "$W/node.Corefile" 2> "$W/node.log" &
NPID=$!; PIDS+=("$NPID")
for _ in $(seq 1 100); do grep -q "rules installed" "$W/node.log" && break; sleep 0.1; done
grep "rules installed" "$W/node.log"
echo "columns: offered qps, achieved qps, loss, p50 ms, p99 ms, p99.9 ms, mean ms, qps/core, rcodes"
echo "rate $RATE qps, $SECS s per round, $ROUNDS rounds; $(wc -l < "$W/names") names; loadtest --sockets 256"
for r in $(seq 1 "$ROUNDS"); do
  for target in 169.254.20.10 10.96.0.10; do
    pid=$CPID; [ "$target" = 169.254.20.10 ] && pid=$NPID
    n conntrack -F 2>/dev/null
    before=$(n conntrack -C)
    p taskset -c 1 "$BIN/loadtest" run --target "$target:53" --names "$W/names" --rate "$RATE" \
        --step-duration "$SECS" --sockets 256 --pid "$pid" --out "$W/r$r-$target" > "$W/r$r-$target.txt" 2>&1 \
      || { echo "loadtest failed:"; cat "$W/r$r-$target.txt"; exit 1; }
    after=$(n conntrack -C)
    row=$(awk '/offered qps/ {getline; print; exit}' "$W/r$r-$target.txt")
    echo "round $r $target: conntrack +$((after - before)); $row"
  done
done
echo "last reports:"; cat "$W/r$ROUNDS-169.254.20.10.txt" "$W/r$ROUNDS-10.96.0.10.txt"
