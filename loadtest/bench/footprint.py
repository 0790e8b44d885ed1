"""The code a query runs, in cache lines: from a callgrind file written
with --dump-instr=yes (instr-per-query.sh with CG=--dump-instr=yes KEEP=1),
the 64-byte lines of code holding an instruction run at least T times per
query (of Q queries), for a few T, and the functions holding most of them.
A query's code that fits fewer lines is fetched again faster after the
kernel's work (a wake-up, the system calls) has evicted it from L1i.

usage: Q=QUERIES python3 loadtest/bench/footprint.py CALLGRIND_FILE
"""
import collections
import os
import sys

q = float(os.environ.get("Q", "1"))
per_addr = collections.Counter()
fn_of = {}
fn = None
last = 0
skip = False
positions = ["line"]
for line in open(sys.argv[1], errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("positions:"):
        positions = line.split()[1:]
        continue
    if line.startswith("fn="):
        fn = line[3:]
        continue
    if line.startswith("calls="):
        skip = True
        continue
    if not line or not (line[0].isdigit() or line[0] in "+-*"):
        continue
    parts = line.split()
    p = parts[0]
    if p == "*":
        addr = last
    elif p[0] in "+-":
        addr = last + int(p, 0)
    else:
        addr = int(p, 0)
    last = addr
    if skip:
        skip = False
        continue
    cost = parts[len(positions)] if len(parts) > len(positions) else None
    if positions[0] != "instr" or cost is None:
        continue
    per_addr[addr] += int(cost)
    fn_of[addr] = fn
if not per_addr:
    sys.exit("no instruction addresses: write the file with --dump-instr=yes")
for t in (1.0, 0.5, 0.1, 0.01):
    lines = {a // 64 for a, c in per_addr.items() if c / q >= t}
    print(f"run >= {t:<4} per query: {len(lines):5d} lines of code ({len(lines) * 64 / 1024:.1f} KiB)")
# each hot line shared among the functions with a hot instruction in it
owners = collections.defaultdict(set)
for a, c in per_addr.items():
    if c / q >= 0.5:
        owners[a // 64].add(fn_of[a])
by_fn = collections.Counter()
for fns in owners.values():
    for f in fns:
        by_fn[f] += 1 / len(fns)
for f, n in by_fn.most_common(int(os.environ.get("N", "15"))):
    print(f"{n:6.1f} lines  {f[:90]}")
