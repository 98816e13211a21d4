"""Admin: workspaces, the doc-type taxonomy and the query expansions that shape a workspace's search."""

from __future__ import annotations

from django.contrib import admin

from rag.models import DocType, QueryExpansion, Workspace


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
