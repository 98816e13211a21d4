"""The indexing pipeline against the real database, with the hashing encoder."""

from __future__ import annotations

from datetime import datetime, UTC
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from rag import embeddings
from rag.documents import documents_archive
from rag.jobs.run import job_item_run
from rag.models import Chunk, Document, EmbeddingCache, IndexingJob
from rag.uploads import indexing_job_create
from tests.rag.samples import write_corpus, write_pdf

pytestmark = pytest.mark.django_db


@pytest.fixture
def encoder():
    embeddings.reset_encoder()
    yield embeddings.get_encoder()
    embeddings.reset_encoder()


def ingest_sync(workspace, *paths: Path) -> IndexingJob:
    job = indexing_job_create(workspace=workspace, paths=list(paths), enqueue=False)
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    return job


def test_folder_of_every_format_becomes_dated_typed_chunks(workspace, tmp_path, encoder):
    write_corpus(tmp_path / "docs")
    ingest_sync(workspace, tmp_path / "docs")

    docs = {Path(d.path).name: d for d in Document.objects.filter(workspace=workspace)}
    assert set(docs) == {"deploy-guide.md", "reference.adoc", "troubleshooting.rst", "notes.txt", "routes.html",
                         "architecture.pdf"}
    assert all(d.status == "indexed" and d.chunk_count > 0 for d in docs.values())

    guide = docs["deploy-guide.md"]
    assert (guide.title, guide.date_source, guide.doc_date) == (
        "Lumen Deployment Guide", "frontmatter", datetime(2025, 3, 14, tzinfo=UTC))
    assert guide.doc_type == "operations" and guide.tags == ["deployment", "kubernetes"]
    assert guide.entities == ["Lumen Gateway"]
    assert docs["reference.adoc"].date_source == "asciidoc_revdate"
    assert docs["reference.adoc"].doc_date == datetime(2025, 9, 2, tzinfo=UTC)
    assert docs["architecture.pdf"].date_source in {"pdf_moddate", "pdf_creationdate"}
    assert docs["architecture.pdf"].doc_date.date().isoformat() == "2024-05-02"
    assert docs["notes.txt"].date_source == "mtime"
    assert docs["notes.txt"].tags == [] and docs["notes.txt"].entities == []

    health = Chunk.objects.get(document=guide, text__contains="liveness probe")
    assert health.heading_path.startswith("Lumen Deployment Guide > Kubernetes")
    assert len(health.embedding) == 384
    html_text = " ".join(Chunk.objects.filter(document=docs["routes.html"]).values_list("text", flat=True))
    assert "<api-key>" in html_text and "alert(" not in html_text and "color: red" not in html_text
    # Full text works on the generated column.
    assert Chunk.objects.filter(workspace=workspace, search_vector="rotated").exists()


def test_reingesting_unchanged_folder_parses_and_encodes_nothing(workspace, tmp_path, encoder):
    write_corpus(tmp_path / "docs")
    ingest_sync(workspace, tmp_path / "docs")
    chunk_ids = set(Chunk.objects.values_list("pk", flat=True))
    calls = encoder.calls

    job = ingest_sync(workspace, tmp_path / "docs")
    assert set(job.items.values_list("status", flat=True)) == {"unchanged"}
    assert encoder.calls == calls
    assert set(Chunk.objects.values_list("pk", flat=True)) == chunk_ids


