"""Admin: documents and their chunks; archive, re-index, split off, delete through rag.documents."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from rag.documents import documents_archive, documents_reindex, documents_remove, documents_unarchive
from rag.admin.common import (
    DateSourceFilter,
    ReadOnlyInline,
    SourcesInWords,
    VersionSourceFilter,
    document_cell,
    lineage_edit_report,
)
from rag.admin.edits import (
    SET_BY_HAND,
    document_date_set,
    document_lineage_automatic,
    document_version_set,
    documents_release_set,
    family_split,
)
from rag.releases import batch_members
from rag.models import Chunk, Document
from rag.selectors import document_siblings


class ReleaseActionForm(ActionForm):
    """The action bar's extra field: the release a batch correction sets."""

    release = forms.CharField(required=False, max_length=50, label="Release",
                              widget=forms.TextInput(attrs={"placeholder": "e.g. 3.2", "size": 8}))


class ChunkInline(ReadOnlyInline):
    model = Chunk
    fields = ["chunk_index", "heading_path", "chunk_position", "lineage", "superseded_by_version", "text"]
    readonly_fields = fields
    show_change_link = False
    rows_select_related = ("superseded_by__document",)

    @admin.display(description="superseded by")
    def superseded_by_version(self, obj: Chunk) -> str:
        return document_cell(obj.superseded_by)


