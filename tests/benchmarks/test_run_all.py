"""`make bench`'s one table: rows from each script's TARGET lines, else its met/MISSED lines."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.append(str(BENCHMARKS))

from run_all import rows_from_output, table  # noqa: E402


def test_target_lines_become_rows_and_the_table_counts_the_misses() -> None:
    lines = ["warming up", "[MET] 10 askers p95 <= 2 s: 1.4 s",
             "TARGET " + json.dumps({"issue": "24", "target": "10 askers p95 <= 2 s", "figure": "1.4 s", "met": True}),
             "TARGET " + json.dumps({"issue": "24", "target": "0 errors", "figure": "3 errors", "met": False})]

    rows = rows_from_output("bench_chat", lines)
    printed = table(rows)

    assert [(r["script"], r["target"], r["met"]) for r in rows] == [
        ("bench_chat", "10 askers p95 <= 2 s", True), ("bench_chat", "0 errors", False)]
    assert "1 of 2 targets met" in printed and "MISSED" in printed.splitlines()[2]


def test_a_script_without_target_lines_keeps_its_verdict_lines() -> None:
    rows = rows_from_output("bench_ocr", ["accuracy 0.9991 (target >= 0.99: met)", "pages/s 0.03", "x: MISSED"])

    assert [(r["target"], r["met"]) for r in rows] == [("accuracy 0.9991 (target >= 0.99: met)", True),
                                                       ("x: MISSED", False)]
