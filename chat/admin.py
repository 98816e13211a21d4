"""Admin: generated answers with their citation compliance, and the rate per workspace over time."""

from __future__ import annotations

from django.contrib import admin

from chat.models import LLMAnswer
from chat.selectors import citation_compliance_by_week


@admin.register(LLMAnswer)
class LLMAnswerAdmin(admin.ModelAdmin):
    change_list_template = "admin/chat/llmanswer/change_list.html"
    list_display = ("created_at", "workspace", "cited", "invalid_markers", "uncited_sources", "excerpt")
    list_filter = ("conversation__workspace",)
    list_select_related = ("conversation__workspace",)
    readonly_fields = ("conversation", "role", "content", "metadata", "created_at")

    def get_queryset(self, request):
        return super().get_queryset(request).filter(role="assistant", metadata__mode="llm")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="workspace")
    def workspace(self, obj: LLMAnswer) -> str:
        return obj.conversation.workspace.name

    @admin.display(description="sentences cited")
    def cited(self, obj: LLMAnswer) -> str:
        compliance = obj.metadata.get("compliance") or {}
        if not compliance:
            return "—"
        return f"{compliance['cited_sentences']}/{compliance['sentences']} ({compliance['cited_share']:.0%})"

    @admin.display(description="invalid markers")
    def invalid_markers(self, obj: LLMAnswer) -> str:
        return ", ".join(f"[{n}]" for n in (obj.metadata.get("compliance") or {}).get("invalid_markers", [])) or "—"

    @admin.display(description="sources never cited")
    def uncited_sources(self, obj: LLMAnswer) -> str:
        return ", ".join(f"[{n}]" for n in (obj.metadata.get("compliance") or {}).get("uncited_sources", [])) or "—"

    @admin.display(description="answer")
    def excerpt(self, obj: LLMAnswer) -> str:
        return obj.content[:80]

    def changelist_view(self, request, extra_context=None):
        weeks = citation_compliance_by_week(messages=self.get_queryset(request))
        return super().changelist_view(request, extra_context={**(extra_context or {}), "compliance_weeks": weeks})
