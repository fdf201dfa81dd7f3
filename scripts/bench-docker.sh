#!/usr/bin/env bash
# Docker/gVisor speed figures, called by scripts/bench.sh (or alone, after
# `make build`). Benchmarks, not tests: it measures and prints.
#  1. cold start, median and p95 over 20 iterations, per runtime (runc,
#     runsc) on a lab daemon, same image, runtime binary and network mode
#     (none) on both sides, alternating within each iteration: bare is
#     `docker run --rm --network none --runtime RT IMAGE true` by hand (the
#     CLI's whole run, removal included); a session is Start (create with
#     the probe placed, through the gatehouse-RT shim as a run makes it,
#     start), a first Exec of true, Stop (the container removed). bwrap's
#     session start for comparison; the overhead and its aim.
#  2. a full run of the network gates per target (gatehouse compare of the
#     three hardened profiles: also its per-run cold start and run time).
set -uo pipefail
cd "$(dirname "$0")/.."
export GATEHOUSE_PROBE=$PWD/bin/gatehouse-probe
# The shim a run uses (make build puts it beside bin/gatehouse).
export GATEHOUSE_OCI_RUNTIME=$PWD/bin/gatehouse-oci-runtime
gates=${BENCH_GATES:-external-callback,dns-exfiltration,cloud-metadata}
out=$(mktemp -d /tmp/gatehouse-bench-docker-XXXXXX)
trap 'rm -rf "$out"' EXIT

echo "== cold start over 20 sessions (ms): bare docker run vs Gatehouse session"
go test -run '^$' -bench 'ColdStart' -benchtime 20x ./internal/targets/docker | grep ^Benchmark | tee "$out/docker.txt"
go test -run '^$' -bench 'SessionStart' -benchtime 20x ./internal/targets/bwrap | grep ^Benchmark | tee "$out/bwrap.txt"
awk '
  function metric(name,   i) { for (i = 1; i < NF; i++) if ($(i+1) == name) return $i; return "" }
  /^BenchmarkColdStart\// {
    rt = $1; sub(/^BenchmarkColdStart\//, "", rt); sub(/-[0-9]+$/, "", rt)
    ov[rt] = metric("overhead-%")
    row[rt] = sprintf("%-8s %12.1f %12.1f %14.1f %12.1f %9.0f%%   aim <= 20%%", rt, metric("bare-ms-median"), metric("bare-ms-p95"), metric("session-ms-median"), metric("session-ms-p95"), metric("overhead-%"))
  }
  END {
    printf "\n%-8s %12s %12s %14s %12s %10s\n", "runtime", "bare median", "bare p95", "session median", "session p95", "overhead"
    split("runc runsc", rts, " ")
    fig = ENVIRON["BENCH_FIGURES"]
    for (k = 1; k <= 2; k++) {
      label = (rts[k] == "runc") ? "docker (runc)" : "gVisor (runsc)"
      if (rts[k] in row) {
        print row[rts[k]]
        # scripts/bench.sh puts it in its summary.
        if (fig != "") printf "%s session overhead over bare docker run\t%.1f\t%%\t20\n", label, ov[rts[k]] >> fig
      } else {
        printf "%-8s not measured (runtime missing)\n", rts[k]
        if (fig != "") printf "%s session overhead over bare docker run\t-\t%%\t20\n", label >> fig
      }
    }
  }' "$out/docker.txt"
awk '/SessionStart/ { printf "%-8s %40s %12.1f (mean, ms)\n", "bwrap", "session start+exec+stop:", $3 / 1e6 }' "$out/bwrap.txt"
echo "overhead = (session median - bare median) / bare median, both from the same iterations; aim <= 20%"
echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) (2 cores; figures drift with load)"

echo
echo "== full run of $gates per target (gatehouse compare)"
profiles=(--profile targets/profiles/bwrap-hardened.yaml --profile targets/profiles/docker-hardened.yaml)
[ -x /usr/local/bin/runsc ] && profiles+=(--profile targets/profiles/gvisor-hardened.yaml)
bin/gatehouse compare --quiet "${profiles[@]}" --gates "$gates" --out "$out/compare" | sed -n '/^compare /,$p'
