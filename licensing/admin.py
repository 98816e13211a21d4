"""Tier management, licenses per workspace, signed-key installs and the history of every change.

Saves go through licensing.services so that the LicenseEvent history is the same
whichever screen made the change.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone

from licensing.features import REGISTRY, TIER_FEATURES
from licensing.keys import LicenseKeyError
from licensing.models import Feature, Installation, License, LicenseEvent, LicenseTier
from licensing.services import (
    installation_get,
    installation_id,
    license_install,
    license_revoke,
    license_save,
    license_signature_check,
    trial_running,
)


def _tier_names(key: str) -> str:
    slugs = [slug for slug, keys in TIER_FEATURES.items() if key in keys]
    return ", ".join(LicenseTier.objects.filter(slug__in=slugs).order_by("rank").values_list("name", flat=True))


@admin.register(Feature)
class FeatureAdmin(admin.ModelAdmin):
    list_display = ["key", "name", "tier_names"]
    search_fields = ["key", "name", "description"]

    def get_readonly_fields(self, request: HttpRequest, obj: Feature | None = None) -> list[str]:
        # Code names features by key; renaming one would silently close its gate.
        return ["key"] if obj is not None else []

    @admin.display(description="Tiers")
    def tier_names(self, obj: Feature) -> str:
        return _tier_names(obj.key) or "—"


@admin.register(LicenseTier)
class LicenseTierAdmin(admin.ModelAdmin):
    """Names and ranks only: what a tier grants is fixed in code (licensing.features) or signed into each key,
    so nothing edited here can widen what a license grants."""

    list_display = ["name", "slug", "rank", "features_granted", "active_license_count"]
    ordering = ["rank"]
    prepopulated_fields = {"slug": ["name"]}

    def get_readonly_fields(self, request: HttpRequest, obj: LicenseTier | None = None) -> list[str]:
        # Keys name their tier by slug: a renamed slug would leave every license of the tier granting nothing.
        return ["slug", "features_granted"] if obj is not None else ["features_granted"]

    def get_prepopulated_fields(self, request: HttpRequest, obj: LicenseTier | None = None) -> dict:
        return {} if obj is not None else self.prepopulated_fields

    @admin.display(description="Features (fixed in code; a key may carry its own)")
    def features_granted(self, obj: LicenseTier) -> str:
        granted = TIER_FEATURES.get(obj.slug, frozenset())
        return ", ".join(REGISTRY[key] for key in sorted(granted)) or "none unless a key carries them"

    @admin.display(description="Active licenses")
    def active_license_count(self, obj: LicenseTier) -> int:
        return License.objects.active().filter(tier=obj).count()


class LicenseStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("active", "Active"), ("scheduled", "Not yet valid"), ("expired", "Expired"), ("revoked", "Revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[License]) -> QuerySet[License] | None:
        at = timezone.now()
        match self.value():
            case "active":
                return queryset.active(at)  # type: ignore[attr-defined]
            case "scheduled":
                return queryset.scheduled(at)  # type: ignore[attr-defined]
            case "expired":
                return queryset.expired(at)  # type: ignore[attr-defined]
            case "revoked":
                return queryset.revoked()  # type: ignore[attr-defined]
        return queryset


class LicenseEventInline(admin.TabularInline):
    """The history is written by services only, so it is read-only here."""

    model = LicenseEvent
    extra = 0
    can_delete = False
    fields = ["at", "action", "who", "details"]
    readonly_fields = fields
    ordering = ["-at", "-pk"]
    verbose_name = "history entry"
    verbose_name_plural = "history"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="By")
    def who(self, event: LicenseEvent) -> str:
        return event.actor_label or (event.actor.get_username() if event.actor else "—")


class InstallKeyForm(forms.Form):
    workspace = forms.ModelChoiceField(
        queryset=License._meta.get_field("workspace").related_model._default_manager.all(),  # type: ignore[union-attr]
        to_field_name="slug",
        help_text="The workspace the key was issued for.",
    )
    key = forms.CharField(
        label="License key",
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80, "spellcheck": "false"}),
        help_text="The whole key as received, starting with DOCENT1.",
    )


@admin.register(License)
class LicenseAdmin(admin.ModelAdmin):
    list_display = ["workspace", "tier", "status_badge", "valid_from", "valid_until", "issued_to"]
    list_filter = [LicenseStatusFilter, "tier", "workspace"]
    list_select_related = ["workspace", "tier"]
    search_fields = ["workspace__name", "workspace__slug", "issued_to", "notes", "license_id"]
    date_hierarchy = "valid_from"
    # Everything a key signs is read-only: a license is made by installing a key, and only revocation
    # and notes are the customer's to change.
    readonly_fields = ["workspace", "tier", "valid_from", "valid_until", "issued_to", "license_id", "revoked_at",
                       "created_at", "from_signed_key", "signature"]
    fieldsets = [
        (None, {"fields": ["workspace", "tier", "valid_from", "valid_until", "issued_to", "signature"]}),
        ("Revocation", {"fields": ["revoked", "revoked_at"]}),
        ("Notes and origin", {"fields": ["notes", "license_id", "from_signed_key", "created_at"]}),
    ]
    inlines = [LicenseEventInline]
    actions = ["revoke_selected"]
    change_list_template = "licensing/admin/license_change_list.html"

    def has_delete_permission(self, request: HttpRequest, obj: License | None = None) -> bool:
        # Deleting would erase the history; revoke instead.
        return False

    @admin.display(description="Status")
    def status_badge(self, obj: License) -> str:
        check = license_signature_check(obj)
        if check.problem:
            return f"{obj.status()}; grants nothing ({check.problem})"
        return f"{obj.status()} ({check.label})" if check.development else obj.status()

    @admin.display(description="Signature")
    def signature(self, obj: License) -> str:
        return license_signature_check(obj).label

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: dict | None = None) -> HttpResponse:
        # A license comes from a signed key only; "Add" leads to installing one.
        return HttpResponseRedirect(reverse("admin:licensing_license_install"))

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        return super().changelist_view(request, {**(extra_context or {}), "installation_id": installation_id(),
                                                  "trial": trial_running()})

    @admin.display(description="From a signed key", boolean=True)
    def from_signed_key(self, obj: License) -> bool:
        return bool(obj.signed_key)

    def save_model(self, request: HttpRequest, obj: License, form: forms.ModelForm, change: bool) -> None:
        license_save(license=obj, actor=request.user)  # type: ignore[arg-type]

    @admin.action(description="Revoke selected licenses", permissions=["change"])
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[License]) -> None:
        revoked = 0
        for license in queryset.filter(revoked=False):
            license_revoke(license=license, actor=request.user)  # type: ignore[arg-type]
            revoked += 1
        self.message_user(request, f"Revoked {revoked} license(s).", messages.SUCCESS)

    def get_urls(self) -> list[URLPattern]:
        install = path(
            "install/", self.admin_site.admin_view(self.install_key_view), name="licensing_license_install"
        )
        return [install, *super().get_urls()]

    def install_key_view(self, request: HttpRequest) -> HttpResponse:
        """Paste a signed key; a refused key changes nothing and says why."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = InstallKeyForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                result = license_install(
                    key=form.cleaned_data["key"],
                    workspace_slug=form.cleaned_data["workspace"].slug,
                    actor=request.user,  # type: ignore[arg-type]
                )
            except LicenseKeyError as exc:
                form.add_error("key", str(exc))
            else:
                notice = f" ({result.development_notice})" if result.development else ""
                if result.created:
                    self.message_user(request, f"Installed {result.license}{notice}.", messages.SUCCESS)
                elif result.renewed:
                    message = f"Renewed {result.license}{notice} from a later issue of its key."
                    self.message_user(request, message, messages.SUCCESS)
                else:
                    message = f"This key was already installed ({result.license}){notice}; nothing changed."
                    self.message_user(request, message, messages.INFO)
                return HttpResponseRedirect(reverse("admin:licensing_license_change", args=[result.license.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Install a license key",
            "form": form,
            "has_view_permission": self.has_view_permission(request),
            "installation_id": installation_id(),
        }
        status = 400 if form.errors else 200
        return TemplateResponse(request, "licensing/admin/install_license.html", context, status=status)


@admin.register(Installation)
class InstallationAdmin(admin.ModelAdmin):
    """Read-only: the ID keys are issued for, and the built-in demo trial. Made by code, never by hand."""

    list_display = ["installation_id", "created_at", "trial_workspace", "trial_ends_at"]
    readonly_fields = ["installation_id", "created_at", "trial_workspace", "trial_workspace_slug", "trial_started_at",
                       "trial_ends_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Installation]:
        installation_get()  # the list shows the row even before anything else asked for it
        return super().get_queryset(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Installation | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Installation | None = None) -> bool:
        return False
