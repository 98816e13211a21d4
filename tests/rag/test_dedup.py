"""Dedup merging against the real database: records, promotion, dissolution, changes that keep records true."""

from __future__ import annotations

import itertools
from datetime import datetime, UTC

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from rag.dedup import merge
from rag.dedup.merge import chunks_detach, document_merge, documents_merge, workspace_merge
from rag.dedup.neighbours import member_edges, pairwise_edges
from rag.documents import documents_archive, documents_unarchive
from rag.jobs import merging
from rag.jobs import releases as jobs_releases
from rag.management.commands import lineage_releases
from rag.models import CanonicalRecord, Chunk, ChunkVariant, Contradiction, Document
from devkit.synthetic_corpus import generate, write_markdown
from tests.factories import WorkspaceFactory
from tests.rag.dedup_support import (
    PAYLOAD_TOO_LARGE,
    RATE_LIMITED,
    TOKEN_EXPIRED,
    UNIQUE,
    assert_invariants,
    basis,
    partition,
    section_chunk,
    troubleshooting_document,
    unit,
    vector_chunk,
)
from tests.rag.dedup_support import ingest_folder as _ingest
from tests.rag.dedup_support import merge_each as _merge
from tests.rag.dedup_support import RELEASE, members_free_workspace  # noqa: F401 (the workspace fixture)


# --- merging ------------------------------------------------------------------------------------------

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



def _families(workspace) -> set[frozenset[str]]:
    groups: dict[int, set[str]] = {}
    for family_id, path in Document.objects.filter(workspace=workspace, family__isnull=False).values_list(
            "family_id", "path"):
        groups.setdefault(family_id, set()).add(path)
    return {frozenset(group) for group in groups.values()}


def _contradicting(workspace) -> set[frozenset]:
    return {frozenset([(a, i), (b, j)]) for a, i, b, j in Contradiction.objects.filter(workspace=workspace).values_list(
        "chunk_a__document__path", "chunk_a__chunk_index", "chunk_b__document__path", "chunk_b__chunk_index")}


@pytest.mark.django_db
def test_documents_merged_together_end_as_merged_one_by_one(tmp_path):
    write_markdown(generate(chunks=90, sections_per_document=5, duplicate_share=0.4, seed=11), tmp_path / "corpus")
    for number in range(24):  # one template filled in for many hosts: weak relations, found from one side only
        (tmp_path / "corpus" / f"runbook-{number}.md").write_text(f"# Runbook {number}\n\n" + "".join(
            f"Step {step}: on host web-{number} restart service {step * number} after its cache warms.\n"
            for step in range(30)))
    one_by_one, together = WorkspaceFactory(), WorkspaceFactory()
    for target in (one_by_one, together):
        _ingest(target, tmp_path / "corpus")
    for document_id in Document.objects.filter(workspace=one_by_one).order_by("pk").values_list("pk", flat=True):
        document_merge(document_id=document_id)
    ids = list(Document.objects.filter(workspace=together).order_by("pk").values_list("pk", flat=True))
    first, second = documents_merge(document_ids=ids[:4]), documents_merge(document_ids=ids[4:])  # two batches

    assert_invariants(together)
    assert first.chunks + second.chunks == Chunk.objects.filter(workspace=together).count()
    expected = partition(one_by_one)
    assert len(expected) >= 10 and partition(together) == expected
    assert _families(together) == _families(one_by_one) and _families(one_by_one)
    assert _contradicting(together) == _contradicting(one_by_one)
    assert documents_merge(document_ids=ids).records_changed == 0  # merging again changes nothing


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
                        lambda *, workspace_id, dry_run, changed: steps.append("dry run" if dry_run else "infer") or {})
    monkeypatch.setattr(merge, "contradictions_prune", lambda *, workspace_id: steps.append("prune"))
    assert merge.releases_settle(workspace_id=1, rebuild=True) == {}
    assert steps == ["calendar", "infer", "prune"]
    steps.clear()
    merge.releases_settle(workspace_id=1, rebuild=True, dry_run=True)
    assert steps == ["dry run"]
    steps.clear()
    jobs_releases.releases_settle_run(workspace_id=1)  # after a calendar edit in the admin, in a worker
    assert steps == ["infer", "prune"]
    assert {module.releases_settle for module in (merging, lineage_releases, jobs_releases)} == {merge.releases_settle}
