# Gatehouse — two commands: `make demo` and `make test`.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/gatehouse-dev/gatehouse/evidence.version=$(VERSION)
BIN := bin
export CGO_ENABLED := 0

.PHONY: all setup tools build demo test soak bench clean lab-down

all: build

setup:
	@bash scripts/setup.sh

# Tools the full test suite needs, cached by version under $(GATEHOUSE_CACHE)
# (default /var/cache/gatehouse): the cosign CLI (bundle interop) and gVisor's
# runsc (docker/gvisor target), built from the Go module proxy, and the agent
# CLIs the normal path drives (Claude Code, Codex, Qwen Code with Node 22),
# fetched by pinned version from the npm registry, and the srt tool (Anthropic's
# sandbox-runtime with its pinned modules and Node 22, for the srt target).
# When cached, each only checks its digests (about a second for the agents).
tools:
	@bash scripts/cosign.sh >/dev/null
	@bash scripts/runsc.sh >/dev/null
	@$(GO) run -trimpath ./cmd/gatehouse agents install all >/dev/null

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/gatehouse ./cmd/gatehouse
	$(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/gatehouse-probe ./cmd/gatehouse-probe
	$(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/gatehouse-oci-runtime ./cmd/gatehouse-oci-runtime

# The main job on the embedded default target: every gate against the
# hardened, leaky and offline bubblewrap profiles. Each must come out as
# expected (hardened PASS, leaky FAIL, offline INCONCLUSIVE).
# The demo needs neither Docker nor Chromium: it installs only what bubblewrap
# runs need.
demo: build
	@GATEHOUSE_WITH_DOCKER=0 GATEHOUSE_WITH_CHROMIUM=0 bash scripts/setup.sh
	@bash scripts/demo.sh

# Packages compile in parallel first; then their tests run one package at a
# time, because the real-sandbox tests of several packages would otherwise
# share the machine's namespaces, cgroups and two cores at once.
test: setup tools build
	$(GO) vet ./...
	GATEHOUSE_PROBE=$(CURDIR)/$(BIN)/gatehouse-probe $(GO) test -count=1 -p 1 -timeout 45m ./...

# Runs the whole suite SOAK_ROUNDS times (default 5) and prints each test
# that failed in any round with its pass/fail counts: flakes show up here
# before CI finds them. SOAK_RUN narrows it (a go test -run regexp).
# SOAK_STRESS=cpu (or 1), memory or io runs each round under stress-ng, as
# on a shared CI runner, and lists every test's counts.
SOAK_ROUNDS ?= 5
SOAK_RUN ?=
SOAK_STRESS ?=
soak: setup tools build
	@if [ -n "$(SOAK_STRESS)" ] && ! command -v stress-ng >/dev/null; then \
		echo "soak: installing stress-ng"; apt-get install -y -qq --no-install-recommends stress-ng >/dev/null; fi
	GATEHOUSE_PROBE=$(CURDIR)/$(BIN)/gatehouse-probe $(GO) run ./scripts/soak -n $(SOAK_ROUNDS) -run '$(SOAK_RUN)' -stress '$(SOAK_STRESS)' ./...

bench: setup build
	@bash scripts/bench.sh

lab-down: build
	$(BIN)/gatehouse lab down

clean:
	rm -rf $(BIN) gatehouse-runs
