# The project's commands. `make diagnose` and `make test` are the README's two commands.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: diagnose test unit e2e lint record controlplane clean test-matrix record-matrix controlplane-matrix bench release release-check audit

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

# The older Kubernetes minors of the version matrix (the newest, 1.36, is the default everywhere).
MATRIX_MINORS ?= 1.26 1.31

## Build the control plane of every minor of the matrix (each cached like the default one).
controlplane-matrix:
	@for v in $(MATRIX_MINORS); do bash hack/build-control-plane.sh $$v >/dev/null || exit 1; done

## The core scenarios (tests/e2e/test_versions.py) on each older minor's own control plane.
test-matrix: $(STAMP) controlplane-matrix
	@for v in $(MATRIX_MINORS); do \
	  echo "== Kubernetes $$v"; \
	  NODEFAIL_K8S_VERSION=$$v $(BIN)/pytest tests/e2e/test_versions.py || exit 1; \
	done

## Re-record tests/fixtures/v1.MINOR/ on each older minor (make record does the newest's).
record-matrix: $(STAMP) controlplane-matrix
	@for v in $(MATRIX_MINORS); do \
	  NODEFAIL_RECORD=1 NODEFAIL_K8S_VERSION=$$v $(BIN)/pytest tests/e2e/test_versions.py || exit 1; \
	done

lint: $(STAMP)
	$(BIN)/ruff check kubectl_nodefail tests bench release
	$(BIN)/mypy

## Everything: lint, types, unit tests and the end-to-end scenarios on the real control plane
## of the newest minor, then the core scenarios on each older minor of the matrix.
test: $(STAMP) controlplane lint
	$(BIN)/pytest
	$(MAKE) --no-print-directory test-matrix

unit: $(STAMP)
	$(BIN)/pytest tests/unit

e2e: $(STAMP) controlplane
	$(BIN)/pytest tests/e2e

## The live prediction audit (docs/audit.md): N generated scenarios of SEED on a real control
## plane, batched (each batch shares one node failure), every prediction of the diagnosis judged
## by what the control plane did. Exit 1 on a wrong prediction. Results in .audit/SEED/.
SEED ?= 1
N ?= 40
AUDIT_ARGS ?=
audit: $(STAMP) controlplane
	$(BIN)/python -m tests.audit --seed $(SEED) --n $(N) $(AUDIT_ARGS)

## Re-record the snapshots in tests/fixtures/ (and the bundled demo) from the real control plane.
record: $(STAMP) controlplane
	NODEFAIL_RECORD=1 $(BIN)/pytest tests/e2e
	cp tests/fixtures/node-down-after-eviction.json kubectl_nodefail/examples/statefulset-node-down.json

## The scale benchmark (minutes; not a test): 500/5,000 nodes, 15k-120k pods, 1/20/200 failed.
## Writes bench/results/{results.md,results.json,plot.svg}. BENCH_ARGS="--sizes 50x500" for a quick one.
bench: $(STAMP) controlplane
	$(BIN)/pip install --quiet -e '.[fast]'
	nice -n 10 $(BIN)/python -m bench.run $(BENCH_ARGS)

## The release: wheel, sdist, the krew archive (a zipapp that runs on a bare python3) and
## krew-manifest.yaml with its sha256, in dist/ (see release/build.py).
release: $(STAMP)
	$(BIN)/python release/build.py

## Fail if krew-manifest.yaml disagrees with a build of this commit.
release-check: $(STAMP)
	$(BIN)/python release/build.py --check

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .e2e-logs .audit
