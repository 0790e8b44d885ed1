#!/usr/bin/env bash
# Surge upgrades of the node-local cache under load, release build: the
# scenario of tests/nodelocal_surge.rs (two clusterdns `nodelocal`
# instances side by side in a "node" network namespace, a client in a
# "pod" namespace sending RATE UDP queries a second over 48 source ports
# plus 4 persistent TCP connections at 50 queries a second, to
# 169.254.20.10 and the kube-dns IP 10.96.0.10), run ROUNDS times, in
# iptables and nftables mode each: 4 hand-overs in a row, then kill -9 of
# the old and of a new instance, then stop-then-start (what node-cache can
# do). A debug build cannot hold 20,000 qps on 2 cores (the client itself
# overflows its sockets), hence this script rather than the test alone.
#
#   loadtest/bench/nodelocal-surge.sh [RATE] [ROUNDS]      (root; default 20000 3)
#   NODELOCAL_SURGE_HANDOVERS=0 loadtest/bench/nodelocal-surge.sh ...   the control: same load, no hand-over
#
# Prints, per round and mode, the client's tally of each phase (sent,
# lost, SERVFAIL; TCP lost), when the lost queries were sent (tenths of a
# second after the client started: `S:COUNT`) beside the hand-overs'
# timeline and the kernel's drop counters that moved (pod: the client's
# sockets overflowed; node: the servers'), then every phase's lost counts
# over the rounds. A round stops after a phase that lost queries (the
# test's assertion).
set -euo pipefail
cd "$(dirname "$0")/../.."
RATE=${1:-20000}; ROUNDS=${2:-3}
cargo test -q --release --test nodelocal_surge --no-run
OUT=$(mktemp /tmp/nodelocal-surge-bench.XXXX)
trap 'rm -f "$OUT"' EXIT
for r in $(seq "$ROUNDS"); do
  echo "round $r: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  NODELOCAL_SURGE_RATE=$RATE cargo test -q --release --test nodelocal_surge -- \
    --exact surge_upgrades_lose_no_query --nocapture 2>&1 \
    | grep -E '^nodelocal surge \((Iptables|Nftables)\): |^client: lost' | cut -c1-400 \
    | sed "s/^/round $r /" | tee -a "$OUT" || true
done
python3 - "$OUT" "$RATE" <<'PY'
import re, sys
phases = {}
for line in open(sys.argv[1]):
    m = re.match(r"round (\d+) nodelocal surge \((\w+)\): (\d+ hand-overs|kill -9|stop-then-start)", line)
    if not m or "Tally" not in line:
        continue
    t = dict(re.findall(r"(\w+): (\d+)", line.split("Tally", 1)[1]))
    key = (m.group(3), m.group(2))
    phases.setdefault(key, []).append(f"{t['lost']}/{t['sent']} (SERVFAIL {t['servfail']}, TCP lost {t['tcp_lost']})")
print(f"lost/sent UDP at {sys.argv[2]} qps, per round:")
for (phase, mode), v in sorted(phases.items()):
    print(f"  {phase:16s} {mode:9s} " + "  ".join(v))
PY
