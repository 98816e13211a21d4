"""Which documents were current at a version or a date: labels, family order, and release dates read from changelogs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rag.releases.calendar import calendar_update, release_calendar, series_end
from rag.lineage.evidence import Member
from rag.lineage.grouping import version_order
from rag.releases.scope import documents_as_of, documents_as_of_each, workspace_version_labels
from rag.models import DocumentFamily
from tests.rag.retrieval_helpers import add_document

pytestmark = pytest.mark.django_db


def day(year: int, month: int, date: int) -> datetime:
    return datetime(year, month, date, tzinfo=UTC)


def family(workspace, *documents) -> DocumentFamily:
    group = DocumentFamily.objects.create(workspace=workspace, name="Guide")
    for position, document in enumerate(documents):
        document.family, document.family_position = group, position
        document.is_latest_version = position == len(documents) - 1
        document.save()
    return group


def test_unlabelled_versions_are_placed_by_the_release_dates_their_changelog_gives(workspace):
    for path, version, released in (("/docs/CHANGES.rst", "7.0.0", "2023-07-24"),
                                     ("/docs/CHANGES-old.rst", "6.2.1", "2023-04-25")):
        changelog = add_document(workspace, path, ["Bugs fixed in this release."], doc_date=day(2024, 10, 13),
                                 metadata={"release_entries": [{"series": "", "version": version, "date": released,
                                                                "how": "heading"}]})
        calendar_update(document_id=changelog.pk)
    old = add_document(workspace, "/a/usage.rst", ["Run the build with -b html."], doc_date=day(2023, 4, 23))
    new = add_document(workspace, "/b/usage.rst", ["Run the build with -M html."], doc_date=day(2024, 7, 20))
    family(workspace, old, new)
    undated_elsewhere = add_document(workspace, "/c/faq.rst", ["Questions."], doc_date=None)

    assert [str(v) for v, _ in release_calendar(workspace_id=workspace.pk)] == ["6.2.1", "7.0.0"]
    assert series_end(release_calendar(workspace_id=workspace.pk), "6.2") == day(2023, 7, 24)
    assert {"6.2.1", "7.0.0"} <= set(workspace_version_labels(workspace_id=workspace.pk))

    at_6_2 = documents_as_of(workspace_id=workspace.pk, version="6.2")
    assert old.pk in at_6_2 and new.pk not in at_6_2 and undated_elsewhere.pk in at_6_2
    assert new.pk in documents_as_of(workspace_id=workspace.pk, version="7.0")  # no later release: all there
    assert old.pk in documents_as_of(workspace_id=workspace.pk, date=day(2024, 1, 1))
    assert new.pk not in documents_as_of(workspace_id=workspace.pk, date=day(2024, 1, 1))


def test_labels_decide_and_a_patch_release_belongs_to_its_series(workspace):
    v20 = add_document(workspace, "/v2.0/guide.md", ["2.0 text"], version_label="2.0", version_key="a")
    v21 = add_document(workspace, "/v2.1/guide.md", ["2.1 text"], version_label="2.1.2", version_key="b")
    v30 = add_document(workspace, "/v3.0/guide.md", ["3.0 text"], version_label="3.0", version_key="c")
    family(workspace, v20, v21, v30)
    loose_new = add_document(workspace, "/notes/3.0.md", ["3.0 notes"], version_label="3.0", version_key="c")

    at_2_1 = documents_as_of(workspace_id=workspace.pk, version="2.1")
    assert v21.pk in at_2_1 and v20.pk not in at_2_1 and v30.pk not in at_2_1 and loose_new.pk not in at_2_1
    assert documents_as_of(workspace_id=workspace.pk, version="2.0") & {v20.pk, v21.pk, v30.pk} == {v20.pk}


def test_each_version_s_documents_at_once_are_each_one_s_read_once(workspace):
    v20 = add_document(workspace, "/v2.0/guide.md", ["2.0 text"], version_label="2.0", version_key="a")
    v30 = add_document(workspace, "/v3.0/guide.md", ["3.0 text"], version_label="3.0", version_key="c")
    family(workspace, v20, v30)
    add_document(workspace, "/notes/3.0.md", ["3.0 notes"], version_label="3.0", version_key="c")

    with CaptureQueriesContext(connection) as queries:
        each = documents_as_of_each(workspace_id=workspace.pk, versions=("3.0", "2.0"))
    assert sum('FROM "rag_document"' in query["sql"] for query in queries) == 1
    assert each == {label: documents_as_of(workspace_id=workspace.pk, version=label) for label in ("3.0", "2.0")}
    assert each["2.0"] != each["3.0"]


def test_family_order_trusts_dates_and_lets_directives_order_the_undated():
    def member(pk: int, doc_date: datetime | None, confidence: int, label: str = "", key: str = "") -> Member:
        return Member(id=pk, title="Guide", path=f"/{pk}/guide.rst", version_label=label, version_key=key,
                      version_source="", doc_date=doc_date, date_source={1: "mtime", 0: "upload_time"}[confidence],
                      date_confidence=confidence, indexed_at=None, chunk_count=3, family_id=None, family_position=None)

    dated = {1: member(1, day(2024, 10, 13), 1), 2: member(2, day(2022, 10, 16), 1), 3: member(3, day(2023, 4, 23), 1)}
    # The newest file names no directive at all (floor ""): its date still makes it the newest.
    assert version_order(dated, {}, {1: "", 2: "a", 3: "b"}) == [2, 3, 1]
    undated = {1: member(1, day(2026, 1, 1), 0), 2: member(2, day(2026, 1, 2), 0)}
    assert version_order(undated, {}, {1: "00000007", 2: "00000005"}) == [2, 1]  # uploaded together: directives decide