@admin.register(Document)
class DocumentAdmin(SourcesInWords, admin.ModelAdmin):
    list_display = ["title", "workspace", "doc_type", "version_label", "version_from", "family_link", "is_latest_version",
                    "doc_date", "date_from", "status", "archived", "chunk_count"]
    list_filter = ["workspace", "doc_type", "status", "archived", ("doc_date", admin.DateFieldListFilter),
                   ("date_source", DateSourceFilter), "is_latest_version", ("version_source", VersionSourceFilter)]
    search_fields = ["title", "path", "version_label", "family__name", "subject"]
    list_select_related = ["workspace"]
    lineage_fields = ["version_key", "version_from", "version_set_by", "date_from", "date_set_by", "back_to_automatic",
                      # the release inference placed it in (once in metadata["release"], which this page showed)
                      "inferred_label", "inferred_after", "inferred_source", "inferred_confidence", "inferred_evidence",
                      "family",
                      "family_position", "is_latest_version", "copy_of", "lineage_note", "subject", "template_siblings"]
    readonly_fields = ["workspace", "path", "format", "content_hash", "size_bytes", *lineage_fields, "status", "error",
                       "chunk_count", "indexed_at", "created_at", "updated_at", "metadata"]
    fields = ["title", "doc_type", "source_type", "tags", "entities", "version_label", "doc_date", *readonly_fields,
              "archived"]
    inlines = [ChunkInline]
    actions = ["reindex", "archive", "unarchive", "split_family", "release_set_batches"]
    action_form = ReleaseActionForm
    date_hierarchy = "doc_date"

    @admin.display(description="family", ordering="family_id")
    def family_link(self, obj: Document) -> str:
        # The id, not the name: a family is named after its newest member, whose title is a row of its own.
        if obj.family_id is None:
            return "—"
        return format_html('<a href="{}">#{}</a>', reverse("admin:rag_documentfamily_change", args=[obj.family_id]),
                           obj.family_id)

    @admin.display(description="made from the same template as")
    def template_siblings(self, obj: Document) -> str:
        # Siblings (rag.lineage.siblings): one template, other subjects; never versions of this one.
        siblings = document_siblings(document=obj)
        if not siblings:
            return "—"
        return format_html_join(", ", '<a href="{}">{}</a>', (
            (reverse("admin:rag_document_change", args=[sibling.pk]), sibling.subject or sibling.title)
            for sibling in siblings))

    @admin.display(description="set by hand")
    def back_to_automatic(self, obj: Document) -> str:
        # Buttons of the change form itself (formaction): a form cannot hold another form.
        buttons = [
            format_html('<button type="submit" class="button" formaction="{}">{}</button>',
                        reverse(f"admin:rag_document_{what}automatic", args=[obj.pk]), label)
            for what, label, source in (("version", "Version label back to automatic", obj.version_source),
                                        ("date", "Date back to automatic", obj.date_source))
            if source == SET_BY_HAND
        ]
        return format_html(" ".join(["{}"] * len(buttons)), *buttons) if buttons else "—"

    def get_urls(self):
        view = self.admin_site.admin_view(self.automatic_view)
        automatic = [path(f"<int:object_id>/automatic/{what}/", view, {"what": what},
                          name=f"rag_document_{what}automatic") for what in ("version", "date")]
        return [*automatic, *super().get_urls()]

    def automatic_view(self, request: HttpRequest, object_id: int, what: str) -> HttpResponse:
        """POST: the hand-set label or date goes back to what the file says (it is read again)."""
        if request.method != "POST":
            return HttpResponseBadRequest("POST to put the value back to automatic")
        document = get_object_or_404(Document, pk=object_id)
        if not self.has_change_permission(request, document):
            raise PermissionDenied
        job = document_lineage_automatic(document_id=document.pk, version=what == "version", date=what == "date",
                                         user=request.user)
        name = "version label" if what == "version" else "date"
        self.message_user(request, f"The {name} goes back to automatic: the file is read again (job {job.pk}).",
                          messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:rag_document_change", args=[document.pk]))

    def save_model(self, request: HttpRequest, obj: Document, form, change: bool) -> None:
        """A label or date a staff user changed is recorded as set by hand, by them, and reorders the family."""
        super().save_model(request, obj, form, change)
        if change and "version_label" in form.changed_data:
            document_version_set(document_id=obj.pk, version_label=obj.version_label, user=request.user)
        if change and "doc_date" in form.changed_data:
            document_date_set(document_id=obj.pk, doc_date=obj.doc_date, user=request.user)

    @admin.action(description="Split selected members into a new family", permissions=["change"])
    def split_family(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        selected = list(queryset.values_list("pk", flat=True))
        lineage_edit_report(self, request, lambda: family_split(document_ids=selected),
                            lambda family: f"Split {queryset.count()} document(s) into family {family.pk}.")

    @admin.action(description="Set the release (field above) of the selected documents' whole batches",
                  permissions=["change"])
    def release_set_batches(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        """A batch (same folder and file date) whose release was inferred wrong is corrected at once."""
        label = request.POST.get("release", "").strip()
        if not label:
            self.message_user(request, "Write the release (e.g. 3.2) in the Release field first.", messages.ERROR)
            return
        members = batch_members(document_ids=list(queryset.values_list("pk", flat=True)))
        lineage_edit_report(self, request,
                            lambda: documents_release_set(document_ids=members, version_label=label,
                                                          user=request.user),
                            lambda count: f"Release {label} set by hand on {count} document(s) (the selected "
                                          "documents' batches).")

    @admin.action(description="Re-index selected documents", permissions=["change"])
    def reindex(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        jobs = 0
        for workspace_id in queryset.values_list("workspace_id", flat=True).distinct():
            if documents_reindex(documents=queryset.filter(workspace_id=workspace_id), created_by=request.user):
                jobs += 1
        self.message_user(request, f"Queued {queryset.count()} document(s) in {jobs} job(s).", messages.SUCCESS)

    @admin.action(description="Archive selected documents (exclude from search)", permissions=["change"])
    def archive(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        self.message_user(request, f"Archived {documents_archive(documents=queryset)} document(s).", messages.SUCCESS)

    @admin.action(description="Unarchive selected documents", permissions=["change"])
    def unarchive(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        self.message_user(request, f"Unarchived {documents_unarchive(documents=queryset)} document(s).", messages.SUCCESS)

    # Deleting rows would leave records pointing at nothing and families with a gap: rag.documents takes
    # their chunks out of the records and the documents out of their families first.
    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        documents_remove(documents=Document.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        documents_remove(documents=queryset)
