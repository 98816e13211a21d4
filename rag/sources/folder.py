"""A folder source's sync: the ingest of a folder (rag.uploads.indexing_job_create), plus what a source adds.

Unchanged bytes queue nothing (whatever their mtime says) and list nothing: the job counts them, and a file
whose stat is the one kept when its bytes were last read is not even read (rag.uploads,
rag.storage.file_stat_key). A file that moved inside the folder keeps its document (found by content, so
nothing is encoded again and reviewers' decisions stay); a folder that is gone, or empty while documents came
from it (an unmounted share), pauses the source instead of archiving everything.
"""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from rag.models import Document, IndexingJob, Source
from rag.uploads import folder_walk, indexing_job_create
from rag.sources.selection import path_selector
from rag.storage import file_hash


class SourcePaused(Exception):
    """The source cannot sync now; the message says why and what brings it back."""


def folder_sync_job(*, source: Source, enqueue: bool, created_by=None) -> tuple[IndexingJob, dict]:
    """Queue the folder's new and changed files; returns the job and what the sync found besides."""
    root = Path(source.location).expanduser().resolve()
    if not root.is_dir():
        raise SourcePaused(f"the folder {source.location} is gone (deleted or unmounted): syncing paused, nothing "
                           "archived; the next sync resumes once it is back")
    selected = path_selector(include=source.include, exclude=source.exclude)
    files = folder_walk(root, selected).files
    held = Document.objects.filter(workspace=source.workspace, path__startswith=f"{root}/", archived=False)
    if not files and held.exists():
        raise SourcePaused(f"the folder {source.location} is empty while {held.count()} document(s) came from it "
                           "(an unmounted share?): syncing paused, nothing archived")
    renamed = _renames_keep(source=source, root=root, files=files)
    job = indexing_job_create(workspace=source.workspace, paths=[root], source=IndexingJob.Source.SYNC,
                              created_by=created_by, enqueue=enqueue, select=selected, sync_source=source)
    return job, {"files": len(files), "renamed": renamed}


def _renames_keep(*, source: Source, root: Path, files: dict[str, Path]) -> int:
    """A new path whose bytes are a vanished path's takes over that document: a rename, not new content.

    Only new paths whose size matches a vanished document's are hashed, so an ordinary sync hashes
    nothing here.
    """
    known = {
        row["path"]: row for row in Document.objects.filter(workspace=source.workspace, path__startswith=f"{root}/")
        .values("pk", "path", "content_hash", "size_bytes", "archived", "status")
    }
    present = {str(path) for path in files.values()}
    vanished = [row for path, row in known.items()
                if path not in present and not row["archived"] and row["content_hash"]
                and row["status"] == Document.Status.INDEXED]
    if not vanished:
        return 0
    sizes = {row["size_bytes"] for row in vanished}
    by_hash = {row["content_hash"]: row for row in vanished}
    renamed = 0
    with transaction.atomic():
        for relative, path in files.items():
            if str(path) in known:
                continue
            try:
                if path.stat().st_size not in sizes or (row := by_hash.pop(file_hash(path), None)) is None:
                    continue
            except OSError:
                continue  # gone again: the job reports it
            Document.objects.filter(pk=row["pk"]).update(path=str(path), display_path=relative)
            renamed += 1
    return renamed
