# jupyter_dw developer entry points. `make test` and `make demo` work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CLUSTER := $(PY) -m tests.cluster
DEMO_SETTINGS := .cluster/demo-settings
# The sidebar's npm packages: installed from the lockfile, never a browser download.
NPM_STAMP := labextension/node_modules/.installed
NPM_ENV := PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PATH=$(CURDIR)/$(VENV)/bin:$$PATH
LABEXT_DEV := $(VENV)/share/jupyter/labextensions/jupyter-dw

.PHONY: help deps system-deps python-deps cluster-build cluster-up cluster-down cluster-status \
        frontend lint test test-unit test-js test-docs test-legacy bench demo docs clean

help:
	@echo "make test          install everything, build the test cluster, lint, run all tests"
	@echo "make demo          local cluster + demo queues + JupyterLab with jupyter_dw"
	@echo "make docs          the documentation site, offline, into docs/_build/html"
	@echo "make cluster-up    start the local control plane (idempotent); cluster-down stops it"
	@echo "make bench         every benchmark: benchmarks/results/*.json and the docs' tables"
	@echo "make test-legacy   the suite against Kueue $$(sed -n 's/^KUEUE_LEGACY_VERSION=//p' tests/cluster/versions.env) (v1beta1 only)"

deps: system-deps python-deps

# etcd and chromium (UI tests) from Debian; Go builds everything else (tests/cluster/build.sh).
system-deps:
	@command -v go >/dev/null || { echo "Go >= 1.21 is required (it fetches the toolchain it needs)"; exit 1; }
	@command -v npm >/dev/null || { echo "Node.js >= 18 and npm are required (the sidebar)"; exit 1; }
	@command -v etcd >/dev/null && command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  $$SUDO apt-get install -y -qq --no-install-recommends etcd-server chromium >/dev/null; }

$(NPM_STAMP): labextension/package-lock.json labextension/package.json
	cd labextension && $(NPM_ENV) npm ci --no-audit --no-fund --loglevel=error
	touch $(NPM_STAMP)

$(STAMP): pyproject.toml | $(NPM_STAMP)
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@# The build hook (hatch-jupyter-builder) builds the sidebar with npm when it is stale.
	$(NPM_ENV) $(PY) -m pip install -q -e ".[test,demo,docs]"
	@# An editable install skips etc/jupyter: enable the server extension in the venv explicitly.
	$(VENV)/bin/jupyter server extension enable --sys-prefix jupyter_dw >/dev/null
	@# ... and copies the labextension: link it instead, so `make frontend` is seen on reload.
	rm -rf $(LABEXT_DEV) && ln -s $(CURDIR)/jupyter_dw/labextension $(LABEXT_DEV)
	touch $(STAMP)

python-deps: $(STAMP)

# The sidebar: TypeScript types from openapi.yaml are checked, then a development build.
frontend: python-deps $(NPM_STAMP)
	cd labextension && $(NPM_ENV) npm run --silent check-generated
	cd labextension && $(NPM_ENV) npm run --silent build >/dev/null

cluster-build: deps
	bash tests/cluster/build.sh

cluster-up: cluster-build
	$(CLUSTER) up

cluster-down: python-deps
	$(CLUSTER) down

cluster-status: python-deps
	$(CLUSTER) status

lint: python-deps
	$(VENV)/bin/ruff check jupyter_dw tests benchmarks docs
	$(VENV)/bin/ruff format --check jupyter_dw tests benchmarks docs
	@# The layers' import contract (pyproject.toml); its graph builds in well under a second.
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy
	cd labextension && $(NPM_ENV) npm run --silent lint

test-unit: python-deps
	$(VENV)/bin/pytest tests/unit

# The sidebar model's unit tests (vitest); a failure stops make.
test-js: python-deps
	cd labextension && $(NPM_ENV) npm run --silent test

# The documentation (docs/): Sphinx with MyST, offline (no intersphinx, no CDN), every
# cross-reference resolved and no warning (-n -W). autodoc imports the widgets, whose ESM
# joins browser code the frontend build copies into the package: the frontend first.
docs: frontend
	$(VENV)/bin/sphinx-build -n -W --keep-going -q -b html docs docs/_build/html

# The site checked: its generated pages match the code, its internal links and pictures
# resolve (and the pages docs/check_links.py names are two clicks from the home page), the
# OpenAPI description is valid.
test-docs: docs
	$(PY) docs/generate.py --check
	$(PY) docs/check_links.py docs/_build/html
	$(PY) -m openapi_spec_validator jupyter_dw/openapi.yaml

# pytest runs last: CI reads its summary line.
test: cluster-build lint frontend test-js test-docs
	$(VENV)/bin/pytest

# Every benchmark with the arguments docs/explanation/benchmarks.md shows (long: tens of
# minutes); JSON into benchmarks/results/ (git-ignored), then that page's bench tables.
bench: cluster-build frontend
	$(PY) -m benchmarks.run_all

test-legacy: export DW_KUEUE_VERSION = legacy
test-legacy: test

demo: cluster-up frontend
	$(CLUSTER) demo-queues
	@# The demo opens the quickstart notebook with the sidebar shown (a demo-only setting) and
	@# no "Jupyter news?" prompt over it (tests/cluster/demo.py, tests/ui/test_demo_layout.py).
	$(CLUSTER) demo-settings $(DEMO_SETTINGS)
	@# KWOK pods run no Ray: `demo-run` starts a real Ray head for the demo clusters' jobs.
	KUBECONFIG=$$($(CLUSTER) kubeconfig) $(CLUSTER) demo-run -- \
	  $(VENV)/bin/jupyter lab --ip=127.0.0.1 --no-browser \
	  --ServerApp.root_dir=examples --LabApp.user_settings_dir=$(DEMO_SETTINGS) \
	  --LabApp.default_url=/lab/tree/quickstart.ipynb \
	  --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate \
	  $$( [ "$$(id -u)" = 0 ] && echo --allow-root ) $(DEMO_ARGS)

clean:
	-$(CLUSTER) down
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache labextension/node_modules labextension/lib \
	  jupyter_dw/labextension tests/ui/artifacts docs/_build docs/jupyter_execute
