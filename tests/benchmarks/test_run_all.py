"""`make bench`'s one table: rows from each script's TARGET lines alone, every target once, as it stands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.append(str(BENCHMARKS))

from run_all import RAN, rows_from_output, script_rows, table  # noqa: E402


def _target(name: str, figure: str, met: bool, **extra: object) -> str:
    return "TARGET " + json.dumps({"issue": "24", "target": name, "figure": figure, "met": met, **extra})


def test_target_lines_become_rows_and_the_table_counts_the_misses() -> None:
    lines = ["warming up", "[MET] 10 askers p95 <= 2 s: 1.4 s", _target("10 askers p95 <= 2 s", "1.4 s", True),
             _target("0 errors", "3 errors", False)]

    rows = rows_from_output("bench_chat", lines)
    printed = table(rows)

    assert [(r["script"], r["target"], r["met"]) for r in rows] == [
        ("bench_chat", "10 askers p95 <= 2 s", True), ("bench_chat", "0 errors", False)]
    assert "1 of 2 targets met" in printed and printed.splitlines()[2].startswith("MISSED")


def test_prose_verdicts_are_not_rows_so_target_not_met_cannot_read_as_met() -> None:
    lines = ["target /healthz p95 < 1 s: target not met", "accuracy 0.9991 (target >= 0.99: met)", "x: MISSED"]

    rows = script_rows("bench_answers_load", 0, lines, 12.0)

    assert [(r["target"], r["met"]) for r in rows] == [(RAN, False)]


def test_a_script_that_fails_after_its_targets_gets_a_missed_row_of_its_own() -> None:
    rows = script_rows("bench_ingest", 1, [_target("2 workers no slower than 1", "1.3x", True)], 700.0)

    assert [(r["target"], r["met"]) for r in rows] == [("2 workers no slower than 1", True), (RAN, False)]
    assert rows[1]["figure"].startswith("exit 1")


def test_long_targets_are_not_cut_and_estimated_figures_say_so() -> None:
    name = "families and supersession <= 10% of indexing time with all-MiniLM-L6-v2's time instead of the hashing one"
    rows = rows_from_output("bench_lineage", [_target(name, "4.2% (83.1 chunks/s on a sample)", True, estimated=True),
                                              _target("measured", "1.0%", True)])

    printed = table(rows).splitlines()

    assert name in printed[1] and printed[1].endswith("4.2% (83.1 chunks/s on a sample) (estimated)")
    assert not printed[2].endswith("(estimated)")
    assert "2 of 2 targets met (1 on estimated figures)" in printed[-1]
