"""Admin: canonical records with their variants, and the contradiction review queue."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseForbidden, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse

from licensing.features import CONTRADICTION_REVIEW
from licensing.services import has_feature, tier_for_feature
from rag.admin.common import ReadOnlyInline, document_cell
from rag.dedup import CONTRADICTION_ACTIONS, contradiction_resolve
from rag.facts import highlight_segments
from rag.models import CanonicalRecord, ChunkVariant, Contradiction


class ChunkVariantInline(ReadOnlyInline):
    """A record's variants with their provenance: document, path, date, similarity to the canonical."""

    model = ChunkVariant
    fields = ["document", "path", "doc_date", "heading_path", "similarity_to_canonical", "merged_at"]
    readonly_fields = fields
    rows_select_related = ("chunk__document",)

    @admin.display(description="document")
    def document(self, obj: ChunkVariant) -> str:
        return document_cell(obj.chunk)

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
        return document_cell(obj.canonical_chunk)

    @admin.display(description="path")
    def canonical_path(self, obj: CanonicalRecord) -> str:
        return obj.canonical_chunk.document.path if obj.canonical_chunk else "—"

    @admin.display(description="section")
    def section(self, obj: CanonicalRecord) -> str:
        return obj.canonical_chunk.heading_path if obj.canonical_chunk else "—"

    @admin.display(description="text")
    def canonical_text(self, obj: CanonicalRecord) -> str:
        return obj.canonical_chunk.text if obj.canonical_chunk else "—"


def _review_gated_note() -> str:
    """What review would add, said where the buttons would be."""
    return (f"Reviewing contradictions comes with the {tier_for_feature(CONTRADICTION_REVIEW) or 'a paid'} plan: "
            "keeping one side makes it the text that answers quote and cite, and demotes the other.")


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
        return document_cell(obj.chunk_a)

    @admin.display(description="B")
    def document_b(self, obj: Contradiction) -> str:
        return document_cell(obj.chunk_b)

    @admin.display(description="what differs")
    def what_differs(self, obj: Contradiction) -> str:
        return "; ".join(f"{d.get('a', '')} → {d.get('b', '')}" for d in obj.differences[:3])[:200]

    def _resolve_all(self, request: HttpRequest, queryset: QuerySet[Contradiction], action: str) -> None:
        rows = list(queryset.values_list("pk", "workspace_id"))
        ids = [pk for pk, workspace_id in rows if has_feature(workspace_id, CONTRADICTION_REVIEW)]
        for contradiction_id in ids:
            contradiction_resolve(contradiction_id=contradiction_id, action=action, user=request.user)
        self.message_user(request, _decision_summary(action, len(ids)), messages.SUCCESS)
        if skipped := len(rows) - len(ids):
            self.message_user(request, f"{skipped} contradiction(s) left as they were: {_review_gated_note()}",
                              messages.WARNING)

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
        licensed = has_feature(contradiction.workspace_id, CONTRADICTION_REVIEW)
        if request.method == "POST":
            if not self.has_change_permission(request, contradiction):
                raise PermissionDenied
            if not licensed:
                return HttpResponseForbidden(_review_gated_note())
            action = request.POST.get("action", "")
            if action not in CONTRADICTION_ACTIONS:
                return HttpResponseBadRequest("action must be keep_a, keep_b or dismiss")
            contradiction_resolve(contradiction_id=contradiction.pk, action=action, user=request.user,
                                  note=request.POST.get("note", "").strip())
            self.message_user(request, _decision_message(contradiction, action), messages.SUCCESS)
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
            "can_change": licensed and self.has_change_permission(request, contradiction),
            "review_gated": "" if licensed else _review_gated_note(),
            **(extra_context or {}),
        }
        return TemplateResponse(request, self.review_template, context)


def _decision_message(contradiction: Contradiction, action: str) -> str:
    """What the decision changes, in the reviewer's words, naming the documents."""
    a = contradiction.chunk_a.document.title or contradiction.chunk_a.document.path
    b = contradiction.chunk_b.document.title or contradiction.chunk_b.document.path
    if action == "dismiss":
        return f"Dismissed: “{a}” and “{b}” are no longer shown as disagreeing."
    kept, other = (a, b) if action == "keep_a" else (b, a)
    return f"Kept “{kept}”: answers now quote it for this passage, and “{other}” is shown as an older variant."


def _decision_summary(action: str, count: int) -> str:
    done = {"keep_a": "Kept side A", "keep_b": "Kept side B", "dismiss": "Dismissed"}[action]
    return f"{done} in {count} contradiction{'s' if count != 1 else ''}."
