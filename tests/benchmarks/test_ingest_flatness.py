"""The per-fifth timing of benchmarks/ingest_flatness.py on hand-made completion times."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.append(str(BENCHMARKS))

from ingest_flatness import fifths  # noqa: E402

START = datetime(2026, 1, 1, 12, 0, 0)


def test_a_slowing_ingest_shows_in_its_last_fifth() -> None:
    # The first file takes 60 s (the model's load) and is left out; then 8 files of 1 s, then 2 of 2 s.
    gaps = [60.0] + [1.0] * 8 + [2.0] * 2
    ends, clock = [], START
    for gap in gaps:
        clock += timedelta(seconds=gap)
        ends.append(clock)
    rows = fifths(ends, [3] * len(ends))
    assert [row["files"] for row in rows] == [2] * 5
    assert rows[0]["seconds_per_file"] == pytest.approx(1.0)
    assert rows[-1]["seconds_per_file"] == pytest.approx(2.0)
    assert rows[0]["chunks_per_second"] == pytest.approx(3.0)
    assert (rows[0]["from_file"], rows[-1]["to_file"]) == (2, 11)


def test_too_few_files_give_no_fifths() -> None:
    assert fifths([START + timedelta(seconds=s) for s in range(5)], [1] * 5) == []
