# Docent: `make run` starts the whole product, `make test` runs the suite.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test check lock bench eval eval-real eval-scale eval-lineage eval-git eval-siblings eval-variants install clean-data

# pip and setuptools talk (root warnings, deprecations) into a log: `make run` prints `docent:` lines only,
# and the log's tail when an install fails.
INSTALL_LOG = $(dir $(STAMP))install.log
PIP := PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 $(PY) -m pip

$(PY):
	@echo "docent: creating $(VENV) (first start only)"
	@($(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)) >/dev/null
	@mkdir -p $(dir $(INSTALL_LOG)) && $(PIP) install --quiet --upgrade pip >>$(INSTALL_LOG) 2>&1 \
		|| (tail -n 30 $(INSTALL_LOG); exit 1)

# Every package at the version requirements.lock names, then Docent itself on top of them (docs/development.md).
$(STAMP): pyproject.toml requirements.lock | $(PY)
	@echo "docent: installing Docent and its dependencies (log $(INSTALL_LOG))"
	@mkdir -p $(dir $(INSTALL_LOG)) && ($(PIP) install --quiet -r requirements.lock \
		&& $(PIP) install --quiet --no-deps -e .) >>$(INSTALL_LOG) 2>&1 || (tail -n 30 $(INSTALL_LOG); exit 1)
	@touch $(STAMP)

install: $(STAMP)

# `@`: the launcher's own `docent:` lines are all `make run` prints (the README shows them).
run: $(STAMP)
	@$(PY) -m config.launcher

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# The checks .ci/run makes before the suite: imports match declared dependencies, the lint, the layer contracts,
# the type check of the packages [tool.mypy] names.
check: $(STAMP)
	$(VENV)/bin/deptry .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy

# requirements.lock again from pyproject.toml, after a dependency changed there (docs/development.md).
lock: $(STAMP)
	$(VENV)/bin/pip-compile --quiet --extra dev --strip-extras --no-emit-index-url --no-emit-find-links \
		--output-file requirements.lock pyproject.toml

# Every benchmark and fault run, then one table of targets; the real corpus is built (or reused) first, as
# `make eval-real` does. `benchmarks/run_all.py --smoke` is the suite's check that each script still runs.
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

# Four Django, three Celery and three Flask releases' docs (3,111 files) from PyPI sdists, flattened with no
# release in names or metadata (demo/scale/build_corpus.py; cached in var/scale-corpus), with two frozen
# question sets: held-out (issue 22) and older-release (issue 29). Its own DATA_DIR and workspace; the first
# run indexes every file (hours on a busy machine), later runs skip unchanged files.
SCALE_CORPUS := var/scale-corpus
SCALE_TITLE := Django 2.2-5.1, Celery 5.2-5.4, Flask 2.0-3.0 documentation
SCALE_EVAL = DATA_DIR=$${EVAL_SCALE_DATA_DIR:-var/eval-scale} $(PY) manage.py
SCALE_ARGS = --corpus $(SCALE_CORPUS)/corpus --releases $(SCALE_CORPUS)/files.json --workspace eval-scale
eval-scale: $(STAMP)
	$(PY) demo/scale/build_corpus.py --out $(SCALE_CORPUS)
	$(SCALE_EVAL) eval_demo $(SCALE_ARGS) --ground-truth $(SCALE_CORPUS)/heldout/ground_truth.json \
		--title "$(SCALE_TITLE): held-out questions"
	$(SCALE_EVAL) eval_answers $(SCALE_ARGS) --ground-truth $(SCALE_CORPUS)/heldout/ground_truth.json \
		--off-topic $(SCALE_CORPUS)/heldout/off_topic.json --title "$(SCALE_TITLE): held-out questions"
	$(SCALE_EVAL) eval_demo $(SCALE_ARGS) --ground-truth $(SCALE_CORPUS)/older/ground_truth.json \
		--title "$(SCALE_TITLE): older-release questions"
	$(SCALE_EVAL) eval_answers $(SCALE_ARGS) --ground-truth $(SCALE_CORPUS)/older/ground_truth.json \
		--off-topic $(SCALE_CORPUS)/heldout/off_topic.json --title "$(SCALE_TITLE): older-release questions"

# Version families on the scale corpus (issue 21): purity, recall and each missed page with its reason, time per
# file by fifths and lineage's share, from an in-process `ingest --sync` (benchmarks/eval_lineage_scale.py, its own
# DATA_DIR). LINEAGE_ARGS="--pages-every 6" for a subset with all its pages' releases; "--shuffle 7 --out A.json"
# then "--compare A.json" for determinism; "--workers 2" through Celery pool processes as `make run` starts them;
# "--encoder minilm" for the model; "--workspace eval-scale" with EVAL_SCALE_DATA_DIR's folder in
# BENCH_LINEAGE_SCALE_DATA_DIR, so that `make eval-scale` then reuses that index.
eval-lineage: $(STAMP)
	$(PY) demo/scale/build_corpus.py --out $(SCALE_CORPUS) --no-questions
	$(PY) benchmarks/eval_lineage_scale.py --corpus $(SCALE_CORPUS) $(LINEAGE_ARGS)

# Five Sphinx releases' docs committed and tagged in a Git repository, synced as a Git source: chunks
# encoded against distinct texts, and version questions (benchmarks/git_version_questions.json).
eval-git: $(STAMP)
	$(PY) benchmarks/eval_git_versions.py

# Siblings are not versions (issue 42): the frozen template pile of demo/siblings/ (five templates' siblings and a few
# true versions) indexed in-process in its own DATA_DIR (var/bench/siblings), then family purity and recall, siblings
# superseded by siblings, sibling, version and across questions, and contradictions between siblings, MET or MISSED
# (benchmarks/eval_siblings.py). A rerun reuses the index: SIBLINGS_ARGS="--fresh" after lineage changes;
# "--encoder hashing" for speed; "--details" for each failing question; "--json OUT".
eval-siblings: $(STAMP)
	$(PY) benchmarks/eval_siblings.py $(SIBLINGS_ARGS)

# Issue 35's measurement: the scale corpus written again as real exports present releases (demo/variants/
# build_variants.py into var/variants: Markdown with frontmatter dates, AsciiDoc with :revdate:, per-file mtimes,
# one release per format with .docx core properties; hashed names), each variant indexed into its own workspace
# and measured against the issue's targets with MiniLM (benchmarks/eval_release_variants.py, its own DATA_DIR):
# release per document, questions naming a release, current and latest-release questions. VARIANT_ARGS="--project
# django --every 8" for a subset with all its pages' releases, "--variants mixed", "--encoder hashing", "--json F".
VARIANTS_DIR := var/variants
eval-variants: $(STAMP)
	$(PY) demo/scale/build_corpus.py --out $(SCALE_CORPUS)
	$(PY) demo/variants/build_variants.py --corpus $(SCALE_CORPUS) --out $(VARIANTS_DIR)
	$(PY) benchmarks/eval_release_variants.py --corpus $(SCALE_CORPUS) --variants-dir $(VARIANTS_DIR) --encoder minilm \
		$(VARIANT_ARGS)

# Removes the development instance's data (database, redis, uploads). Asks nothing: be sure.
clean-data:
	rm -rf var
