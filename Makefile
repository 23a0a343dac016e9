# Both targets are self-sufficient on a fresh machine: they create .venv if it is missing and install into it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO := benchmarks/snapshots/demo.json
FILTER_SAMPLE := deploy/requests/filter-demo.json
HOST ?= 127.0.0.1
PORT ?= 8888
DEBUG_PORT ?= 8889

.PHONY: run test lint typecheck layers unit e2e lock clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

# The tests cover bench --plot and certs too, so they install those extras.
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,bench,certs]'
	touch $@ $(VENV)/.installed

$(VENV)/.installed-lock: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[lock]'
	touch $@

# requirements.lock: the runtime dependencies of pyproject.toml (no extras) and the build backend, pinned with every
# file's hash, for the image's `pip install --require-hashes` (deploy/Dockerfile). Run it after changing a dependency;
# pins already in the file are kept unless pyproject.toml rules them out (add --upgrade to move them). Resolved from
# the public index alone: no local pip configuration (extra indexes, find-links) leaks into it.
lock: $(VENV)/.installed-lock
	env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_INDEX_URL PIP_CONFIG_FILE=/dev/null \
	  $(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --build-deps-for=wheel --strip-extras \
	  --no-emit-index-url --no-emit-find-links --output-file=requirements.lock pyproject.toml

# The extender over the demo snapshot (binds are applied in memory), plain HTTP on loopback, with the debug port on;
# the curl posts a filter for a demo pod the way kube-scheduler does in node-names mode.
run: $(VENV)/.installed
	@echo "grove-extender serving $(DEMO) on http://$(HOST):$(PORT) (Ctrl-C to stop). From another shell:"
	@echo "  curl -s -H 'Content-Type: application/json' --data @$(FILTER_SAMPLE) http://$(HOST):$(PORT)/filter"
	@echo "  curl -s http://$(HOST):$(DEBUG_PORT)/debug/gangs"
	@echo "  curl -s http://$(HOST):$(DEBUG_PORT)/metrics"
	$(BIN)/grove-extender serve --snapshot $(DEMO) --host $(HOST) --port $(PORT) --debug-port $(DEBUG_PORT)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

layers: $(VENV)/.installed-test
	$(BIN)/lint-imports

unit: $(VENV)/.installed-test
	$(BIN)/pytest

# The end-to-end suite on a real control plane (tests/e2e): etcd, kube-apiserver and kube-scheduler from the folder
# KUBEBUILDER_ASSETS names (envtest's convention); without it every scenario skips with one line saying so.
e2e: $(VENV)/.installed-test
	$(BIN)/pytest -m e2e tests/e2e

test: lint typecheck layers unit

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
