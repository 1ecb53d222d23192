# The project's commands. `make diagnose` and `make test` are the README's two commands.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: diagnose test unit e2e lint layout record controlplane clean test-matrix record-matrix controlplane-matrix bench release release-check audit

# (setuptools' "Editable installation ... be careful with folders" note is not for the user of
# `make diagnose`: ignored, as a warning of that module only)
$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	PYTHONWARNINGS=ignore:::setuptools.command.editable_wheel \
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

# Parallel test runs: this many pytest-xdist workers, each module on one worker with a control
# plane of its own (the end-to-end tests mostly wait on Kubernetes timers; see docs/testing.md).
TEST_WORKERS ?= 8
# The order of the test modules: none (collection order: the long end-to-end modules first, so
# the short unit modules fill the end), random (a new seed each run, printed) or a seed to replay.
MODULE_SEED ?= none
PYTEST_PARALLEL = $(BIN)/pytest -n $(TEST_WORKERS) $(if $(filter none,$(MODULE_SEED)),,--module-seed=$(MODULE_SEED))

## The core scenarios (tests/e2e/test_versions.py) on each older minor's own control plane,
## the minors side by side.
test-matrix: $(STAMP) controlplane-matrix
	NODEFAIL_MATRIX="$(MATRIX_MINORS)" $(BIN)/pytest -n $(words $(MATRIX_MINORS)) \
	  tests/e2e/test_versions.py -k 'not k8s-default'

## Re-record tests/fixtures/v1.MINOR/ on each older minor (make record does the newest's).
record-matrix: $(STAMP) controlplane-matrix
	@for v in $(MATRIX_MINORS); do \
	  NODEFAIL_RECORD=1 NODEFAIL_K8S_VERSION=$$v $(BIN)/pytest tests/e2e/test_versions.py || exit 1; \
	done

## ruff, mypy, and the oldest Pythons: the plugin on 3.9 (vermin for the standard library and
## syntax, hack/oldest_python.py for `X | Y` evaluated at run time), the krew zipapp's first
## file on any Python (it must reach its version check).
lint: $(STAMP)
	$(BIN)/ruff check kubectl_nodefail tests bench release hack
	$(BIN)/mypy
	$(BIN)/vermin --quiet --no-tips --violations -t=3.9- kubectl_nodefail
	$(BIN)/vermin --quiet --no-tips --violations -t=2.7- -t=3.0- release/zipapp_main.py
	$(BIN)/python hack/oldest_python.py kubectl_nodefail
	$(BIN)/python hack/layers.py

## Everything: lint, types, unit tests and the end-to-end scenarios on the real control plane
## of the newest minor, and the core scenarios on each older minor of the matrix, in one
## parallel run (MODULE_SEED=random shuffles the modules and prints the seed; =N replays it).
## On a cold machine the older minors' control planes build in the background, at the lowest
## CPU priority, while the newest minor's tests run (they mostly wait on Kubernetes timers); a
## matrix unit that starts first waits for its build (the build script's lock).
MATRIX_BUILD_LOG := .e2e-logs/matrix-build.log
test: $(STAMP) controlplane lint
	@mkdir -p $(dir $(MATRIX_BUILD_LOG)); \
	nice -n 19 $(MAKE) --no-print-directory controlplane-matrix >$(MATRIX_BUILD_LOG) 2>&1 & build=$$!; \
	echo "NODEFAIL_MATRIX=\"$(MATRIX_MINORS)\" $(PYTEST_PARALLEL)"; \
	NODEFAIL_MATRIX="$(MATRIX_MINORS)" $(PYTEST_PARALLEL); rc=$$?; \
	if ! wait $$build; then \
	  tail -n 20 $(MATRIX_BUILD_LOG) >&2; \
	  echo "building the version matrix's control planes failed: $(MATRIX_BUILD_LOG)" >&2; \
	  [ $$rc -ne 0 ] || rc=2; \
	fi; exit $$rc

unit: $(STAMP)
	$(BIN)/pytest tests/unit

e2e: $(STAMP) controlplane
	$(PYTEST_PARALLEL) tests/e2e

## The live prediction audit (docs/audit.md): N generated scenarios of SEED on a real control
## plane, batched (each batch shares one node failure), every prediction of the diagnosis judged
## by what the control plane did. Exit 1 on a wrong prediction. Results in .audit/SEED/.
SEED ?= 1
N ?= 40
AUDIT_ARGS ?=
audit: $(STAMP) controlplane
	$(BIN)/python -m tests.audit --seed $(SEED) --n $(N) $(AUDIT_ARGS)

## Redraw docs/layout.svg (the package's floors) from the code.
layout: $(STAMP)
	$(BIN)/python hack/layout_svg.py > docs/layout.svg

## Re-record the snapshots in tests/fixtures/ (and the bundled demo) from the real control plane.
record: $(STAMP) controlplane
	NODEFAIL_RECORD=1 $(BIN)/pytest tests/e2e
	cp tests/fixtures/node-down-after-eviction.json kubectl_nodefail/examples/statefulset-node-down.json

## The scale benchmark (an hour or more; not a test): 500/5,000 nodes, 15k-120k pods (owners on
## neighbouring nodes, and at 5,000/60,000 also spread: /spread), 1/20/200/1,000 failed.
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
