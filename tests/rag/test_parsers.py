"""Parsers on real files of every text format, and every kind of bad input we promise to name.

PDFs have their own module, test_parsers_pdf.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.parsers import ParseError, UnsupportedFormat, detect_format, parse_document
from tests.rag.parser_support import DEMO_CORPUS, FIXTURES, parse_fixture, paths, section


# --- formats --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.md", "markdown"),
        ("a.markdown", "markdown"),
        ("A.MD", "markdown"),
        ("a.adoc", "asciidoc"),
        ("a.asciidoc", "asciidoc"),
        ("a.rst", "rst"),
        ("a.txt", "text"),
        ("a.text", "text"),
        ("a.html", "html"),
        ("a.htm", "html"),
        ("a.pdf", "pdf"),
    ],
)
def test_detect_format_by_extension(name: str, expected: str) -> None:
    assert detect_format(Path("docs") / name) == expected


def test_detect_format_rejects_other_types_naming_the_extension() -> None:
    with pytest.raises(UnsupportedFormat, match=r"^unsupported file type \.doc$"):
        detect_format(Path("report.doc"))
    with pytest.raises(UnsupportedFormat, match="no extension"):
        detect_format(Path("Makefile"))


def test_parse_document_rejects_unsupported_type_before_reading_bytes() -> None:
    with pytest.raises(UnsupportedFormat, match=r"\.gif"):
        parse_document(Path("diagram.gif"), b"GIF89a")


# --- Markdown -------------------------------------------------------------------------------


def test_markdown_frontmatter_fields() -> None:
    parsed = parse_fixture("deployment-guide.md")
    assert parsed.format == "markdown"
    assert parsed.title == "Deployment Guide"
    assert parsed.tags == ["kubernetes", "helm"]  # a comma-separated string becomes a list
    assert parsed.entities == ["Docent", "Acme Corp"]
    assert parsed.doc_type == "operations"
    assert parsed.source_type == "wiki"
    assert parsed.metadata["owner"] == "platform-team"
    assert parsed.metadata["date"] == "2025-03-14"  # kept JSON-safe for dates.py to read
    assert parsed.pdf_dates == {}
    assert parsed.page_count is None


def test_markdown_nested_atx_headings_ignore_hashes_in_code() -> None:
    parsed = parse_fixture("deployment-guide.md")
    title = "Deployment Guide"
    assert paths(parsed) == [
        (title,),
        (title, "Kubernetes"),
        (title, "Kubernetes", "Health checks"),
        (title, "Kubernetes", "Scaling"),
        (title, "Backups"),
    ]
    assert [s.level for s in parsed.sections] == [0, 1, 2, 2, 1]
    health = section(parsed, "Health checks")
    assert "# this comment is not a heading\nlivenessProbe:" in health  # code keeps its lines
    assert "Keep the **kwargs of custom probes" in health  # code spans are not "emphasis"


def test_markdown_inline_markup_is_stripped_lightly() -> None:
    parsed = parse_fixture("deployment-guide.md")
    assert parsed.sections[0].text == (
        "This guide explains how to run Docent in production. See the installation notes first."
    )
    assert "The web and worker processes" in section(parsed, "Kubernetes")
    assert section(parsed, "Scaling") == "- Add replicas of the worker deployment.\n- Keep one beat scheduler."
    assert "## Kubernetes" not in parsed.text


def test_markdown_setext_headings_and_horizontal_rule() -> None:
    parsed = parse_fixture("setext-notes.md")
    assert parsed.title == "Release Notes"
    assert paths(parsed) == [("Release Notes",), ("Release Notes", "Upgrading"), ("Release Notes", "Known issues")]
    upgrading = section(parsed, "Upgrading")
    assert upgrading == (
        "Stop the workers before you migrate.\n\nText after a horizontal rule stays in the Upgrading section."
    )
    assert "---" not in parsed.text and "===" not in parsed.text


def test_markdown_title_from_first_h1_and_levels_start_below_it() -> None:
    text = "# Ops Handbook\n\nIntro.\n\n### Deep first\n\nA.\n\n#### Deeper\n\nB.\n\n### Second\n\nC.\n"
    parsed = parse_document(Path("handbook.md"), text.encode())
    assert parsed.title == "Ops Handbook"
    assert [(s.heading_path, s.level) for s in parsed.sections] == [
        (("Ops Handbook",), 0),
        (("Ops Handbook", "Deep first"), 1),
        (("Ops Handbook", "Deep first", "Deeper"), 2),
        (("Ops Handbook", "Second"), 1),
    ]


def test_markdown_frontmatter_title_keeps_h1_chapters_as_sections() -> None:
    text = "---\ntitle: Handbook\n---\n# Install\n\nA.\n\n# Configure\n\nB.\n"
    parsed = parse_document(Path("handbook.md"), text.encode())
    assert parsed.title == "Handbook"
    assert paths(parsed) == [("Handbook", "Install"), ("Handbook", "Configure")]


def test_markdown_without_headings_or_frontmatter_uses_file_stem() -> None:
    parsed = parse_document(Path("notes/quick-tips.md"), b"Just one paragraph\nwrapped over two lines.\n")
    assert parsed.title == "quick-tips"
    assert [(s.heading_path, s.level, s.text) for s in parsed.sections] == [
        (("quick-tips",), 0, "Just one paragraph wrapped over two lines.")
    ]


def test_markdown_list_frontmatter_and_string_entities() -> None:
    text = "---\ntags: [search, ' ranking ', search]\nentities: Acme Corp, Docent\ndoc_type: API\n---\nBody.\n"
    parsed = parse_document(Path("x.md"), text.encode())
    assert parsed.tags == ["search", "ranking"]
    assert parsed.entities == ["Acme Corp", "Docent"]
    assert parsed.doc_type == "API"  # doctypes.py matches it case-insensitively


def test_markdown_malformed_frontmatter_keeps_the_body() -> None:
    parsed = parse_fixture("broken-frontmatter.md")
    assert parsed.metadata["frontmatter_error"].startswith("invalid YAML")
    assert parsed.title == "Broken Frontmatter Still Parses"
    assert "The body is still indexed." in parsed.text
    assert "title: [Unclosed list" in parsed.text  # kept as text, not lost
    assert all(not s.heading_path[-1].startswith("title:") for s in parsed.sections)
    assert parsed.tags == []


def test_markdown_frontmatter_aliases_are_refused() -> None:
    # Nine levels of nine aliases would expand to 9**9 strings when copied into metadata.
    levels = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 9)]
    text = "---\n" + "\n".join(levels) + "\ntitle: Laughs\n---\nBody.\n"
    parsed = parse_document(Path("laughs.md"), text.encode())
    assert "aliases are not allowed" in parsed.metadata["frontmatter_error"]
    assert parsed.title == "laughs"
    assert "Body." in parsed.text


def test_markdown_frontmatter_that_is_not_a_mapping_is_noted() -> None:
    parsed = parse_document(Path("x.md"), b"---\n- just\n- a list\n---\nBody text.\n")
    assert "not a mapping" in parsed.metadata["frontmatter_error"]
    assert "Body text." in parsed.text


@pytest.mark.parametrize(
    ("name", "raw_date"), [("bad-date.md", "sometime next spring"), ("impossible-date.md", "2025-13-45")]
)
def test_markdown_unparsable_frontmatter_date_does_not_break_parsing(name: str, raw_date: str) -> None:
    parsed = parse_fixture(name)
    assert parsed.metadata["date"] == raw_date
    assert "frontmatter_error" not in parsed.metadata
    assert parsed.sections


def test_markdown_frontmatter_datetime_is_json_safe() -> None:
    parsed = parse_document(Path("x.md"), b"---\ndate: 2025-03-14 10:30:00+02:00\n---\nBody.\n")
    assert parsed.metadata["date"] == "2025-03-14T10:30:00+02:00"


# --- AsciiDoc -------------------------------------------------------------------------------


def test_asciidoc_title_attributes_and_sections() -> None:
    parsed = parse_fixture("admin-guide.adoc")
    title = "Docent Administration Guide"
    assert parsed.format == "asciidoc"
    assert parsed.title == title
    assert paths(parsed) == [
        (title,),
        (title, "Installation"),
        (title, "Installation", "Requirements"),
        (title, "Upgrades"),
    ]
    assert [s.level for s in parsed.sections] == [0, 1, 2, 1]
    assert parsed.metadata["revdate"] == "2025-02-20"
    assert parsed.metadata["author"] == "Jane Doe <jane@example.com>"
    assert parsed.metadata_lines["revdate"] == 4


def test_asciidoc_blocks_keep_content_and_drop_markup() -> None:
    parsed = parse_fixture("admin-guide.adoc")
    assert parsed.sections[0].text == "This guide is for people who run Docent."  # {product} resolved
    installation = section(parsed, "Installation")
    assert "== this is code, not a heading\npip install docent" in installation
    requirements = section(parsed, "Requirements")
    assert "You need PostgreSQL 16 with pgvector." in requirements
    assert "Sidebar text about versions." in requirements
    for markup in (":toc:", "[source,bash]", "----", "****", "////", "comment block", "Jane Doe"):
        assert markup not in parsed.text


def test_asciidoc_revision_line_gives_revdate() -> None:
    text = "= Release Guide\nOps Team\nv2.1, 2025-03-14: Spring release\n\nBody.\n"
    parsed = parse_document(Path("release.adoc"), text.encode())
    assert parsed.metadata["revdate"] == "2025-03-14"
    assert parsed.metadata["revnumber"] == "2.1"
    assert parsed.metadata_lines["revdate"] == 3
    assert parsed.text == "Body."


def test_asciidoc_without_title_uses_stem() -> None:
    parsed = parse_document(Path("ops-notes.adoc"), b"Intro text.\n\n== Backups\n\nNightly.\n")
    assert parsed.title == "ops-notes"
    assert paths(parsed) == [("ops-notes",), ("ops-notes", "Backups")]


# --- reStructuredText -----------------------------------------------------------------------


def test_rst_overline_title_and_levels_by_first_appearance() -> None:
    parsed = parse_fixture("install.rst")
    title = "Docent Install Guide"
    assert parsed.format == "rst"
    assert parsed.title == title
    assert [(s.heading_path, s.level) for s in parsed.sections] == [
        ((title,), 0),
        ((title, "Requirements"), 1),
        ((title, "Requirements", "Database"), 2),
        ((title, "Requirements", "Database", "Extensions"), 3),
        ((title, "Configuration"), 1),
        ((title, "Configuration", "Tuning"), 2),
    ]


def test_rst_directives_literals_and_comments() -> None:
    parsed = parse_fixture("install.rst")
    assert section(parsed, "Requirements") == "You need Python 3.11 and pip.\n\nUse a virtual environment."
    assert section(parsed, "Database") == (
        'Create the database:\n\n```\ncreatedb docent\npsql docent -c "CREATE EXTENSION vector"\n```'
    )  # code is fenced, so the answerer never quotes it as prose
    assert section(parsed, "Extensions") == '```\npsql -c "\\dx"\n```'
    assert section(parsed, "Configuration") == "Set DATABASE_URL. See the settings page."
    for markup in (".. note::", "code-block", ":caption:", "database-setup", "not indexed", "https://example.com"):
        assert markup not in parsed.text


def test_rst_repeated_first_style_is_not_a_title() -> None:
    text = "Install\n=======\n\nStep one.\n\nUpgrade\n=======\n\nStep two.\n"
    parsed = parse_document(Path("ops.rst"), text.encode())
    assert parsed.title == "ops"
    assert [(s.heading_path, s.level) for s in parsed.sections] == [(("ops", "Install"), 1), (("ops", "Upgrade"), 1)]


def test_rst_docinfo_after_the_title_is_metadata_not_text() -> None:
    parsed = parse_fixture("release-checklist.rst")
    assert parsed.title == "Docent Release Checklist"
    assert parsed.metadata == {
        "author": "Release Team",
        "date": "April 2, 2025",
        "version": "2.1",
        "abstract": "What to check before tagging a release, and who signs off.",  # continuation joined
    }
    assert parsed.metadata_lines == {"author": 7, "date": 8, "version": 9, "abstract": 10}
    assert parsed.sections[0].text == "Run through this list before every tag."
    assert "\n\nOwner: whoever is on call" in section(parsed, "Before tagging")  # a body field list stays text, as Sphinx shows it
    assert "Release Team" not in parsed.text


def test_rst_field_list_before_the_title_is_docinfo_too() -> None:
    # Sphinx puts file-wide metadata there.
    parsed = parse_document(Path("guide.rst"), b":orphan:\n:date: March 3, 2025\n\nGuide\n=====\n\nText.\n")
    assert parsed.title == "Guide"
    assert parsed.metadata == {"orphan": "", "date": "March 3, 2025"}
    assert parsed.metadata_lines == {"orphan": 1, "date": 2}
    assert parsed.text == "Text."


def test_rst_field_list_under_a_section_heading_stays_text() -> None:
    text = "Install\n=======\n\n:Date: 2025-01-01\n\nStep one.\n\nUpgrade\n=======\n\nStep two.\n"
    parsed = parse_document(Path("ops.rst"), text.encode())
    assert parsed.title == "ops"  # so "Install" is a section, and its field list is content
    assert parsed.metadata == {} and parsed.metadata_lines == {}
    assert section(parsed, "Install") == ":Date: 2025-01-01\n\nStep one."


def test_rst_demo_guide_docinfo() -> None:
    path = DEMO_CORPUS / "v2.0" / "architecture-overview.rst"
    parsed = parse_document(path, path.read_bytes())
    assert parsed.metadata == {"author": "Platform Engineering", "date": "2024-05-02", "version": "2.0",
                               "status": "Published"}  # fmt: skip
    assert parsed.sections[0].text.startswith("This document describes how Lumen Gateway 2.0 is put together")


# --- plain text -----------------------------------------------------------------------------


def test_text_title_and_heuristic_headings() -> None:
    parsed = parse_fixture("release-notes.txt")
    title = "Docent Release Notes"
    assert parsed.format == "text"
    assert parsed.title == title
    assert [(s.heading_path, s.level) for s in parsed.sections] == [
        ((title, "OVERVIEW"), 1),
        ((title, "1. Installation"), 1),
        ((title, "1. Installation", "1.1 Requirements"), 2),
        ((title, "Known limitations"), 1),
        ((title, "Known limitations", "Workarounds"), 2),
    ]
    assert section(parsed, "1. Installation") == "Run the installer on each host. Reboot afterwards."
    assert "=====" not in parsed.text


def test_text_sentences_and_numbered_lists_are_not_headings() -> None:
    text = "Notes\n\nThis line ends with a period.\n\n1. Install it\n2. Run it\n\nshort lowercase line\n\nBody.\n"
    parsed = parse_document(Path("notes.txt"), text.encode())
    assert paths(parsed) == [("Notes",)]
    assert "1. Install it\n2. Run it" in parsed.text


def test_text_long_first_line_is_not_the_title() -> None:
    first = "This opening line is far too long to be a title because it goes on and on past eighty characters."
    parsed = parse_document(Path("memo.txt"), f"{first}\n\nMore text.\n".encode())
    assert parsed.title == "memo"
    assert parsed.sections[0].text.startswith("This opening line")


# --- HTML -----------------------------------------------------------------------------------


def test_html_title_headings_and_dropped_elements() -> None:
    parsed = parse_fixture("api-reference.html")
    title = "Docent API Reference"
    assert parsed.format == "html"
    assert parsed.title == title
    assert paths(parsed) == [
        (title,),
        (title, "Authentication"),
        (title, "Authentication", "Rotating keys"),
        (title, "Errors"),
    ]
    for dropped in ("trackingSecret", "color: red", "Docs menu", "Enable JavaScript", "injected"):
        assert dropped not in parsed.text
    assert parsed.metadata["description"] == "Docent HTTP API"


def test_html_entities_in_code_come_out_as_literal_text() -> None:
    parsed = parse_fixture("api-reference.html")
    authentication = section(parsed, "Authentication")
    assert 'curl -H "Authorization: Bearer <api-key>" https://docent.example.com/api/search' in authentication
    assert "&lt;" not in parsed.text
    assert section(parsed, "Rotating keys") == "Create a new key.\n\nRevoke the old key & redeploy."
    assert "401: Meaning: Missing key." in section(parsed, "Errors")  # a table row keeps its header


def test_html_meta_names_and_properties_are_metadata() -> None:
    parsed = parse_fixture("changelog.html")
    assert parsed.metadata == {
        "DC.date": "2025-01-15",
        "article:published_time": "2025-02-01T09:00:00+01:00",
        "article:modified_time": "2025-05-06T16:00:00+02:00",
        "description": "What changed in each Docent release",
    }
    assert paths(parsed) == [("Docent Changelog",), ("Docent Changelog", "2.1")]


def test_html_title_falls_back_to_first_h1_then_stem() -> None:
    parsed = parse_document(Path("page.html"), b"<h1>Search tips</h1><p>Use quotes.</p><h2>Filters</h2><p>By date.</p>")
    assert parsed.title == "Search tips"
    assert paths(parsed) == [("Search tips",), ("Search tips", "Filters")]
    assert parse_document(Path("bare-page.htm"), b"<p>Only text.</p>").title == "bare-page"


# --- metadata is stored as JSON -------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["admin-guide.adoc", "install.rst", "release-checklist.rst", "api-reference.html", "changelog.html",
     "release-notes.txt", "windows-1252.txt"],
)  # fmt: skip
def test_metadata_values_are_flat_strings(name: str) -> None:
    metadata = parse_fixture(name).metadata
    assert all(isinstance(key, str) and isinstance(value, str) for key, value in metadata.items())


def test_markdown_frontmatter_metadata_is_json_as_written() -> None:
    text = b"---\ndate: 2025-03-14\nreviewers: [ana, bo]\nlimits: {rps: 10}\n---\nBody.\n"
    metadata = parse_document(Path("x.md"), text).metadata
    assert json.loads(json.dumps(metadata)) == {"date": "2025-03-14", "reviewers": ["ana", "bo"], "limits": {"rps": 10}}


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data"),
    [("empty.md", None), ("whitespace.txt", None), ("blank.pdf", b""), ("bom.md", b"\xef\xbb\xbf  \n")],
)
def test_empty_files(name: str, data: bytes | None) -> None:
    if data is None:
        data = (FIXTURES / name).read_bytes()
    with pytest.raises(ParseError, match=r"^empty file$"):
        parse_document(Path(name), data)


@pytest.mark.parametrize("name", ["binary-junk.txt", "control-chars.md"])
def test_binary_content_with_a_text_extension(name: str) -> None:
    with pytest.raises(ParseError, match=r"^binary content in a text file$"):
        parse_fixture(name)


def test_nul_bytes_mean_binary_even_if_mostly_text() -> None:
    with pytest.raises(ParseError, match="binary content"):
        parse_document(Path("page.html"), b"<p>hello</p>\x00" + b"<p>more</p>" * 100)


def test_text_with_a_few_control_characters_is_still_text() -> None:
    log = b"".join(b"\x1b[32mINFO\x1b[0m worker finished batch %d without errors\n" % n for n in range(20))
    parsed = parse_document(Path("worker.txt"), log)
    assert "worker finished batch 3" in parsed.text


def test_windows_1252_text_is_decoded_not_rejected() -> None:
    parsed = parse_fixture("windows-1252.txt")
    assert parsed.title == "Café notes"
    assert parsed.text == "The café opens at 8 – bring your naïve “quotes”."
    assert parsed.metadata["source_encoding"] == "cp1252"


def test_bytes_undefined_in_cp1252_fall_back_to_latin_1() -> None:
    parsed = parse_document(Path("odd.txt"), "Übersicht\n\nZeichen".encode("latin-1") + b" \x81 ok\n")
    assert parsed.title == "Übersicht"
    assert parsed.metadata["source_encoding"] == "latin-1"


def test_utf8_bom_and_utf16_are_decoded() -> None:
    assert parse_document(Path("a.md"), "\ufeff# Größe\n\nText.\n".encode()).title == "Größe"
    parsed = parse_document(Path("b.txt"), "Ünïcode title\n\nBody text.\n".encode("utf-16"))
    assert parsed.title == "Ünïcode title"
    assert parsed.text == "Body text."


def test_document_text_joins_section_texts() -> None:
    parsed = parse_fixture("setext-notes.md")
    assert parsed.text == "\n\n".join(s.text for s in parsed.sections)
    assert parsed.text.startswith("Docent 2.1 brings faster ingestion.")

