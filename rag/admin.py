"""Operator views of workspaces, documents, indexing jobs, canonical records and contradictions."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from rag.dedup.merge import CONTRADICTION_ACTIONS, chunks_detach, contradiction_resolve
from rag.dedup.facts import highlight_segments
from rag.models import (
    CanonicalRecord,
    Chunk,
    ChunkVariant,
    Contradiction,
    DocType,
    Document,
    IndexingJob,
    IndexingJobItem,
    Workspace,
)
from rag.services import documents_archive, documents_reindex, documents_unarchive


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["members"]


@admin.register(DocType)
class DocTypeAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "keyword_count"]
    search_fields = ["slug", "name"]

    @admin.display(description="keywords")
    def keyword_count(self, obj: DocType) -> int:
        return len(obj.keywords)


class ChunkInline(admin.TabularInline):
    model = Chunk
    fields = ["chunk_index", "heading_path", "chunk_position", "text"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "workspace", "doc_type", "doc_date", "date_source", "status", "archived", "chunk_count"]
    list_filter = ["workspace", "doc_type", "status", "archived", ("doc_date", admin.DateFieldListFilter), "date_source"]
    search_fields = ["title", "path"]
    list_select_related = ["workspace"]
    readonly_fields = ["workspace", "path", "format", "content_hash", "size_bytes", "doc_date", "date_source",
                       "status", "error", "chunk_count", "indexed_at", "created_at", "updated_at", "metadata"]
    fields = ["title", "doc_type", "source_type", "tags", "entities", *readonly_fields, "archived"]
    inlines = [ChunkInline]
    actions = ["reindex", "archive", "unarchive"]
    date_hierarchy = "doc_date"

    @admin.action(description="Re-index selected documents")
    def reindex(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        jobs = 0
        for workspace_id in queryset.values_list("workspace_id", flat=True).distinct():
            if documents_reindex(documents=queryset.filter(workspace_id=workspace_id), created_by=request.user):
                jobs += 1
        self.message_user(request, f"Queued {queryset.count()} document(s) in {jobs} job(s).", messages.SUCCESS)

    @admin.action(description="Archive selected documents (exclude from search)")
    def archive(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        self.message_user(request, f"Archived {documents_archive(documents=queryset)} document(s).", messages.SUCCESS)

    @admin.action(description="Unarchive selected documents")
    def unarchive(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        self.message_user(request, f"Unarchived {documents_unarchive(documents=queryset)} document(s).", messages.SUCCESS)

    # Deleting rows would leave records pointing at nothing: their chunks leave the records first.
    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        with transaction.atomic():
            chunks_detach(chunk_ids=list(obj.chunks.values_list("pk", flat=True)))
            super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        with transaction.atomic():
            chunks_detach(chunk_ids=list(Chunk.objects.filter(document__in=queryset).values_list("pk", flat=True)))
            super().delete_queryset(request, queryset)


class IndexingJobItemInline(admin.TabularInline):
    model = IndexingJobItem
    fields = ["path", "status", "chunk_count", "encoded_count", "error", "finished_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(IndexingJob)
class IndexingJobAdmin(admin.ModelAdmin):
    list_display = ["__str__", "workspace", "source", "created_by", "created_at", "finished_at", "archived_count"]
    list_filter = ["workspace", "source"]
    list_select_related = ["workspace", "created_by"]
    readonly_fields = ["workspace", "source", "created_by", "description", "archived_count", "created_at", "finished_at"]
    inlines = [IndexingJobItemInline]


def _document_cell(chunk: Chunk | None) -> str:
    if chunk is None:
        return "—"
    document = chunk.document
    date = document.doc_date.date().isoformat() if document.doc_date else "undated"
    return format_html('<a href="{}">{}</a> <span class="quiet">({})</span>',
                       reverse("admin:rag_document_change", args=[document.pk]), document.title or document.path, date)


class ChunkVariantInline(admin.TabularInline):
    """A record's variants with their provenance: document, path, date, similarity to the canonical."""

    model = ChunkVariant
    fields = ["document", "path", "doc_date", "heading_path", "similarity_to_canonical", "merged_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[ChunkVariant]:
        return super().get_queryset(request).select_related("chunk__document")

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="document")
    def document(self, obj: ChunkVariant) -> str:
        return _document_cell(obj.chunk)

    @admin.display(description="path")
    def path(self, obj: ChunkVariant) -> str:
        return obj.chunk.document.path

    @admin.display(description="date")
    def doc_date(self, obj: ChunkVariant) -> str:
        return obj.chunk.document.doc_date.date().isoformat() if obj.chunk.document.doc_date else "unknown"

    @admin.display(description="section")
    def heading_path(self, obj: ChunkVariant) -> str:
        return obj.chunk.heading_path

    @admin.display(description="similarity to the canonical")
    def similarity_to_canonical(self, obj: ChunkVariant) -> str:
        return f"{obj.similarity:.3f}"


