# thplab: two commands do all set-up on a fresh machine.
#   make seeds   -- the main job: builds everything and runs `thplab seeds` (all four seed
#                   experiments at the seeds' scale, tables + report in out/seeds)
#   make test    -- every test (Rust unit/property tests, Python tests); what .ci/run calls
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
export CARGO_TERM_COLOR := never

.PHONY: all setup build lint test test-rust test-py seeds examples bench fuzz clean

all: build

$(VENV)/.stamp: pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q "maturin>=1.5,<2" "numpy>=1.24" "pandas>=2.0" "matplotlib>=3.7" "rich>=13" "pyyaml>=6" "pytest>=7"
	touch $@

setup: $(VENV)/.stamp

build: setup
	cargo build --release --workspace --exclude thplab-py
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release -q

test-rust: setup
	cargo test --release --workspace --exclude thplab-py

test-py: build
	bash tests/setup_chromium.sh
	THPLAB_CHECK=1 $(VPY) -m pytest -q tests

# Lint: formatting and clippy (warnings are errors).
lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --release -- -D warnings

test: lint test-rust test-py

examples: build
	$(VENV)/bin/thplab run examples/*.json

seeds: build
	$(VENV)/bin/thplab seeds --out out/seeds

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
