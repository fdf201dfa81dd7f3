#!/usr/bin/env bash
# Detection and response figures from real runs, called by scripts/bench.sh
# (or alone, after `make build`). Benchmarks, not tests: it measures and
# prints, from the runs' own results.json.
#  1. detection latency p50/p95 per attempt kind (connect, dns, open), over
#     every detected attempt of BENCH_REPS runs of bwrap-leaky with
#     --monitor builtin (the network gates plus long-lived-secret, whose
#     reads of planted credential files are the opens);
#  2. response latency p50/p95 per effect (processes-gone, egress-refused,
#     token-refused) over BENCH_REPS runs of bwrap-hardened with
#     --monitor builtin --respond stop: from the alert's receipt to the
#     first poll that saw the effect (10 ms polls; an egress check waits up
#     to 150 ms), and the kernel's last exit where the monitor saw it.
# Percentiles are by nearest rank, as evidence.Summarize computes them.
set -uo pipefail
cd "$(dirname "$0")/.."
export GATEHOUSE_PROBE=$PWD/bin/gatehouse-probe
reps=${BENCH_REPS:-3}
out=$(mktemp -d /tmp/gatehouse-bench-detection-XXXXXX)
trap 'rm -rf "$out"' EXIT

runs() { # runs DIR PROFILE GATES [RUN FLAGS...]
  local dir=$1 profile=$2 sel=$3
  shift 3
  for i in $(seq "$reps"); do
    bin/gatehouse run --quiet --profile "targets/profiles/$profile.yaml" --gates "$sel" --out "$dir" "$@" >/dev/null 2>&1
    echo "  run $i: exit $?"
  done
}

# pct: nearest-rank percentile of a sorted array.
jqdefs='def pct(p): if length == 0 then null else .[([((p / 100 * length) | ceil) - 1, 0] | max)] end;
        def ms: if . == null then "-" else (. * 100 | round / 100 | tostring) + " ms" end;'

echo "== detection latency per attempt kind: bwrap-leaky, --monitor builtin ($reps runs)"
runs "$out/det" bwrap-leaky external-callback,dns-exfiltration,cloud-metadata,long-lived-secret --monitor builtin
cat "$out/det"/2*/results.json | jq -rs "$jqdefs"'
  [.[][] | .detection.attempts // [] | .[] | select(.kind != null and .kind != "")] | group_by(.kind)[] |
  (map(select(.observable)) | length) as $obs |
  (map(select(.detected != null)) | length) as $det |
  (map(.detected.latency_ms // empty) | sort) as $lat |
  "  \(.[0].kind | . + " " * (8 - length)) \($det)/\($obs) observable detected   p50 \($lat | pct(50) | ms)   p95 \($lat | pct(95) | ms)   max \($lat | max | ms)"'

echo
echo "== response latency per effect: bwrap-hardened, --monitor builtin --respond stop ($reps runs)"
runs "$out/resp" bwrap-hardened external-callback,cloud-metadata --monitor builtin --respond stop
cat "$out/resp"/2*/results.json | jq -rs "$jqdefs"'
  [.[][] | .responses // [] | .[]] as $rs |
  "  \($rs | length) responses (poll \($rs[0].poll_ms // "-") ms)",
  ([$rs[] | .effects[]] | group_by(.effect)[] |
    (map(select(.observed)) | length) as $seen |
    (map(.latency_ms // empty) | sort) as $lat |
    (map(select(.before_response)) | length) as $before |
    "  \(.[0].effect | . + " " * (15 - length)) observed \($seen)/\(length)\(if $before > 0 then " (\($before) already before)" else "" end)   p50 \($lat | pct(50) | ms)   p95 \($lat | pct(95) | ms)   max \($lat | max | ms)"),
  ([$rs[] | .kernel_gone_ms // empty] | sort) as $k |
  "  kernel last exit  seen \($k | length)/\($rs | length)   p50 \($k | pct(50) | ms)   p95 \($k | pct(95) | ms)"'
