"""What follows indexing: the dedup merge. Kept in one place so the pipeline reads straight."""

from __future__ import annotations

import logging

from django.db import transaction

logger = logging.getLogger(__name__)


def _enqueue_merge(document_id: int) -> None:
    from rag.tasks import merge_document

    merge_document.delay(document_id)


def _merge_now(document_id: int) -> None:
    from rag.dedup.merge import document_merge
    from rag.jobs import job_items_merged

    document_merge(document_id=document_id)
    job_items_merged(document_id=document_id)


def after_document_indexed(*, document_id: int, inline: bool = False) -> None:
    """Merge the document's chunks once its rows are committed: queued for a worker, or here (`ingest --sync`)."""
    # robust: a broker hiccup or a failed merge must not fail an indexing that already succeeded;
    # the error is logged and `merge_duplicates` catches up.
    transaction.on_commit(lambda: (_merge_now if inline else _enqueue_merge)(document_id), robust=True)


def after_documents_archived(*, document_ids: list[int]) -> None:
    """Take archived documents out of their canonical records and version families, in the caller's transaction."""
    from rag.dedup.merge import chunks_detach
    from rag.lineage.families import documents_leave_families, family_refresh
    from rag.models import Chunk

    chunks_detach(chunk_ids=list(Chunk.objects.filter(document_id__in=document_ids).values_list("pk", flat=True)))
    for family_id in sorted(documents_leave_families(document_ids=document_ids)):
        family_refresh(family_id=family_id)
