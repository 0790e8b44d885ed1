#!/usr/bin/env bash
# A profile-guided build of clusterdns, for measuring what profile-guided
# optimisation gives (it is not how the release or the image is built):
# an instrumented build (-Cprofile-generate), trained by running the
# benchmarks' own workloads against it (cpu-per-query.sh's UDP at a fixed
# rate, at saturation and over TCP: memo hits, NODATA, NXDOMAIN and the
# full path; forward-miss.sh's forwarded misses through the cache), each
# server writing its counts as it exits on SIGTERM; the counts merged with
# the llvm-profdata of rustc's own LLVM version (Debian's llvm-N, installed
# when missing) and the release profile built again with -Cprofile-use.
# The result is OUT (default /tmp/clusterdns-pgo/clusterdns), to compare
# with the plain release build through BIN= and BASE= of the benchmarks.
# Two fat-LTO builds in their own target directories (37 minutes in all at
# nice 15 beside a CI run on a 2-core machine, 2026-12-07). Loopback only,
# as the benchmarks it runs.
#
# usage: loadtest/bench/pgo.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/clusterdns-pgo/clusterdns}
D=${PGO_DIR:-/tmp/clusterdns-pgo}
llvm=$(rustc -vV | awk '/^LLVM version/ {split($3, v, "."); print v[1]}')
profdata=llvm-profdata-$llvm
command -v "$profdata" >/dev/null || { echo "installing llvm-$llvm"; apt-get install -y -qq "llvm-$llvm" >/dev/null; }
rm -rf "$D/raw"; mkdir -p "$D/raw" "$(dirname "$OUT")"

echo "# instrumented build"
RUSTFLAGS="-Cprofile-generate=$D/raw" CARGO_TARGET_DIR="$D/gen" cargo build --release -q --bin clusterdns
echo "# training"
CLIENT='-c 8 -q 500' BIN="$D/gen/release/clusterdns" loadtest/bench/cpu-per-query.sh 5 1 "fixed udp tcp" >/dev/null
BIN="$D/gen/release/clusterdns" loadtest/bench/forward-miss.sh 5 1 >/dev/null
ls "$D"/raw/*.profraw >/dev/null
"$profdata" merge -o "$D/clusterdns.profdata" "$D"/raw/*.profraw
echo "# build with the profile ($(du -h "$D/clusterdns.profdata" | cut -f1))"
RUSTFLAGS="-Cprofile-use=$D/clusterdns.profdata" CARGO_TARGET_DIR="$D/use" cargo build --release -q --bin clusterdns
cp "$D/use/release/clusterdns" "$OUT"
echo "$OUT"
