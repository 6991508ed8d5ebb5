# The two commands of the README: `make run` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install servers run test lint ui cluster cluster-check bench clean

# Set-up is quiet (pip -qq: no per-package lines, no warnings about index locations a machine's pip
# configuration names); one line per step says what is going on, and pip's errors still show.
# torch first, pinned: the CPU build; an unpinned torch would pull a multi-GB CUDA build.
# dagster-celery, -postgres, -k8s: at the release matching the pinned dagster (deploy/requirements-dagster.txt).
# The in-process model's ONNX files are exported here from the packaged weights (never downloaded).
PIP := $(BIN)/python -m pip -qq

$(STAMP): pyproject.toml deploy/requirements-dagster.txt
	@echo "installing dependencies into $(VENV) (the first run takes 4-6 minutes) ..."
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "  [1/5] pip"
	@$(PIP) install --upgrade pip
	@echo "  [2/5] torch (CPU build)"
	@$(PIP) install torch==2.13.0
	@echo "  [3/5] mind-harvest and its dependencies"
	@$(PIP) install -e '.[test]'
	@echo "  [4/5] Dagster deployment packages"
	@$(PIP) install --no-deps -r deploy/requirements-dagster.txt
	@echo "  [5/5] the embedding model's ONNX files"
	@$(BIN)/python -m mind_core.embeddings.onnx_export > /dev/null
	@touch $(STAMP)
	@echo "dependencies installed"

install: $(STAMP)

# make run and make ui share one mind home, and so one Dagster instance (.demo/home/dagster).
DEMO_HOME := MIND_HOME=$(CURDIR)/.demo/home DAGSTER_HOME=$(CURDIR)/.demo/home/dagster

run: $(STAMP)
	$(DEMO_HOME) $(BIN)/python -m mind_harvest.pipelines.run_examples

# The cluster tests (tests/deploy) start Debian's PostgreSQL and Redis servers themselves (and stop
# them); installed here when missing, as root or through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

servers:
	@if ! command -v redis-server >/dev/null || \
	   { ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }; then \
	  command -v apt-get >/dev/null || { echo "no apt-get: install PostgreSQL's server (initdb, pg_ctl) and redis-server yourself" >&2; exit 1; }; \
	  echo "installing Debian's postgresql and redis-server (the cluster tests start them) ..."; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql redis-server > /dev/null; \
	fi

test: $(STAMP) servers
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .

ui: $(STAMP)
	$(DEMO_HOME) $(BIN)/python -m mind_harvest.pipelines.ui

# A real local cluster (deploy/README.md): PostgreSQL, Redis, two Celery workers, daemon, UI; Ctrl-C stops
# it; a worker that stops is started again. The run history (PostgreSQL) is kept across restarts;
# `make cluster WIPE=1` starts with an empty one; `make cluster HOMES=deploy/homes.example.yaml` runs a
# home worker per node of that homes file, each owning its workspaces. The servers come from Debian's packages (`servers`
# installs them when missing). cluster-check harvests the bundled examples on a fresh cluster,
# verifies the mind against a one-machine harvest, and stops.
cluster: $(STAMP) servers
	$(BIN)/python -m deploy.local_cluster $(if $(WIPE),--wipe) $(if $(HOMES),--homes $(HOMES))

cluster-check: $(STAMP) servers
	$(BIN)/python -m deploy.local_cluster --check --folder $(CURDIR)/.cluster/check

# Every benchmark, results in benchmarks/results/ (see benchmarks/README.md); about two hours on 2 cores.
BENCHMARKS := frames search harvest parse cognify extraction snapshot recall locomo realtalk ingest

bench: $(STAMP)
	mkdir -p benchmarks/results
	for b in $(BENCHMARKS); do \
		if [ -f benchmarks/$$b.py ]; then echo "== benchmarks/$$b.py"; $(BIN)/python benchmarks/$$b.py || exit 1; \
		else echo "== benchmarks/$$b.py not present, skipped"; fi; \
	done

clean:
	rm -rf $(VENV) .demo .cluster benchmarks/results
