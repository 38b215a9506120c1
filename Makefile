# l4slab: `make demo` runs a small study, `make test` runs every test.
#
# Both work on a fresh clone with Python >= 3.10 (with its venv module), cargo and make:
# they create a project virtual environment ($(VENV)), build the engine once into it with
# `maturin develop --release` (cargo's progress is shown) and install what is needed:
# the package's dependencies for `make demo`, plus the test extras for `make test`.
# Stamp files in $(VENV) depend on the sources, so nothing is rebuilt or reinstalled when
# nothing changed. The extension and the emulator are built with the release profile (LTO,
# one codegen unit: what users run and `make bench` measures); the Rust tests with the
# test-fast profile (Cargo.toml: the same optimisation level without LTO, parallel and
# incremental codegen units) into the same target directory (target/test-fast).
PYTHON ?= python3
VENV ?= .venv
CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_TARGET_DIR

PY := $(VENV)/bin/python
MATURIN := $(VENV)/bin/maturin
# What the extension is built from: any change rebuilds (cargo itself then compiles only what changed).
ENGINE_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml Cargo.lock pyproject.toml
BUILT := $(VENV)/.l4slab-built
BUILT_TEST := $(VENV)/.l4slab-built-test
# The emulator binary (target/release/l4slab-emu, found there by `l4slab emulate`); stamped
# like the extension, rebuilt when a Rust source changed.
EMU_BUILT := $(VENV)/.l4slab-emu-built
# Profile-guided optimisation of the release builds (tools/pgo-profile; docs/performance.md,
# "The profile-guided build"): the engine built instrumented into target/pgo-gen, trained
# on the bench cases and the corpus, its profile named by its content; this file holds the
# rustc flag that uses it (empty where the toolchain has no llvm-profdata, or with
# L4SLAB_PGO=0). The extension and the emulator share the flag, so neither rebuilds the other's crates.
PGO_FLAGS := $(CARGO_TARGET_DIR)/pgo/rustflags
RELEASE_ENV = RUSTFLAGS="$${RUSTFLAGS:-} $$(cat $(PGO_FLAGS))"

.PHONY: demo test test-slow install bench venv clean-venv kernel kernel-if-possible browser-if-possible

## demo: build l4slab into the project venv (if sources changed) and write results/demo/report/report.{md,html}
demo: $(BUILT)
	$(PY) -m l4slab demo --out results/demo

## kernel: the kernel backend's guest (User-Mode Linux 7.x with the project's TCP Prague), built
## once and cached by the hash of its inputs in ~/.cache/l4slab/kernel (docs/kernel.md)
kernel: $(BUILT)
	$(PY) -m l4slab kernel build

# make test builds the guest when the host can (a cache hit takes seconds); where it cannot
# (no build tools), the kernel backend's tests skip and say why. .ci/run runs `make kernel` first.
kernel-if-possible: $(BUILT)
	@$(PY) -m l4slab kernel build || echo "warning: no guest kernel: the kernel backend's tests will skip" >&2

# The report rendering tests (tests/python/test_report_figures.py) measure figures in headless
# Chromium: Debian's chromium is installed where apt-get can (as root, as .ci/run does); where
# it cannot, those tests skip and say why.
browser-if-possible:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }; } || \
	  echo "warning: no chromium: the report rendering tests will skip" >&2

## test: engine tests (Rust), then the Python tests against the installed package
## (with the emulator binary built, so the emulated tests run where root and TUN allow, and
## the guest kernel, so the kernel backend's tests run)
#
## The Python tests run in two passes: every test not marked `serial` on TEST_JOBS workers
## (pytest-xdist; a test file stays on one worker, so its module fixtures are built once),
## then the `serial` ones (real-time emulation, which a busy neighbour would disturb) alone.
## One worker more than the CPUs: the emulated and kernel-backend tests spend much of their
## time waiting on real time and on guest processes, which a third worker fills (measured on
## 2 cores: parallel pass 270 s with 2 workers, 231 s with 3).
TEST_JOBS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
test: $(BUILT_TEST) $(EMU_BUILT) kernel-if-possible browser-if-possible
	cargo test -p l4slab-core -p l4slab-emu --profile test-fast
	$(PY) -m pytest -q -m "not slow and not serial" -n $(TEST_JOBS) --dist loadfile tests/python
	$(PY) -m pytest -q -m "serial and not slow" tests/python

## test-slow: the slow tests (a manylinux wheel built with zig, installed into a fresh venv without Rust, running the demo)
test-slow: $(BUILT_TEST)
	$(PY) -m pip install --disable-pip-version-check -q 'ziglang>=0.11'
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m pytest -q -m slow tests/python

## install: (re)build the engine and install the package with its test extras into the venv
install:
	rm -f $(BUILT) $(BUILT_TEST)
	$(MAKE) $(BUILT_TEST)

## bench: engine speed on the reference scenario
bench: $(BUILT)
	$(PY) -m l4slab bench

venv: $(MATURIN)

# The venv, with pip and maturin. Debian/Ubuntu ship venv separately: say so in one line.
$(MATURIN):
	@$(PYTHON) -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || { \
	  echo "l4slab: error: '$(PYTHON)' needs Python >= 3.10 with the venv module (Debian/Ubuntu: apt-get install python3-venv)" >&2; \
	  exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q 'maturin>=1.5,<2'

# The engine and the package's dependencies (maturin installs them from pyproject.toml).
$(BUILT): $(ENGINE_SOURCES) $(PGO_FLAGS) | $(MATURIN)
	$(RELEASE_ENV) VIRTUAL_ENV=$(abspath $(VENV)) $(MATURIN) develop --release
	@touch $@

# The same build with the test extras; it also stands for $(BUILT) (a superset of its packages).
$(BUILT_TEST): $(ENGINE_SOURCES) $(PGO_FLAGS) | $(MATURIN)
	$(RELEASE_ENV) VIRTUAL_ENV=$(abspath $(VENV)) $(MATURIN) develop --release --extras test
	@touch $@ $(BUILT)

$(EMU_BUILT): $(ENGINE_SOURCES) $(PGO_FLAGS) | $(MATURIN)
	$(RELEASE_ENV) cargo build --release -p l4slab-emu
	@touch $@

# After the venv (order-only): a Python without venv gets its one-line hint before any build.
$(PGO_FLAGS): $(ENGINE_SOURCES) tools/pgo-profile $(wildcard crates/l4slab-core/tests/corpus/scenarios/*.json) | $(MATURIN)
	@mkdir -p $(@D)
	tools/pgo-profile > $@.tmp
	@mv $@.tmp $@

clean-venv:
	rm -rf $(VENV)
