"""Operator screens, one module per area; importing them registers them with the admin site."""

from rag.admin import (  # noqa: F401 - imported to register
    common, documents, families, jobs, records, releases, sources, tokens, workspaces)

__all__ = ["common", "documents", "families", "jobs", "records", "sources", "tokens", "workspaces"]