def test_unchanged_files_are_settled_when_the_job_is_created_and_never_queued(
        workspace, tmp_path, encoder, monkeypatch, django_capture_on_commit_callbacks):
    files = write_corpus(tmp_path / "docs")
    ingest_sync(workspace, tmp_path / "docs")
    guide = files["guide"]
    guide.write_text(guide.read_text() + "\n\nOne more paragraph about health checks.\n")
    same_size = files["notes"]
    same_size.write_bytes(same_size.read_bytes().replace(b"a", b"e", 1))  # same length, other bytes
    returning = Document.objects.get(path=str(files["page"]))
    documents_archive(documents=Document.objects.filter(pk=returning.pk))
    enqueued: list[int] = []
    merged: list[int] = []
    monkeypatch.setattr("rag.uploads.staging.index_send", enqueued.extend)
    monkeypatch.setattr("rag.jobs.merging.merge_send", merged.append)

    with django_capture_on_commit_callbacks(execute=True):
        job = indexing_job_create(workspace=workspace, paths=[tmp_path / "docs"])
    assert set(job.items.filter(pk__in=enqueued).values_list("path", flat=True)) == {str(guide), str(same_size)}
    settled = job.items.exclude(pk__in=enqueued)
    assert set(settled.values_list("status", flat=True)) == {"unchanged"} and settled.count() == len(files) - 2
    returning.refresh_from_db()
    assert not returning.archived and merged == [returning.pk]  # back, and its chunks merge again
    assert all(item.document_id and item.finished_at and item.chunk_count for item in settled)
    assert job.finished_at is None
    for item_id in enqueued:
        assert job_item_run(item_id=item_id) == "indexed"
    job.refresh_from_db()
    assert job.finished_at is not None

    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        again = indexing_job_create(workspace=workspace, paths=[tmp_path / "docs"])
    assert enqueued == [] and again.finished_at is not None
    assert set(again.items.values_list("status", flat=True)) == {"unchanged"}


def test_changed_file_is_replaced_and_shared_text_comes_from_the_cache(workspace, tmp_path, encoder):
    files = write_corpus(tmp_path / "docs")
    ingest_sync(workspace, tmp_path / "docs")
    guide = Document.objects.get(path=str(files["guide"]))
    old_ids = set(guide.chunks.values_list("pk", flat=True))
    old_texts = set(Chunk.objects.values_list("text", flat=True))
    texts_before = encoder.texts_encoded

    files["guide"].write_text(files["guide"].read_text() + "\n## Scaling\n\nAdd replicas when CPU stays above 70 percent.\n")
    job = ingest_sync(workspace, tmp_path / "docs")

    guide.refresh_from_db()
    assert job.items.get(path=str(files["guide"])).status == "indexed"
    assert not old_ids & set(guide.chunks.values_list("pk", flat=True))
    assert any("Scaling" in c.heading_path for c in guide.chunks.all())
    # Exactly the distinct texts never seen before reached the encoder; the rest came from the cache.
    changed = set(guide.chunks.values_list("text", flat=True)) - old_texts
    assert changed and len(changed) < guide.chunk_count
    assert encoder.texts_encoded - texts_before == len(changed)
    assert EmbeddingCache.objects.filter(model_name=encoder.name).count() >= Chunk.objects.count()


def test_identical_copy_under_another_name_encodes_nothing(workspace, tmp_path, encoder):
    files = write_corpus(tmp_path / "docs")
    ingest_sync(workspace, tmp_path / "docs")
    copy = tmp_path / "copies" / "deploy-guide-copy.md"
    copy.parent.mkdir()
    copy.write_bytes(files["guide"].read_bytes())
    calls, texts_before = encoder.calls, encoder.texts_encoded

    job = ingest_sync(workspace, copy)

    assert job.items.get().status == "indexed"
    assert Document.objects.get(path=str(copy)).chunk_count == Document.objects.get(path=str(files["guide"])).chunk_count
    assert (encoder.calls, encoder.texts_encoded) == (calls, texts_before)


def test_missing_file_is_archived_and_returns_when_it_reappears(workspace, tmp_path, encoder):
    files = write_corpus(tmp_path / "docs")
    ingest_sync(workspace, tmp_path / "docs")
    kept = files["notes"].read_bytes()
    files["notes"].unlink()

    job = ingest_sync(workspace, tmp_path / "docs")
    notes = Document.objects.get(path=str(files["notes"]))
    assert job.archived_count == 1 and notes.archived and notes.chunk_count > 0
    assert Document.objects.active().filter(workspace=workspace).count() == 5

    files["notes"].write_bytes(kept)
    ingest_sync(workspace, tmp_path / "docs")
    notes.refresh_from_db()
    assert not notes.archived


