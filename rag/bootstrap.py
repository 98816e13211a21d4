"""First-start set-up of a fresh instance: the demo workspace and its corpus."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from licensing.services import trial_start
from rag.models import IndexingJob, Workspace
from rag.uploads import indexing_job_create

DEMO_SLUG = "demo"
DEMO_DIR = Path(settings.BASE_DIR) / "demo"


def demo_corpus_prepare() -> Path:
    """Give dateless files the dates they were written for; git checkouts reset mtimes."""
    corpus = DEMO_DIR / "corpus"
    manifest = DEMO_DIR / "manifest.json"
    if manifest.exists():
        entries = json.loads(manifest.read_text())
        for entry in entries.get("files", entries) if isinstance(entries, dict) else entries:
            mtime = entry.get("mtime")
            target = corpus / entry["path"]
            if mtime and target.exists():
                stamp = datetime.fromisoformat(str(mtime).replace("Z", "+00:00")).timestamp()
                os.utime(target, (stamp, stamp))
    return corpus


def demo_workspace_bootstrap() -> Iterator[str]:
    """Create the demo workspace once, with every superuser as a member, and queue its corpus.

    The demo workspace also gets the built-in Writer Pro trial, once per installation,
    so that a new user sees every feature on the demo before choosing a plan.
    """
    job = None
    with transaction.atomic():
        workspace, created = Workspace.objects.get_or_create(slug=DEMO_SLUG, defaults={"name": "Demo"})
        if created:
            workspace.members.add(*get_user_model().objects.filter(is_superuser=True))
            job = indexing_job_create(workspace=workspace, paths=[demo_corpus_prepare()],
                                      source=IndexingJob.Source.DEMO)
    if job is not None:
        yield f"created the demo workspace and queued its corpus (job {job.pk}, {job.items.count()} files)"
    if trial_start(workspace_id=workspace.pk):
        yield f"started the built-in Writer Pro trial of the demo workspace ({settings.DEMO_TRIAL_DAYS} days)"
