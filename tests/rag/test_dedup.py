"""Dedup merging against the real database: records, promotion, dissolution, contradictions, review."""

from __future__ import annotations

import itertools
from datetime import datetime, UTC
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from rag.admin import releases as admin_releases
from rag.dedup import merge
from rag.facts import extract_facts, fact_differences, highlight_segments
from rag.dedup.merge import chunks_detach, contradiction_resolve, document_merge, workspace_merge
from rag.dedup.neighbours import member_edges, pairwise_edges, search_plan
from rag.documents import documents_archive, documents_unarchive
from rag.jobs import merging
from rag.jobs.run import job_item_run
from rag.management.commands import lineage_releases
from rag.models import CanonicalRecord, Chunk, ChunkVariant, Contradiction, Document
from rag.records import record_members
from rag.retrieval.vectors import neighbours_sql
from rag.selectors import record_provenance
from rag.uploads import indexing_job_create
from tests.factories import UserFactory, WorkspaceFactory
from tests.rag.dedup_support import (
    PAYLOAD_TOO_LARGE,
    RATE_LIMITED,
    TOKEN_EXPIRED,
    UNIQUE,
    assert_invariants,
    basis,
    blend,
    one_release,
    partition,
    section_chunk,
    troubleshooting_document,
    unit,
    vector_chunk,
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


# --- merging ------------------------------------------------------------------------------------------

@pytest.fixture
def workspace(db):
    """No members: the shared fixture's user costs a password hash (about a second) per test."""
    return WorkspaceFactory()


def _user():
    return UserFactory(password=None)  # an unusable password: no hashing


def _merge(*documents: Document) -> None:
    for document in documents:
        document_merge(document_id=document.pk)


@pytest.mark.django_db
def test_three_versions_become_one_record_per_section_with_the_newest_canonical(workspace):
    v20, v21, v30 = (troubleshooting_document(workspace, v) for v in ("2.0", "2.1", "3.0"))
    stats = document_merge(document_id=v30.pk)
    _merge(v20, v21)

    assert stats.search == "exact" and stats.chunks == 4
    assert CanonicalRecord.objects.filter(workspace=workspace).count() == 3
    for section in (RATE_LIMITED, TOKEN_EXPIRED, PAYLOAD_TOO_LARGE):
        canonical = section_chunk(v30, section)
        record = CanonicalRecord.objects.get(canonical_chunk=canonical)
        assert record.merge_count == 2
        variants = {variant.chunk_id: variant.similarity for variant in record.variants.all()}
        assert set(variants) == {section_chunk(v20, section).pk, section_chunk(v21, section).pk}
        assert all(0.95 <= similarity <= 1.0 + 1e-6 for similarity in variants.values())
    for document in (v20, v21, v30):
        unique = section_chunk(document, UNIQUE)
        assert not CanonicalRecord.objects.filter(canonical_chunk=unique).exists()
        assert not ChunkVariant.objects.filter(chunk=unique).exists()
    assert_invariants(workspace)


@pytest.mark.django_db
@pytest.mark.parametrize("order", list(itertools.permutations(range(3)))[1::2])
def test_merge_order_does_not_change_the_result(order):
    reference, shuffled = WorkspaceFactory(), WorkspaceFactory()
    documents = {}
    for workspace in (reference, shuffled):
        documents[workspace] = [troubleshooting_document(workspace, v) for v in ("2.0", "2.1", "3.0")]
    _merge(*documents[reference])
    _merge(*(documents[shuffled][i] for i in order))
    assert partition(shuffled) == partition(reference)
    assert len(partition(reference)) == 3


@pytest.mark.django_db
def test_a_newer_version_arriving_is_promoted_and_the_old_canonical_becomes_a_variant(workspace):
    v20, v21 = troubleshooting_document(workspace, "2.0"), troubleshooting_document(workspace, "2.1")
    _merge(v20, v21)
    record = CanonicalRecord.objects.get(canonical_chunk=section_chunk(v21, RATE_LIMITED))
    assert list(record.variants.values_list("chunk_id", flat=True)) == [section_chunk(v20, RATE_LIMITED).pk]

    v30 = troubleshooting_document(workspace, "3.0")
    stats = document_merge(document_id=v30.pk)

    record.refresh_from_db()
    assert record.canonical_chunk == section_chunk(v30, RATE_LIMITED)  # same record, new canonical
    assert set(record.variants.values_list("chunk_id", flat=True)) == {
        section_chunk(v20, RATE_LIMITED).pk, section_chunk(v21, RATE_LIMITED).pk}
    assert record.merge_count == 2
    assert stats.records_created == 0 and stats.records_changed == 3
    assert_invariants(workspace)


@pytest.mark.django_db
def test_unknown_dates_count_as_oldest_and_ties_go_to_the_latest_indexed(workspace):
    undated = troubleshooting_document(workspace, "3.0", path="/corpus/undated.txt", doc_date=None)
    dated = troubleshooting_document(workspace, "2.0")
    _merge(undated, dated)
    assert CanonicalRecord.objects.filter(canonical_chunk__document=dated).count() == 3

    same_day = datetime(2025, 5, 5, tzinfo=UTC)
    other = WorkspaceFactory()
    early = troubleshooting_document(other, "2.1", path="/a.md", doc_date=same_day,
                                     indexed_at=datetime(2026, 2, 1, tzinfo=UTC))
    late = troubleshooting_document(other, "2.1", path="/b.md", doc_date=same_day,
                                    indexed_at=datetime(2026, 3, 1, tzinfo=UTC))
    _merge(late, early)
    # Identical copies: even the unique section merges; the later indexed copy wins every record.
    assert set(CanonicalRecord.objects.filter(workspace=other).values_list("canonical_chunk__document", flat=True)) \
        == {late.pk}
    assert CanonicalRecord.objects.filter(workspace=other).count() == 4


@pytest.mark.django_db
def test_merging_again_changes_nothing_and_raises_nothing_twice(workspace):
    documents = [troubleshooting_document(workspace, v) for v in ("2.0", "2.1", "3.0")]
    _merge(*documents)
    before = partition(workspace), sorted(Contradiction.objects.values_list("chunk_a", "chunk_b"))
    again = document_merge(document_id=documents[1].pk)
    rebuilt = workspace_merge(workspace_id=workspace.pk)
    for stats in (again, rebuilt):
        assert (stats.records_created, stats.records_changed, stats.records_dissolved,
                stats.contradictions_raised) == (0, 0, 0, 0)
    assert (partition(workspace), sorted(Contradiction.objects.values_list("chunk_a", "chunk_b"))) == before


@pytest.mark.django_db
def test_workspace_merge_from_scratch_equals_merging_document_by_document(workspace):
    documents = [troubleshooting_document(workspace, v) for v in ("2.0", "2.1", "3.0")]
    _merge(*documents)
    scratch = WorkspaceFactory()
    for version in ("3.0", "2.0", "2.1"):
        troubleshooting_document(scratch, version)
    stats = workspace_merge(workspace_id=scratch.pk)
    assert stats.records_created == 3 and stats.chunks == 12
    assert partition(scratch) == partition(workspace)
    assert Contradiction.objects.filter(workspace=scratch).count() == \
        Contradiction.objects.filter(workspace=workspace).count()


@pytest.mark.django_db
def test_merge_duplicates_command_rebuilds_and_is_idempotent(workspace, capsys):
    for version in ("2.0", "3.0"):
        troubleshooting_document(workspace, version)
    call_command("merge_duplicates", workspace=workspace.slug)
    first = capsys.readouterr().out
    call_command("merge_duplicates", workspace=workspace.slug)
    second = capsys.readouterr().out
    assert "records: 3 created" in first
    assert "records: 0 created, 0 changed, 0 dissolved; 0 contradiction(s)" in second
    assert_invariants(workspace)


# --- changes keep records true ----------------------------------------------------------------------


@pytest.mark.django_db
def test_canonical_leaving_promotes_the_newest_variant_and_a_lone_chunk_dissolves(workspace):
    v20, v21, v30 = (troubleshooting_document(workspace, v) for v in ("2.0", "2.1", "3.0"))
    _merge(v20, v21, v30)
    record = CanonicalRecord.objects.get(canonical_chunk=section_chunk(v30, RATE_LIMITED))

    with transaction.atomic():  # as the pipeline does before deleting a document's old chunks
        chunks_detach(chunk_ids=list(v30.chunks.values_list("pk", flat=True)))
        v30.chunks.all().delete()
    record.refresh_from_db()
    assert record.canonical_chunk == section_chunk(v21, RATE_LIMITED)
    assert list(record.variants.values_list("chunk_id", flat=True)) == [section_chunk(v20, RATE_LIMITED).pk]
    assert record.merge_count == 1
    assert_invariants(workspace)

    chunks_detach(chunk_ids=list(v20.chunks.values_list("pk", flat=True)))
    assert not CanonicalRecord.objects.filter(pk=record.pk).exists()
    assert CanonicalRecord.objects.filter(workspace=workspace).count() == 0
    assert_invariants(workspace)


@pytest.mark.django_db
def test_a_record_whose_bridge_leaves_splits_in_two(workspace):
    # Each side is within 0.95 of the bridge, but the two sides are only 0.84 apart.
    bridge = vector_chunk(workspace, basis(0), text="bridge")
    sides = [
        [vector_chunk(workspace, unit({0: 0.96, 1: sign * 0.28, axis: extra}), text=f"side {sign} {axis}")
         for axis, extra in ((2, 0.0), (3, 0.05))]
        for sign in (1, -1)
    ]
    for chunk in (*sides[0], *sides[1], bridge):
        document_merge(document_id=chunk.document_id)
    assert CanonicalRecord.objects.filter(workspace=workspace).count() == 1
    assert CanonicalRecord.objects.get().merge_count == 4

    chunks_detach(chunk_ids=[bridge.pk])
    groups = {frozenset([r.canonical_chunk_id, *r.variants.values_list("chunk_id", flat=True)])
              for r in CanonicalRecord.objects.filter(workspace=workspace)}
    assert groups == {frozenset(c.pk for c in side) for side in sides}
    assert_invariants(workspace)


def _two_sided_record(workspace, per_side: int):
    """One record: two sides each within 0.95 of a bridge, but only 0.84 from each other."""
    bridge = vector_chunk(workspace, basis(0), text="bridge")
    sides = [
        [vector_chunk(workspace, unit({0: 0.96, 1: sign * 0.28, 2 + index: 0.01 * index}), text=f"side {sign} {index}")
         for index in range(per_side)]
        for sign in (1, -1)
    ]
    for chunk in (*sides[0], *sides[1], bridge):
        document_merge(document_id=chunk.document_id)
    return bridge, sides


@pytest.mark.django_db
def test_a_large_record_is_checked_against_samples_and_still_splits_where_its_bridge_left(workspace, settings):
    settings.MERGE_RECORD_SAMPLE = 2  # 25 members: far past pairwise, several sampling rounds
    bridge, sides = _two_sided_record(workspace, per_side=12)
    assert CanonicalRecord.objects.get(workspace=workspace).merge_count == 24

    chunks_detach(chunk_ids=[bridge.pk])

    groups = {frozenset([r.canonical_chunk_id, *r.variants.values_list("chunk_id", flat=True)])
              for r in CanonicalRecord.objects.filter(workspace=workspace)}
    assert groups == {frozenset(c.pk for c in side) for side in sides}
    assert_invariants(workspace)


@pytest.mark.django_db
def test_member_edges_connect_what_pairwise_connects_with_a_fraction_of_the_comparisons(workspace, settings):
    settings.MERGE_RECORD_SAMPLE = 3
    members = [vector_chunk(workspace, unit({0: 1.0, 1 + index: 0.05}), text=f"copy {index}") for index in range(40)]
    ids = [chunk.pk for chunk in members]

    bounded, full = member_edges(ids, anchors=[ids[7]]), pairwise_edges(ids)

    assert len(full) == 40 * 39 // 2
    assert len(bounded) < 40 * 4 * 2  # each member against at most the anchors (3 sampled + the canonical)
    assert {c for edge in bounded for c in edge} == set(ids)


@pytest.mark.django_db
def test_reindexing_a_file_through_the_pipeline_takes_its_old_chunks_out(workspace, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for version in ("2.0", "2.1", "3.0"):
        # Top-level sections: each becomes a chunk of its own.
        body = "\n\n".join(f"# {section[version][:6]}\n\n{section[version]}" for section in (
            RATE_LIMITED, TOKEN_EXPIRED, PAYLOAD_TOO_LARGE, UNIQUE))
        (folder / f"troubleshooting-{version}.md").write_text(
            f"---\ntitle: Troubleshooting {version}\ndate: {RELEASE[version]}\n---\n\n{body}\n")
    _ingest(workspace, folder)
    for document in Document.objects.filter(workspace=workspace):
        document_merge(document_id=document.pk)
    newest = Document.objects.get(path__endswith="troubleshooting-3.0.md")
    records = CanonicalRecord.objects.filter(workspace=workspace)
    assert records.count() >= 2 and set(records.values_list("canonical_chunk__document", flat=True)) == {newest.pk}

    # 3.0 is rewritten: its old chunks leave their records inside the pipeline's transaction.
    (folder / "troubleshooting-3.0.md").write_text(
        f"---\ntitle: Troubleshooting 3.0\ndate: {RELEASE['3.0']}\n---\n\n# Moved\n\n"
        "The 3.0 troubleshooting guide now lives in the operations handbook, next to the runbooks.\n")
    _ingest(workspace, folder)
    assert_invariants(workspace)
    newest.refresh_from_db()
    assert not CanonicalRecord.objects.filter(canonical_chunk__document=newest).exists()
    v21 = Document.objects.get(path__endswith="troubleshooting-2.1.md")
    assert set(records.values_list("canonical_chunk__document", flat=True)) == {v21.pk}


RELEASE = {"2.0": "2024-06-03", "2.1": "2025-03-05", "3.0": "2025-10-06"}


def _ingest(workspace, folder: Path) -> None:
    job = indexing_job_create(workspace=workspace, paths=[folder], enqueue=False)
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)


@pytest.mark.django_db
def test_archiving_takes_chunks_out_and_unarchiving_merges_them_again_through_the_queue(
        workspace, django_capture_on_commit_callbacks):
    from config.celery import app

    v20, v21, v30 = (troubleshooting_document(workspace, v) for v in ("2.0", "2.1", "3.0"))
    _merge(v20, v21, v30)
    documents_archive(documents=Document.objects.filter(pk=v30.pk))
    assert_invariants(workspace)
    assert set(CanonicalRecord.objects.values_list("canonical_chunk__document", flat=True)) == {v21.pk}
    assert not Contradiction.objects.filter(status="pending", chunk_b__document=v30).exists()

    # The one test that runs the queued flow in-process: unarchive -> on_commit -> merge task.
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            documents_unarchive(documents=Document.objects.filter(pk=v30.pk))
    finally:
        app.conf.task_always_eager = False
    assert len(callbacks) == 1
    assert set(CanonicalRecord.objects.values_list("canonical_chunk__document", flat=True)) == {v30.pk}
    assert_invariants(workspace)


# --- contradictions ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_versions_of_one_family_change_and_raise_no_contradiction(workspace):
    v20, v21, v30 = (troubleshooting_document(workspace, v) for v in ("2.0", "2.1", "3.0"))
    _merge(v20, v21, v30)

    assert len({d.family_id for d in Document.objects.filter(pk__in=[v20.pk, v21.pk, v30.pk])} - {None}) == 1
    # "600 -> 1000 requests" is what 2.1 changed: the family's timeline shows it; nobody has to review it.
    assert not Contradiction.objects.filter(workspace=workspace).exists()


@pytest.mark.django_db
def test_two_current_documents_that_disagree_raise_pending_contradictions_naming_the_spans(workspace):
    # Two documents of one release (one date written in each), one of them stale: both are current.
    guide = troubleshooting_document(workspace, "2.1")
    faq = troubleshooting_document(workspace, "2.0", path="/support/faq.md", doc_date=guide.doc_date)
    Document.objects.filter(pk__in=[guide.pk, faq.pk]).update(date_source="frontmatter")
    _merge(guide, faq)

    assert Document.objects.filter(pk__in=[guide.pk, faq.pk], family__isnull=True, is_latest_version=True).count() == 2
    rate = Contradiction.objects.get(chunk_a=section_chunk(guide, RATE_LIMITED), chunk_b=section_chunk(faq, RATE_LIMITED))
    assert rate.status == "pending" and rate.similarity >= 0.85
    assert [(d["kind"], d["a"], d["b"]) for d in rate.differences] == [("number", "1000 requests", "600 requests")]
    # They say the same about tokens: identical texts raise nothing.
    assert not Contradiction.objects.filter(chunk_a=section_chunk(guide, TOKEN_EXPIRED),
                                            chunk_b=section_chunk(faq, TOKEN_EXPIRED)).exists()
    assert all(c.chunk_a_id < c.chunk_b_id for c in Contradiction.objects.all())


@pytest.mark.django_db
def test_a_reworded_near_duplicate_raises_no_contradiction(workspace):
    original = ("Each API key is limited to 1000 requests per minute by default, measured over a sliding "
                "60-second window. Change the limit per consumer with the rate_limit field.")
    reworded = ("By default, every API key may send 1000 requests per minute, counted over a sliding "
                "window of 60 seconds. The rate_limit field changes the limit for one consumer.")
    first = vector_chunk(workspace, basis(0), text=original)
    # Same vector: the encoder would call them near-identical; the facts decide.
    second = vector_chunk(workspace, blend(basis(0), basis(1), 0.97), text=reworded)
    _merge(first.document, second.document)
    assert CanonicalRecord.objects.filter(workspace=workspace).count() == 1
    assert not Contradiction.objects.exists()


@pytest.mark.django_db
def test_near_duplicates_below_the_merge_threshold_still_raise_a_contradiction(workspace):
    a = vector_chunk(workspace, basis(0), text="Keys created in 2.1 expire after 365 days by default.", release="3.0")
    b = vector_chunk(workspace, blend(basis(0), basis(1), 0.9),
                     text="Keys created in 3.0 expire after 90 days by default.", release="3.0")
    _merge(a.document, b.document)
    assert not CanonicalRecord.objects.exists()
    contradiction = Contradiction.objects.get()
    assert contradiction.similarity == pytest.approx(0.9, abs=1e-4)
    assert {(d["a"], d["b"]) for d in contradiction.differences} == {("2.1", "3.0"), ("365 days", "90 days")}

    far = vector_chunk(workspace, blend(basis(0), basis(2), 0.8), text="Keys created in 3.1 expire after 30 days.",
                       release="3.0")
    document_merge(document_id=far.document_id)
    assert Contradiction.objects.count() == 1  # 0.8 is below the contradiction threshold


# --- review -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_keeping_the_older_side_makes_it_canonical_until_a_newer_version_arrives(workspace):
    reviewer = _user()
    v21, v30 = troubleshooting_document(workspace, "2.1"), troubleshooting_document(workspace, "3.0")
    one_release(v21, v30)  # two guides current together: their disagreement is for a reviewer
    _merge(v21, v30)
    old, new = section_chunk(v21, PAYLOAD_TOO_LARGE), section_chunk(v30, PAYLOAD_TOO_LARGE)
    contradiction = Contradiction.objects.get(chunk_a=old, chunk_b=new)
    record = CanonicalRecord.objects.get(canonical_chunk=new)

    contradiction_resolve(contradiction_id=contradiction.pk, action="keep_a", user=reviewer,
                          note="50 MB is a typo in the 3.0 draft")
    contradiction.refresh_from_db()
    assert (contradiction.status, contradiction.resolution, contradiction.reviewed_by, contradiction.note) == (
        "resolved", "kept_a", reviewer, "50 MB is a typo in the 3.0 draft")
    assert contradiction.reviewed_at is not None
    record.refresh_from_db()
    assert record.canonical_chunk == old
    assert list(record.variants.values_list("chunk_id", flat=True)) == [new.pk]
    assert_invariants(workspace)

    # The decision survives a rebuild and re-merges...
    workspace_merge(workspace_id=workspace.pk)
    document_merge(document_id=v30.pk)
    record.refresh_from_db()
    assert record.canonical_chunk == old
    # ...until a newer version of the text arrives.
    v31 = troubleshooting_document(workspace, "3.0", path="/corpus/troubleshooting-3.1.md",
                                   doc_date=datetime(2026, 1, 10, tzinfo=UTC))
    document_merge(document_id=v31.pk)
    record.refresh_from_db()
    assert record.canonical_chunk == section_chunk(v31, PAYLOAD_TOO_LARGE)
    assert_invariants(workspace)


@pytest.mark.django_db
def test_keeping_one_of_two_unmerged_chunks_joins_them_under_it(workspace):
    reviewer = _user()
    a = vector_chunk(workspace, basis(0), text="Keys created in 2.1 expire after 365 days by default.",
                     doc_date=datetime(2025, 3, 1, tzinfo=UTC), release="3.0")
    b = vector_chunk(workspace, blend(basis(0), basis(1), 0.9), text="Keys created in 3.0 expire after 90 days.",
                     doc_date=datetime(2025, 10, 1, tzinfo=UTC), release="3.0")
    _merge(a.document, b.document)
    contradiction = Contradiction.objects.get()
    contradiction_resolve(contradiction_id=contradiction.pk, action="keep_b", user=reviewer)
    record = CanonicalRecord.objects.get()
    assert record.canonical_chunk == b and list(record.variants.values_list("chunk_id", flat=True)) == [a.pk]
    assert record.variants.get().similarity == pytest.approx(0.9, abs=1e-4)

    # Changing one's mind: dismissing unlinks them again.
    contradiction_resolve(contradiction_id=contradiction.pk, action="dismiss", user=reviewer, note="different keys")
    assert not CanonicalRecord.objects.exists()
    contradiction.refresh_from_db()
    assert (contradiction.status, contradiction.resolution, contradiction.note) == ("dismissed", "dismissed",
                                                                                   "different keys")


@pytest.mark.django_db
def test_dismissing_changes_no_record_and_the_pair_is_not_raised_again(workspace):
    v20, v21 = troubleshooting_document(workspace, "2.0"), troubleshooting_document(workspace, "2.1")
    one_release(v20, v21)
    _merge(v20, v21)
    before = partition(workspace)
    contradiction = Contradiction.objects.filter(workspace=workspace).first()
    contradiction_resolve(contradiction_id=contradiction.pk, action="dismiss", user=_user())
    assert partition(workspace) == before
    workspace_merge(workspace_id=workspace.pk)
    contradiction.refresh_from_db()
    assert contradiction.status == "dismissed"
    with pytest.raises(ValueError, match="keep_a, keep_b or dismiss"):
        contradiction_resolve(contradiction_id=contradiction.pk, action="delete", user=None)


def _write_guide(folder: Path, version: str, *, extra: str = "") -> Path:
    """One team's guide, with the texts of `version`; every guide is labelled 2.1, so they are current together."""
    sections = {"Rate limited": RATE_LIMITED, "Payload too large": PAYLOAD_TOO_LARGE, "Support": UNIQUE}
    body = "\n\n".join(f"# {heading}\n\n{texts[version]}" for heading, texts in sections.items())
    path = folder / f"troubleshooting-{version}.md"
    path.write_text(f"---\ntitle: Troubleshooting {version}\nversion: \"2.1\"\ndate: {RELEASE[version]}\n---\n\n"
                    f"{body}{extra}\n")
    return path


@pytest.mark.django_db
def test_reviews_of_unchanged_text_survive_a_reindex_of_its_edited_file(workspace, tmp_path,
                                                                        django_capture_on_commit_callbacks):
    reviewer = _user()
    old_file, _ = _write_guide(tmp_path, "2.0"), _write_guide(tmp_path, "2.1")
    with django_capture_on_commit_callbacks(execute=True):
        call_command("ingest", str(tmp_path), workspace=workspace.slug, sync=True, verbosity=0)
    v20 = Document.objects.get(path=str(old_file))

    rate, payload = (Contradiction.objects.get(chunk_a__document=v20, chunk_a__text__contains=marker)
                     for marker in ("600 requests", "10 MB"))
    contradiction_resolve(contradiction_id=rate.pk, action="dismiss", user=reviewer, note="different plans")
    contradiction_resolve(contradiction_id=payload.pk, action="keep_a", user=reviewer, note="2.1 is wrong")
    assert CanonicalRecord.objects.get(canonical_chunk__text__contains="10 MB")

    # An edit elsewhere in the 2.0 file: re-indexed, its chunks get new (larger) ids than 2.1's.
    _write_guide(tmp_path, "2.0", extra="\n\n# Changelog\n\nThe 2.0 support section now names the log format.")
    with django_capture_on_commit_callbacks(execute=True):
        call_command("ingest", str(tmp_path), workspace=workspace.slug, sync=True, verbosity=0)

    rate.refresh_from_db()
    payload.refresh_from_db()
    assert (rate.status, rate.note) == ("dismissed", "different plans")
    assert rate.chunk_b.document == v20 and "600 requests" in rate.chunk_b.text  # the new chunk, now on side b
    assert (payload.status, payload.resolution) == ("resolved", "kept_b")  # what was kept is still the 2.0 text
    assert payload.chunk_b.document == v20 and "10 MB" in payload.chunk_b.text
    assert all(d["a"] in payload.chunk_a.text and d["b"] in payload.chunk_b.text for d in payload.differences)
    assert not Contradiction.objects.filter(workspace=workspace, status=Contradiction.Status.PENDING).exists()
    assert CanonicalRecord.objects.get(canonical_chunk=payload.chunk_b)
    assert_invariants(workspace)


# --- provenance and the search path ----------------------------------------------------------------


@pytest.mark.django_db
def test_record_provenance_lists_the_canonical_then_variants_newest_first(workspace):
    user = _user()
    workspace.members.add(user)
    v20, v21, v30 = (troubleshooting_document(workspace, v) for v in ("2.0", "2.1", "3.0"))
    _merge(v20, v30, v21)
    record = CanonicalRecord.objects.get(canonical_chunk=section_chunk(v30, RATE_LIMITED))
    entries = record_provenance(record_id=record.pk, user=user)
    assert [(e.role, e.path, e.doc_date) for e in entries] == [
        ("canonical", v30.path, v30.doc_date), ("variant", v21.path, v21.doc_date), ("variant", v20.path, v20.doc_date)]
    assert entries[0].similarity is None and all(0.95 <= e.similarity for e in entries[1:])
    with pytest.raises(CanonicalRecord.DoesNotExist):
        record_provenance(record_id=record.pk, user=_user())  # not a member of the workspace
    # One reader: search's variants and provenance read the same members, scoped to the workspace.
    assert record_members(record_ids=[record.pk], workspace_id=workspace.pk) == {record.pk: entries}
    assert record_members(record_ids=[record.pk], workspace_id=WorkspaceFactory().pk) == {}


@pytest.mark.django_db
def test_chunk_vectors_stay_in_the_row_for_exact_scans():
    # pgvector's default (EXTERNAL) puts a 1.5 kB vector beside a chunk's text in TOAST, and an
    # exact scan then reads the TOAST table for every row it compares (10x slower, bench_merge.py).
    with connection.cursor() as cursor:
        cursor.execute("SELECT attstorage FROM pg_attribute WHERE attrelid = 'rag_chunk'::regclass "
                       "AND attname = 'embedding'")
        assert cursor.fetchone() == ("m",)


# Serialized rollback, as the suite's other transactional tests: a plain flush re-creates content types
# that the next serialized test then inserts again.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_small_workspaces_are_searched_exactly_and_large_ones_through_hnsw(workspace, settings):
    # Earlier tests' rolled-back chunks are dead entries in the index (the same texts, so right beside
    # these vectors): vacuumed away, the table holds only this workspace and HNSW must find its records.
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM {Chunk._meta.db_table}")
    troubleshooting_document(workspace, "2.0")
    assert search_plan(workspace.pk).strategy == "exact"
    settings.MERGE_EXACT_SCAN_MAX_CHUNKS = 0
    plan = search_plan(workspace.pk)
    assert plan.strategy == "hnsw" and plan.ef_search >= settings.MERGE_EF_SEARCH

    def plan_text(strategy: str) -> str:
        with transaction.atomic(), connection.cursor() as cursor:
            # Even with every alternative priced out, the exact shape cannot use the index.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_sort = off")
            cursor.execute("EXPLAIN " + neighbours_sql(strategy), {
                "workspace_id": workspace.pk, "archived": [], "neighbours": 10, "chunk_ids": [1, 2],
                "max_distance": 0.15})
            return "\n".join(row[0] for row in cursor.fetchall())

    assert "chunk_embedding_hnsw" in plan_text("hnsw")
    assert "chunk_embedding_hnsw" not in plan_text("exact")
    # The HNSW path finds the same records as the exact one on this small set.
    for version in ("2.1", "3.0"):
        troubleshooting_document(workspace, version)
    stats = workspace_merge(workspace_id=workspace.pk)
    assert stats.search == "hnsw" and CanonicalRecord.objects.filter(workspace=workspace).count() == 3


@pytest.mark.django_db
def test_a_workspace_lost_in_a_big_table_falls_back_to_an_exact_scan(workspace, settings):
    troubleshooting_document(workspace, "2.0")
    settings.MERGE_EXACT_SCAN_MAX_CHUNKS = 0
    with connection.cursor() as cursor:
        # Pretend the table holds a million chunks: 4 of them are too few for HNSW's post-filter.
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'rag_chunk'::regclass")
        (saved,) = cursor.fetchone()
        cursor.execute("UPDATE pg_class SET reltuples = 1000000 WHERE oid = 'rag_chunk'::regclass")
    try:
        assert search_plan(workspace.pk).strategy == "exact"
    finally:
        with connection.cursor() as cursor:
            cursor.execute("UPDATE pg_class SET reltuples = %s WHERE oid = 'rag_chunk'::regclass", [saved])


# --- the real encoder on the demo corpus --------------------------------------------------------------

DEMO = Path(__file__).resolve().parents[2] / "demo" / "corpus"


@pytest.mark.real_encoder
@pytest.mark.django_db
def test_demo_corpus_versions_merge_newest_first_and_conflicts_are_named(workspace, settings):
    from rag import embeddings

    settings.EMBEDDING_ENCODER = "minilm"
    embeddings.reset_encoder()
    try:
        files = ["v2.0/api_reference.pdf", "api-reference-v2.1.md", "api/api-reference-v3.adoc",
                 "upgrading-to-2.1.md", "archive/upgrading-to-2.1 (export).md"]
        job = indexing_job_create(workspace=workspace, paths=[DEMO / name for name in files], enqueue=False)
        for item_id in job.items.values_list("pk", flat=True):
            assert job_item_run(item_id=item_id) == "indexed"
    finally:
        embeddings.reset_encoder()
    documents = {str(Path(d.path).relative_to(DEMO)): d for d in Document.objects.filter(workspace=workspace)}
    for document in sorted(documents.values(), key=lambda d: d.pk, reverse=True):
        document_merge(document_id=document.pk)
    assert_invariants(workspace)

    def members(record: CanonicalRecord) -> list[str]:
        return [str(Path(entry.path).relative_to(DEMO)) for entry in record_provenance(record_id=record.pk)]

    records = [members(r) for r in CanonicalRecord.objects.filter(workspace=workspace)]
    # The re-exported copy of the upgrade guide merges section by section with the original.
    copies = [m for m in records if set(m) == {"upgrading-to-2.1.md", "archive/upgrading-to-2.1 (export).md"}]
    assert len(copies) >= 4
    # Versions of the API reference: the newest one is the canonical.
    api = [m for m in records if "api-reference-v2.1.md" in m and len(m) >= 2 and "upgrading-to-2.1.md" not in m]
    assert api and any(m[0] == "api/api-reference-v3.adoc" for m in api)
    assert all(m[0] != "v2.0/api_reference.pdf" for m in api)

    # The rate limit went from 600 (2.0) to 1000 (2.1) to 1200 (3.0) requests per minute: changes within one
    # family, for its timeline, never for review.
    api_family = set(Document.objects.filter(pk__in=[documents[name].pk for name in files[:3]])
                     .values_list("family_id", flat=True))
    assert len(api_family) == 1 and None not in api_family
    assert not Contradiction.objects.filter(workspace=workspace, chunk_a__document__family_id__in=api_family,
                                            chunk_b__document__family_id__in=api_family).exists()
    # The copy and its original agree on every fact.
    original, export = documents["upgrading-to-2.1.md"], documents["archive/upgrading-to-2.1 (export).md"]
    assert not Contradiction.objects.filter(chunk_a__document__in=[original, export],
                                            chunk_b__document__in=[original, export]).exists()


@pytest.mark.django_db
def test_a_merge_waiting_too_long_for_its_workspace_fails_with_an_error_the_task_retries(workspace, settings):
    from django.db import OperationalError

    from rag.dedup.merge import _LOCK_NAMESPACE
    from rag.jobs.queue import TRANSIENT_ERRORS
    from rag.jobs.tasks import merge_document

    document = troubleshooting_document(workspace, "2.0")
    settings.MERGE_LOCK_TIMEOUT_SECONDS = 0.3
    other = connection.get_new_connection(connection.get_connection_params())
    try:
        other.autocommit = True
        other.execute("SELECT pg_advisory_lock(%s, %s)", [_LOCK_NAMESPACE, workspace.pk])  # a merge is running
        with pytest.raises(OperationalError, match="lock timeout"):
            document_merge(document_id=document.pk)
    finally:
        other.close()
    assert issubclass(OperationalError, TRANSIENT_ERRORS) and merge_document.autoretry_for == TRANSIENT_ERRORS
    assert document_merge(document_id=document.pk).chunks == 4  # the lock is free again


def test_the_steps_after_a_merge_run_in_one_order_from_every_caller(monkeypatch):
    """Calendar, then each document's release, then contradictions pruned: inference reads the calendar's dates, and
    a contradiction between two releases' passages is pruned only once their releases are known."""
    steps: list[str] = []
    monkeypatch.setattr(merge, "calendar_rebuild", lambda *, workspace_id: steps.append("calendar"))
    monkeypatch.setattr(merge, "workspace_releases_infer",
                        lambda *, workspace_id, dry_run: steps.append("dry run" if dry_run else "infer") or {})
    monkeypatch.setattr(merge, "contradictions_prune", lambda *, workspace_id: steps.append("prune"))
    assert merge.releases_settle(workspace_id=1, rebuild=True) == {}
    assert steps == ["calendar", "infer", "prune"]
    steps.clear()
    merge.releases_settle(workspace_id=1, rebuild=True, dry_run=True)
    assert steps == ["dry run"]
    steps.clear()
    admin_releases._placed_again(1)
    assert steps == ["infer", "prune"]
    assert {module.releases_settle for module in (merging, lineage_releases)} == {merge.releases_settle}
