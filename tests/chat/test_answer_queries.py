"""An extractive answer reads other versions and reviewer decisions once, not once per statement (issue 24)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chat.extractive import _resolve_conflicts, answer_units, score_units
from rag.models import Chunk
from rag.retrieval import SearchOptions, search
from rag.selectors import chunks_other_versions

pytestmark = pytest.mark.django_db
QUESTION = "How many requests per minute may an API key send?"


def _units(workspace):
    results = list(search(QUESTION, SearchOptions(workspace=workspace, top_k=10, respect_canonicals=False,
                                                  dedup=False, version_aware=False)))
    units = answer_units(results)
    score_units(QUESTION, units)
    return sorted(units, key=lambda unit: -unit.score)


def _queries(call) -> int:
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured.captured_queries)


def test_resolving_versions_costs_the_same_queries_for_one_statement_or_many(workspace, api_versions, licensed):
    units = _units(workspace)
    with_family = [unit for unit in units if unit.result.family_id]
    assert len(with_family) >= 6, "the fixture must give many statements that may have other versions"
    one = _queries(lambda: _resolve_conflicts(QUESTION, with_family[:1], units))
    many = _queries(lambda: _resolve_conflicts(QUESTION, with_family, units))
    assert 1 <= one and many == one, (one, many)


def test_a_statement_still_finds_its_other_version(workspace, api_versions, licensed):
    units = _units(workspace)
    old = next(unit for unit in units if "600 requests" in unit.text)
    statements, notes = _resolve_conflicts(QUESTION, [old], [old])  # the search did not surface 3.0's statement
    assert "1200 requests per minute" in statements[0].text
    assert [(older.text, newer.text) for older, newer in notes] == [(old.text, statements[0].text)]


def test_the_batched_read_gives_each_chunk_its_own_versions(workspace, api_versions, licensed):
    old = Chunk.objects.get(document__workspace=workspace, text__contains="600 requests")
    new = Chunk.objects.get(document__workspace=workspace, text__contains="1200 requests")
    other = Chunk.objects.filter(document__workspace=workspace).exclude(pk__in=[old.pk, new.pk]).first()
    asked = [(chunk.pk, None, chunk.text) for chunk in (old, new, other)]
    found = _queries(lambda: chunks_other_versions(chunks=asked))
    versions = chunks_other_versions(chunks=asked)
    assert [c.pk for c in versions[old.pk]] == [new.pk] and [c.pk for c in versions[new.pk]] == [old.pk]
    assert old.pk not in {c.pk for c in versions[other.pk]} and new.pk not in {c.pk for c in versions[other.pk]}
    assert found <= 3  # contradictions, supersession, the chunks: not one round per chunk
