# Spectacular Bid online. Needs only Python 3.11+ and make; everything else goes into .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench bench-live lint manage

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) scripts/devserver.py run

test: $(STAMP)
	$(PY) scripts/devserver.py test

bench: $(STAMP)
	$(PY) -m benchmarks.run

# Live matches against the whole stack, e.g. make bench-live ARGS="--matches 10,500,1000 --seconds 120"
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench-live: $(BENCH_STAMP)
	$(PY) -m benchmarks.live_bench $(ARGS)
	$(PY) -m benchmarks.report

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# A manage.py command beside a running `make run`, e.g. make manage ARGS="botmatch --matches 3"
manage: $(STAMP)
	$(PY) scripts/devserver.py manage $(ARGS)
