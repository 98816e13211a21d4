"""Real Git repositories built by the tests with the git CLI, and a sync run in the test's own process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rag.models import IndexingJob, IndexingJobItem
from rag.jobs.run import job_item_run
from rag.sources.services import source_sync


class GitRepo:
    """A work tree the tests commit to and tag; each commit gets the next day of 2024 as its date."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.day = 0
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        env = {**os.environ, "GIT_AUTHOR_NAME": "Docs", "GIT_AUTHOR_EMAIL": "docs@example.com",
               "GIT_COMMITTER_NAME": "Docs", "GIT_COMMITTER_EMAIL": "docs@example.com",
               "GIT_AUTHOR_DATE": self._date(), "GIT_COMMITTER_DATE": self._date(),
               "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        return subprocess.run(["git", "-C", str(self.path), *args], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    def _date(self) -> str:
        return f"{1704110400 + self.day * 86400} +0000"  # 2024-01-01 12:00 UTC, then a day per commit

    def commit(self, files: dict[str, str | None], message: str = "docs") -> str:
        """Write (or, for None, delete) the files and commit them; returns the commit sha."""
        self.day += 1
        for name, text in files.items():
            target = self.path / name
            if text is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def tag(self, name: str, *, annotated: bool = False) -> None:
        self.git("tag", *(["-a", "-m", name] if annotated else []), name)


def sync_here(source_id: int) -> IndexingJob:
    """One sync with every queued item run here, merges included (what `source sync --sync` does)."""
    job = source_sync(source_id=source_id, enqueue=False)
    for item_id in job.items.filter(status=IndexingJobItem.Status.QUEUED).values_list("pk", flat=True):
        job_item_run(item_id=item_id, merge_inline=True)
    job.refresh_from_db()
    return job


def encoded(job: IndexingJob) -> int:
    return sum(job.items.values_list("encoded_count", flat=True))
