"""The release-variant benchmark's readings (benchmarks/eval_release_variants.py) on hand-made documents."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

# benchmarks/ is no package (and site-packages holds an unrelated "benchmarks"): found by path.
BENCHMARKS = Path(__file__).resolve().parent.parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.append(str(BENCHMARKS))

from eval_release_variants import assigned_release, from_hash, met  # noqa: E402


def test_a_label_read_off_the_hex_prefix_is_a_hash_label_and_a_release_notes_name_is_not() -> None:
    assert from_hash("40b08594_index.txt", "40b8594", "filename")
    assert from_hash("58c20104_sitemaps.md", "58rc20104", "filename")
    assert not from_hash("40b08594_2.2.28.txt", "2.2.28", "filename")
    assert not from_hash("40b08594_index.txt", "40b8594", "release_notes")


def test_the_assigned_release_is_the_label_else_the_inferred_release() -> None:
    labelled = SimpleNamespace(version_label="2.2.28", version_source="title", metadata={})
    inferred = SimpleNamespace(version_label="", version_source="", inferred_label="3.2", inferred_source="release_notes",
                               inferred_confidence=0.75)
    neither = SimpleNamespace(version_label="", version_source="", inferred_label="", inferred_after="3.2",
                              inferred_source="", inferred_confidence=None)
    assert assigned_release(labelled) == ("2.2.28", "title", 1.0)
    assert assigned_release(inferred) == ("3.2", "release_notes", 0.75)
    assert assigned_release(neither) == ("", "", None)


def test_targets_compare_each_way() -> None:
    assert met("line correct", 0.95) and not met("line correct", 0.94)
    assert met("hash labels", 0) and not met("hash labels", 1) and not met("stale", None)
