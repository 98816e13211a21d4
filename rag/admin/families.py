"""Admin: version families, reordered, split and joined by hand (rag.admin.edits)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from rag.admin.common import ReadOnlyInline, SourcesInWords, lineage_edit_report
from rag.admin.edits import LineageEditError, families_join, family_reorder, family_split
from rag.lineage import documents_leave_families
from rag.models import Document, DocumentFamily


class FamilyMemberForm(forms.ModelForm):
    split_off = forms.BooleanField(required=False, label="split off",
                                   help_text="Tick the members that are not versions of this document.")

    class Meta:
        model = Document
        fields = ["family_position"]


class FamilyMemberInline(SourcesInWords, ReadOnlyInline):
    """The members grouped by title (a wrong member stands out), oldest first within a title; edit the positions to
    reorder them, tick "split off" to move the ticked ones into a family of their own."""

    model = Document
    form = FamilyMemberForm
    fk_name = "family"
    fields = ["split_off", "member", "version_label", "version_from", "doc_date", "date_from", "family_position",
              "is_latest_version", "copy_of", "lineage_note"]
    readonly_fields = ["member", "version_label", "version_from", "doc_date", "date_from", "is_latest_version",
                       "copy_of", "lineage_note"]
    ordering = ["title_key", "family_position", "pk"]  # not deletable here: that would delete the document itself

    @admin.display(description="document")
    def member(self, obj: Document) -> str:
        return format_html('<a href="{}">{}</a>', reverse("admin:rag_document_change", args=[obj.pk]),
                           obj.title or obj.path)


@admin.register(DocumentFamily)
class DocumentFamilyAdmin(admin.ModelAdmin):
    """Families found by the merge workers; a staff user may rename, reorder, split and join them."""

    list_display = ["name", "workspace", "member_count", "title_count", "edited_by_hand", "updated_at"]
    list_filter = ["workspace", "edited_by_hand"]
    search_fields = ["name", "members__title", "members__path"]
    fields = ["name", "workspace", "edited_by_hand", "split_link", "created_at", "updated_at"]
    readonly_fields = ["workspace", "edited_by_hand", "split_link", "created_at", "updated_at"]
    inlines = [FamilyMemberInline]
    actions = ["join_families"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[DocumentFamily]:
        # Annotated before the ordering that sorts by it (the base class orders first).
        rows = DocumentFamily.objects.select_related("workspace").annotate(
            member_total=Count("members"), title_total=Count("members__title_key", distinct=True))
        return rows.order_by(*self.get_ordering(request))

    def get_ordering(self, request: HttpRequest) -> list[str]:
        return ["-member_total", "name"]  # a family that swallowed unrelated pages is large: those come first

    @admin.display(description="titles", ordering="title_total")
    def title_count(self, obj: DocumentFamily) -> int:
        """Distinct titles (versions stripped) among the members: more than one is worth a look."""
        return obj.title_total

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
        """Ticked members split off into a new family; positions edited in the members inline become the family's
        order; both through the lineage services."""
        if formset.model is not Document or not formset.has_changed():
            return super().save_formset(request, form, formset, change)
        formset.save(commit=False)  # fills changed_objects for the change message; the services write
        split = [row.instance.pk for row in formset.forms if row.cleaned_data.get("split_off")]
        if split:
            lineage_edit_report(self, request, lambda: family_split(document_ids=split),
                                lambda family: f"Split {len(split)} member(s) off into {family}.")
            return
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
        selected = list(queryset.values_list("pk", flat=True))
        lineage_edit_report(self, request, lambda: families_join(family_ids=selected),
                            lambda family: f"Joined into {family} ({family.members.count()} members).")
