"""Indexing jobs, their items, and the sources (folders, Git repositories) whose syncs start them."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from rag.models.documents import Document, shown_path
from rag.models.workspaces import Workspace


class IndexingJob(models.Model):
    """A batch of files queued together; its items carry per-document status."""

    class Source(models.TextChoices):
        CLI = "cli", "Command line"
        UPLOAD = "upload", "Upload"
        DEMO = "demo", "Demo corpus"
        REINDEX = "reindex", "Re-index"
        SYNC = "sync", "Source sync"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="jobs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    source = models.CharField(max_length=20, choices=Source.choices)
    description = models.CharField(max_length=500, blank=True)
    archived_count = models.PositiveIntegerField(default=0)
    unchanged_count = models.PositiveIntegerField(default=0, db_default=0,
                                                  help_text="A sync's unchanged files: counted here, no item each.")
    sync_source = models.ForeignKey("Source", null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs",
                                    help_text="The folder or Git source this job synced.")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Job {self.pk} ({self.get_source_display()})"


class IndexingJobItem(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        INDEXED = "indexed", "Indexed"
        UNCHANGED = "unchanged", "Unchanged"
        SKIPPED = "skipped", "Skipped"
        FAILED = "failed", "Failed"

    FINISHED = (Status.INDEXED, Status.UNCHANGED, Status.SKIPPED, Status.FAILED)

    job = models.ForeignKey(IndexingJob, on_delete=models.CASCADE, related_name="items")
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="job_items")
    path = models.CharField(max_length=1024, help_text="The document path as it will be stored.")
    display_path = models.CharField(max_length=1024, blank=True, db_default="",
                                    help_text="The path pages show: relative to the folder it was ingested from.")
    source_file = models.CharField(max_length=2048, help_text="Where the worker reads the bytes.")
    stored_bytes = models.BigIntegerField(default=0, db_default=0,
                                          help_text="Size of the stored copy it points to; 0 once deleted, or none.")
    file_mtime = models.FloatField(null=True, blank=True,
                                   help_text="The file's own mtime when the bytes' copy lost it (browser, zip).")
    mtime_is_upload_time = models.BooleanField(default=False, db_default=False,
                                               help_text="Nothing told us when the file was written.")
    # What the source knows better than the file: a Git tag's label and its commit's date (rag.sources.git_sync).
    hints = models.JSONField(default=dict, blank=True, db_default={})
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    error = models.TextField(blank=True)
    note = models.CharField(max_length=1000, blank=True, default="", db_default="",
                            help_text="How far a slow file is (OCR page 3 of 12), then what was left out of it.")
    chunk_count = models.PositiveIntegerField(default=0)
    encoded_count = models.PositiveIntegerField(default=0, help_text="Chunks that needed the encoder (not cached).")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Who runs a RUNNING item and until when: past the lease, its worker is presumed dead (rag.jobs).
    task_id = models.CharField(max_length=64, blank=True, db_default="", default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    lost_runs = models.PositiveSmallIntegerField(default=0, db_default=0,
                                                 help_text="Runs whose worker died before they finished.")
    merged_at = models.DateTimeField(null=True, blank=True,
                                     help_text="When the merge of its new chunks ended (or gave up); empty: pending.")

    class Meta:
        ordering = ["job_id", "id"]
        # Every merge message looks for its workspace's indexed items awaiting a merge (rag.jobs.merging): the few
        # of them, not all the items ever indexed.
        indexes = [models.Index(fields=["finished_at"], name="jobitem_awaiting_merge",
                                condition=models.Q(status="indexed", merged_at__isnull=True))]

    def __str__(self) -> str:
        return self.path

    @property
    def shown_path(self) -> str:
        return self.display_path or shown_path(self.path)


class Source(models.Model):
    """A folder or Git repository that a workspace keeps in sync (rag.sources): on a schedule, or on demand."""

    class Kind(models.TextChoices):
        FOLDER = "folder", "Folder"
        GIT = "git", "Git repository"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="sources")
    name = models.SlugField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    location = models.CharField(max_length=2048, help_text="A folder, or a Git repository's path or clone URL.")
    branch = models.CharField(max_length=200, blank=True,
                              help_text="Git: the branch read; empty: the default branch.")
    tags_pattern = models.CharField(max_length=200, blank=True,
                                    help_text="Git: a glob of the tags read; empty: tags that parse as versions.")
    include = ArrayField(models.CharField(max_length=300), default=list, blank=True,
                         help_text="Globs of the paths read (inside the folder or repository); empty: all.")
    exclude = ArrayField(models.CharField(max_length=300), default=list, blank=True,
                         help_text="Globs of the paths left out.")
    every_minutes = models.PositiveIntegerField(default=60, help_text="Synced this often; 0: only on demand.")
    watch = models.BooleanField(default=False,
                                help_text="Folder: also sync on file-system events (make run's watcher).")
    paused_reason = models.CharField(max_length=500, blank=True,
                                     help_text="Why syncing stopped (the folder vanished); cleared by the next good sync.")
    last_sync_at = models.DateTimeField(null=True, blank=True)
    last_job = models.ForeignKey(IndexingJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_changes = models.JSONField(default=dict, blank=True,
                                    help_text="What the last sync found: renamed, archived, tags read, ...")
    last_error = models.TextField(blank=True, help_text="Why the last sync could not start.")
    # Git: what was read ({"tags": {name: commit}, "branch": name, "branch_commit": sha}), so a re-sync reads only news.
    state = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workspace_id", "name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="source_unique_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def paused(self) -> bool:
        return bool(self.paused_reason)


class SourceFile(models.Model):
    """One (path, blob) of a Git source: its document, and the tags whose trees hold that very blob."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="files")
    file_path = models.CharField(max_length=1024, help_text="The path inside the repository.")
    blob = models.CharField(max_length=64)
    document_path = models.CharField(max_length=1024, help_text="Document.path of its document in the workspace.")
    tags = ArrayField(models.CharField(max_length=200), default=list, blank=True, help_text="Oldest first.")
    on_branch = models.BooleanField(default=False, help_text="The branch's head holds it (the unreleased version).")

    class Meta:
        ordering = ["source_id", "file_path"]
        constraints = [models.UniqueConstraint(fields=["source", "file_path", "blob"], name="source_file_unique_blob")]

    def __str__(self) -> str:
        return f"{self.file_path}@{self.blob[:10]}"
