"""Running one job item: claim it, index its file, record the outcome, and merge what was indexed."""

from __future__ import annotations

import logging
from celery.exceptions import SoftTimeLimitExceeded
from django.utils import timezone

from rag.ingest import document_index
from rag.jobs.lifecycle import documents_show_paths, job_finish_if_done, job_item_claim, job_item_requeue
from rag.jobs.merging import indexed_merge_after_commit, merge_after_commit
from rag.jobs.queue import TRANSIENT_ERRORS
from rag.models import Document, IndexingJobItem
from rag.parsers import Progress
from rag.storage import stored_copies_delete

logger = logging.getLogger(__name__)


def job_item_run(*, item_id: int, merge_inline: bool = False, task_id: str = "") -> str:
    """Run one queued item; running it again after it finished changes nothing.

    merge_inline: merge the new chunks in this process instead of queueing the merge (no worker).
    task_id: the Celery task run that claims the item (rag.jobs.lifecycle.job_item_claim); "" in process.
    """
    item = job_item_claim(item_id=item_id, task_id=task_id)
    if item is None:
        status = IndexingJobItem.objects.filter(pk=item_id).values_list("status", flat=True).first()
        logger.info("job item not run", extra={"item_id": item_id, "status": status or "gone"})
        return status or "gone"
    try:
        outcome = document_index(
            workspace_id=item.job.workspace_id, path=item.path, source_file=item.source_file,
            file_mtime=item.file_mtime, mtime_is_upload_time=item.mtime_is_upload_time,
            display_path=item.display_path, hints=item.hints, progress=_item_progress(item_id),
        )
    except Exception as exc:
        # Transient errors are retried by the task; anything else must still end the item.
        if isinstance(exc, TRANSIENT_ERRORS):
            job_item_requeue(item_id=item_id)
            raise
        if isinstance(exc, SoftTimeLimitExceeded):
            error = "stopped at the soft time limit: indexing this file took too long"
        else:
            logger.exception("document crashed", extra={"item_id": item_id, "path": item.path})
            error = f"internal error: {type(exc).__name__}: {exc}"
        outcome_status, document_id, chunks, encoded, note = "failed", None, 0, 0, ""
        unarchived = False
    else:
        outcome_status, error, note = outcome.status, outcome.error, outcome.note
        unarchived = outcome.unarchived
        document_id, chunks, encoded = outcome.document_id, outcome.chunk_count, outcome.encoded_count
        if outcome_status == "unchanged" and _indexed_since(document_id, item.job.created_at):
            # An earlier run of this item indexed the file, then lost the database before it could
            # say so: the file is this job's work, and its merge is still owed.
            outcome_status = "indexed"
    IndexingJobItem.objects.filter(pk=item_id).update(
        status=outcome_status, error=error[:2000], note=note[:1000], document_id=document_id, chunk_count=chunks,
        encoded_count=encoded, finished_at=timezone.now(), lease_expires_at=None,
    )
    if document_id is not None and item.display_path:
        documents_show_paths({document_id: item.display_path})
    if outcome_status != "indexed":
        # Skipped or identical: an upload's copy is kept for nothing. Failed: kept while its failed document
        # exists, for "Retry" to read (rag.storage.stored_copies_delete decides).
        stored_copies_delete([item.source_file])
    job_finish_if_done(item.job_id)
    if outcome_status == "indexed" and document_id is not None:
        # With its attachments' documents, in a batch with what else the workspace's jobs indexed meanwhile.
        indexed_merge_after_commit(workspace_id=item.job.workspace_id, inline=merge_inline)
    elif unarchived and document_id is not None:
        merge_after_commit(document_id=document_id, inline=merge_inline)  # back from the archive: merges again
    return outcome_status


def _item_progress(item_id: int) -> Progress:
    """Writes how far a slow file is ("OCR page 3 of 12") to its job item, for the job page to show."""

    def report(message: str) -> None:
        IndexingJobItem.objects.filter(pk=item_id).update(note=message[:1000])

    return report


def _indexed_since(document_id: int | None, moment) -> bool:
    return Document.objects.filter(pk=document_id, indexed_at__gte=moment).exists()
