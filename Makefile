# Two commands on a fresh machine: `make run` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
export PATH := $(CURDIR)/$(BIN):$(PATH)
# Thresholds and other computed caches stay inside the repo (ignored by git).
export FGPO_CACHE_DIR ?= $(CURDIR)/.cache/fgpo
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install run test test-slow readme bench clean ui sweep tune ablation frontier dashboard

# torch by pip, which finds a CPU wheel where pip's config points (uv does not read it); the
# rest by uv: the same resolution as pip's, downloaded in parallel (about 1 min here against
# pip's 3.5). Compiled to bytecode at install, as pip does: where PYTHONDONTWRITEBYTECODE is
# set (it is on this machine) every stage's process would otherwise compile its imports again.
TORCH   := $(shell grep -o '"torch==[^"]*"' pyproject.toml | tr -d '"')
UV      := uv==0.13.9

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip '$(UV)'
	$(BIN)/python -m pip install --quiet '$(TORCH)'
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## Reproduce the pipeline on the embedded default (timed: reports/repro_time.json), then
## link the report's rows to this machine's MLflow runs and regenerate the README from the outputs.
run: install
	$(BIN)/python bench/time_repro.py
	$(BIN)/fgpo report --links-only
	$(BIN)/fgpo readme

## Each method's equal-budget Optuna study (resumable; `nohup make tune > tune.log 2>&1 &` runs
## it in the background): builds the reward tables if needed, writes tune/tuned.yaml and
## tune/trials.csv (commit both; `make run` then retrains with them and never tunes).
tune: install
	$(BIN)/dvc repro table_stats
	$(BIN)/fgpo tune

## The ablation (ablation/dvc.yaml; after `make run`, whose fgpo and grpo runs it reuses):
## six estimators and three tool costs -> reports/ablation.md (timed: reports/ablation_time.json).
ablation: install
	$(BIN)/python bench/time_repro.py --out reports/ablation_time.json ablation/dvc.yaml

## The budget frontier (frontier/dvc.yaml; after `make run`, whose tables and runs it reuses at
## K = 6): accuracy against reasoner calls at K = 4, 6, 8 -> reports/frontier.md (timed:
## reports/frontier_time.json).
frontier: install
	$(BIN)/python bench/time_repro.py --out reports/frontier_time.json frontier/dvc.yaml

## Tests: `make test` all but the slow end-to-end checks (about 10 minutes on 2 cores);
## `make test-slow` those (a whole dvc repro, killed workers, real collections); CI runs both.
test: install
	$(BIN)/python -m pytest -q -m "not slow" $(PYTEST_ARGS)

test-slow: install
	$(BIN)/python -m pytest -q -m slow $(PYTEST_ARGS)

bench: install
	$(BIN)/python bench/bench_tools.py
	$(BIN)/python bench/bench_reward_tables.py
	$(BIN)/python bench/bench_train.py
	$(BIN)/python bench/bench_setting.py
	$(BIN)/python bench/summarize.py

clean:
	rm -rf $(VENV) .pytest_cache

## MLflow UI on the repo's tracking store; open the URL it prints (the model-training view).
ui: install
	@echo "MLflow UI: http://127.0.0.1:5000/#/experiments?workflowType=machine_learning"
	$(BIN)/mlflow ui --backend-store-uri sqlite:///$(CURDIR)/mlruns/mlflow.db \
	    --default-artifact-root $(CURDIR)/mlruns/artifacts --workers 1 --host 127.0.0.1 --port 5000

## optuna-dashboard on the sweeps' storage (a SQLAlchemy URL or a journal file path).
STORAGE ?= sqlite:///sweeps/optuna.db
dashboard: install
	@echo "Optuna dashboard: http://127.0.0.1:8080"
	$(BIN)/optuna-dashboard --host 127.0.0.1 --port 8080 $(STORAGE)

## A default Optuna sweep (8 trials) for one setting; SWEEP_ARGS overrides, e.g.
## make sweep SWEEP_ARGS="--method fgpo --reasoner careful_expert --benchmark seqcalc"
SWEEP_ARGS ?= --method grpo --reasoner overloaded_generalist --benchmark genomeqa
sweep: install
	$(BIN)/dvc repro table_stats
	$(BIN)/fgpo sweep $(SWEEP_ARGS)
