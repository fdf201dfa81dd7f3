#!/usr/bin/env bash
# Prints Gatehouse's speed figures. Benchmarks, not tests: nothing here fails
# on a slow machine; it measures and reports.
set -uo pipefail
cd "$(dirname "$0")/.."
export GATEHOUSE_PROBE=$PWD/bin/gatehouse-probe
reps=${BENCH_REPS:-3}
gates=${BENCH_GATES:-external-callback,dns-exfiltration,cloud-metadata}
out=$(mktemp -d /tmp/gatehouse-bench-XXXXXX)
trap 'rm -rf "$out"' EXIT

echo "== lab bring-up, session attach, bwrap session start (Go benchmarks, 20 runs each)"
go test -run '^$' -bench 'LabUp|Attach' -benchtime 20x ./lab | grep ^Benchmark
go test -run '^$' -bench 'SessionStart' -benchtime 20x ./targets/bwrap | grep ^Benchmark

echo
echo "== wrapper targets: session vs bare wrapper start (Go benchmarks, 10 runs each; a session is Start + Exec true + Stop)"
# firejail: BenchmarkSessionStart next to BenchmarkBareFirejail; srt and
# codex: one benchmark each reporting both and their ratio (session/bare).
# A tool that is not installed is skipped (make tools).
go test -run '^$' -bench 'SessionStart|BareFirejail' -benchtime 10x ./targets/exec | grep -E '^(Benchmark|--- SKIP)|skip'
go test -run '^$' -bench 'ColdStart' -benchtime 10x -v ./targets/realwrap | grep -E '^Benchmark|SKIP|not installed'

whole_run() { # whole_run LABEL GATES PROFILE [RUN FLAGS...]
  local label=$1 sel=$2 profile=$3 dir="$out/$1-$3"
  shift 3
  echo
  echo "== $label on $profile ($reps runs)"
  for i in $(seq "$reps"); do
    start=$(date +%s%N)
    bin/gatehouse run --quiet --profile "targets/profiles/$profile.yaml" ${sel:+--gates "$sel"} --out "$dir" "$@" >/dev/null 2>&1
    code=$?
    end=$(date +%s%N)
    printf '  run %d: %6.2f s (exit %d)\n' "$i" "$(echo "($end-$start)/1000000000" | bc -l)" "$code"
  done
  echo "  per gate and path (mean scenario time over the runs, from results.json):"
  cat "$dir"/2*/results.json | jq -rs '
    [.[][]] | group_by(.gate + " " + .path)[] |
    "    \(.[0].gate) \(.[0].path): \((map(.duration_ms) | add / length / 1000 * 100 | round / 100)) s"'
}
for profile in bwrap-hardened bwrap-leaky; do
  whole_run "the three network gates" "$gates" "$profile"
done
for profile in bwrap-hardened bwrap-leaky; do
  whole_run "all eight gates" "" "$profile"
done

# Real agents on the normal path, next to the probe (the runs above): the
# per-gate normal-path times are the agent's; the assume-breach ones stay
# the probe's.
# Detection: the builtin eBPF monitor's cost on a whole run (the same gates
# with and without it), then its own figures: detection latency p50/p95 per
# event and the events per second it sustains (monitor/ benchmarks).
whole_run "the three network gates, builtin monitor on" "$gates" bwrap-hardened --monitor builtin
echo
echo "== builtin monitor: detection latency and events per second (Go benchmarks)"
go test -run '^$' -bench 'DetectionLatency|EventsPerSecond' -benchtime 500x ./monitor | grep -E '^Benchmark|SKIP'
echo
# From real runs: detection latency per attempt kind, response latency per
# effect (results.json of bwrap-leaky and bwrap-hardened --respond stop).
bash scripts/bench-detection.sh

for agent in claude-code codex qwen-code; do
  if ! bin/gatehouse agents list 2>/dev/null | grep -Eq "^$agent +[^ ]+ +[^ ]+ +yes"; then
    echo; echo "== agent $agent: not installed (make tools), skipped"; continue
  fi
  whole_run "all eight gates, agent $agent" "" bwrap-hardened --agent "$agent"
done

if [ -x scripts/bench-docker.sh ]; then
  echo
  bash scripts/bench-docker.sh
fi
if ls evidence/bundle/*_test.go >/dev/null 2>&1; then
  echo
  echo "== evidence: seal, verify, gate"
  go test -run '^$' -bench . -benchtime 20x ./evidence/... | grep ^Benchmark
fi
