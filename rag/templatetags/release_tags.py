"""`{{ document|release_of:releases }}`: a document's version as its release is shown (rag.releases.display)."""

from __future__ import annotations

from django import template

from rag.models import Document

register = template.Library()


@register.filter
def release_of(document: Document, releases: dict[str, str]) -> str:
    """"3.0" for a document labelled "3.0.0" where the workspace shows that release as "3.0"."""
    return (releases or {}).get(document.version_key, document.version_label) if document.version_label else ""
