#!/usr/bin/env bash
# The knee of a whole cluster's DNS, measured from N nodes: applies
# deploy/loadtest (an Indexed Job of N generators, one per node) with a
# shared start LEAD seconds ahead, waits for the Job, collects each pod's
# log and merges the reports into PREFIX.json and PREFIX.svg (logs kept in
# PREFIX.logs/). See deploy/README.md, "Load-testing the cluster's DNS".
#
# usage: loadtest/bench/cluster-knee.sh [N] [PREFIX]
#        loadtest/bench/cluster-knee.sh --render [N]   (print the manifests, apply nothing)
# env:   IMAGE (NAME:TAG where deploy/Dockerfile.loadtest's build was pushed), RATE,
#        FACTOR, STEP_SECONDS, SLO_MS, SOCKETS, TARGET (the ConfigMap's keys),
#        LEAD (default 120 s), KUBECTL (default kubectl)
set -euo pipefail
cd "$(dirname "$0")/../.."
RENDER=false
if [ "${1:-}" = --render ]; then RENDER=true; shift; fi
N=${1:-4}; PREFIX=${2:-cluster-knee}
K=${KUBECTL:-kubectl}; NS=clusterdns-loadtest; JOB=dns-loadtest
LEAD=${LEAD:-120}
START_AT=$(( $(date +%s) + LEAD ))
O=$(mktemp -d /tmp/clusterdns-cluster-knee.XXXX)
trap 'rm -rf "$O"' EXIT

# An overlay of deploy/loadtest: N in the three places that hold it, the
# shared start, and whatever workload keys are set in the environment.
{
  echo "resources: [$(realpath --relative-to="$O" deploy/loadtest)]"
  echo "patches:"
  echo "  - target: {kind: Job, name: $JOB}"
  echo "    patch: '[{\"op\": \"replace\", \"path\": \"/spec/parallelism\", \"value\": $N}, {\"op\": \"replace\", \"path\": \"/spec/completions\", \"value\": $N}]'"
  echo "  - target: {kind: ConfigMap, name: loadtest-workload}"
  replace='{"op": "replace", "path": "/data/%s", "value": "%s"}'
  printf "    patch: '[$replace, $replace" GENERATORS "$N" START_AT "$START_AT"
  for key in RATE FACTOR STEP_SECONDS SLO_MS SOCKETS TARGET; do
    if [ -n "${!key:-}" ]; then printf ", $replace" "$key" "${!key}"; fi
  done
  echo "]'"
  if [ -n "${IMAGE:-}" ]; then
    echo "images: [{name: registry.example.com/clusterdns-loadtest, newName: \"${IMAGE%:*}\", newTag: \"${IMAGE##*:}\"}]"
  fi
} > "$O/kustomization.yaml"
if $RENDER; then
  $K kustomize "$O"
  exit 0
fi

[ -x target/release/loadtest ] || cargo build --release -q -p loadtest
# A finished Job's pods are immutable: a new run replaces the old Job.
$K -n "$NS" delete job "$JOB" --ignore-not-found --wait=true
$K apply -k "$O"
echo "cluster-knee: $N generators start at $(date -u -d "@$START_AT" +%H:%M:%SZ)"

# Every generator must be running before the shared start, else it starts late.
while [ "$(date +%s)" -lt "$START_AT" ]; do
  running=$($K -n "$NS" get pods -l job-name=$JOB --field-selector=status.phase=Running -o name | wc -l)
  [ "$running" -ge "$N" ] && break
  sleep 5
done
[ "$running" -ge "$N" ] || {
  echo "cluster-knee: only $running of $N generators run at the start (too few nodes for one per node? image pull?):"
  $K -n "$NS" get pods -l job-name=$JOB -o wide
}

# Bounded by the Job's activeDeadlineSeconds (3600 s).
for _ in $(seq 1 400); do
  read -r ok failed < <($K -n "$NS" get job "$JOB" -o jsonpath='{.status.succeeded} {.status.failed}{"\n"}' | awk '{print $1+0, $2+0}')
  [ $((ok + failed)) -ge "$N" ] && break
  sleep 10
done
[ "$failed" -eq 0 ] || echo "cluster-knee: $failed generator(s) failed; merging the others"

mkdir -p "$PREFIX.logs"
for pod in $($K -n "$NS" get pods -l job-name=$JOB -o name); do
  $K -n "$NS" logs "$pod" > "$PREFIX.logs/${pod#pod/}.log" || true
done
./target/release/loadtest merge "$PREFIX.logs"/*.log --out "$PREFIX"
