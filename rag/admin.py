"""Operator views of workspaces, documents, indexing jobs, canonical records and contradictions."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, QuerySet
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
    HttpResponseRedirect,
)
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from licensing.features import CONTRADICTION_REVIEW
from licensing.services import has_feature, tier_for_feature
from rag.dedup.merge import CONTRADICTION_ACTIONS, chunks_detach, contradiction_resolve
from rag.dedup.facts import highlight_segments
from rag.lineage.editing import (
    LineageEditError,
    document_date_set,
    document_version_set,
    families_join,
    family_reorder,
    family_split,
)
from rag.lineage.families import documents_leave_families, family_refresh
from rag.models import (
    ApiToken,
    CanonicalRecord,
    Chunk,
    ChunkVariant,
    Contradiction,
    DocType,
    Document,
    DocumentFamily,
    IndexingJob,
    IndexingJobItem,
    QueryExpansion,
    Workspace,
)
from rag.services import documents_archive, documents_reindex, documents_unarchive
from rag.tokens import api_token_issue, api_tokens_revoke
from rag.upload_limits import stored_copies_delete


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


@admin.register(QueryExpansion)
class QueryExpansionAdmin(admin.ModelAdmin):
    """The domain dictionary that search applies to the lexical side of each question (rag.retrieval.expansion)."""

    list_display = ["term", "expansions", "workspace"]
    list_filter = ["workspace"]
    search_fields = ["term", "expansions"]


class ChunkInline(admin.TabularInline):
    model = Chunk
    fields = ["chunk_index", "heading_path", "chunk_position", "lineage", "superseded_by_version", "text"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Chunk]:
        return super().get_queryset(request).select_related("superseded_by__document")

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="superseded by")
    def superseded_by_version(self, obj: Chunk) -> str:
        return _document_cell(obj.superseded_by)


def _stored_copies_delete_on_commit(documents: QuerySet[Document]) -> None:
    """The uploaded copies removed documents were indexed from go once the removal is committed."""
    sources = list(IndexingJobItem.objects.filter(document__in=documents).values_list("source_file", flat=True))
    transaction.on_commit(lambda: stored_copies_delete(sources))


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "workspace", "doc_type", "version_label", "version_from", "family_link", "is_latest_version",
                    "doc_date", "date_from", "status", "archived", "chunk_count"]
    list_filter = ["workspace", "doc_type", "status", "archived", ("doc_date", admin.DateFieldListFilter), "date_source",
                   "is_latest_version", "version_source"]
    search_fields = ["title", "path", "version_label", "family__name"]
    list_select_related = ["workspace"]
    lineage_fields = ["version_key", "version_from", "version_set_by", "date_from", "date_set_by", "family",
                      "family_position", "is_latest_version", "copy_of", "lineage_note"]
    readonly_fields = ["workspace", "path", "format", "content_hash", "size_bytes", *lineage_fields, "status", "error",
                       "chunk_count", "indexed_at", "created_at", "updated_at", "metadata"]
    fields = ["title", "doc_type", "source_type", "tags", "entities", "version_label", "doc_date", *readonly_fields,
              "archived"]
    inlines = [ChunkInline]
    actions = ["reindex", "archive", "unarchive", "split_family"]
    date_hierarchy = "doc_date"

    @admin.display(description="family", ordering="family_id")
    def family_link(self, obj: Document) -> str:
        # The id, not the name: a family is named after its newest member, whose title is a row of its own.
        if obj.family_id is None:
            return "—"
        return format_html('<a href="{}">#{}</a>', reverse("admin:rag_documentfamily_change", args=[obj.family_id]),
                           obj.family_id)

    @admin.display(description="version from", ordering="version_source")
    def version_from(self, obj: Document) -> str:
        return obj.version_source_label

    @admin.display(description="date from", ordering="date_source")
    def date_from(self, obj: Document) -> str:
        return obj.date_source_label

    def save_model(self, request: HttpRequest, obj: Document, form, change: bool) -> None:
        """A label or date a staff user changed is recorded as set by hand, by them, and reorders the family."""
        super().save_model(request, obj, form, change)
        if change and "version_label" in form.changed_data:
            document_version_set(document_id=obj.pk, version_label=obj.version_label, user=request.user)
        if change and "doc_date" in form.changed_data:
            document_date_set(document_id=obj.pk, doc_date=obj.doc_date, user=request.user)

    @admin.action(description="Split selected members into a new family", permissions=["change"])
    def split_family(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        try:
            family = family_split(document_ids=list(queryset.values_list("pk", flat=True)))
        except LineageEditError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return
        self.message_user(request, f"Split {queryset.count()} document(s) into family {family.pk}.", messages.SUCCESS)

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

    # Deleting rows would leave records pointing at nothing and families with a gap: their chunks
    # leave the records and the documents their families first, and those families are re-ordered.
    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        with transaction.atomic():
            _stored_copies_delete_on_commit(Document.objects.filter(pk=obj.pk))
            family_ids = documents_leave_families(document_ids=[obj.pk])
            chunks_detach(chunk_ids=list(obj.chunks.values_list("pk", flat=True)))
            super().delete_model(request, obj)
            for family_id in family_ids:
                family_refresh(family_id=family_id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        with transaction.atomic():
            _stored_copies_delete_on_commit(queryset)
            family_ids = documents_leave_families(document_ids=list(queryset.values_list("pk", flat=True)))
            chunks_detach(chunk_ids=list(Chunk.objects.filter(document__in=queryset).values_list("pk", flat=True)))
            super().delete_queryset(request, queryset)
            for family_id in family_ids:
                family_refresh(family_id=family_id)


class FamilyMemberInline(admin.TabularInline):
    """The members, oldest first; edit the positions to reorder them (membership changes by split and join)."""

    model = Document
    fk_name = "family"
    fields = ["member", "version_label", "version_source", "doc_date", "date_source", "family_position",
              "is_latest_version", "copy_of", "lineage_note"]
    readonly_fields = ["member", "version_label", "version_source", "doc_date", "date_source", "is_latest_version",
                       "copy_of", "lineage_note"]
    ordering = ["family_position", "pk"]
    extra = 0
    can_delete = False  # deleting here would delete the document itself

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="document")
    def member(self, obj: Document) -> str:
        return format_html('<a href="{}">{}</a>', reverse("admin:rag_document_change", args=[obj.pk]),
                           obj.title or obj.path)


@admin.register(DocumentFamily)
class DocumentFamilyAdmin(admin.ModelAdmin):
    """Families found by the merge workers; a staff user may rename, reorder, split and join them."""

    list_display = ["name", "workspace", "member_count", "edited_by_hand", "updated_at"]
    list_filter = ["workspace", "edited_by_hand"]
    search_fields = ["name", "members__title", "members__path"]
    fields = ["name", "workspace", "edited_by_hand", "split_link", "created_at", "updated_at"]
    readonly_fields = ["workspace", "edited_by_hand", "split_link", "created_at", "updated_at"]
    inlines = [FamilyMemberInline]
    actions = ["join_families"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[DocumentFamily]:
        return super().get_queryset(request).select_related("workspace").annotate(member_total=Count("members"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # families come from evidence, or from splitting one

    @admin.display(description="members", ordering="member_total")
    def member_count(self, obj: DocumentFamily) -> int:
        return obj.member_total

    @admin.display(description="split")
    def split_link(self, obj: DocumentFamily) -> str:
        url = reverse("admin:rag_document_changelist") + f"?family__id__exact={obj.pk}"
        return format_html('<a href="{}">Choose members to split off</a> (action “Split selected members into a new '
                           'family”)', url)

    def save_formset(self, request: HttpRequest, form, formset, change: bool) -> None:
        """Positions edited in the members inline become the family's order, through the service."""
        if formset.model is not Document or not formset.has_changed():
            return super().save_formset(request, form, formset, change)
        formset.save(commit=False)  # fills changed_objects for the change message; the service writes
        rows = [(row.cleaned_data["family_position"], row.instance.family_position, row.instance.pk)
                for row in formset.forms]
        order = [pk for _, _, pk in sorted(rows, key=lambda r: (r[0] is None, r[0] or 0, r[1] or 0, r[2]))]
        try:
            family_reorder(family_id=form.instance.pk, document_ids=order)
        except LineageEditError as exc:
            self.message_user(request, str(exc), messages.ERROR)

    # A deleted family's members would keep their positions and superseded chunks: they leave it first.
    def delete_model(self, request: HttpRequest, obj: DocumentFamily) -> None:
        with transaction.atomic():
            documents_leave_families(document_ids=list(obj.members.values_list("pk", flat=True)))
            super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[DocumentFamily]) -> None:
        with transaction.atomic():
            documents_leave_families(
                document_ids=list(Document.objects.filter(family__in=queryset).values_list("pk", flat=True)))
            super().delete_queryset(request, queryset)

    @admin.action(description="Join selected families", permissions=["change"])
    def join_families(self, request: HttpRequest, queryset: QuerySet[DocumentFamily]) -> None:
        try:
            family = families_join(family_ids=list(queryset.values_list("pk", flat=True)))
        except LineageEditError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return
        self.message_user(request, f"Joined into {family} ({family.members.count()} members).", messages.SUCCESS)


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
        return _document_cell(obj.chunk_a)

    @admin.display(description="B")
    def document_b(self, obj: Contradiction) -> str:
        return _document_cell(obj.chunk_b)

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


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Staff can make a token for a user (its text is shown once) and revoke any; the hash never shows."""

    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["user"]
    search_fields = ["name", "prefix", "user__username"]
    fields = ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        return [*self.readonly_fields, "user"] if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: ApiToken, form, change: bool) -> None:
        if change:
            obj.save(update_fields=["name"])
            return
        raw = api_token_issue(token=obj)
        self.message_user(request, f"Token for {obj.user}: {raw} (copy it now; it will not be shown again).",
                          messages.WARNING)

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        self.message_user(request, f"Revoked {api_tokens_revoke(tokens=queryset)} token(s).", messages.SUCCESS)
