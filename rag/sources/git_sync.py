"""A Git source's sync: one document per (path, blob), labelled by the first tag that holds the blob.

A file's versions are its distinct blobs. Each (path, blob) is a SourceFile row that knows every
selected tag whose tree holds it (so "in 1.3" finds the blob the 1.3 tree holds, even when it was
written for 1.1) and whether the branch's head holds it (the newest, unreleased version). Its
document is labelled with the first of those tags (version source "git tag") and dated by that
tag's commit (date source "git commit"); a blob only the branch holds is dated by the branch's
head and carries no label. A re-sync walks only the trees of new or moved tags and of the branch
if it moved; a blob that no selected tag and not the branch holds any more (a force push, a
deleted tag) has its document archived.
"""

from __future__ import annotations

import logging
from datetime import datetime
from fnmatch import fnmatchcase
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from dulwich.repo import Repo

from rag.documents import documents_archive, documents_unarchive
from rag.jobs import index_send, job_finish_if_done, merge_after_commit
from rag.releases import parse_version, version_key
from rag.models import Document, IndexingJob, IndexingJobItem, Source, SourceFile
from rag.sources.git import (
    GitSourceError, blob_read, blob_size, commit_date, fast_forward, location_shown, refs_read, repository_open, tree_files,
)
from rag.sources.selection import path_selector
from rag.storage import stored_blob_save, stored_copies_delete

logger = logging.getLogger(__name__)


def source_document_prefix(source: Source) -> str:
    """Where a Git source's documents live in the workspace's paths: `git/NAME/TAG/path/in/repo.rst`."""
    return f"git/{source.name}"


def git_mirror_dir(source: Source) -> Path:
    return Path(settings.DATA_DIR) / "sources" / "mirrors" / f"{source.workspace_id}-{source.pk}.git"


def tags_in_order(repo: Repo, tags: dict[str, str]) -> list[str]:
    """Oldest first: as versions when every tag parses as one, else by their commits' dates."""
    if all(parse_version(name) is not None for name in tags):
        return sorted(tags, key=lambda name: (parse_version(name), name))
    return sorted(tags, key=lambda name: (commit_date(repo, tags[name]), name))


def _tag_wanted(name: str, pattern: str) -> bool:
    return fnmatchcase(name, pattern) if pattern else parse_version(name) is not None


def git_sync_job(*, source: Source, enqueue: bool, created_by=None) -> tuple[IndexingJob, dict]:
    """Read what is new in the repository and queue the blobs no document holds yet."""
    repo = repository_open(location=source.location, mirror=git_mirror_dir(source))
    refs = refs_read(repo)
    branch = source.branch or refs.default_branch
    if source.branch and branch not in refs.branches:
        raise GitSourceError(f"no branch {branch!r} in {location_shown(source.location)}")
    tags = {name: commit for name, commit in refs.tags.items() if _tag_wanted(name, source.tags_pattern)}
    order = tags_in_order(repo, tags)
    state = source.state or {}
    read = state.get("tags", {})
    new_tags = [name for name in order if read.get(name) != tags[name]]
    dropped = {name for name, commit in read.items() if tags.get(name) != commit}  # deleted or moved
    branch_commit = refs.branches.get(branch, "")
    old_commit = state.get("branch_commit", "") if state.get("branch") == branch else ""
    branch_moved = branch_commit != old_commit
    forced = bool(branch_moved and old_commit and branch_commit and not fast_forward(repo, old_commit, branch_commit))
    selected = path_selector(include=source.include, exclude=source.exclude, supported_only=True)

    rows = {(row.file_path, row.blob): row for row in SourceFile.objects.filter(source=source)}
    touched: set[tuple[str, str]] = set()
    for row in rows.values():
        if dropped & set(row.tags):
            row.tags = [name for name in row.tags if name not in dropped]
            touched.add((row.file_path, row.blob))
    for name in new_tags:
        for path, blob in tree_files(repo, tags[name], select=selected).items():
            row = rows.setdefault((path, blob), SourceFile(source=source, file_path=path, blob=blob, tags=[]))
            row.tags = [*row.tags, name]
            touched.add((path, blob))
    if branch_moved:
        held = set(tree_files(repo, branch_commit, select=selected).items()) if branch_commit else set()
        for key in held - rows.keys():
            rows[key] = SourceFile(source=source, file_path=key[0], blob=key[1], tags=[])
        for key, row in rows.items():
            if row.on_branch != (key in held):
                row.on_branch = key in held
                touched.add(key)
    rank = {name: index for index, name in enumerate(order)}
    head_date = commit_date(repo, branch_commit) if branch_commit else timezone.now()
    for key in touched:
        row = rows[key]
        row.tags = sorted(set(row.tags), key=lambda name: rank.get(name, len(rank)))
        if row.tags:
            row.document_path = f"{source_document_prefix(source)}/{row.tags[0]}/{row.file_path}"
        elif not row.document_path:  # only the branch holds it: a place of its own until a tag does
            row.document_path = f"{source_document_prefix(source)}/{branch}@{branch_commit[:10]}/{row.file_path}"
    dates = {name: commit_date(repo, tags[name]) for name in {row.tags[0] for row in rows.values() if row.tags}
             if name in tags}  # first tags, once every row's tags are in order
    with transaction.atomic():
        job, changes = _job_create(source=source, repo=repo, rows=rows, touched=touched, dates=dates,
                                   head_date=head_date, created_by=created_by, enqueue=enqueue)
        source.state = {"tags": tags, "order": order, "branch": branch, "branch_commit": branch_commit,
                        "default_branch": refs.default_branch}
        source.save(update_fields=["state"])
    changes.update({"tags_read": new_tags, "tags_dropped": sorted(dropped), "branch_moved": branch_moved,
                    "force_push": forced})
    logger.info("git source read", extra={"source_id": source.pk, "tags_read": len(new_tags), "forced": forced,
                                          "queued": changes["queued"]})
    return job, changes


