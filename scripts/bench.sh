#!/usr/bin/env bash
# Prints Gatehouse's speed figures, each with its aim (issue 15), and ends
# with a summary table "figure | measured | aim | met?" computed from what
# was measured here. Benchmarks, not tests: nothing here fails on a slow
# machine; it measures and prints. docs/bench.md explains every figure.
#
#   BENCH_REPS=N     whole runs per figure (default 3); figures are medians
#   BENCH_QUICK=1    one rep, no docker/gVisor, no wrapper/monitor/detection/
#                    agent/evidence sections: the bwrap figures and growth
#   BENCH_BLOCKED_AIM_S  allowed extra of a blocked network gate over the
#                    same gate on the leaky profile (default 0.3 s)
set -uo pipefail
cd "$(dirname "$0")/.."
export GATEHOUSE_PROBE=$PWD/bin/gatehouse-probe
quick=${BENCH_QUICK:-}
reps=${BENCH_REPS:-3}
[ -n "$quick" ] && reps=1
net3=external-callback,dns-exfiltration,cloud-metadata
blocked_aim=${BENCH_BLOCKED_AIM_S:-0.3}
out=$(mktemp -d /tmp/gatehouse-bench-XXXXXX)
trap 'rm -rf "$out"' EXIT
export BENCH_FIGURES=$out/figures.tsv # bench-docker.sh adds its own
: >"$BENCH_FIGURES"

# fig NAME VALUE UNIT AIM: one summary row; AIM is the most VALUE may be
# ("-": shown without an aim), VALUE "-" means not measured.
fig() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$BENCH_FIGURES"; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# metric LINE UNIT: the value before UNIT on a `go test -bench` line.
metric() { awk -v u="$2" '{ for (i = 2; i <= NF; i++) if ($i == u) { print $(i - 1); exit } }' <<<"$1"; }

echo "Gatehouse bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $reps run(s) per whole-run figure${quick:+ (BENCH_QUICK)}"
echo

iters=20; [ -n "$quick" ] && iters=10
echo "== bwrap: Gatehouse session vs bare bubblewrap, and lab attach (one benchmark, medians of $iters)"
# One benchmark, so every ratio is measured in one run (internal/targets/bwrap
# BenchmarkBareVsSession): bare = the argv the target builds for
# bwrap-hardened, /bin/true as the command, in a namespace the lab attached
# once; session = Start + Exec true + Stop in a freshly attached namespace.
line=$(go test -run '^$' -bench 'BareVsSession' -benchtime "${iters}x" ./internal/targets/bwrap 2>&1 | grep -E '^(Benchmark|--- SKIP)|FAIL|skip' | head -3)
echo "$line"
bare=$(metric "$line" bare-ms) sess=$(metric "$line" session-ms) ratio=$(metric "$line" session/bare)
att=$(metric "$line" attach-ms) det=$(metric "$line" detach-ms)
if [ -n "$ratio" ]; then
  printf '  %-44s %8.1f ms\n' "bare bubblewrap (same argv, true)" "$bare" \
    "Gatehouse session (start+exec+stop)" "$sess" "lab attach of a session namespace" "$att" "lab detach" "$det"
  printf '  %-44s %8.2f x   (aim <= 2x)\n' "session / bare" "$ratio"
  printf '  %-44s %8.1f ms  (aim <= 10 ms)\n' "attach" "$att"
fi
fig "bwrap session / bare bubblewrap" "${ratio:--}" x 2
fig "bwrap session start+exec+stop" "${sess:--}" ms -
fig "bare bubblewrap cold start" "${bare:--}" ms -
fig "lab attach (session namespace)" "${att:--}" ms 10

echo
echo "== lab bring-up and attach alone (lab Go benchmarks, 20 runs each)"
go test -run '^$' -bench 'LabUp|Attach' -benchtime 20x ./internal/lab | grep ^Benchmark

