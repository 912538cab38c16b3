# thplab: two commands do all set-up on a fresh machine.
#   make seeds   -- the main job: builds everything and runs `thplab seeds` (all four seed
#                   experiments at the seeds' scale, tables + report in out/seeds)
#   make test    -- every test (Rust unit/property tests, Python tests); what .ci/run calls
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
export CARGO_TERM_COLOR := never

.PHONY: all setup lock build lint test test-rust test-py test-slow seeds examples bench fuzz clean

all: build

# Every Python package comes from uv.lock (exact versions with hashes): uv itself is installed
# by pip from requirements-uv.txt (pinned, hashes), then `uv sync --frozen` installs the locked
# runtime, sweep (ray) and dev (maturin, pytest, ruff) packages. --inexact keeps pip, uv and
# the thplab package that `maturin develop` installs. Regenerate the lock with `make lock`.
$(VENV)/.stamp: pyproject.toml uv.lock requirements-uv.txt
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --disable-pip-version-check --require-hashes -r requirements-uv.txt
	UV_PROJECT_ENVIRONMENT=$(abspath $(VENV)) $(VENV)/bin/uv sync --frozen --all-extras --inexact --compile-bytecode --python $(VPY) -q
	touch $@

setup: $(VENV)/.stamp

# Re-resolve the pinned versions after changing dependencies in pyproject.toml.
lock: $(VENV)/.stamp
	$(VENV)/bin/uv lock

build: setup
	cargo build --release --workspace --exclude thplab-py
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --uv -q

test-rust: setup
	cargo test --release --workspace --exclude thplab-py

test-py: build
	bash tests/setup_chromium.sh
	THPLAB_CHECK=1 $(VPY) -m pytest -q -m "not slow" tests

# The long-running tests (e.g. a sweep run twice on Ray), not part of `make test`.
test-slow: build
	THPLAB_CHECK=1 $(VPY) -m pytest -q -m slow tests

# Lint: formatting and clippy (warnings are errors), then ruff (config in pyproject.toml).
lint: setup
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --release -- -D warnings
	$(VENV)/bin/ruff check python tests bench
	$(VENV)/bin/ruff format --check python tests bench

test: lint test-rust test-py

examples: build
	$(VENV)/bin/thplab run examples/*.json

# glibc.malloc.hugetlb=1: every malloc arena in transparent huge pages (the model's
# large arrays already are, crates/model/src/host_alloc.rs; this adds its small blocks,
# e.g. the PTE tables): seed 004's 1 TiB runs spend less time in TLB misses and faults.
seeds: build
	GLIBC_TUNABLES=glibc.malloc.hugetlb=1 $(VENV)/bin/thplab seeds --out out/seeds

bench: build
	$(VPY) bench/run.py

# Fuzzing (separate from `make test`): cargo-fuzz on stable Rust via RUSTC_BOOTSTRAP, no sanitizer
# (the parser and the model are safe Rust; libFuzzer finds panics, hangs and memory blow-ups).
FUZZ_SECONDS ?= 60
fuzz:
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run parse_workload --sanitizer none -- -max_total_time=$(FUZZ_SECONDS)
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run model_bytes --sanitizer none -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096

# The property tests' random search (separate from `make test`, whose property tests draw
# from committed seeds): SOAK_CASES random cases on a fresh seed (printed; SOAK_SEED=... runs
# the same cases again), in release mode. Each failure class is shrunk to a minimal case in
# soak-failures/ with the commands to replay it and to keep it as a regression case.
# More knobs: SOAK_JOBS, SOAK_CHUNK, SOAK_CASE_TIMEOUT (s), SOAK_STOP=1, SOAK_OUT.
SOAK_CASES ?= 100000
SOAK_SEED ?=
.PHONY: soak
soak:
	SOAK_CASES=$(SOAK_CASES) SOAK_SEED=$(SOAK_SEED) cargo test --release -p thplab-model --test properties -- --ignored --exact soak --nocapture

clean:
	cargo clean
	rm -rf $(VENV)
