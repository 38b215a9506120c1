# l4slab: `make demo` runs a small study, `make test` runs every test.
PYTHON ?= python3
CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_TARGET_DIR

.PHONY: demo test install bench

## demo: install l4slab if it is not importable yet, then run the demo study and write results/demo/report/report.md
demo:
	@$(PYTHON) -c "import l4slab._core" 2>/dev/null || $(MAKE) install
	$(PYTHON) -m l4slab demo --out results/demo

## install: build the Rust engine and install the package with its test extras
install:
	$(PYTHON) -m pip install --quiet ".[test]"

## test: engine tests (Rust), then the Python tests against the freshly installed package
test: install
	cargo test -p l4slab-core --release
	$(PYTHON) -m pytest -q tests/python

## bench: engine speed on the reference scenario
bench:
	@$(PYTHON) -c "import l4slab._core" 2>/dev/null || $(MAKE) install
	$(PYTHON) -m l4slab bench