@admin.register(CanonicalRecord)
class CanonicalRecordAdmin(admin.ModelAdmin):
    """Built by the merge workers; read-only here (a contradiction review changes the canonical)."""

    list_display = ["__str__", "canonical", "section", "merge_count", "workspace", "updated_at"]
    list_filter = ["workspace"]
    list_select_related = ["workspace", "canonical_chunk__document"]
    search_fields = ["canonical_chunk__document__path", "canonical_chunk__document__title",
                     "canonical_chunk__heading_path"]
    fields = ["workspace", "canonical", "canonical_path", "section", "canonical_text", "merge_count", "created_at",
              "updated_at"]
    readonly_fields = fields
    inlines = [ChunkVariantInline]
    show_full_result_count = False  # the filtered count is enough; a second COUNT(*) over every record is not

    def get_queryset(self, request: HttpRequest) -> QuerySet[CanonicalRecord]:
        return super().get_queryset(request).select_related("workspace", "canonical_chunk__document")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict:
        # Records follow the chunks; deleted ones would come back at the next merge. (Deletion itself
        # stays allowed: deleting a workspace or document in the admin cascades to its records.)
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.display(description="canonical", ordering="canonical_chunk__document__doc_date")
    def canonical(self, obj: CanonicalRecord) -> str:
        return _document_cell(obj.canonical_chunk)

    @admin.display(description="path")
    def canonical_path(self, obj: CanonicalRecord) -> str:
        return obj.canonical_chunk.document.path if obj.canonical_chunk else "—"

    @admin.display(description="section")
    def section(self, obj: CanonicalRecord) -> str:
        return obj.canonical_chunk.heading_path if obj.canonical_chunk else "—"

    @admin.display(description="text")
    def canonical_text(self, obj: CanonicalRecord) -> str:
        return obj.canonical_chunk.text if obj.canonical_chunk else "—"


@admin.register(Contradiction)
class ContradictionAdmin(admin.ModelAdmin):
    """Review queue: the two texts side by side; keep A, keep B or dismiss, each recorded with who and when."""

    list_display = ["__str__", "document_a", "document_b", "what_differs", "cosine", "status", "reviewed_by",
                    "reviewed_at", "workspace"]
    list_filter = ["status", "workspace"]
    list_select_related = ["workspace", "chunk_a__document", "chunk_b__document", "reviewed_by"]
    search_fields = ["chunk_a__document__path", "chunk_b__document__path", "note"]
    actions = ["keep_a", "keep_b", "dismiss"]
    show_full_result_count = False
    review_template = "admin/rag/contradiction/review.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # a deleted pair would be raised again: dismiss it instead
        return actions

    @admin.display(description="similarity", ordering="similarity")
    def cosine(self, obj: Contradiction) -> str:
        return f"{obj.similarity:.3f}"

    @admin.display(description="A")
    def document_a(self, obj: Contradiction) -> str:
        return _document_cell(obj.chunk_a)

    @admin.display(description="B")
    def document_b(self, obj: Contradiction) -> str:
        return _document_cell(obj.chunk_b)

    @admin.display(description="what differs")
    def what_differs(self, obj: Contradiction) -> str:
        return "; ".join(f"{d.get('a', '')} → {d.get('b', '')}" for d in obj.differences[:3])[:200]

    def _resolve_all(self, request: HttpRequest, queryset: QuerySet[Contradiction], action: str) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        for contradiction_id in ids:
            contradiction_resolve(contradiction_id=contradiction_id, action=action, user=request.user)
        self.message_user(request, f"{len(ids)} contradiction(s): {CONTRADICTION_ACTIONS[action].replace('_', ' ')}.",
                          messages.SUCCESS)

    @admin.action(description="Keep A (A becomes the canonical, B is demoted)", permissions=["change"])
    def keep_a(self, request: HttpRequest, queryset: QuerySet[Contradiction]) -> None:
        self._resolve_all(request, queryset, "keep_a")

    @admin.action(description="Keep B (B becomes the canonical, A is demoted)", permissions=["change"])
    def keep_b(self, request: HttpRequest, queryset: QuerySet[Contradiction]) -> None:
        self._resolve_all(request, queryset, "keep_b")

    @admin.action(description="Dismiss (not a real conflict)", permissions=["change"])
    def dismiss(self, request: HttpRequest, queryset: QuerySet[Contradiction]) -> None:
        self._resolve_all(request, queryset, "dismiss")

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None) -> HttpResponse:
        """The review page replaces the change form: GET shows both texts, POST records a decision."""
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        contradiction = get_object_or_404(
            Contradiction.objects.select_related("workspace", "chunk_a__document", "chunk_b__document",
                                                 "reviewed_by"),
            pk=object_id,
        )
        if request.method == "POST":
            if not self.has_change_permission(request, contradiction):
                raise PermissionDenied
            action = request.POST.get("action", "")
            if action not in CONTRADICTION_ACTIONS:
                return HttpResponseBadRequest("action must be keep_a, keep_b or dismiss")
            contradiction_resolve(contradiction_id=contradiction.pk, action=action, user=request.user,
                                  note=request.POST.get("note", "").strip())
            self.message_user(request, f"{contradiction}: {CONTRADICTION_ACTIONS[action].replace('_', ' ')}.",
                              messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:rag_contradiction_changelist"))
        differences = contradiction.differences
        spans_a = [span for difference in differences for span in difference.get("a_spans", [])]
        spans_b = [span for difference in differences for span in difference.get("b_spans", [])]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Review {contradiction}",
            "contradiction": contradiction,
            "sides": [
                ("A", contradiction.chunk_a, highlight_segments(contradiction.chunk_a.text, spans_a)),
                ("B", contradiction.chunk_b, highlight_segments(contradiction.chunk_b.text, spans_b)),
            ],
            "differences": differences,
            "resolution_label": {"kept_a": "kept A", "kept_b": "kept B"}.get(contradiction.resolution,
                                                                            contradiction.resolution),
            "can_change": self.has_change_permission(request, contradiction),
            **(extra_context or {}),
        }
        return TemplateResponse(request, self.review_template, context)
