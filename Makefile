# Docent: `make run` starts the whole product, `make test` runs the suite.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench eval install clean-data

$(PY):
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) -m config.launcher

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# Its own DATA_DIR: evaluation never touches the instance `make run` serves.
eval: $(STAMP)
	DATA_DIR=$${EVAL_DATA_DIR:-var/eval} $(PY) manage.py eval_demo

# Removes the development instance's data (database, redis, uploads). Asks nothing: be sure.
clean-data:
	rm -rf var
