# deckhand: two commands on a fresh Debian machine.
#   make run   installs what is missing, builds, starts the control plane and a container
#              on the local engine (RUNTIME=none: the agent on this machine instead)
#   make test  installs what is missing, builds, vets, runs every test
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
BUILT := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X deckhand/platform.Version=$(VERSION) -X deckhand/platform.BuildTime=$(BUILT)
TEST_TIMEOUT ?= 25m

.PHONY: test-kube all setup setup-bench engine console build run docs docs-flags quickstart test vet unit bench clean package image release packaging-tool sdk sdk-test sdk-generate

all: build

setup:
	@bash scripts/setup.sh

setup-bench:
	@bash scripts/setup.sh --bench

# The local container engine (dockerd on /var/run/docker.sock), started
# when none answers; left running (scripts/engine.sh stop stops one it
# started). `make run` starts it through scripts/run.sh, which stops it on
# exit only when it was the one that started it.
engine: setup
	@bash scripts/engine.sh start

# The web console (control/console/web, Vite + Svelte) is built into
# control/console/dist, which deckhand-control embeds; it is rebuilt only
# when its sources change. Without npm the Go build still works and serves
# a "console not built" page.
CONSOLE := control/console
CONSOLE_SRC := $(shell find $(CONSOLE)/web/src $(CONSOLE)/web/public -type f 2>/dev/null) \
	$(CONSOLE)/web/index.html $(CONSOLE)/web/vite.config.js $(CONSOLE)/web/package-lock.json

console: $(CONSOLE)/dist/index.html

$(CONSOLE)/dist/index.html: $(CONSOLE_SRC)
	@if ! command -v npm >/dev/null 2>&1; then \
		echo "console: npm not found (make setup installs it); deckhand-control is built without its console"; exit 0; fi; \
	cd $(CONSOLE)/web && \
	if ! cmp -s package-lock.json node_modules/.deckhand-lock; then \
		npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.deckhand-lock; fi && \
	find ../dist -mindepth 1 ! -name .gitkeep -delete && \
	npx --no-install vite build --logLevel warn

build: console
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/deckhand ./agent/cmd/deckhand
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/deckhand-control ./control/cmd/deckhand-control
	@if [ -d display/cmd/deckhand-display ]; then \
		echo "CGO_ENABLED=1 $(GO) build -o bin/deckhand-display ./display/cmd/deckhand-display"; \
		CGO_ENABLED=1 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/deckhand-display ./display/cmd/deckhand-display; \
	fi

# A second `make run` on the same data dir stops before building: the
# binaries, logs and container of the running instance stay as they are.
# scripts/run.sh builds the deckhand/base image once (scripts/image.sh).
run:
	@bash scripts/run.sh --check
	@$(MAKE) --no-print-directory setup build
	@bash scripts/run.sh

# The API reference: every OpenAPI document (the control plane's and each
# service's, fetched from the built binaries) rendered with Redoc into
# docs/reference/html (index.html links them).
docs: setup build
	@bash scripts/docs.sh docs/reference/html

# The command-line reference (docs/reference/cli), generated from each
# binary's flags; each binary's TestFlagReferenceIsCurrent fails while it
# says something else.
docs-flags:
	DECKHAND_DOCS_REGENERATE=1 $(GO) test -count=1 -run TestFlagReferenceIsCurrent ./agent/cmd/deckhand ./control/cmd/deckhand-control ./display/cmd/deckhand-display

# README.md's quickstart, run as written against a fresh scripts/run.sh on
# a temporary data dir and free ports (also part of `make test`).
quickstart: setup build
	DECKHAND_BIN=$(CURDIR)/bin $(GO) test -count=1 -run TestReadmeQuickstartRuns ./scripts/quickstarte2e

vet:
	$(GO) vet ./...
	cd packaging/build && $(GO) vet ./...
	cd sdk/go && GOWORK=off $(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

# Unit and end-to-end tests are Go tests; the e2e packages start the binaries
# that `build` put in ./bin (DECKHAND_BIN), real Xvfb, Chromium and shells.
test: setup build vet engine
	DECKHAND_BIN=$(CURDIR)/bin $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) --no-print-directory sdk-test

# The Kubernetes driver on a real one-node cluster (etcd, the API server,
# controller manager, scheduler and kubelet from tools/kube, containerd).
# The test builds those binaries once into ~/.cache/deckhand/kube/<version>
# (about 23 CPU-minutes), then the suite takes a few minutes, a control
# plane on --runtime kubernetes from ./bin included.
test-kube: setup engine build
	DECKHAND_BIN=$(CURDIR)/bin $(GO) test -tags kube -race -count=1 -timeout 40m ./control/runtime/kubernetes/...

# The SDKs' installable artifacts in sdk/dist: the Go module's source
# (for a replace), the npm tarball (built dist inside) and the Python
# wheel, each made offline from what scripts/setup.sh installed.
SDK_DIST := sdk/dist
SDK_PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
sdk:
	@mkdir -p $(SDK_DIST)
	cd sdk/go && GOWORK=off $(GO) build ./...
	tar -C sdk/go --exclude='*_test.go' --exclude=./internal -czf $(SDK_DIST)/deckhand-sdk-go.tar.gz .
	cd sdk/ts && { cmp -s package-lock.json node_modules/.deckhand-lock || \
		{ npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.deckhand-lock; }; } && \
		npm pack --pack-destination ../dist --loglevel=error
	cd sdk/python && $(SDK_PYTHON) -m pip wheel --no-deps --no-build-isolation --no-index -w ../dist . && rm -rf build *.egg-info
	@ls -l $(SDK_DIST)

# The SDKs (sdk/go is its own module; its tests start the binaries and also
# run the Python and TypeScript SDKs' tests against them).
sdk-test:
	cd sdk/go && DECKHAND_BIN=$(CURDIR)/bin GOWORK=off $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

# Regenerates the SDKs' generated code and sdk/coverage.json from the
# documents the freshly built binaries serve.
sdk-generate: build
	cd sdk/go && DECKHAND_SDK_REGENERATE=1 DECKHAND_BIN=$(CURDIR)/bin GOWORK=off $(GO) test -count=1 -run 'Generated|Coverage' .

bench: setup-bench build
	@for s in scripts/bench/*.sh; do [ -x "$$s" ] && "$$s"; done

# Release artefacts (packaging/, docs/operating/operations.md). The packager is its own
# Go module (packaging/build) so nfpm stays out of the deckhand module.
DIST ?= dist
packaging-tool:
	@mkdir -p bin
	cd packaging/build && CGO_ENABLED=0 $(GO) build -trimpath -o ../../bin/deckhand-pkg .

# Debian packages of both binaries (units, /etc/default files, system users).
package: build packaging-tool
	bin/deckhand-pkg deb --version '$(VERSION)' --arch $$($(GO) env GOARCH) --bin bin --packaging packaging --docs docs/operating/operations.md --out $(DIST)

# deckhand/base:$(VERSION) and deckhand/desktop:$(VERSION) in the local
# engine, from Debian packages (mmdebstrap | docker import, then docker
# build); no registry pull. Root file systems are cached by package list
# (docs/operating/operations.md, The container images).
image: build engine
	bash scripts/image.sh '$(VERSION)'

# Cross-built binaries for amd64 and arm64, versions from git, SHA256SUMS.
release:
	bash scripts/release.sh '$(VERSION)' $(DIST)/release

clean:
	rm -rf bin $(DIST)
