"""Every benchmark runs to the end and reports its targets: `run_all.py --smoke`, the smallest runs.

A change that breaks a benchmark (a private it reached into, an argument it no longer passes, a corpus it
cannot find) fails here, not in the next person's `make bench`. The figures of such tiny runs mean nothing;
only that each script ran through and printed its TARGET lines is checked. The hashing encoder stands in
for the model wherever a script lets it; the scripts share one PostgreSQL and Redis (a database each), and
the real corpus is its download-free stand-in (benchmarks/_smoke_corpus.py), built by run_all's
build-or-reuse step as `make bench` builds the real one: a script reading a corpus that step does not
provide fails here too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.worker
def test_every_benchmark_runs_to_the_end_and_reports_its_targets() -> None:
    env = {**os.environ, "EMBEDDING_ENCODER": "hashing"}
    env.pop("DATA_DIR", None)  # each benchmark's own folder under var/bench, never the tests' instance
    run = subprocess.run([sys.executable, "benchmarks/run_all.py", "--smoke", "--timeout", "300"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=1800)

    print("\n".join(line for line in run.stdout.splitlines() if line.startswith("--- ")))  # each script's seconds
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