# whole_run KEY PROFILE [RUN FLAGS...]: BENCH_REPS whole runs, wall time of
# each (the CLI from start to exit: lab, sessions, evidence) in KEY.wall,
# the run folders under KEY/.
whole_run() {
  local key=$1 profile=$2 dir="$out/runs/$1"
  shift 2
  mkdir -p "$dir"
  for i in $(seq "$reps"); do
    local start end code
    start=$(date +%s%N)
    bin/gatehouse run --quiet --profile "targets/profiles/$profile.yaml" --out "$dir/r$i" "$@" >"$dir/r$i.log" 2>&1
    code=$?
    end=$(date +%s%N)
    echo "($end - $start) / 1000000000" | bc -l >>"$dir.wall"
    printf '  run %d: %6.2f s (exit %d%s)\n' "$i" "$(tail -1 "$dir.wall")" "$code" \
      "$([ "$code" = 0 ] || echo ': not every verdict PASS, or the run did not finish; see the run folder')"
  done
}
wall() { median <"$out/runs/$1.wall"; }
# scen KEY: gate<TAB>path<TAB>median scenario seconds, over every run.
scen() { cat "$out/runs/$1"/r*/2*/results.json 2>/dev/null | jq -rs '[.[][]] | group_by(.gate + " " + .path)[] | "\(.[0].gate)\t\(.[0].path)\t\(map(.duration_ms) | sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end / 1000)"'; }
# count KEY: gates, scenarios and sessions (distinct session ids in the
# evidence) of the first run.
count() {
  local r=$(ls -d "$out/runs/$1"/r1/2* 2>/dev/null | head -1)
  [ -n "$r" ] || { echo "- - -"; return; }
  echo "$(jq '[.[].gate] | unique | length' "$r/results.json") $(jq length "$r/results.json") $(grep -rhoE '"session": ?"s[0-9]+"' "$r/results.json" "$r/traces" | grep -oE 's[0-9]+' | sort -u | wc -l)"
}

echo
echo "== whole runs: every gate x both paths (wall time, median of $reps)"
profiles=(bwrap-hardened bwrap-leaky)
aim_bwrap_hardened=4 aim_docker_hardened=8 aim_gvisor_hardened=10
if [ -z "$quick" ]; then
  if command -v dockerd >/dev/null; then profiles+=(docker-hardened); else echo "  docker-hardened: dockerd not installed (scripts/docker-lab.sh), not measured"; fi
  if [ -x /usr/local/bin/runsc ]; then profiles+=(gvisor-hardened); else echo "  gvisor-hardened: runsc not installed (scripts/runsc.sh), not measured"; fi
fi
for p in "${profiles[@]}"; do
  echo " $p"
  whole_run "all-$p" "$p"
