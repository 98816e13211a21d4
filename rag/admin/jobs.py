"""Admin: indexing jobs and what happened to each of their files."""

from __future__ import annotations

from django.contrib import admin
from rag.admin.common import ReadOnlyInline
from rag.models import IndexingJob, IndexingJobItem


class IndexingJobItemInline(ReadOnlyInline):
    model = IndexingJobItem
    fields = ["path", "status", "chunk_count", "encoded_count", "error", "finished_at"]
    readonly_fields = fields


@admin.register(IndexingJob)
class IndexingJobAdmin(admin.ModelAdmin):
    list_display = ["__str__", "workspace", "source", "created_by", "created_at", "finished_at", "archived_count"]
    list_filter = ["workspace", "source"]
    list_select_related = ["workspace", "created_by"]
    readonly_fields = ["workspace", "source", "created_by", "description", "archived_count", "created_at", "finished_at"]
    inlines = [IndexingJobItemInline]
