"""What several admin screens share: read-only inlines, a chunk's document cell, hand edits of lineage."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from rag.admin.edits import LineageEditError
from rag.models import Chunk, Document, DocumentFamily


class ReadOnlyInline(admin.TabularInline):
    """Rows shown under their parent that the screen never adds or deletes (they come from indexing and merging)."""

    extra = 0
    can_delete = False
    rows_select_related: tuple[str, ...] = ()  # what each row shows beyond its own fields

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        rows = super().get_queryset(request)
        # select_related() with no field would follow every foreign key: only what was named.
        return rows.select_related(*self.rows_select_related) if self.rows_select_related else rows

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


def document_cell(chunk: Chunk | None) -> str:
    if chunk is None:
        return "—"
    document = chunk.document
    date = document.doc_date.date().isoformat() if document.doc_date else "undated"
    return format_html('<a href="{}">{}</a> <span class="quiet">({})</span>',
                       reverse("admin:rag_document_change", args=[document.pk]), document.title or document.path, date)


def lineage_edit_report(model_admin: admin.ModelAdmin, request: HttpRequest, edit: Callable[[], DocumentFamily],
                        done: Callable[[DocumentFamily], str]) -> None:
    """Run a hand edit of families; the user reads its refusal, or what `done` says of the family it made."""
    try:
        family = edit()
    except LineageEditError as exc:
        model_admin.message_user(request, str(exc), messages.ERROR)
        return
    model_admin.message_user(request, done(family), messages.SUCCESS)


class _LabelledCodeFilter(admin.AllValuesFieldListFilter):
    """A code column's values (`pdf_moddate`) in the words the pages use ("PDF modification date")."""

    labels: dict[str, str] = {}

    def choices(self, changelist):
        for choice in super().choices(changelist):
            yield {**choice, "display": self.labels.get(choice["display"], choice["display"])}


class DateSourceFilter(_LabelledCodeFilter):
    labels = Document.DATE_SOURCE_LABELS


class VersionSourceFilter(_LabelledCodeFilter):
    labels = Document.VERSION_SOURCE_LABELS


class SourcesInWords:
    """Where a document's version label and date came from, in words, for list columns and read-only fields."""

    @admin.display(description="version from", ordering="version_source")
    def version_from(self, obj: Document) -> str:
        return obj.version_source_label

    @admin.display(description="date from", ordering="date_source")
    def date_from(self, obj: Document) -> str:
        return obj.date_source_label
