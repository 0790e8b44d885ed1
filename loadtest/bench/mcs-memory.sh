#!/usr/bin/env bash
# What Multi-cluster Services cost in memory (issue 27's budget: 10,000
# imported Services × 3 clusters × 5 endpoints add at most 15 MB): the same
# base cluster served from a snapshot with and without the imports (and
# their clusters' EndpointSlices), `multicluster clusterset.local` on in
# both; each server's RSS (VmRSS) once ready and settled, and the
# difference; API=1 does the same through the API source (the project's
# Python fake API server). HEAPTRACK=1 also runs the server with imports under
# heaptrack (through the API source with API=1) and prints the allocation sites
# holding the most at the end.
# BIN=PATH measures another binary (default: this tree's release build).
#
# usage: loadtest/bench/mcs-memory.sh [IMPORTS] [CLUSTERS] [ENDPOINTS] [BASE-SERVICES] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
IMPORTS=${1:-10000}; CLUSTERS=${2:-3}; ENDPOINTS=${3:-5}; BASE=${4:-1000}; ROUNDS=${5:-3}
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p clusterdns
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/clusterdns
fi
W=$(mktemp -d /tmp/clusterdns-mcsmem.XXXX)
trap 'kill $(jobs -p) $(cat "$W/pids" 2>/dev/null) 2>/dev/null; rm -rf "$W"' EXIT

python3 - "$W" "$IMPORTS" "$CLUSTERS" "$ENDPOINTS" "$BASE" <<'PY'
import json, sys
w, imports, clusters, endpoints, base = sys.argv[1], *map(int, sys.argv[2:])
ns = [f"ns-{i}" for i in range(100)]
items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in ns + ["kube-system"]]
items.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kube-dns", "namespace": "kube-system"},
              "spec": {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}})
def ip(prefix, i):
    return f"{prefix}.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"
for i in range(base):
    items.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"svc-{i}", "namespace": ns[i % 100]},
                  "spec": {"clusterIP": ip(10, 0x600000 + i), "clusterIPs": [ip(10, 0x600000 + i)],
                           "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(f"{w}/base.json", "w"))
n = 0
for i in range(imports):
    name, space = f"imp-{i}", ns[i % 100]
    items.append({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
                  "metadata": {"name": name, "namespace": space},
                  "spec": {"type": "ClusterSetIP", "ips": [ip(11, i)], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
    for c in range(clusters):
        eps = []
        for e in range(endpoints):
            eps.append({"addresses": [ip(12 + c, n)], "conditions": {"ready": True}})
            n += 1
        items.append({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                      "metadata": {"name": f"{name}-c{c}", "namespace": space,
                                   "labels": {"multicluster.kubernetes.io/service-name": name,
                                              "multicluster.kubernetes.io/source-cluster": f"cluster-{c}"}},
                      "addressType": "IPv4", "endpoints": eps,
                      "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(f"{w}/mcs.json", "w"))
PY

# api NAME: starts the project's Python fake API server holding every
# object of NAME.json; prints its URL.
api() {
  local out=$W/$1.api port
  mkfifo "$out.in"
  python3 tests/apiserver/fake_apiserver.py --lifetime 900 <"$out.in" >"$out" 2>&1 &
  echo $! >>"$W/pids"
  sleep 900 >"$out.in" &
  echo $! >>"$W/pids"
  for _ in $(seq 100); do grep -q '^port ' "$out" 2>/dev/null && break; sleep 0.1; done
  port=$(awk '/^port / {print $2}' "$out")
  python3 - "$W/$1.json" "$port" <<'PY'
import http.client, json, sys
plural = {"Namespace": "namespaces", "Service": "services", "EndpointSlice": "endpointslices",
          "ServiceImport": "serviceimports"}
for item in json.load(open(sys.argv[1]))["items"]:
    # one connection a request: the server closes each (about 400 a second)
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[2]), timeout=10)
    c.request("POST", "/_control/apply", json.dumps({"resource": plural[item["kind"]], "object": item}),
              {"Content-Type": "application/json", "Connection": "close"})
    c.getresponse().read()
    c.close()
PY
  echo "http://127.0.0.1:$port"
}

# rss NAME [WRAPPER...]: starts the server on NAME.json, waits until ready
# and 3 s more, prints its VmRSS in kB and stops it (SIG, default TERM;
# KILL under heaptrack, so what it records last is the steady state).
rss() {
  local name=$1 port=$((20000 + RANDOM % 20000)) ready=$((40000 + RANDOM % 20000)) pid kb
  shift
  cat > "$W/$name.Corefile" <<EOC
.:$port {
    bind 127.0.0.1
    ready 127.0.0.1:$ready
    kubernetes cluster.local clusterset.local {
        ${SOURCE_LINE:-snapshot $W/$name.json}
        multicluster clusterset.local
    }
}
EOC
  "$@" "$BIN" -conf "$W/$name.Corefile" >"$W/$name.log" 2>&1 &
  local up=
  for _ in $(seq 600); do
    curl -fs "127.0.0.1:$ready/ready" >/dev/null 2>&1 && up=1 && break
    sleep 0.1
  done
  sleep 3
  pid=$(pgrep -n -f "$BIN -conf $W/$name.Corefile") || true
  kb=
  # not ready, or gone (a random port taken): no number (the caller skips the round)
  [ -n "$up" ] && [ -n "$pid" ] && kb=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  if [ -n "$pid" ]; then kill "-${SIG:-TERM}" "$pid"; fi; wait 2>/dev/null || true
  echo "$kb"
}

for round in $(seq "$ROUNDS"); do
  base=$(rss base); mcs=$(rss mcs)
  if [ -z "$base" ] || [ -z "$mcs" ]; then
    echo "snapshot round $round: a server did not start or was not ready within 60 s; round not counted"
    continue
  fi
  echo "snapshot round $round: base $base kB, with $IMPORTS imports x $CLUSTERS clusters x $ENDPOINTS endpoints $mcs kB, added $(( (mcs - base) / 1024 )).$(( (mcs - base) % 1024 * 10 / 1024 )) MB"
done
if [ -n "${API:-}" ]; then
  base_url=$(api base); mcs_url=$(api mcs)
  for round in $(seq "$ROUNDS"); do
    base=$(SOURCE_LINE="endpoint $base_url" rss base); mcs=$(SOURCE_LINE="endpoint $mcs_url" rss mcs)
    if [ -z "$base" ] || [ -z "$mcs" ]; then
      echo "API round $round: a server did not start or was not ready within 60 s; round not counted"
      continue
    fi
    echo "API round $round: base $base kB, with imports $mcs kB, added $(( (mcs - base) / 1024 )).$(( (mcs - base) % 1024 * 10 / 1024 )) MB"
  done
fi
if [ -n "${HEAPTRACK:-}" ]; then
  # with API=1, the server under heaptrack reads the imports through the API source
  SOURCE_LINE=${mcs_url:+endpoint $mcs_url} SIG=KILL rss mcs heaptrack -o "$W/heap" >/dev/null
  heaptrack_print -f "$W"/heap.*zst --print-leaks 1 --print-peaks 0 --print-allocators 0 \
    --print-temporary 0 --print-histogram 0 -n 12 2>/dev/null | sed -n '/MEMORY LEAK/,$p' | grep -v '^ *at ' | head -120
  heaptrack_print -f "$W"/heap.*zst 2>/dev/null | grep -E '^(peak heap|total memory leaked)'
fi
