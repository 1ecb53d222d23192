# The project's commands. `make diagnose` and `make test` are the README's two commands.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: diagnose test unit e2e lint record controlplane clean release release-check

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,release]'
	touch $@

## Install, then diagnose the current kubeconfig's cluster, or the bundled demo without one.
diagnose: $(STAMP)
	@if [ -n "$$KUBECONFIG" ] || [ -f "$$HOME/.kube/config" ]; then \
	  $(BIN)/kubectl-nodefail diagnose; \
	else \
	  echo "no kubeconfig: diagnosing the bundled snapshot (recorded from a real control plane)" >&2; \
	  $(BIN)/kubectl-nodefail diagnose --demo; \
	fi; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 3 ]  # 3 = problems found: the command worked

## Build the real control plane (cached in ~/.cache/kubectl-nodefail) for the end-to-end tests.
controlplane:
	bash hack/build-control-plane.sh >/dev/null

lint: $(STAMP)
	$(BIN)/ruff check kubectl_nodefail tests release
	$(BIN)/mypy

## Everything: lint, types, unit tests and the end-to-end scenarios on the real control plane.
test: $(STAMP) controlplane lint
	$(BIN)/pytest

unit: $(STAMP)
	$(BIN)/pytest tests/unit

e2e: $(STAMP) controlplane
	$(BIN)/pytest tests/e2e

## Re-record the snapshots in tests/fixtures/ (and the bundled demo) from the real control plane.
record: $(STAMP) controlplane
	NODEFAIL_RECORD=1 $(BIN)/pytest tests/e2e
	cp tests/fixtures/node-down-after-eviction.json kubectl_nodefail/examples/statefulset-node-down.json

## The release: wheel, sdist, the krew archive (a zipapp that runs on a bare python3) and
## krew-manifest.yaml with its sha256, in dist/ (see release/build.py).
release: $(STAMP)
	$(BIN)/python release/build.py

## Fail if krew-manifest.yaml disagrees with a build of this commit.
release-check: $(STAMP)
	$(BIN)/python release/build.py --check

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .e2e-logs
