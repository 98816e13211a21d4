"""The release variants' writers and names (demo/variants/): what Docent reads back must be what the source said."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from demo.variants.markup import page_read, to_asciidoc, to_docx, to_markdown
from demo.variants.naming import (
    FRONTMATTER_FORMS,
    REVDATE_FORMS,
    Dating,
    date_written,
    file_moments,
    hex_prefix,
    office_created,
)
from demo.variants.series import Expected, expected_release, label_matches, release_written
from rag.dates import parse_loose_date
from rag.ingest.dates import DocDate, resolve_doc_date
from rag.parsers import parse_document
from rag.releases.labels import extract_version_label

RELEASE_NOTES = b"""\
===========================
Django 2.2.28 release notes
===========================

*April 11, 2022*

Django 2.2.28 fixes two security issues in ``QuerySet.annotate()`` and
:meth:`~django.db.models.query.QuerySet.extra`.

Settings
========

.. versionadded:: 2.0

    The ``CONN_MAX_AGE`` setting keeps connections open.

.. versionchanged:: 2.2

    It defaults to ``0``.

Example::

    DATABASES = {"default": {"CONN_MAX_AGE": 60}}

==========  =======
Backend     Minimum
==========  =======
PostgreSQL  9.4
MySQL       5.6
==========  =======
"""
MOMENT = datetime(2022, 4, 11, 7, 23, 3, tzinfo=UTC)


def _words(text: str) -> str:
    return " ".join(text.lower().split())


def _read_back(name: str, data: bytes):  # noqa: ANN202
    parsed = parse_document(Path(name), data)
    return parsed, _words(" ".join([parsed.title, *(s.heading_path[-1] for s in parsed.sections if s.level),
                                    parsed.text]))


@pytest.fixture
def page():  # noqa: ANN201
    return page_read(Path("a8f2810733-2.2.28.txt"), RELEASE_NOTES)


def _keeps_what_tells_the_release(text: str) -> None:
    for kept in ("django 2.2.28 release notes", "april 11, 2022", "new in version 2.0: the conn_max_age setting",
                 "changed in version 2.2: it defaults to 0.", "queryset.annotate()",
                 "postgresql: minimum: 9.4.", "mysql: minimum: 5.6."):
        assert kept in text, kept


def test_markdown_keeps_the_title_date_line_directives_code_and_table(page) -> None:  # noqa: ANN001
    data = to_markdown(page, frontmatter={"title": '"Django 2.2.28 release notes"', "date": "April 11, 2022"}).encode()
    assert b"*April 11, 2022*" in data and b"*New in version 2.0:*" in data and b"`QuerySet.annotate()`" in data
    parsed, text = _read_back("40b08594_2.2.28.md", data)
    _keeps_what_tells_the_release(text)
    assert any('```\nDATABASES = {"default": {"CONN_MAX_AGE": 60}}\n```' in s.text for s in parsed.sections)
    assert resolve_doc_date(parsed, None).value == datetime(2022, 4, 11, tzinfo=UTC)
    assert "version" not in parsed.metadata


def test_asciidoc_keeps_the_same_text_and_its_revdate(page) -> None:  # noqa: ANN001
    data = to_asciidoc(page, revdate="2022-04-11T07:23:03Z", title=page.parsed.title).encode()
    assert data.startswith(b"= Django 2.2.28 release notes\n:revdate: 2022-04-11T07:23:03Z\n")
    assert b"\n----\n" in data and b"|===" in data and b"== Settings" in data
    parsed, text = _read_back("58c20104_2.2.28.adoc", data)
    _keeps_what_tells_the_release(text)
    assert resolve_doc_date(parsed, None) == DocDate(MOMENT, "asciidoc_revdate")
    assert "revnumber" not in parsed.metadata


def test_word_keeps_the_text_and_dates_it_by_modified_not_an_old_created(page) -> None:  # noqa: ANN001
    created = datetime(2016, 3, 1, tzinfo=UTC)
    data = to_docx(page, title=page.parsed.title, created=created, modified=MOMENT, revision=17, author="Docs")
    parsed, text = _read_back("2a61e300_2.2.28.docx", data)
    _keeps_what_tells_the_release(text)
    assert resolve_doc_date(parsed, None).value == MOMENT and parsed.office_dates["created"] == created
    assert extract_version_label(path="docs/2a61e300_x.docx", title="Settings", metadata=parsed.metadata,
                                 doc_format="docx") is None  # the revision is a save counter, not a version


@pytest.mark.parametrize("kind, forms", [("frontmatter", FRONTMATTER_FORMS), ("revdate", REVDATE_FORMS)])
def test_every_written_date_form_reads_as_the_files_day(kind: str, forms: dict) -> None:
    for form in forms.values():
        written = form(MOMENT).strip('"')
        assert parse_loose_date(written).date() == MOMENT.date(), (kind, written)
    chosen = {date_written(Dating(f"django|2.2|{n}", MOMENT, 35, 1, False), kind) for n in range(60)}
    assert len(chosen) >= 5  # several forms across files


def _names(count: int = 400) -> list[str]:
    taken: set[str] = set()
    for number in range(count):
        stem = f"page{number}.txt"
        taken.add(f"{hex_prefix(f'django|2.2|docs/{stem}', seed=35, taken=taken, stem=stem)}_{stem}")
    return sorted(taken)


def test_hashed_names_have_the_shapes_real_piles_have() -> None:
    prefixes = [name.split("_")[0] for name in _names()]
    assert all(re.fullmatch(r"[0-9a-f]{8}", prefix) for prefix in prefixes)
    one_letter = sum(bool(re.fullmatch(r"\d+[a-f]\d+", prefix)) for prefix in prefixes)
    assert one_letter >= 0.3 * len(prefixes) and sum(prefix.isdigit() for prefix in prefixes) >= 20
    assert _names() == _names()  # deterministic


def test_a_hashed_name_is_never_read_as_a_version() -> None:
    labelled = [(name, label.label) for name in _names()
                if (label := extract_version_label(path=f"/corpus/{name}", title="Index", metadata={}))]
    assert labelled == []


def test_a_release_s_files_are_dated_over_weeks_before_it_and_its_notes_at_its_date() -> None:
    listing = {f"n{i}": {"project": "django", "version": "2.2", "release": "2.2.28", "path": f"docs/p{i}.txt",
                         "release_date": MOMENT.isoformat()} for i in range(40)}
    listing["notes"] = {**listing["n0"], "path": "docs/releases/2.2.28.txt"}
    moments = file_moments(listing, seed=35)
    assert moments["notes"].moment == MOMENT == max(d.moment for d in moments.values())
    days = {d.moment.date() for d in moments.values()}
    assert len(days) >= 4 and (MOMENT - min(d.moment for d in moments.values())).days >= 7
    assert file_moments(listing, seed=35) == moments
    template = next(d for d in moments.values() if d.template)
    assert (template.moment - office_created(template)).days >= 2 * 365


def test_a_series_page_speaks_for_its_own_release_and_labels_match_by_line() -> None:
    notes = expected_release(project="django", path="docs/releases/1.8.txt", release="5.1.4")
    assert notes == Expected(line="1.8", release="1.8", series="release")
    page = expected_release(project="django", path="docs/ref/settings.txt", release="2.2.28")
    assert label_matches("2.2.28", page) == (True, True) and label_matches("2.2", page) == (True, False)
    assert label_matches("40b8594", page) == (False, False) and label_matches("2.2b1", page) == (False, False)
    changelog = expected_release(project="celery", path="docs/history/changelog-4.4.rst", release="5.4.0")
    assert changelog.release is None and label_matches("4.4.7", changelog) == (True, False)
    shipped = expected_release(project="sphinx", path="CHANGES.rst", release="7.4.7")  # newest entry first
    assert shipped == Expected(line="7.4", release="7.4.7", series="bundle")


def test_a_release_notes_page_is_touched_when_its_release_happened() -> None:
    assert release_written("Django 5.0.10 release notes\n\n*December 4, 2024*\n") == datetime(2024, 12, 4, tzinfo=UTC)
    assert release_written("Release 8.1.3 (released Oct 13, 2024)\n===") == datetime(2024, 10, 13, tzinfo=UTC)
    assert release_written("5.1.2\n=====\n:release-date: 2021-06-28 16.15 P.M UTC+3:00") == datetime(2021, 6, 28,
                                                                                                      tzinfo=UTC)
    listing = {f"n{i}": {"project": "django", "version": "5.1", "release": "5.1.4", "path": f"docs/p{i}.txt",
                         "release_date": MOMENT.isoformat()} for i in range(30)}
    listing["other"] = {**listing["n0"], "path": "docs/releases/5.0.10.txt"}
    moments = file_moments(listing, seed=35, written={"other": MOMENT.replace(hour=0, minute=0, second=0)})
    assert moments["other"].moment == MOMENT
