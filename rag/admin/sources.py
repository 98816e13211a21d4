"""Sources in the admin: list with their last sync, edit settings, "Sync now" as an action."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from rag.models import Source, SourceFile
from rag.progress import job_summary
from rag.sources import SourceError, location_shown, source_check, source_sync_request


class SourceAdminForm(forms.ModelForm):
    """Adding and editing a source in the admin go through `source add`'s own check (rag.sources.source_check)."""

    class Meta:
        model = Source
        fields = "__all__"  # noqa: DJ007 - the ModelAdmin's own fields and read-only fields choose what shows

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        try:
            data["location"] = source_check(
                name=data["name"], kind=data["kind"], location=data["location"], branch=data.get("branch", ""),
                tags_pattern=data.get("tags_pattern", ""), every_minutes=data["every_minutes"], watch=data["watch"])
        except SourceError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    form = SourceAdminForm
    list_display = ("name", "workspace", "kind", "where", "every_minutes", "watch", "last_sync_at", "last_result")
    list_filter = ("kind", "workspace")
    search_fields = ("name", "location")
    readonly_fields = ("paused_reason", "last_sync_at", "last_job", "last_changes", "last_error", "state", "created_at")
    actions = ["sync_now"]

    def save_model(self, request: HttpRequest, obj: Source, form, change: bool) -> None:  # noqa: ANN001
        super().save_model(request, obj, form, change)
        if not change:  # added here as on the page: its first sync queued, whatever its schedule
            source_sync_request(source=obj, user=request.user)

    @admin.display(description="location")
    def where(self, source: Source) -> str:
        return location_shown(source.location)

    @admin.display(description="last sync")
    def last_result(self, source: Source) -> str:
        if source.paused_reason:
            return f"paused: {source.paused_reason}"
        if source.last_error:
            return f"failed: {source.last_error}"
        return job_summary(job=source.last_job) if source.last_job else "never synced"

    @admin.action(description="Sync now", permissions=["change"])
    def sync_now(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        for source in queryset.select_related("last_job"):
            try:
                source_sync_request(source=source, user=request.user)
            except SourceError as exc:
                self.message_user(request, f"{source.name}: {exc}", messages.ERROR)
            else:
                self.message_user(request, f"{source.name}: sync queued")


@admin.register(SourceFile)
class SourceFileAdmin(admin.ModelAdmin):
    """Which tags hold which blob: the evidence behind a Git document's label and its "as of" scope."""

    list_display = ("file_path", "blob", "source", "first_tag", "tag_count", "on_branch")
    list_filter = ("source", "on_branch")
    search_fields = ("file_path", "blob")
    readonly_fields = ("source", "file_path", "blob", "document_path", "tags", "on_branch")

    @admin.display(description="first tag")
    def first_tag(self, row: SourceFile) -> str:
        return row.tags[0] if row.tags else "—"

    @admin.display(description="tags")
    def tag_count(self, row: SourceFile) -> int:
        return len(row.tags)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
