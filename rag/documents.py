"""Document state changes: archive, unarchive, re-index, remove, and the paths pages show.

The one path by which documents leave their canonical records and version families
(`documents_leave_records_and_families`): archiving, deleting in the admin, and the pipeline's
unarchive of a file that came back all go through here.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from rag.dedup import chunks_detach
from rag.jobs import index_send, merge_after_commit
from rag.lineage import documents_leave_families, family_refresh
from rag.models import Chunk, Document, IndexingJob, IndexingJobItem
from rag.storage import stored_copies_delete


def documents_leave_records_and_families(*, document_ids: list[int]) -> set[int]:
    """Take documents' chunks out of their canonical records and the documents out of their families.

    In the caller's transaction; returns the families they left, for `families_refresh` once the
    documents are archived or gone.
    """
    chunks_detach(chunk_ids=list(Chunk.objects.filter(document_id__in=document_ids).values_list("pk", flat=True)))
    return documents_leave_families(document_ids=document_ids)


def families_refresh(*, family_ids: set[int]) -> None:
    for family_id in sorted(family_ids):
        family_refresh(family_id=family_id)


def documents_archive(*, documents: QuerySet[Document]) -> int:
    """Archived documents stay stored but leave search; returns how many changed."""
    ids = list(documents.filter(archived=False).values_list("pk", flat=True))
    if not ids:
        return 0
    Document.objects.filter(pk__in=ids).update(archived=True, updated_at=timezone.now())
    families_refresh(family_ids=documents_leave_records_and_families(document_ids=ids))
    return len(ids)


def documents_unarchive(*, documents: QuerySet[Document]) -> int:
    """Unarchived documents come back to search and merge again (after the caller's commit)."""
    ids = list(documents.filter(archived=True).values_list("pk", flat=True))
    Document.objects.filter(pk__in=ids).update(archived=False, updated_at=timezone.now())
    for document_id in ids:
        merge_after_commit(document_id=document_id)
    return len(ids)


def documents_remove(*, documents: QuerySet[Document]) -> int:
    """Delete documents and the documents indexed from their attachments: their chunks leave the
    records and they their families first, so nothing points at a gap. Returns how many went.

    The uploaded copies they were indexed from go too, once the removal is committed.
    """
    ids = list(documents.values_list("pk", flat=True))
    ids += list(Document.objects.filter(parent_id__in=ids).exclude(pk__in=ids).values_list("pk", flat=True))
    with transaction.atomic():
        sources = list(IndexingJobItem.objects.filter(document_id__in=ids).values_list("source_file", flat=True))
        family_ids = documents_leave_records_and_families(document_ids=ids)
        Document.objects.filter(pk__in=ids).delete()
        families_refresh(family_ids=family_ids)
        transaction.on_commit(lambda: stored_copies_delete(sources))
    return len(ids)


def documents_reindex(*, documents: QuerySet[Document], created_by=None) -> IndexingJob | None:
    """Queue the documents' source files again, parsed afresh even if unchanged."""
    docs = list(documents.select_related("workspace"))
    if not docs:
        return None
    workspace = docs[0].workspace
    with transaction.atomic():
        Document.objects.filter(pk__in=[d.pk for d in docs]).update(content_hash="")
        job = IndexingJob.objects.create(workspace=workspace, source=IndexingJob.Source.REINDEX, created_by=created_by,
                                         description=f"re-index {len(docs)} document(s)")
        # The latest item per document knows where its bytes are and what mtime they had (an upload's copy lost it).
        # Indexed or failed items only: a duplicate's copy was deleted (its item points at the document it
        # duplicates); a failed upload's copy is kept while its document exists, so "Retry" reads what failed.
        sources = {item.document_id: item for item in IndexingJobItem.objects.filter(
            document__in=docs, status__in=[IndexingJobItem.Status.INDEXED, IndexingJobItem.Status.FAILED],
        ).order_by("id")}
        items = IndexingJobItem.objects.bulk_create(
            IndexingJobItem(job=job, path=d.path, display_path=d.display_path, source_file=sources[d.pk].source_file,
                            stored_bytes=sources[d.pk].stored_bytes,
                            file_mtime=sources[d.pk].file_mtime, mtime_is_upload_time=sources[d.pk].mtime_is_upload_time,
                            hints=sources[d.pk].hints)
            if d.pk in sources else IndexingJobItem(job=job, path=d.path, display_path=d.display_path, source_file=d.path)
            for d in docs if d.workspace_id == workspace.pk
        )
        ids = [item.pk for item in items]
        transaction.on_commit(lambda: index_send(ids))
    return job


def document_retry_job(*, document: Document, created_by=None) -> IndexingJob | None:
    """Index a document again from its page; an attachment goes again with its message, which holds its bytes."""
    target = document.parent if document.parent_id and document.parent.workspace_id == document.workspace_id else document
    return documents_reindex(documents=Document.objects.filter(pk=target.pk), created_by=created_by)
