"""Pair evidence (rag.lineage.evidence): near-identical pairs are told apart by their facts, read in one query."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rag.lineage.evidence import VectorCache, pairs_evidence
from tests.rag.retrieval_helpers import add_document

pytestmark = pytest.mark.django_db

SAME = [[1.0] + [0.0] * 383, [0.0, 1.0] + [0.0] * 382]  # every document's two chunks point the same ways


def test_the_facts_of_every_near_identical_pair_are_read_in_one_query(workspace):
    policy = ["Employees receive 43 days of annual leave.", "Requests go to the people team."]
    original = add_document(workspace, "/policy.txt", policy, vectors=SAME)
    copy = add_document(workspace, "/copy.txt", ["Employees receive 43 days of annual leave!", policy[1]], vectors=SAME)
    edition = add_document(workspace, "/edition.txt", ["Employees receive 45 days of annual leave.", policy[1]],
                           vectors=SAME)
    exact = add_document(workspace, "/exact.txt", policy, vectors=SAME)
    vectors = VectorCache()
    vectors.load([original.pk, copy.pk, edition.pk, exact.pk])
    with CaptureQueriesContext(connection) as queries:
        evidence = pairs_evidence([(vectors[original.pk], vectors[other.pk]) for other in (copy, edition, exact)])
    assert len(queries) == 1  # the differing texts of both near-identical pairs; the exact copy needs none
    assert [(e.identical, e.values_differ) for e in evidence] == [(True, False), (False, True), (True, False)]
