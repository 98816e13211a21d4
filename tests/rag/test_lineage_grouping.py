"""Families from relations: one document per release, joined on evidence against the nearest members, never
chained, the same whatever order documents arrive in; release notes form a series."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from rag.lineage.evidence import IDENTICAL_STRENGTH, Member, PairEvidence, relation_strength
from rag.lineage.grouping import Relation, group_documents

RELEASES = {"5.3": datetime(2022, 10, 16, 9, 47, 12, tzinfo=UTC), "6.2": datetime(2023, 4, 25, 11, 0, 22, tzinfo=UTC),
            "7.4": datetime(2024, 7, 20, 14, 6, 38, tzinfo=UTC), "8.1": datetime(2024, 10, 13, 20, 6, 50, tzinfo=UTC)}


def member(pk: int, page: str, release: str, *, title: str = "", label: str = "", chunks: int = 10) -> Member:
    """A page of one release's documentation, flattened: its file time is the release's (an archive's)."""
    return Member(id=pk, title=title or page, path=f"/pile/{pk:04d}-{page}.rst", version_label=label,
                  version_key=label and f"key-{label}", version_source="title" if label else "",
                  doc_date=RELEASES[release], date_source="mtime", date_confidence=1, indexed_at=None,
                  chunk_count=chunks, family_id=None, family_position=None)


def families(members: dict[int, Member], relations: list[Relation]) -> set[frozenset[int]]:
    return {frozenset(group) for group in group_documents(members, relations)}


def test_a_weak_tie_to_another_page_never_chains_two_families():
    releases = list(RELEASES)
    members = {}
    for index, release in enumerate(releases):
        members[10 + index] = member(10 + index, "security", release)
        members[20 + index] = member(20 + index, "howto-security", release)
    relations = [Relation(10 + i, 11 + i, 0.9, False) for i in range(3)]
    relations += [Relation(20 + i, 21 + i, 0.85, False) for i in range(3)]
    # The how-to of 6.2 shares boilerplate with the reference of 5.3 and of 7.4: weak, and it would chain.
    relations += [Relation(11, 21, 0.55, False), Relation(12, 21, 0.6, False), Relation(10, 23, 0.52, False)]

    assert families(members, relations) == {frozenset({10, 11, 12, 13}), frozenset({20, 21, 22, 23})}


def test_families_do_not_depend_on_the_order_relations_arrive_in():
    members = {pk: member(pk, f"page-{pk % 7}", list(RELEASES)[pk % 4]) for pk in range(1, 60)}
    rng = random.Random(7)
    relations = [Relation(a, b, round(rng.uniform(0.5, 1.0), 3), False)
                 for a in members for b in members if a < b and rng.random() < 0.08]
    expected = families(members, relations)
    for seed in range(5):
        shuffled = relations[:]
        random.Random(seed).shuffle(shuffled)
        assert families(members, shuffled) == expected
    assert all(len(group) <= len(RELEASES) for group in expected)  # one document per release


def test_a_middle_version_arriving_last_joins_the_two_it_sits_between():
    members = {1: member(1, "guide", "5.3"), 2: member(2, "guide", "6.2"), 3: member(3, "guide", "7.4")}
    # 5.3 and 7.4 changed too much to relate directly; 6.2 relates to both.
    assert families(members, [Relation(1, 2, 0.7, False), Relation(2, 3, 0.7, False)]) == {frozenset({1, 2, 3})}


def test_a_copy_may_share_its_original_release_and_a_different_page_may_not():
    members = {1: member(1, "guide", "5.3"), 2: member(2, "guide-copy", "5.3"), 3: member(3, "other", "5.3"),
               4: member(4, "guide", "6.2")}
    relations = [Relation(1, 2, IDENTICAL_STRENGTH, True), Relation(1, 4, 0.9, False), Relation(3, 4, 0.8, False)]
    # 3 relates to 6.2's guide too, but the family already holds 5.3's guide (and its copy): 3 stays alone.
    assert families(members, relations) == {frozenset({1, 2, 4})}
    # Had 3 been the closer one, it would take the place, and 5.3's guide stays with its copy.
    relations[1:] = [Relation(1, 4, 0.8, False), Relation(3, 4, 0.9, False)]
    assert families(members, relations) == {frozenset({1, 2}), frozenset({3, 4})}


def test_release_notes_are_a_series_and_copies_of_one_release_notes_are_one_page():
    notes_53 = member(1, "changes-5.3", "6.2", title="Release 5.3.0 (released Oct 16, 2022)", label="5.3.0")
    notes_53_again = member(2, "changes-5.3", "7.4", title="Release 5.3.0 (released Oct 16, 2022)", label="5.3.0")
    notes_62 = member(3, "changes-6.2", "7.4", title="Release 6.2.1 (released Apr 25, 2023)", label="6.2.1")
    assert notes_53.per_release and notes_62.per_release
    boilerplate = PairEvidence(share_a=0.8, share_b=0.8, identical=False, close_share=0.1)  # "Bugs fixed" headings
    same_text = PairEvidence(share_a=1.0, share_b=0.95, identical=False, close_share=0.95)
    assert relation_strength(notes_53, notes_62, boilerplate) is None
    # Two releases' notes, however alike (Django's 1.2.6 and 1.3.1 security releases say the same), never relate:
    # related, every release's notes made one component that each arrival regrouped, and identical ones one family.
    assert relation_strength(notes_53, notes_62, same_text) is None
    assert relation_strength(notes_53, notes_62, PairEvidence(1.0, 1.0, True, 1.0)) is None
    assert relation_strength(notes_53, notes_53_again, same_text) == 0.95
    guide = member(4, "guide", "7.4")
    assert relation_strength(notes_62, guide, same_text) is None  # a page is never a version of release notes


def test_two_documents_of_one_release_are_never_versions_unless_identical():
    a, b = member(1, "install", "7.4"), member(2, "deploy", "7.4")
    close = PairEvidence(share_a=0.9, share_b=0.9, identical=False, close_share=0.9)
    assert relation_strength(a, b, close) is None
    assert relation_strength(a, b, PairEvidence(1.0, 1.0, True, 1.0)) == IDENTICAL_STRENGTH
    assert relation_strength(a, member(3, "install", "8.1"), close) == 0.9 + 0.25  # a shared title counts too
