"""One label per release: "3.0" and "3.0.0" are one release (packaging says so), shown and offered once.

Documents keep the label their file gave (the admin shows it); what a reader sees of a release, in
sources and in "Answer as of", is the label most of the workspace's documents of that release carry.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count

from rag.index_cache import index_cached
from rag.releases.calendar import series_label
from rag.releases.order import version_key
from rag.models import Document


def release_labels(*, workspace_id: int, labels: Iterable[str] | None = None) -> dict[str, str]:
    """version_key -> the release's one label in the workspace (all releases, or those of `labels`).

    The label most of its active documents carry; on a tie the longer ("3.0.0" says more than "3.0"). Read once
    per change of the workspace: every question shows its results' releases.
    """
    every = index_cached("release labels", workspace_id=workspace_id, compute=lambda: _release_labels(workspace_id))
    if labels is None:
        return dict(every)
    keys = {key for label in labels if (key := version_key(label))}
    return {key: label for key, label in every.items() if key in keys}


def _release_labels(workspace_id: int) -> dict[str, str]:
    counted = Document.objects.active().filter(workspace_id=workspace_id).exclude(version_key="") \
        .values_list("version_key", "version_label").annotate(count=Count("pk")).order_by()
    best: dict[str, tuple[int, int, str]] = {}
    for key, label, count in counted:
        best[key] = max(best.get(key, (0, 0, "")), (count, len(label), label))
    return {key: label for key, (_count, _length, label) in best.items()}


def release_label(label: str, releases: dict[str, str]) -> str:
    """`label` as its release is shown ("3.0.0" -> "3.0" where "3.0" is the release's label)."""
    return releases.get(version_key(label) or "", label) if label else label


def release_lines(*, workspace_id: int) -> dict[str, str]:
    """Release line ("2.1") -> the newest release of it the workspace holds documents of ("2.1.2"), newest line
    first: a person picks a line in "Answer as of", and its newest patch answers (the scope is the whole line)."""
    releases = release_labels(workspace_id=workspace_id)
    lines: dict[str, str] = {}
    for key in sorted(releases):  # oldest first: the last release of a line is its newest
        lines[series_label(releases[key])] = releases[key]
    return dict(sorted(lines.items(), key=lambda item: version_key(item[0]) or "", reverse=True))


def release_line_said(*, workspace_id: int, label: str) -> str:
    """How an answer names the release it answers from: "2.1 (2.1.2)" for the 2.1 line whose newest patch is 2.1.2,
    "3.0" where the line is its own newest release."""
    line = series_label(label)
    newest = release_lines(workspace_id=workspace_id).get(line, "")
    return f"{line} ({newest})" if newest and version_key(newest) != version_key(line) else line
