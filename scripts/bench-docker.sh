#!/usr/bin/env bash
# Docker/gVisor speed figures, called by scripts/bench.sh (or alone, after
# `make build`). Benchmarks, not tests: it measures and prints.
#  1. cold start, median and p95 over 20 sessions: bare `docker run --rm` of
#     the probe base image by hand vs a Gatehouse session (create with the
#     probe placed, start, first exec, stop), for runc and runsc, on a lab
#     daemon; bwrap's session start for comparison; the overhead ratio.
#  2. a full run of the network gates per target (gatehouse compare of the
#     three hardened profiles: also its per-run cold start and run time).
set -uo pipefail
cd "$(dirname "$0")/.."
export GATEHOUSE_PROBE=$PWD/bin/gatehouse-probe
gates=${BENCH_GATES:-external-callback,dns-exfiltration,cloud-metadata}
out=$(mktemp -d /tmp/gatehouse-bench-docker-XXXXXX)
trap 'rm -rf "$out"' EXIT

echo "== cold start over 20 sessions (ms): bare docker run vs Gatehouse session"
go test -run '^$' -bench 'ColdStart' -benchtime 20x ./targets/docker | grep ^Benchmark | tee "$out/docker.txt"
go test -run '^$' -bench 'SessionStart' -benchtime 20x ./targets/bwrap | grep ^Benchmark | tee "$out/bwrap.txt"
awk '
  /ms-median/ { for (i = 1; i <= NF; i++) { if ($(i+1) == "ms-median") med[$1] = $i; if ($(i+1) == "ms-p95") p95[$1] = $i } }
  END {
    printf "\n%-8s %12s %12s %14s %12s %10s\n", "runtime", "bare median", "bare p95", "session median", "session p95", "overhead"
    split("runc runsc", rts, " ")
    for (k = 1; k <= 2; k++) {
      rt = rts[k]; bare = ""; sess = ""
      for (n in med) { if (n ~ "/" rt "/docker-run") bare = n; if (n ~ "/" rt "/target") sess = n }
      label = (rt == "runc") ? "docker (runc)" : "gVisor (runsc)"
      fig = ENVIRON["BENCH_FIGURES"]
      if (bare == "" || sess == "") {
        printf "%-8s not measured (runtime missing)\n", rt
        if (fig != "") printf "%s session overhead over bare docker run\t-\t%%\t20\n", label >> fig
        continue
      }
      ov = 100 * (med[sess] - med[bare]) / med[bare]
      printf "%-8s %12.1f %12.1f %14.1f %12.1f %9.0f%%  (aim <= 20%%)\n", rt, med[bare], p95[bare], med[sess], p95[sess], ov
      # scripts/bench.sh puts it in its summary.
      if (fig != "") printf "%s session overhead over bare docker run\t%.1f\t%%\t20\n", label, ov >> fig
    }
  }' "$out/docker.txt"
awk '/SessionStart/ { printf "%-8s %40s %12.1f (mean, ms)\n", "bwrap", "session start+exec+stop:", $3 / 1e6 }' "$out/bwrap.txt"
echo "overhead = (session median - bare median) / bare median; the aim is under 20%"

echo
echo "== full run of $gates per target (gatehouse compare)"
profiles=(--profile targets/profiles/bwrap-hardened.yaml --profile targets/profiles/docker-hardened.yaml)
[ -x /usr/local/bin/runsc ] && profiles+=(--profile targets/profiles/gvisor-hardened.yaml)
bin/gatehouse compare --quiet "${profiles[@]}" --gates "$gates" --out "$out/compare" | sed -n '/^compare /,$p'
