#!/usr/bin/env bash
# What the code a batch runs after a wake-up costs, apart from the work it
# does: the zero-work echo (loadtest/bench/echo.c) with N tiny functions
# (a multiply and an add) called once per recvmmsg batch, each alone on its
# own ALIGN-byte-aligned span (ALIGN 64: N lines of code back to back;
# 1024: N lines spread over N/4 pages), against the plain echo, at
# cpu-per-query.sh's fixed rate (50k qps, dnsperf -c 8 -q 500). N lines
# run a few instructions each, so what a variant adds over the echo is the
# fetching of its code, evicted between batches by the kernel's work and
# whatever else ran on the core: the scale of what a server's footprint
# (loadtest/bench/footprint.py, lines of code per query) costs per query.
# The echo is pinned to CPU 0 and dnsperf to CPU 1 (SERVER_CPU,
# CLIENT_CPU); rows alternate for ROUNDS rounds; CPU time is each
# process's schedstat (lib.sh cpu_ns); each variant's ratio to the plain
# echo is given as the ratio of medians and as the median and range of
# each round's own ratio. Loopback only; every dnsperf run is bounded.
#
# usage: loadtest/bench/cold-code.sh [ROUNDS] [VARIANTS]   (default 11 "60 120 180 240 120:1024")
set -euo pipefail
cd "$(dirname "$0")/../.."
. loadtest/bench/lib.sh
ROUNDS=${1:-11}; VARIANTS=${2:-60 120 180 240 120:1024}
S=${SERVER_CPU:-0}; C=${CLIENT_CPU:-1}
for t in dnsperf gcc; do
  command -v $t >/dev/null || { apt-get install -y -qq dnsperf gcc >/dev/null; break; }
done
W=$(mktemp -d /tmp/clusterdns-cold.XXXX)
PIDS=""
trap 'kill $PIDS 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT

# echo.c with N functions aligned to ALIGN, all called once per batch
variant() { # N ALIGN OUT
  python3 - "$1" "$2" > "$W/$3.c" <<'PY'
import sys
n, align = int(sys.argv[1]), int(sys.argv[2])
src = open("loadtest/bench/echo.c").read()
fns = "".join(f"__attribute__((noinline, aligned({align}))) static unsigned f{i}(unsigned x) {{ return x * 2654435761u + {i}; }}\n" for i in range(n))
calls = "".join(f"    x = f{i}(x);\n" for i in range(n))
work = f"{fns}static volatile unsigned sink;\nstatic void work(void) {{\n    unsigned x = sink;\n{calls}    sink = x;\n}}\n\n"
src = src.replace("int main(", work + "int main(", 1)
hook = "        if (n <= 0)\n            continue;\n"
assert hook in src
sys.stdout.write(src.replace(hook, hook + "        work();\n", 1))
PY
  gcc -O2 -o "$W/$3" "$W/$3.c"
}

for i in $(seq 1 1000); do echo "n$i.example. A"; done > "$W/names.txt"
port=5480; ROWS=""
for v in 0 $VARIANTS; do
  n=${v%%:*}; align=64; [[ $v == *:* ]] && align=${v#*:}
  name="echo+$n"; [ "$align" = 64 ] || name+="@$align"; [ "$n" = 0 ] && name=echo
  variant "$n" "$align" "v$port"
  taskset -a -c "$S" "$W/v$port" "$port" >/dev/null 2>&1 &
  PIDS+="$! "; ROWS+="$name:$port:$! "; port=$((port + 1))
done
sleep 1
echo "# echo + N lines of code run once per batch (ALIGN-byte spans); 50k qps, echo on CPU $S, dnsperf (-c 8 -q 500) on CPU $C; $ROUNDS rounds"
for r in $(seq 1 "$ROUNDS"); do
  for row in $ROWS; do
    IFS=: read -r name p pid <<<"$row"
    a=$(cpu_ns "$pid")
    q=$(taskset -c "$C" dnsperf -s 127.0.0.1 -p "$p" -d "$W/names.txt" -l 5 -c 8 -q 500 -Q 50000 2>&1 |
      awk '/Queries completed/ {print $3}')
    b=$(cpu_ns "$pid")
    [ -n "$q" ] && [ "$q" -gt 0 ] || { echo "# $name round $r: dnsperf answered nothing, row left out" >&2; continue; }
    echo "$name $r $(((b - a) / q))"
  done
done | tee "$W/rows"
PYTHONPATH=loadtest/bench python3 - "$W/rows" <<'PY'
import statistics as st, sys
from paired import summary
rows = {}
for line in open(sys.argv[1]):
    name, r, ns = line.split()
    rows.setdefault(name, {})[int(r)] = int(ns)
echo = rows["echo"]
print("# medians: ns per query, ratio to the echo (of medians; each round's own: median, range), added ns (each round's: median)")
for name, v in rows.items():
    added = [v[k] - echo[k] for k in v if k in echo]
    print(f"{name:14s} {st.median(v.values()):6.0f} ns  x{st.median(v.values()) / st.median(echo.values()):.3f}"
          f"  (paired: {summary(v, echo)})  +{st.median(added):.0f} ns")
PY
