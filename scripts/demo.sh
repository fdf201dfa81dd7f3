#!/usr/bin/env bash
# The main job on the embedded default target, start to finish:
#  1. every gate against the three bubblewrap profiles, each checked against
#     what it must come out as: hardened PASS (exit 0), leaky FAIL (exit 1),
#     offline INCONCLUSIVE (exit 3);
#  2. the hardened and offline runs signed with a throwaway cosign-format
#     key in the run itself; the leaky run, whose guest reaches the host,
#     run without the key or its password and sealed afterwards by
#     'gatehouse seal', a process that runs no sandbox (docs/ci.md);
#  3. the hardened bundle verified offline and used as a release gate; the
#     leaky run refused by it.
# Anything else is a demo failure.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${GATEHOUSE_OUT:-gatehouse-runs}
keys=$(mktemp -d /tmp/gatehouse-demo-keys-XXXXXX)
trap 'rm -rf "$keys"' EXIT
export COSIGN_PASSWORD=${COSIGN_PASSWORD:-gatehouse-demo}
status=0

expect() { # expect CODE DESCRIPTION -- command...
  local want=$1 what=$2; shift 3
  "$@"
  local got=$?
  if [ "$got" = "$want" ]; then
    echo "=== $what: exit $got as expected ==="
  else
    echo "=== $what: exit $got, expected $want ==="
    status=1
  fi
}

bin/gatehouse keys generate --out "$keys/cosign" >/dev/null || exit 1
newest() { ls -td "$out"/2*/ | while read -r d; do grep -q "\"profile\": \"$1\"" "$d/run.json" && { echo "${d%/}"; break; }; done; }
for want in "hardened 0" "leaky 1" "offline 3"; do
  set -- $want
  echo
  echo "=== bwrap-$1: expecting exit $2 ==="
  if [ "$1" = leaky ]; then
    # Its guest reaches the host: 'run --key' refuses it. No key and no
    # password next to it; the folder is sealed by a process of its own.
    expect "$2" "bwrap-$1" -- env -u COSIGN_PASSWORD bin/gatehouse run --profile "targets/profiles/bwrap-$1.yaml" --out "$out"
    # The index here is this script's own, so it is named with --db.
    expect 0 "seal bwrap-$1" -- bin/gatehouse seal --key "$keys/cosign.key" --db "$out/gatehouse-index.db" "$(newest "bwrap-$1")"
  else
    expect "$2" "bwrap-$1" -- bin/gatehouse run --profile "targets/profiles/bwrap-$1.yaml" --out "$out" --key "$keys/cosign.key"
  fi
done

echo
echo "=== an auditor verifies the hardened bundle offline ==="
expect 0 "verify" -- bin/gatehouse verify --key "$keys/cosign.pub" "$(newest bwrap-hardened)"
echo
echo "=== the release gate: hardened policy allowed, leaky policy refused ==="
expect 0 "gate bwrap-hardened" -- bin/gatehouse gate --key "$keys/cosign.pub" --policy targets/profiles/bwrap-hardened.yaml --max-age 1h --db "$out/gatehouse-index.db"
expect 1 "gate bwrap-leaky" -- bin/gatehouse gate --key "$keys/cosign.pub" --policy targets/profiles/bwrap-leaky.yaml --max-age 1h --db "$out/gatehouse-index.db"
echo
bin/gatehouse lab status
exit $status
