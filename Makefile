# The two commands of the README: `make run` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install run test lint ui cluster cluster-check bench clean

$(STAMP): pyproject.toml deploy/requirements-dagster.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, pinned: the CPU build; an unpinned torch would pull a multi-GB CUDA build
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	# dagster-celery, -postgres, -k8s: one patch behind dagster on the index, so without their pin on it
	$(BIN)/python -m pip install -q --no-deps -r deploy/requirements-dagster.txt
	# the in-process model's ONNX files, exported here from the packaged weights (never downloaded)
	$(BIN)/python -m mind_core.embeddings.onnx_export
	touch $(STAMP)

install: $(STAMP)

# make run and make ui share one mind home, and so one Dagster instance (.demo/home/dagster).
DEMO_HOME := MIND_HOME=$(CURDIR)/.demo/home DAGSTER_HOME=$(CURDIR)/.demo/home/dagster

run: $(STAMP)
	$(DEMO_HOME) $(BIN)/python -m pipelines.run_examples

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .

ui: $(STAMP)
	$(DEMO_HOME) $(BIN)/python -m pipelines.ui

# A real local cluster (deploy/README.md): PostgreSQL, Redis, two Celery workers, daemon, UI; Ctrl-C stops
# it. The servers come from Debian's packages: apt-get install -y postgresql redis-server
cluster: $(STAMP)
	$(BIN)/python -m deploy.local_cluster

cluster-check: $(STAMP)
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
