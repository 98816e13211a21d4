"""The dedup merge that follows indexing: queued for a merge worker, or run here (`ingest --sync`, no worker).

What a job indexed is merged in batches (`workspace_indexed_merge`): each indexed item sends a merge of its
workspace, and the one that runs first takes every document indexed so far, up to MERGE_BATCH_DOCUMENTS at a
time, while the messages behind it find nothing left. Merging a document alone (`document_merge_settle`) stays
for the merges that follow an edit, an unarchive or a moved tag.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from rag.dedup import MergeStats, documents_merge, releases_settle
from rag.jobs.lifecycle import job_items_merged, unmerged_documents
from rag.jobs.queue import TRANSIENT_ERRORS, indexed_merge_send, merge_send
from rag.models import Document
from rag.releases import calendar_update_many

logger = logging.getLogger(__name__)

# pg_try_advisory_lock(namespace, workspace_id): one batch merger per workspace at a time ("MRGB").
_MERGER_NAMESPACE = 0x4D524742
# Batches one task run merges before it queues the rest: a run stays far within its time limit.
_BATCHES_PER_RUN = 5


def document_merge_settle(*, document_id: int) -> MergeStats:
    """Merge one document's chunks and mark its items merged: the merge task of one document."""
    return documents_merge_settle(document_ids=[document_id])


def documents_merge_settle(*, document_ids: list[int]) -> MergeStats:
    """Merge the documents' chunks in one pass and mark their items merged. The last merge of a job places the
    releases of the workspace's exports, now that the job's files are all in."""
    stats = documents_merge(document_ids=document_ids)
    calendar_update_many(document_ids=document_ids)  # the releases their pages speak for, in the calendar
    for workspace_id in sorted(job_items_merged(document_ids=document_ids)):
        releases_settle(workspace_id=workspace_id, rebuild=False)  # the calendar is these documents', just updated
    return stats


def workspace_indexed_merge(*, workspace_id: int) -> MergeStats:
    """Merge what the workspace's jobs indexed and no merge has settled, in batches, until nothing is left.

    One process merges a workspace's indexed files at a time: another that finds it busy returns at once, since
    the busy one takes its documents too. The busy one looks again after letting go and queues the merge again
    if anything is left (more than its batches, or a document indexed just as it finished); the reaper resends
    what is left anyway.
    """
    stats = MergeStats()
    with _merger(workspace_id) as alone:
        if not alone:
            return stats
        for _run in range(_BATCHES_PER_RUN):
            if not (batch := unmerged_documents(workspace_id=workspace_id, limit=settings.MERGE_BATCH_DOCUMENTS)):
                break
            stats.add(_batch_settle(_with_attachments(batch)))
    if unmerged_documents(workspace_id=workspace_id, limit=1):  # the rest, or what arrived as this run let go
        indexed_merge_send(workspace_id)
    return stats


def _batch_settle(document_ids: list[int]) -> MergeStats:
    """One batch; a batch that fails for a reason other than a transient one is merged one document at a time, so
    that one bad document never keeps the others unmerged (its own failure is logged and settled: the merge gave
    up, `merge_duplicates` catches up)."""
    try:
        return documents_merge_settle(document_ids=document_ids)
    except TRANSIENT_ERRORS:
        raise
    except Exception:
        logger.exception("merge: batch failed, merging its documents one by one", extra={"documents": len(document_ids)})
    stats = MergeStats()
    for document_id in document_ids:
        try:
            stats.add(document_merge_settle(document_id=document_id))
        except TRANSIENT_ERRORS:
            raise
        except Exception:
            logger.exception("merge: document failed", extra={"document_id": document_id})
            job_items_merged(document_ids=[document_id])
    return stats


def _with_attachments(document_ids: list[int]) -> list[int]:
    """The documents and those indexed from their attachments (a message's, at any depth): merged with them."""
    found, frontier = list(document_ids), list(document_ids)
    for _depth in range(settings.MAIL_ATTACHMENT_MAX_DEPTH):
        frontier = list(Document.objects.filter(parent_id__in=frontier).exclude(pk__in=found).values_list("pk", flat=True))
        if not frontier:
            break
        found.extend(frontier)
    return found


@contextmanager
def _merger(workspace_id: int) -> Iterator[bool]:
    """True while this process is the workspace's only batch merger (a session lock: it ends with the connection,
    whatever kills the process)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_MERGER_NAMESPACE, workspace_id])
        alone = cursor.fetchone()[0]
    try:
        yield alone
    finally:
        if alone:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_MERGER_NAMESPACE, workspace_id])
            except DatabaseError:  # closing the session ends its locks: no process is left locked out
                connection.close()


def merge_after_commit(*, document_id: int, inline: bool = False) -> None:
    """Merge the document's chunks once its rows are committed: queued for a worker, or here (`ingest --sync`)."""
    # robust: a broker hiccup or a failed merge must not fail an indexing that already succeeded;
    # the error is logged and `merge_duplicates` catches up.
    transaction.on_commit(
        lambda: document_merge_settle(document_id=document_id) if inline else merge_send(document_id), robust=True,
    )


def indexed_merge_after_commit(*, workspace_id: int, inline: bool = False) -> None:
    """Merge what the workspace's jobs indexed once the item is committed: queued, or here (`ingest --sync`)."""
    transaction.on_commit(  # robust: as merge_after_commit
        lambda: workspace_indexed_merge(workspace_id=workspace_id) if inline else indexed_merge_send(workspace_id),
        robust=True,
    )
