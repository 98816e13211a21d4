# Docent: `make run` starts the whole product, `make test` runs the suite.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench eval eval-real eval-git install clean-data

$(PY):
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# `@`: the launcher's own `docent:` lines are all `make run` prints (the README shows them).
run: $(STAMP)
	@$(PY) -m config.launcher

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# Its own DATA_DIR: evaluation never touches the instance `make run` serves.
eval: $(STAMP)
	DATA_DIR=$${EVAL_DATA_DIR:-var/eval} $(PY) manage.py eval_demo
	DATA_DIR=$${EVAL_DATA_DIR:-var/eval} $(PY) manage.py eval_answers

# Four Sphinx releases' docs from PyPI sdists, flattened and checked (demo/real/build_corpus.py; cached
# in var/real-corpus), evaluated in their own DATA_DIR and workspace.
REAL_CORPUS := var/real-corpus
eval-real: $(STAMP)
	$(PY) demo/real/build_corpus.py --out $(REAL_CORPUS)
	DATA_DIR=$${EVAL_REAL_DATA_DIR:-var/eval-real} $(PY) manage.py eval_demo --corpus $(REAL_CORPUS)/corpus \
		--ground-truth $(REAL_CORPUS)/ground_truth.json --releases $(REAL_CORPUS)/files.json --workspace eval-real \
		--title "Sphinx documentation 5.3 / 6.2 / 7.4 / 8.1"
	DATA_DIR=$${EVAL_REAL_DATA_DIR:-var/eval-real} $(PY) manage.py eval_answers --corpus $(REAL_CORPUS)/corpus \
		--ground-truth $(REAL_CORPUS)/ground_truth.json --releases $(REAL_CORPUS)/files.json --workspace eval-real \
		--title "Sphinx documentation 5.3 / 6.2 / 7.4 / 8.1"

# Five Sphinx releases' docs committed and tagged in a Git repository, synced as a Git source: chunks
# encoded against distinct texts, and version questions (benchmarks/git_version_questions.json).
eval-git: $(STAMP)
	$(PY) benchmarks/eval_git_versions.py

# Removes the development instance's data (database, redis, uploads). Asks nothing: be sure.
clean-data:
	rm -rf var
