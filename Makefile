# thplab: two commands do all set-up on a fresh machine.
#   make seeds   -- the main job: builds everything and runs `thplab seeds` (all four seed
#                   experiments at the seeds' scale, tables + report in out/seeds)
#   make test    -- every test (Rust unit/property tests, Python tests); what .ci/run calls
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
export CARGO_TERM_COLOR := never

.PHONY: all setup build test test-rust test-py seeds examples bench fuzz clean

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
	$(VPY) -m pytest -q tests

test: test-rust test-py

examples: build
	$(VENV)/bin/thplab run examples/*.json

seeds: build
	$(VENV)/bin/thplab seeds --out out/seeds

bench: build
	$(VPY) bench/run.py

clean:
	cargo clean
	rm -rf $(VENV)