def test_bad_files_fail_alone_with_reasons_and_lose_nothing(workspace, tmp_path, encoder, settings):
    folder = tmp_path / "pile"
    write_corpus(folder)
    ingest_sync(workspace, folder)
    good_chunks = Chunk.objects.filter(document__path=str(folder / "deploy-guide.md")).count()

    settings.INGEST_MAX_FILE_BYTES = 20_000
    (folder / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage")
    write_pdf(folder / "locked.pdf", password="secret")
    (folder / "empty.md").write_text("")
    (folder / "junk.txt").write_bytes(bytes(range(256)) * 20)
    (folder / "huge.txt").write_text("word " * 10_000)
    (folder / "latin1.txt").write_bytes("Caf\xe9 menu\n\nThe caf\xe9 serves cr\xe8me br\xfbl\xe9e every day.\n".encode("cp1252"))
    (folder / "baddate.md").write_text("---\ntitle: Odd\ndate: not a date at all\n---\n# Odd\n\nThe timeout is 30 seconds.\n")
    (folder / "image.gif").write_bytes(b"GIF89a")
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n")
    # A good document whose new version is corrupt keeps its indexed version.
    (folder / "deploy-guide.md").write_bytes(b"\x00\x01\x02 binary now")

    job = ingest_sync(workspace, folder)
    status = {Path(i.path).name: (i.status, i.error) for i in job.items.all()}
    assert status["corrupt.pdf"][0] == "failed" and "PDF" in status["corrupt.pdf"][1]
    assert status["locked.pdf"] == ("failed", "encrypted PDF")
    assert status["empty.md"] == ("failed", "empty file")
    assert status["junk.txt"][0] == "failed" and "binary" in status["junk.txt"][1]
    assert status["huge.txt"][0] == "failed" and "limit" in status["huge.txt"][1]
    assert status["latin1.txt"][0] == "indexed"
    assert status["baddate.md"][0] == "indexed"
    assert status["image.gif"][0] == "skipped" and ".gif" in status["image.gif"][1]
    assert status["broken.png"][0] == "failed" and "not a readable image" in status["broken.png"][1]
    assert status["deploy-guide.md"][0] == "failed"
    assert status["reference.adoc"][0] == "unchanged"

    assert "crème brûlée" in Chunk.objects.get(document__path=str(folder / "latin1.txt")).text
    odd = Document.objects.get(path=str(folder / "baddate.md"))
    assert odd.date_source == "mtime"
    failed = Document.objects.get(path=str(folder / "corrupt.pdf"))
    assert failed.status == "failed" and failed.error  # visible in the admin
    guide = Document.objects.get(path=str(folder / "deploy-guide.md"))
    assert guide.status == "indexed" and guide.error and guide.chunks.count() == good_chunks


def test_ingest_command_sync_summarises_and_fails_on_a_failed_document(workspace, tmp_path, capsys, encoder):
    write_corpus(tmp_path / "docs")
    call_command("ingest", str(tmp_path / "docs"), workspace=workspace.slug, sync=True, verbosity=0)
    assert "6 indexed" in capsys.readouterr().out

    (tmp_path / "docs" / "broken.pdf").write_bytes(b"not a pdf at all")
    with pytest.raises(CommandError, match="1 document"):
        call_command("ingest", str(tmp_path / "docs"), workspace=workspace.slug, sync=True, verbosity=0)
    out = capsys.readouterr().out
    assert "6 unchanged" in out and "failed: " in out and "broken.pdf" in out


def test_ingest_command_sync_merges_versions_in_process_and_queues_nothing(
        workspace, tmp_path, encoder, django_capture_on_commit_callbacks):
    from config.celery import app
    from rag.dedup.merge import workspace_merge
    from rag.models import CanonicalRecord
    from devkit.synthetic_corpus import generate, write_markdown

    write_markdown(generate(chunks=40, sections_per_document=5, duplicate_share=0.5, seed=3), tmp_path / "docs")
    with app.connection_for_write() as conn:
        before = {queue: conn.default_channel.client.llen(queue) for queue in ("merge", "ingest", "default")}
        with django_capture_on_commit_callbacks(execute=True):  # the test's transaction never commits
            call_command("ingest", str(tmp_path / "docs"), workspace=workspace.slug, sync=True, verbosity=0)
        after = {queue: conn.default_channel.client.llen(queue) for queue in ("merge", "ingest", "default")}
    assert after == before  # no worker needed, nothing left for one
    records = CanonicalRecord.objects.filter(workspace=workspace)
    assert records.count() >= 3
    rebuild = workspace_merge(workspace_id=workspace.pk)  # what `merge_duplicates` would make of it
    assert (rebuild.records_created, rebuild.records_changed, rebuild.records_dissolved) == (0, 0, 0)
    for record in records.select_related("canonical_chunk__document"):
        newest = max(variant.chunk.document.doc_date for variant in record.variants.select_related("chunk__document"))
        assert record.canonical_chunk.document.doc_date >= newest


def test_ingest_command_rejects_unknown_workspace_and_path(workspace, tmp_path):
    with pytest.raises(CommandError, match="no workspace"):
        call_command("ingest", str(tmp_path), workspace="nope", sync=True)
    with pytest.raises(CommandError, match="no such file"):
        call_command("ingest", str(tmp_path / "missing"), workspace=workspace.slug, sync=True)


def test_a_file_archived_while_its_job_waits_returns_unchanged_and_merges_again(
        workspace, tmp_path, encoder, monkeypatch, django_capture_on_commit_callbacks):
    """Archived after its job was created (the folder's sync saw it gone meanwhile): running the item
    brings the document back, unparsed, and its merge is owed as for a newly indexed file."""
    files = write_corpus(tmp_path / "docs")
    ingest_sync(workspace, tmp_path / "docs")
    page = Document.objects.get(path=str(files["page"]))
    job = indexing_job_create(workspace=workspace, paths=[files["page"]], enqueue=False)
    item = job.items.get()
    item.status = "queued"  # as if it had been queued before the archive
    item.save(update_fields=["status"])
    documents_archive(documents=Document.objects.filter(pk=page.pk))
    merged: list[int] = []
    monkeypatch.setattr("rag.jobs.merging.merge_send", merged.append)

    with django_capture_on_commit_callbacks(execute=True):
        assert job_item_run(item_id=item.pk) == "unchanged"
    page.refresh_from_db()
    assert not page.archived and merged == [page.pk]


def test_job_item_run_twice_changes_nothing(workspace, tmp_path, encoder):
    write_corpus(tmp_path / "docs")
    job = indexing_job_create(workspace=workspace, paths=[tmp_path / "docs"], enqueue=False)
    item = job.items.first()
    assert job_item_run(item_id=item.pk) == "indexed"
    ids = set(Chunk.objects.values_list("pk", flat=True))
    assert job_item_run(item_id=item.pk) == "indexed"
    assert set(Chunk.objects.values_list("pk", flat=True)) == ids
    assert job_item_run(item_id=10**9) == "gone"


def test_a_page_with_only_a_table_of_contents_an_include_or_autodoc_is_skipped_with_that_reason(workspace, tmp_path, logged_in_client):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "index.rst").write_text("Welcome to Lumen's documentation!\n=================================\n\n"
                                      ".. toctree::\n   :maxdepth: 2\n\n   install\n   usage\n")
    (folder / "empty.rst").write_text("Nothing here\n============\n")
    (folder / "changes.rst").write_text("Changes\n=======\n\n.. include:: ../CHANGES.rst\n")
    (folder / "app.rst").write_text("celery.app\n==========\n\n.. automodule:: celery.app\n   :members:\n")
    (folder / "cli.rst").write_text("Command Line Interface\n======================\n\n.. click:: celery.bin.celery:celery\n")
    job = indexing_job_create(workspace=workspace, paths=[folder], enqueue=False)
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    items = {Path(item.path).name: item for item in job.items.all()}
    assert items["index.rst"].status == "skipped"
    assert items["index.rst"].error == "only a table of contents (toctree): nothing to index here"
    assert items["changes.rst"].status == items["app.rst"].status == items["cli.rst"].status == "skipped"
    assert items["app.rst"].error == "only documentation generated from code (automodule): nothing to index here"
    assert items["changes.rst"].error == "only text included from other files (include): nothing to index here"
    assert items["empty.rst"].status == "failed"  # no table of contents either: nothing there at all
    assert not Document.objects.filter(path__endswith="index.rst").exists()
    assert "only a table of contents (toctree)" in logged_in_client.get(f"/jobs/{job.pk}/").content.decode()
