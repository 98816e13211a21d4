"""Version lineage: version labels, document families, superseded passages and version-aware query analysis.

The face everyone outside the package uses. Labels and query analysis are pure text work and load with the
face (scripts read labels before Django is set up); the rest loads on first use, because it needs Django's models.
"""

from __future__ import annotations

from typing import Any

from rag.lineage.labels import VersionLabel, extract_version_label, strip_versions
from rag.lineage.versions import parse_version, version_in_series, version_key, within_version
from rag.lineage.query import QueryLineage, analyse_query
from rag.lineage.series import SERIES_TITLE, SeriesRelease, heading_release, mentioned_releases, series_of

_DJANGO_BOUND = {
    "calendar_read_once": "calendar", "calendar_rebuild": "calendar", "calendar_update": "calendar",
    "newest_release_pages": "calendar",
    "release_calendar": "calendar", "release_calendar_entries": "calendar", "release_window": "calendar", "series_label": "calendar", "series_names": "calendar",
    "different_releases_of_a_series": "evidence",
    "document_lineage_evidence": "families", "document_lineage_update": "families",
    "documents_leave_families": "families", "family_refresh": "families", "workspace_lineage_rebuild": "families",
    "batch_members": "release_inference", "workspace_releases_infer": "release_inference",
    "release_label": "releases", "release_labels": "releases",
    "documents_as_of": "scope", "documents_as_of_each": "scope", "workspace_version_labels": "scope",
}

__all__ = ["QueryLineage", "SERIES_TITLE", "SeriesRelease", "VersionLabel", "analyse_query", "extract_version_label",
           "heading_release", "mentioned_releases", "parse_version", "series_of",
           "strip_versions", "version_in_series", "version_key", "within_version", *sorted(_DJANGO_BOUND)]


def __getattr__(name: str) -> Any:  # noqa: ANN401 - a name of one of the modules below
    if name not in _DJANGO_BOUND:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # import here: these modules read Django's models; labels and query analysis must work before django.setup().
    from rag.lineage import calendar, evidence, families, release_inference, releases, scope

    modules = {"calendar": calendar, "evidence": evidence, "families": families,
               "release_inference": release_inference, "releases": releases, "scope": scope}
    return getattr(modules[_DJANGO_BOUND[name]], name)