def _job_create(*, source: Source, repo: Repo, rows: dict, touched: set, dates: dict, head_date,
                created_by, enqueue: bool) -> tuple[IndexingJob, dict]:
    """Save the rows, move documents whose first tag changed, archive what left, queue what no document holds."""
    old_paths = dict(SourceFile.objects.filter(source=source).values_list("pk", "document_path"))
    SourceFile.objects.bulk_create([row for row in rows.values() if row.pk is None])
    SourceFile.objects.bulk_update([rows[key] for key in touched if rows[key].pk in old_paths],
                                   ["tags", "on_branch", "document_path"])
    workspace = source.workspace
    documents = {doc.path: doc for doc in Document.objects.filter(
        workspace=workspace, path__startswith=source_document_prefix(source) + "/")}
    moved = 0
    for row in rows.values():
        previous = old_paths.get(row.pk)
        if previous and previous != row.document_path and previous in documents:
            document = documents.pop(previous)
            document.path = row.document_path
            _relabel(document, _hints(row, dates, head_date))
            documents[row.document_path] = document
            merge_after_commit(document_id=document.pk, inline=not enqueue)  # its family place may change
            moved += 1
    live = [row for row in rows.values() if row.tags or row.on_branch]
    gone = [documents[row.document_path].pk for row in rows.values()
            if not (row.tags or row.on_branch) and row.document_path in documents]
    back = [documents[row.document_path].pk for row in live
            if row.document_path in documents and documents[row.document_path].archived]
    wanted = [row for row in live if row.document_path not in documents
              or documents[row.document_path].status != Document.Status.INDEXED]
    # One sync queues a bounded number of files (a push of 65,536 copies of one file would queue them all): the
    # rest have no document yet, so the next sync finds them wanted again and queues them then.
    left = wanted[settings.GIT_SOURCE_MAX_SYNC_ITEMS:]
    wanted = wanted[:settings.GIT_SOURCE_MAX_SYNC_ITEMS]
    job = IndexingJob.objects.create(workspace=workspace, source=IndexingJob.Source.SYNC, created_by=created_by,
                                     sync_source=source, description=f"{source.name} (Git)")
    items, staged_bytes = [], 0
    try:
        for row in wanted:
            item, size = _item_stage(job=job, repo=repo, row=row, hints=_hints(row, dates, head_date),
                                     staged_bytes=staged_bytes)
            items.append(item)
            staged_bytes += size
    except GitSourceError:
        # The sync is rolled back: what it staged is nobody's, unless a document came from it (rag.storage decides).
        stored_copies_delete(item.source_file for item in items if item.source_file)
        raise
    IndexingJobItem.objects.bulk_create(items)
    job.archived_count = documents_archive(documents=Document.objects.filter(pk__in=gone))
    job.save(update_fields=["archived_count"])
    documents_unarchive(documents=Document.objects.filter(pk__in=back))
    job_finish_if_done(job.pk)
    if enqueue:
        ids = [item.pk for item in items]
        transaction.on_commit(lambda: index_send(ids))
    return job, {"queued": len(items), "relabelled": moved, "archived": job.archived_count, "unarchived": len(back),
                 "left_for_next_sync": len(left), "max_sync_items": settings.GIT_SOURCE_MAX_SYNC_ITEMS}


def _item_stage(*, job: IndexingJob, repo: Repo, row: SourceFile, hints: dict, staged_bytes: int,
                ) -> tuple[IndexingJobItem, int]:
    """The row's item and the bytes staged for it: a blob over INGEST_MAX_FILE_BYTES fails alone, unstaged; past
    GIT_SOURCE_MAX_SYNC_BYTES staged in all, the sync fails (GitSourceError)."""
    item = IndexingJobItem(job=job, path=row.document_path, display_path=row.file_path, hints=hints)
    size = blob_size(repo, row.blob)  # from the object's header: an oversized blob is never inflated
    if size > settings.INGEST_MAX_FILE_BYTES:
        item.status, item.started_at = IndexingJobItem.Status.FAILED, timezone.now()
        item.finished_at = item.started_at
        item.error = f"{size} bytes, over INGEST_MAX_FILE_BYTES ({settings.INGEST_MAX_FILE_BYTES}): not read"
        return item, 0
    if staged_bytes + size > settings.GIT_SOURCE_MAX_SYNC_BYTES:
        raise GitSourceError(f"more than {settings.GIT_SOURCE_MAX_SYNC_BYTES} bytes of new files in one sync "
                             "(GIT_SOURCE_MAX_SYNC_BYTES): nothing queued")
    item.source_file = stored_blob_save(blob=row.blob, read=lambda: blob_read(repo, row.blob))
    return item, size


def _relabel(document: Document, hints: dict[str, str]) -> None:
    """A document whose first tag changed takes that tag's label and date, unless a person set them."""
    fields = {"path": document.path}
    if document.version_set_by_id is None and (label := hints.get("version_label")):
        fields.update(version_label=str(parse_version(label)), version_key=version_key(label) or "",
                      version_source="git_tag")
    if document.date_set_by_id is None:
        fields.update(doc_date=datetime.fromisoformat(hints["doc_date"]), date_source="git_commit")
    Document.objects.filter(pk=document.pk).update(**fields)


def _hints(row: SourceFile, dates: dict, head_date) -> dict[str, str]:
    if row.tags and row.tags[0] in dates:
        return {"version_label": row.tags[0], "version_source": "git_tag",
                "doc_date": dates[row.tags[0]].isoformat(), "date_source": "git_commit"}
    return {"doc_date": head_date.isoformat(), "date_source": "git_commit"}
