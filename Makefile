# jupyter_dw developer entry points. `make test` and `make demo` work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CLUSTER := $(PY) -m tests.cluster

.PHONY: help deps system-deps python-deps cluster-build cluster-up cluster-down cluster-status \
        lint test test-unit test-legacy demo clean

help:
	@echo "make test          install everything, build the test cluster, lint, run all tests"
	@echo "make demo          local cluster + demo queues + JupyterLab with jupyter_dw"
	@echo "make cluster-up    start the local control plane (idempotent); cluster-down stops it"
	@echo "make test-legacy   the suite against Kueue $$(sed -n 's/^KUEUE_LEGACY_VERSION=//p' tests/cluster/versions.env) (v1beta1 only)"

deps: system-deps python-deps

# etcd from Debian; Go builds everything else (tests/cluster/build.sh).
system-deps:
	@command -v go >/dev/null || { echo "Go >= 1.21 is required (it fetches the toolchain it needs)"; exit 1; }
	@command -v etcd >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq etcd-server >/dev/null; }
	@# Browser tests (dashboard proxy isolation): Debian's Chromium, driven by Playwright.
	@command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  $$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,demo]"
	@# An editable install skips etc/jupyter: enable the server extension in the venv explicitly.
	$(VENV)/bin/jupyter server extension enable --sys-prefix jupyter_dw >/dev/null
	touch $(STAMP)

python-deps: $(STAMP)

cluster-build: deps
	bash tests/cluster/build.sh

cluster-up: cluster-build
	$(CLUSTER) up

cluster-down: python-deps
	$(CLUSTER) down

cluster-status: python-deps
	$(CLUSTER) status

lint: python-deps
	$(VENV)/bin/ruff check jupyter_dw tests benchmarks
	$(VENV)/bin/ruff format --check jupyter_dw tests benchmarks

test-unit: python-deps
	$(VENV)/bin/pytest tests/unit

test: cluster-build lint
	$(VENV)/bin/pytest

test-legacy: export DW_KUEUE_VERSION = legacy
test-legacy: test

demo: cluster-up
	$(CLUSTER) demo-queues
	KUBECONFIG=$$($(CLUSTER) kubeconfig) $(VENV)/bin/jupyter lab --ip=127.0.0.1 --no-browser \
	  --notebook-dir=examples $$( [ "$$(id -u)" = 0 ] && echo --allow-root ) $(DEMO_ARGS)

clean:
	-$(CLUSTER) down
	rm -rf $(VENV) .pytest_cache .ruff_cache
