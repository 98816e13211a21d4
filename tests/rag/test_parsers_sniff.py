"""Text files written in reST or Markdown are parsed as what they are; Sphinx version
directives are kept as text and listed as version evidence.

The parsers are pure functions on bytes: no database here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.parsers import ParsedDocument, parse_document
from rag.parsers.sniff import sniff_markup
from tests.rag.parser_support import DEMO_CORPUS, paths, section


def parse_text(name: str, text: str) -> ParsedDocument:
    return parse_document(Path(name), text.encode())


# --- reST and Markdown saved as .txt ---------------------------------------------------------

RST_GUIDE = """\
.. _install-guide:

=====================
Docent Install Guide
=====================

Docent indexes your documents.

Requirements
------------

You need Python 3.11 and ``pip``.

.. note::

   Use a virtual environment.

Extensions
~~~~~~~~~~

Run :command:`createdb docent` first.

Upgrading
---------

Read the release notes.
"""


def test_rst_saved_as_txt_gets_its_title_and_heading_paths() -> None:
    parsed = parse_text("install.txt", RST_GUIDE)
    title = "Docent Install Guide"
    assert parsed.format == "rst"
    assert parsed.title == title
    assert paths(parsed) == [
        (title,),
        (title, "Requirements"),
        (title, "Requirements", "Extensions"),
        (title, "Upgrading"),
    ]
    assert section(parsed, "Requirements") == "You need Python 3.11 and pip.\n\nUse a virtual environment."
    assert section(parsed, "Extensions") == "Run createdb docent first."
    assert parsed.metadata["sniffed_from"] == "text"
    assert parsed.metadata["sniff_evidence"].startswith("content: headings: 4, directives or targets: 2")


def test_rst_txt_double_extension_is_rst_whatever_the_content() -> None:
    # Sphinx's _sources/*.rst.txt: the name says it, even for a page with almost no markup.
    parsed = parse_text("_sources/index.rst.txt", "Welcome\n=======\n\nStart here.\n\nSetup\n~~~~~\n\nInstall.\n")
    assert parsed.format == "rst"
    assert parsed.title == "Welcome"
    assert paths(parsed) == [("Welcome",), ("Welcome", "Setup")]
    assert parsed.metadata == {"sniffed_from": "text", "sniff_evidence": "file name ends .rst.txt"}
    # and with no heading at all, the fallback title loses the inner extension too
    assert parse_text("notes.rst.txt", "Just a paragraph.\n").title == "notes"


def test_markdown_saved_as_txt_gets_its_title_and_heading_paths() -> None:
    text = (
        "# Deployment Guide\n\nRun Docent in production.\n\n## Kubernetes\n\n"
        "```yaml\n# not a heading\nreplicas: 2\n```\n\n### Scaling\n\nAdd workers.\n\n## Backups\n\nNightly.\n"
    )
    parsed = parse_text("deploy.txt", text)
    title = "Deployment Guide"
    assert parsed.format == "markdown"
    assert parsed.title == title
    assert paths(parsed) == [
        (title,),
        (title, "Kubernetes"),
        (title, "Kubernetes", "Scaling"),
        (title, "Backups"),
    ]
    assert section(parsed, "Kubernetes") == "```\n# not a heading\nreplicas: 2\n```"
    assert parsed.metadata["sniffed_from"] == "text"


def test_markdown_frontmatter_in_a_txt_file_is_metadata() -> None:
    text = "---\ntitle: Rate Limits\nversion: 2.1\ndate: 2025-03-14\n---\n\nThe default is 600 per minute.\n"
    parsed = parse_text("limits.text", text)
    assert parsed.format == "markdown"
    assert parsed.title == "Rate Limits"
    assert parsed.metadata["date"] == "2025-03-14"
    assert parsed.text == "The default is 600 per minute."


# --- plain text stays plain -------------------------------------------------------------------


def test_plain_text_with_banners_and_comment_lines_stays_plain() -> None:
    text = (
        "==============================\n   LUMEN GATEWAY UPGRADE NOTES\n==============================\n\n"
        "Read this before upgrading.\n\n"
        "=====\nBREAKING CHANGES\n=====\n\nThe admin port moved.\n\n"
        "# settings that changed\nadmin_addr = :9090\n# and this one\nratelimit_default = 1200\n\n"
        "KNOWN ISSUES\n\nNone so far.\n"
    )
    parsed = parse_text("UPGRADE.txt", text)
    title = "LUMEN GATEWAY UPGRADE NOTES"
    assert parsed.format == "text"
    assert "sniffed_from" not in parsed.metadata
    assert parsed.title == title  # not the row of `=` above it
    assert paths(parsed) == [(title,), (title, "BREAKING CHANGES"), (title, "KNOWN ISSUES")]
    assert "# settings that changed" in section(parsed, "BREAKING CHANGES")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Release Notes\n=============\n\nHIGHLIGHTS\n\nFaster.\n", "one underlined title"),
        ("Notes\n=====\n\nInstall\n-------\n\nStep.\n\nUpgrade\n-------\n\nStep.\n", "plain `=`/`-` underlines"),
        ("# pinned for the 2.1 release\ndjango==5.1\n# search\npgvector==0.3\n", "comments over what they say"),
        ("Use the *fast* path; see [the docs](https://example.com).\n", "a link and emphasis"),
    ],
)
def test_weak_evidence_is_not_markup(text: str, reason: str) -> None:
    assert sniff_markup(text) is None, reason


@pytest.mark.parametrize(
    ("relative", "title"),
    [
        ("glossary.txt", "Lumen Gateway Glossary"),
        ("Troubleshooting (old).txt", "Lumen Gateway Troubleshooting Guide"),
        ("archive/configuration-reference-2.0.txt", "LUMEN GATEWAY 2.0 - CONFIGURATION REFERENCE"),
        ("release-notes/RELEASE_NOTES_3.0.txt", "LUMEN GATEWAY 3.0 - RELEASE NOTES"),
    ],
)
def test_demo_corpus_text_files_stay_plain_text(relative: str, title: str) -> None:
    path = DEMO_CORPUS / relative
    data = path.read_bytes()
    assert sniff_markup(data.decode()) is None
    parsed = parse_document(path, data)
    assert (parsed.format, parsed.title) == ("text", title)


# --- Sphinx version directives ----------------------------------------------------------------

VERSIONED = """\
Rate limits
===========

