"""What two passages disagree on (rag/facts.py), no database: the facts merging raises as contradictions."""

from __future__ import annotations


import pytest

from rag.facts import extract_facts, fact_differences, highlight_segments
from tests.rag.dedup_support import (
    RATE_LIMITED,
)


# --- fact differences (no database) ---------------------------------------------------------------


def test_changed_number_with_unit_is_named_with_its_spans():
    differences = fact_differences(RATE_LIMITED["2.0"], RATE_LIMITED["2.1"])
    assert [(d["kind"], d["a"], d["b"]) for d in differences] == [("number", "600 requests", "1000 requests")]
    (a_start, a_end), = differences[0]["a_spans"]
    (b_start, b_end), = differences[0]["b_spans"]
    assert RATE_LIMITED["2.0"][a_start:a_end] == "600 requests"
    assert RATE_LIMITED["2.1"][b_start:b_end] == "1000 requests"


@pytest.mark.parametrize(("a", "b", "kind", "values"), [
    ("Tokens expire after 24 hours.", "Tokens expire after 12 hours.", "duration", ("24 hours", "12 hours")),
    ("The body limit is 10 MB by default.", "The body limit is 25 MB by default.", "size", ("10 MB", "25 MB")),
    ("Requires PostgreSQL 13.4.1 or later.", "Requires PostgreSQL 14.0.2 or later.", "version", ("13.4.1", "14.0.2")),
    ("Call /api/v1/auth/token to log in.", "Call /api/v2/auth/token to log in.", "version", ("v1", "v2")),
    ("Upgrade from Lumen 2.0 first.", "Upgrade from Lumen 2.1 first.", "version", ("2.0", "2.1")),
    ("The schema was released on 2025-02-10.", "The schema was released on 2025-10-06.", "date",
     ("2025-02-10", "2025-10-06")),
    ("Audit logging is enabled by default.", "Audit logging is disabled by default.", "switch",
     ("enabled", "disabled")),
    ("Set audit_log to true in gateway.yaml.", "Set audit_log to false in gateway.yaml.", "switch", ("true", "false")),
    ("Clients must send the header.", "Clients must not send the header.", "obligation", ("must", "must not")),
    ("Availability is 99.9% per month.", "Availability is 99.5% per month.", "percent", ("99.9%", "99.5%")),
    ("Retries happen 3 times.", "Retries happen 5 times.", "number", ("3 times", "5 times")),
    ("Set workers to 4 on small nodes.", "Set workers to 8 on small nodes.", "number", ("4", "8")),
    ("The admin port is 9000.", "The admin port is 9090.", "number", ("9000", "9090")),
])
def test_each_kind_of_fact_is_compared(a, b, kind, values):
    differences = fact_differences(a, b)
    assert len(differences) == 1, differences
    assert (differences[0]["kind"], differences[0]["a"], differences[0]["b"]) == (kind, *values)


@pytest.mark.parametrize(("a", "b"), [
    (RATE_LIMITED["2.1"], RATE_LIMITED["2.1"]),  # identical
    ("The timeout is 30 seconds.", "The timeout is 30s."),  # same duration, other unit spelling
    ("The timeout is 1 minute.", "The timeout is 60 seconds."),  # same duration, other unit
    ("The default timeout is 30 seconds, and audit logging is enabled.",
     "By default the timeout is 30 seconds and the audit log is switched on."),  # reworded, same facts
    ("The timeout is 30 seconds.", "The timeout is configurable, see the table below."),  # one side has no fact
    ("Raise the limit for one consumer with rate_limit.", "Raise the limit per consumer with rate_limit."),
    ("Keys of 1,000 requests", "Keys of 1000 requests"),  # thousands separator
    ("Step 1 of 3: back up the store.", "Step 2 of 3: back up the store first."),  # counts in prose, not values
])
def test_identical_or_reworded_texts_differ_in_nothing(a, b):
    assert fact_differences(a, b) == []


def test_identifiers_are_not_facts():
    facts = extract_facts('Error LG1201 with request_id "7f3c1e2a" on lgw_123 keys; see ADR-0007.')
    assert [f.text for f in facts] == []


def test_highlight_segments_cover_the_text_once():
    text = "The default is 600 requests per minute."
    segments = highlight_segments(text, [[15, 27], [0, 3], [16, 20]])
    assert "".join(piece for piece, _ in segments) == text
    assert [piece for piece, marked in segments if marked] == ["The", "600 requests"]
