#!/bin/sh
# A team's response hook, as tests use it: it ends every process of the
# session through its cgroup and does nothing about network or tokens, so
# only processes-gone may be observed.
set -eu
for cg in $GATEHOUSE_CGROUP; do
	echo 1 > "$cg/cgroup.kill"
done
echo "killed $GATEHOUSE_SESSION ($GATEHOUSE_PIDS)"
