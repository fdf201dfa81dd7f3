#!/usr/bin/env bash
# Installs what Gatehouse's tests and demo need on a fresh Debian machine.
# Idempotent: a second run only checks. Needs root (apt, namespaces).
set -euo pipefail

need=()
command -v bwrap   >/dev/null || need+=(bubblewrap)
# The firejail target (internal/targets/exec, profile firejail-hardened.yaml).
command -v firejail >/dev/null || need+=(firejail)
command -v nft     >/dev/null || need+=(nftables)
command -v ip      >/dev/null || need+=(iproute2)
command -v nsenter >/dev/null || need+=(util-linux)
[ -x /bin/busybox ] || need+=(busybox-static)
# Claude Code's own sandbox (--agent-sandbox on) needs socat next to bwrap;
# the agent smoke tests watch with strace that an agent contacts only its model.
command -v socat   >/dev/null || need+=(socat)
# srt (Anthropic's sandbox-runtime, the srt target) runs bwrap and socat and
# scans the working tree with ripgrep; `make tools` fetches srt itself.
command -v rg      >/dev/null || need+=(ripgrep)
command -v strace  >/dev/null || need+=(strace)
if [ "${GATEHOUSE_WITH_DOCKER:-1}" = 1 ]; then
  command -v dockerd >/dev/null || need+=(docker.io)
fi
# Headless Chromium renders report.html in evidence/report's test.
if [ "${GATEHOUSE_WITH_CHROMIUM:-1}" = 1 ]; then
  command -v chromium >/dev/null || need+=(chromium)
fi

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing ${need[*]} and not root: install them (apt-get install ${need[*]})" >&2
    exit 2
  fi
  echo "setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
echo "setup: bubblewrap $(bwrap --version | awk '{print $2}'), $(firejail --version | head -1), $(nft --version), $(ip -V)"
