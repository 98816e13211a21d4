"""Releases: the concept Docent exists for. Which release a document speaks for, and which a question asks about.

The face everyone outside the package uses, with plain imports (go-to-definition lands on the function):

- order: version numbers and their order (`parse_version`, `version_key`, `within_version`), never strings;
- labels: the version a document says it is (`extract_version_label`), and text without its versions;
- display: the one label a release is shown with ("3.0" for "3.0.0", `release_labels`), a line's (`release_lines`);
- series, series_pages: a series page's own release and the releases it dates (`series_metadata`);
- calendar: release dates (Release rows), a release's window, the newest release's pages;
- inference: the release of an unlabelled document (`workspace_releases_infer`);
- scope: the documents current at a release or a date (`documents_as_of`), the workspace's labels;
- cues: what a question's words ask of time (a change, the newest release, LTS, history), one pattern each;
- questions, plan: what a question asks of time (`analyse_query`), and the plan a search follows (`release_plan`).

Below rag/lineage, ingest, retrieval and dedup; it reads rag.models, rag.index_cache (what a question reads again,
kept per workspace generation) and the ground modules only, so importing it needs Django set up.
"""

from __future__ import annotations

from rag.releases.order import of_release, parse_version, version_in_series, version_key, within_version
from rag.releases.labels import (
    VERSION_SOURCES, VersionLabel, VersionMention, extract_version_label, path_version_stem, strip_versions,
    text_versions, version_stem_key,
)
from rag.releases.series import SERIES_TITLE, SeriesRelease, heading_release, mentioned_releases, series_of
from rag.releases.series_pages import series_metadata
from rag.releases.display import release_label, release_labels, release_line_said, release_lines
from rag.releases.calendar import (
    CalendarEntry, best_cased, calendar_rebuild, calendar_update, calendar_update_many, changelog_pages,
    newest_release_pages,
    release_calendar,
    release_calendar_entries, release_window, series_end, series_label, series_names,
)
from rag.releases.inference import ReleaseGuess, batch_members, workspace_releases_infer
from rag.releases.scope import documents_as_of, documents_as_of_each, workspace_version_labels
from rag.releases.cues import (
    answer_states_a_change, asks_history, asks_newest_release, asks_what_changed, asks_whats_new,
    may_name_a_time, names_long_term_support, names_the_latest_release,
)
from rag.releases.questions import ChangeQuestion, QueryLineage, analyse_query
from rag.releases.plan import VersionPlan, release_plan

__all__ = [
    "CalendarEntry", "ChangeQuestion", "QueryLineage", "ReleaseGuess", "SERIES_TITLE", "SeriesRelease",
    "VERSION_SOURCES", "VersionLabel", "VersionMention", "VersionPlan", "analyse_query", "answer_states_a_change",
    "asks_history", "asks_newest_release", "asks_what_changed", "asks_whats_new", "batch_members", "best_cased",
    "calendar_rebuild", "calendar_update", "calendar_update_many", "changelog_pages", "documents_as_of", "documents_as_of_each",
    "extract_version_label", "heading_release", "may_name_a_time", "mentioned_releases", "names_long_term_support",
    "names_the_latest_release", "newest_release_pages", "of_release",
    "parse_version", "path_version_stem", "release_calendar", "release_calendar_entries", "release_label",
    "release_labels", "release_line_said", "release_lines", "release_plan", "release_window", "series_end", "series_label", "series_metadata",
    "series_names", "series_of", "strip_versions", "text_versions", "version_in_series", "version_key",
    "version_stem_key", "within_version", "workspace_releases_infer", "workspace_version_labels"
]