done
echo
printf '  %-18s %6s %9s %9s %10s\n' profile gates scenarios sessions "wall (s)"
for p in "${profiles[@]}"; do
  read -r g s n <<<"$(count "all-$p")"
  aimvar=aim_${p//-/_}
  printf '  %-18s %6s %9s %9s %10.2f  %s\n' "$p" "$g" "$s" "$n" "$(wall "all-$p")" "${!aimvar:+(aim <= ${!aimvar} s)}"
done
for p in bwrap-hardened docker-hardened gvisor-hardened; do
  aimvar=aim_${p//-/_}
  if [[ " ${profiles[*]} " == *" $p "* ]]; then v=$(wall "all-$p"); else v=-; fi
  fig "$p: every gate x both paths, wall" "$v" s "${!aimvar}"
done

echo
echo "== per gate and path: scenario time (s, median over the runs)"
for p in "${profiles[@]}"; do scen "all-$p" | sed "s/^/$p\t/"; done >"$out/scen.tsv"
printf '  %-18s %-14s' gate path; printf ' %16s' "${profiles[@]}"; echo
awk -F'\t' -v cols="${profiles[*]}" '
  BEGIN { n = split(cols, c, " ") }
  { t[$2 "\t" $3, $1] = $4; if (!(($2 "\t" $3) in seen)) { seen[$2 "\t" $3] = 1; rows[++m] = $2 "\t" $3 } }
  END { for (r = 1; r <= m; r++) { split(rows[r], k, "\t"); printf "  %-18s %-14s", k[1], k[2]
          for (i = 1; i <= n; i++) { v = t[rows[r], c[i]]; if (v == "") printf " %16s", "-"; else printf " %16.2f", v }
          print "" } }' "$out/scen.tsv" | sort -k1,1 -k2,2

echo
echo "== blocked attempts: network gates on bwrap-hardened (blocked) vs bwrap-leaky (reached), same gate and path"
echo "   aim: no timeout waited, so hardened - leaky <= $blocked_aim s (the attempt timeout is 1.2 s)"
printf '  %-18s %-14s %9s %9s %9s %7s\n' gate path "hardened" "leaky" "extra" "ratio"
for g in external-callback cloud-metadata; do
  for path in normal assume-breach; do
    h=$(awk -F'\t' -v g=$g -v p=$path '$1 == "bwrap-hardened" && $2 == g && $3 == p { print $4 }' "$out/scen.tsv")
    l=$(awk -F'\t' -v g=$g -v p=$path '$1 == "bwrap-leaky" && $2 == g && $3 == p { print $4 }' "$out/scen.tsv")
    if [ -n "$h" ] && [ -n "$l" ]; then
      x=$(echo "$h - $l" | bc -l)
      printf '  %-18s %-14s %9.2f %9.2f %9.2f %6.2fx\n' $g $path "$h" "$l" "$x" "$(echo "$h / $l" | bc -l)"
    else x=-; printf '  %-18s %-14s not measured\n' $g $path; fi
    fig "blocked $g $path: hardened - leaky" "$x" s "$blocked_aim"
  done
done

echo
echo "== blocked attempts: settled early on the kernel's evidence vs waited out (every gate, first run of each hardened profile)"
echo "   aim: none waited out where the harness sees the packets: bwrap, docker with runc, and gVisor with"
echo "   --network=host as shipped (its sockets are the host kernel's in the session namespace)"
printf '  %-18s %9s %9s %s\n' profile settled "waited" "waited out (scenario/attempt)"
for p in bwrap-hardened docker-hardened gvisor-hardened; do
  r=$(ls -d "$out/runs/all-$p"/r1/2* 2>/dev/null | head -1)
  if [ -z "$r" ]; then
    fig "$p: blocked attempts that waited out the timeout" - "" 0
    continue
  fi
  settled=$(jq -r 'select(.outcome == "timeout" and ((.error // "") | startswith("settled by the harness"))) | .id' "$r/traces/probe-attempts.jsonl" | wc -l)
  waited=$(jq -r 'select(.outcome == "timeout" and (((.error // "") | startswith("settled by the harness")) | not)) | "\(.scenario)/\(.id)"' "$r/traces/probe-attempts.jsonl")
  n=$(printf '%s' "$waited" | grep -c . || true)
  printf '  %-18s %9d %9d %s\n' "$p" "$settled" "$n" "$(printf '%s' "$waited" | head -5 | tr '\n' ' ')"
  fig "$p: blocked attempts that waited out the timeout" "$n" "" 0
done

echo
echo "== cost growth on bwrap-hardened: gates and sessions (default concurrency, median of $reps)"
echo " 1 gate (external-callback)"; whole_run gates-1 bwrap-hardened --gates external-callback
echo " 3 gates ($net3)"; whole_run gates-3 bwrap-hardened --gates "$net3"
printf '  %6s %9s %9s %10s %14s %13s\n' gates scenarios sessions "wall (s)" "s / scenario" "s / session"
for k in gates-1 gates-3 all-bwrap-hardened; do
  read -r g s n <<<"$(count $k)"; w=$(wall $k)
  printf '  %6s %9s %9s %10.2f %14.2f %13.2f\n' "$g" "$s" "$n" "$w" "$(echo "$w / $s" | bc -l)" "$(echo "$w / $n" | bc -l)"
  echo "$s $n $w" >>"$out/growth.txt"
done
# A line through the smallest and the largest selection: what a run costs
# before its first scenario, and what each more scenario adds.
awk 'NR == 1 { s1 = $1; w1 = $3 } END { if (NR > 1 && $1 > s1) { k = ($3 - w1) / ($1 - s1)
  printf "  grows about %.2f s per scenario beyond a fixed %.2f s (line through %d and %d scenarios)\n", k, w1 - k * s1, s1, $1
  printf "growth: run time per added scenario (bwrap-hardened)\t%.2f\ts\t-\ngrowth: fixed cost of a run (bwrap-hardened)\t%.2f\ts\t-\n", k, w1 - k * s1 >> ENVIRON["BENCH_FIGURES"] } }' "$out/growth.txt"

echo
defc=$(bin/gatehouse run --help 2>&1 | grep -A1 -- '-concurrency int' | grep -oE 'default [0-9]+' | grep -oE '[0-9]+')
echo "== cost growth: concurrency (scenarios at once), every gate on bwrap-hardened, $(nproc) cores, median of $reps"
for c in 1 2 4 8; do
  if [ "$c" = "$defc" ]; then echo " --concurrency $c: the runs above (the default)"; cp "$out/runs/all-bwrap-hardened.wall" "$out/runs/conc-$c.wall"; continue; fi
  echo " --concurrency $c"; whole_run "conc-$c" bwrap-hardened --concurrency "$c"
