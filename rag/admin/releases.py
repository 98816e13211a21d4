"""Admin: the release calendar each workspace read from its series pages, dated, corrected or hidden by staff."""

from __future__ import annotations

import re

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.timezone import localtime

from django.db.models import QuerySet

from rag.jobs import releases_settle_request, releases_settle_state
from rag.releases import best_cased, parse_version, version_key
from rag.models import Release, Workspace


# What a person writes as a release: "2.2", "5.1.4", "3.1rc2"; never a hash that packaging would parse ("40b08594").
_RELEASE = re.compile(r"v?\d{1,4}(?:\.\d{1,4}){0,3}(?:(?:a|b|rc)\d{1,3})?", re.I)


class ReleaseForm(forms.ModelForm):
    class Meta:
        model = Release
        fields = ["workspace", "series", "version", "date", "hidden"]

    def clean_version(self) -> str:
        text = self.cleaned_data["version"].strip()
        parsed = parse_version(text) if _RELEASE.fullmatch(text) else None
        if parsed is None:
            raise forms.ValidationError("Not a release version: write it as 2.2, 5.1.4 or 3.1rc2.")
        return str(parsed)


class SeriesFilter(admin.SimpleListFilter):
    """One choice per series however its pages case it ("LUMEN GATEWAY" and "Lumen Gateway" are one series)."""

    title = "series"
    parameter_name = "series"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        names = best_cased(model_admin.get_queryset(request).exclude(series="").values_list("series", flat=True))
        return sorted(((key, name) for key, name in names.items()), key=lambda choice: choice[1].casefold())

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(series__iexact=self.value()) if self.value() else queryset


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    """Each release a series page states, with its date and where it was read. A row staff save is the calendar's
    word on its release (read rows follow their pages); saving places the workspace's documents again."""

    form = ReleaseForm
    list_display = ["release", "date", "workspace", "source", "how", "page", "hidden"]
    list_filter = ["workspace", "source", "hidden", SeriesFilter]
    search_fields = ["series", "version", "document__title"]
    fields = ["workspace", "series", "version", "date", "hidden", "source", "how", "page", "set_by", "updated_at"]
    readonly_fields = ["source", "how", "page", "set_by", "updated_at"]
    ordering = ["workspace", "series", "version_key"]

    def get_readonly_fields(self, request: HttpRequest, obj: Release | None = None) -> list[str]:
        # A read row keeps its workspace; staff date it, hide it or correct its series.
        return [*self.readonly_fields, "workspace"] if obj else self.readonly_fields

    def get_changelist_instance(self, request: HttpRequest):  # noqa: ANN201 - Django's ChangeList
        # The series as shown: its best-cased form among all rows, read once per page (a page served meanwhile in
        # another thread reads the same names, or names a moment older).
        self._series_shown = best_cased(Release.objects.exclude(series="").values_list("series", flat=True))
        return super().get_changelist_instance(request)

    @admin.display(description="release", ordering="version_key")
    def release(self, obj: Release) -> str:
        series = getattr(self, "_series_shown", {}).get(obj.series.casefold(), obj.series)
        return f"{series} {obj.version}".strip()

    @admin.display(description="read from")
    def page(self, obj: Release) -> str:
        if obj.document_id is None:
            return "—"
        return format_html('<a href="{}">{}</a>', reverse("admin:rag_document_change", args=[obj.document_id]),
                           obj.document.title or obj.document.path)

    def save_model(self, request: HttpRequest, obj: Release, form, change: bool) -> None:  # noqa: ANN001
        obj.version_key = version_key(obj.version)
        obj.source, obj.set_by, obj.document = Release.Source.STAFF, request.user, None
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            releases_settle_request(workspace_id=obj.workspace_id)
        messages.info(request, f"The calendar's word on {obj} is now staff's; the workspace's documents are placed "
                               "again by a worker (its state shows above the calendar).")

    def delete_model(self, request: HttpRequest, obj: Release) -> None:
        workspace_id = obj.workspace_id
        with transaction.atomic():
            super().delete_model(request, obj)
            releases_settle_request(workspace_id=workspace_id)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        for workspace in Workspace.objects.filter(releases__isnull=False).distinct().order_by("name"):
            state = releases_settle_state(workspace_id=workspace.pk)
            if state is not None:
                messages.info(request, _settle_said(workspace.name, state))
        return super().changelist_view(request, extra_context)


def _settle_said(workspace: str, state: dict) -> str:
    at = localtime(state["at"]).strftime("%Y-%m-%d %H:%M")
    if state["state"] == "done":
        return f"{workspace}: documents placed by the calendar at {at}; {state.get('changed', 0)} moved to another release."
    if state["state"] == "failed":
        return f"{workspace}: placing documents by the calendar failed at {at}: {state.get('error', '')}"
    return f"{workspace}: placing documents by the calendar: {state['state']} since {at}."
