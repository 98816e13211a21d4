"""A series page speaks for its own release (issue 35, item 5): today's questions do not take an old release's
notes as the present, and "the latest release", "the last 2.2 patch", "the current LTS" go by version order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rag.releases.calendar import calendar_update
from rag.retrieval import search
from tests.rag.retrieval_helpers import add_document, options

pytestmark = pytest.mark.django_db

SHIPPED = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)  # every release's notes ship with the newest docs, on one day


def _notes(workspace, version: str, released: str, text: str):
    document = add_document(workspace, f"/docs/releases/{version}.txt", [text], title=f"Lumen {version} release notes",
                            doc_date=SHIPPED, date_source="mtime",
                            metadata={"release_entries": [{"series": "Lumen", "version": version, "date": released,
                                                           "how": "title"}]})
    calendar_update(document_id=document.pk)
    return document


@pytest.fixture
def series(workspace):
    pages = {
        "1.8": _notes(workspace, "1.8", "2019-04-01", "Lumen 1.8 is designated as a long-term support release. "
                      "The minimum supported database version is 9.4."),
        "2.2": _notes(workspace, "2.2", "2023-04-03", "Lumen 2.2 is designated as a long-term support release. "
                      "It adds streaming replies."),
        "2.2.1": _notes(workspace, "2.2.1", "2023-06-01", "Lumen 2.2.1 fixes a crash of the streaming replies."),
        "2.2.10": _notes(workspace, "2.2.10", "2024-11-05", "Lumen 2.2.10 fixes a leak of the streaming replies."),
        "2.3": _notes(workspace, "2.3", "2024-12-04", "Lumen 2.3 adds tracing of every request and drops Python 3.8."),
        # Filed last, with the newest date of all: a file date says nothing of the release a page speaks for.
        "2.2.9": _notes(workspace, "2.2.9", "2024-09-03", "Lumen 2.2.9 fixes the streaming replies once more."),
    }
    pages["guide"] = add_document(workspace, "/docs/ref/databases.txt",
                                  ["Database servers older than version 12 are refused."],
                                  title="Databases", doc_date=SHIPPED, date_source="mtime")
    return pages


def _top(workspace, question: str) -> list[int]:
    return [result.document_id for result in search(question, options(workspace, top_k=5))]


@pytest.mark.parametrize(("question", "page"), [
    ("What's new in the latest Lumen release?", "2.3"),
    ("Show me the release notes of the newest version.", "2.3"),
    ("What did the last Lumen 2.2 patch release fix?", "2.2.10"),
    ("Which Lumen release is the current LTS?", "2.2"),
    ("Which version should I pick for long-term support?", "2.2"),
])
def test_the_newest_release_goes_by_version_order(workspace, series, question, page):
    assert _top(workspace, question)[0] == series[page].pk


def test_an_old_release_notes_do_not_answer_for_the_present(workspace, series):
    ranked = _top(workspace, "What is the minimum supported database version?")
    assert ranked[0] == series["guide"].pk
    # Asked what changed, the old release's notes keep their rank: they are the history asked for.
    history = _top(workspace, "What changed in the minimum supported database version?")
    assert series["1.8"].pk in history[:2]


def test_a_changelog_s_old_sections_do_not_answer_for_the_present(workspace, series):
    """One changelog page dates every release in its headings: under an old release's heading, a section that
    repeats the question's words is that release's history, below today's page; the newest release's is not."""
    sections = {"Lumen 1.9 (2020-01-10)": "The minimum supported database version is now 9.6: the minimum "
                                          "supported database version was 9.4 before.",
                "Lumen 2.3 (2024-12-04)": "Tracing of every request.",
                # An export that flattened the headings: the release this section is of is not in its path.
                "Bug Fixes": "The minimum supported database version check no longer fails on 9.4."}
    changelog = add_document(workspace, "/docs/changelog.txt", list(sections.values()), title="Changelog",
                             doc_date=SHIPPED, date_source="mtime", metadata={"release_entries": [
                                 {"series": "Lumen", "version": heading.split()[1], "date": "", "how": "heading"}
                                 for heading in sections if heading.startswith("Lumen")]})
    for index, heading in enumerate(sections):
        changelog.chunks.filter(chunk_index=index).update(heading_path=f"Changelog > {heading}")
    calendar_update(document_id=changelog.pk)
    results = search("What is the minimum supported database version?", options(workspace, top_k=5))
    assert results[0].document_id == series["guide"].pk
    # The five older releases' notes, the changelog's 1.9 section and its section of no named release; not its 2.3
    # section, the newest release's.
    assert results.stats["past_release_notes_demoted"] == 7
    # Asked what changed, the changelog's old section is the history asked for.
    history = search("What changed in the minimum supported database version?", options(workspace, top_k=5))
    assert history[0].document_id == changelog.pk


def test_the_newest_release_s_own_search_reads_the_question_s_terms_and_calendar_once(workspace, series):
    with CaptureQueriesContext(connection) as queries:
        results = search("What's new in the latest Lumen release?", options(workspace, top_k=5))
    assert results.stats["newest_release_pages"] == [series["2.3"].pk]  # a second scope was searched
    statements = [query["sql"] for query in queries]
    assert sum("most_common_elem_freqs" in sql for sql in statements) == 1  # lexical.question_terms
    assert sum('"rag_queryexpansion"' in sql for sql in statements) == 1
    assert sum('"rag_release"."date" AS "date"' in sql for sql in statements) == 1  # release_calendar_entries