.. versionadded:: 2.0

Each API key has a limit.

.. versionchanged:: 3.0 The default is 1200 requests per minute.

.. deprecated:: 3.1
   Use per-route limits instead.

.. confval:: ratelimit_default

   The limit for keys without their own.

   .. versionchanged:: 2.1

      - Applies to consumers too.
      - Counted per node.

.. versionremoved:: 4.0
"""


def test_version_directives_read_as_sphinx_writes_them() -> None:
    parsed = parse_text("limits.rst", VERSIONED)
    assert parsed.title == "Rate limits"
    assert parsed.text.split("\n\n") == [
        "New in version 2.0.",
        "Each API key has a limit.",
        "Changed in version 3.0: The default is 1200 requests per minute.",
        "Deprecated since version 3.1: Use per-route limits instead.",
        "ratelimit_default: The limit for keys without their own.",  # an object keeps its description
        "Changed in version 2.1:\n- Applies to consumers too.\n- Counted per node.",
        "Removed in version 4.0.",
    ]
    assert ".." not in parsed.text


def test_version_directives_are_listed_in_metadata_as_json() -> None:
    parsed = parse_text("limits.txt", VERSIONED)  # sniffed: the directives are the evidence
    assert parsed.format == "rst"
    expected = [
        {"kind": "added", "version": "2.0"},
        {"kind": "changed", "version": "3.0"},
        {"kind": "deprecated", "version": "3.1"},
        {"kind": "changed", "version": "2.1"},
        {"kind": "removed", "version": "4.0"},
    ]
    assert json.loads(json.dumps(parsed.metadata))["version_directives"] == expected
    assert "version_directives" not in parse_text("x.rst", "Title\n=====\n\nText.\n").metadata


# --- a real Sphinx page ----------------------------------------------------------------------

# From Sphinx 7.2.6, doc/usage/extensions/viewcode.rst (shortened), as Sphinx ships it in _sources.
SPHINX_VIEWCODE = """\
:mod:`sphinx.ext.viewcode` -- Add links to highlighted source code
==================================================================

.. module:: sphinx.ext.viewcode
   :synopsis: Add links to a highlighted version of the source code.
.. moduleauthor:: Georg Brandl

.. versionadded:: 1.0

This extension looks at your Python object descriptions (``.. class::``, ``..
function::`` etc.) and tries to find the source files where the objects are
contained.

.. warning::

   Basically, ``viewcode`` extension will import the modules being linked to.
   If any modules have side effects on import, these will be executed when
   ``sphinx-build`` is run.

Configuration
-------------

.. confval:: viewcode_follow_imported_members

   If this is ``True``, viewcode extension will emit
   :event:`viewcode-follow-imported` event to resolve the name of the module
   by other extensions.  The default is ``True``.

   .. versionadded:: 1.3

   .. versionchanged:: 1.8
      Renamed from ``viewcode_import`` to ``viewcode_follow_imported_members``.

.. confval:: viewcode_enable_epub

   If this is ``True``, viewcode extension is also enabled even if you use
   epub builders.

   .. versionadded:: 1.5
"""


def test_real_sphinx_page_saved_as_txt() -> None:
    parsed = parse_text("viewcode.txt", SPHINX_VIEWCODE)
    title = "sphinx.ext.viewcode -- Add links to highlighted source code"
    assert parsed.format == "rst"
    assert parsed.title == title
    assert paths(parsed) == [(title,), (title, "Configuration")]
    assert parsed.sections[0].text.startswith("New in version 1.0.\n\nThis extension looks at")
    assert "viewcode extension will import the modules" in parsed.sections[0].text
    configuration = section(parsed, "Configuration")
    assert configuration.split("\n\n") == [
        "viewcode_follow_imported_members: If this is True, viewcode extension will emit viewcode-follow-imported "
        "event to resolve the name of the module by other extensions. The default is True.",
        "New in version 1.3.",
        "Changed in version 1.8: Renamed from viewcode_import to viewcode_follow_imported_members.",
        "viewcode_enable_epub: If this is True, viewcode extension is also enabled even if you use epub builders.",
        "New in version 1.5.",
    ]
    assert [(item["kind"], item["version"]) for item in parsed.metadata["version_directives"]] == [
        ("added", "1.0"), ("added", "1.3"), ("changed", "1.8"), ("added", "1.5"),
    ]  # fmt: skip
    assert "synopsis" not in parsed.text and "Georg Brandl" not in parsed.text
