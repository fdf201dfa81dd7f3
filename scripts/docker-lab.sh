#!/bin/sh
# Installs what the lab's Docker targets need: the Docker engine (dockerd,
# containerd, runc) and a static busybox for the probe base image. Packages
# only: it starts no daemon, and the package's own service is not enabled,
# since a dockerd in the machine's own network namespace could reach the
# real network. Gatehouse starts its daemon inside the lab namespace.
# With --gvisor it also builds and installs runsc (scripts/runsc.sh).
set -eu
missing=""
command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || missing="$missing busybox-static"
if [ -n "$missing" ]; then
	echo "docker-lab: installing$missing" >&2
	# policy-rc.d 101 keeps Debian's maintainer scripts from starting dockerd;
	# a policy the machine already has is left alone.
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y $missing >&2
else
	echo "docker-lab: docker.io and busybox-static already installed" >&2
fi
if [ "${1:-}" = "--gvisor" ]; then
	"$(dirname "$0")/runsc.sh" >/dev/null
fi
