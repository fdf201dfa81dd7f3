#!/usr/bin/env bash
# Runs every gate against the three bubblewrap profiles and checks that each
# comes out as it must: hardened PASS (exit 0), leaky FAIL (exit 1), offline
# INCONCLUSIVE (exit 3). Anything else is a demo failure.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${GATEHOUSE_OUT:-gatehouse-runs}
status=0
for want in "hardened 0" "leaky 1" "offline 3"; do
  set -- $want
  echo
  echo "=== bwrap-$1: expecting exit $2 ==="
  bin/gatehouse run --profile "targets/profiles/bwrap-$1.yaml" --out "$out"
  got=$?
  if [ "$got" = "$2" ]; then
    echo "=== bwrap-$1: exit $got as expected ==="
  else
    echo "=== bwrap-$1: exit $got, expected $2 ==="
    status=1
  fi
done
echo
bin/gatehouse lab status
exit $status
