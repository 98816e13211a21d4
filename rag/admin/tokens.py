"""Admin: API tokens, made for a user (shown once) and revoked."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from rag.models import ApiToken
from rag.tokens import api_token_issue, api_tokens_revoke


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