done
for c in 1 2 4 8; do echo "$c $(wall conc-$c)"; done >"$out/conc.txt"
# The knee: the first concurrency from which doubling again gains under
# 10% of the run time.
awk 'BEGIN { printf "  %11s %10s %9s\n", "concurrency", "wall (s)", "speedup" }
  NR == 1 { w1 = $2 } { c[NR] = $1; w[NR] = $2; printf "  %11d %10.2f %8.2fx\n", $1, $2, w1 / $2 }
  END { knee = 0; for (i = 1; i < NR; i++) if (w[i] / w[i + 1] < 1.10) { knee = i; break }
    best = 1; for (i = 2; i <= NR; i++) if (w[i] < w[best]) best = i
    if (knee) { g = 100 * (w[knee] / w[knee + 1] - 1)
      printf "  saturates at concurrency %d: %d at once is %.0f%% %s (under 10%% gained); fastest measured: %d (%.2f s)\n", c[knee], c[knee + 1], g < 0 ? -g : g, g < 0 ? "slower" : "faster", c[best], w[best] }
    else printf "  no knee up to concurrency %d: every doubling gained 10%% or more\n", c[NR]
    f = ENVIRON["BENCH_FIGURES"]
    printf "growth: concurrency where it saturates (next doubling < 10%%)\t%s\tscenarios\t-\n", knee ? c[knee] : "none up to " c[NR] >> f
    printf "growth: speedup at concurrency %d over 1\t%.2f\tx\t-\n", c[best], w[1] / w[best] >> f }' "$out/conc.txt"

if [ -z "$quick" ]; then
  echo
  echo "== wrapper targets: session vs bare wrapper start (Go benchmarks, 10 runs each; a session is Start + Exec true + Stop)"
  # firejail: BenchmarkSessionStart next to BenchmarkBareFirejail; srt and
  # codex: one benchmark each reporting both and their ratio (session/bare).
  go test -run '^$' -bench 'SessionStart|BareFirejail' -benchtime 10x ./internal/targets/exec | grep -E '^(Benchmark|--- SKIP)|skip'
  go test -run '^$' -bench 'ColdStart' -benchtime 10x -v ./internal/targets/realwrap | grep -E '^Benchmark|SKIP|not installed'

  # Detection: the builtin eBPF monitor's cost on a whole run (the network
  # gates with and without it), then its own figures (internal/monitor/ benchmarks).
  echo
  echo "== the three network gates on bwrap-hardened, builtin monitor on (compare with '3 gates' above)"
  whole_run monitor bwrap-hardened --gates "$net3" --monitor builtin
  printf '  median %.2f s\n' "$(wall monitor)"
  echo
  echo "== builtin monitor: detection latency and events per second (Go benchmarks)"
  go test -run '^$' -bench 'DetectionLatency|EventsPerSecond' -benchtime 500x ./internal/monitor | grep -E '^Benchmark|SKIP'
  echo
  bash scripts/bench-detection.sh

  # Real agents on the normal path, next to the probe (the runs above).
  for agent in claude-code codex qwen-code; do
    if ! bin/gatehouse agents list 2>/dev/null | grep -Eq "^$agent +[^ ]+ +[^ ]+ +yes"; then
      echo; echo "== agent $agent: not installed (make tools), skipped"; continue
    fi
    echo; echo "== every gate, agent $agent on the normal path, bwrap-hardened"
    whole_run "agent-$agent" bwrap-hardened --agent "$agent"
  done

  if command -v dockerd >/dev/null; then
    echo
    bash scripts/bench-docker.sh
  fi
  if ls evidence/bundle/*_test.go >/dev/null 2>&1; then
    echo
    echo "== evidence: seal, verify, gate"
    go test -run '^$' -bench . -benchtime 20x ./evidence/... | grep ^Benchmark
  fi
fi
if ! grep -q '^docker' "$BENCH_FIGURES"; then
  fig "docker (runc) session overhead over bare docker run" - % 20
  fig "gVisor (runsc) session overhead over bare docker run" - % 20
fi

echo
echo "== summary (issue 15 aims; met? = measured <= aim; '-' = not measured here)"
awk -F'\t' '
  { name[NR] = $1; v[NR] = $2; u[NR] = $3; a[NR] = $4; if (length($1) > w) w = length($1) }
  END {
    printf "  %-*s | %10s | %9s | %s\n", w, "figure", "measured", "aim", "met?"
    for (i = 1; i <= NR; i++) {
      aim = (a[i] == "-") ? "-" : "<= " a[i] " " u[i]
      if (v[i] == "-") { val = "-"; met = "not measured" }
      else if (v[i] !~ /^-?[0-9.]+$/) { val = v[i]; met = "(no aim)" }
      else { val = sprintf(v[i] ~ /^[0-9]+$/ ? "%d %s" : "%.2f %s", v[i], u[i]); met = (a[i] == "-") ? "(no aim)" : (v[i] + 0 <= a[i] + 0 ? "yes" : "no") }
      printf "  %-*s | %10s | %9s | %s\n", w, name[i], val, aim, met
    }
  }' "$BENCH_FIGURES"
