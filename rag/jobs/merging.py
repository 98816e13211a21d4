"""The dedup merge that follows indexing: queued for a merge worker, or run here (`ingest --sync`, no worker)."""

from __future__ import annotations

from django.db import transaction

from rag.dedup import MergeStats, contradictions_prune, document_merge
from rag.jobs.lifecycle import job_items_merged
from rag.jobs.queue import merge_send
from rag.lineage import family_refresh
from rag.models import Document
from rag.releases import calendar_update, workspace_releases_infer


def document_merge_settle(*, document_id: int) -> MergeStats:
    """Merge the document's chunks and mark its items merged: the merge task, and the inline merge. The last merge
    of a job places the releases of the workspace's exports, now that the job's files are all in."""
    stats = document_merge(document_id=document_id)
    calendar_update(document_id=document_id)  # the releases its page speaks for, in the calendar
    for workspace_id in sorted(job_items_merged(document_id=document_id)):
        changed: list[int] = []
        workspace_releases_infer(workspace_id=workspace_id, changed=changed)
        # A family is ordered by its members' releases: one whose release changed is ordered again.
        for family_id in sorted(set(Document.objects.filter(pk__in=changed, family__isnull=False)
                                    .values_list("family_id", flat=True))):
            family_refresh(family_id=family_id)
        contradictions_prune(workspace_id=workspace_id)  # two releases' passages, once known, never contradict
    return stats


def merge_after_commit(*, document_id: int, inline: bool = False) -> None:
    """Merge the document's chunks once its rows are committed: queued for a worker, or here (`ingest --sync`)."""
    # robust: a broker hiccup or a failed merge must not fail an indexing that already succeeded;
    # the error is logged and `merge_duplicates` catches up.
    transaction.on_commit(
        lambda: document_merge_settle(document_id=document_id) if inline else merge_send(document_id), robust=True,
    )
