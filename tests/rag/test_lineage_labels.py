"""Version labels: where each kind of evidence is read, how labels order, and what is not a version.

Pure functions: no database.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from packaging.version import Version

from rag.parsers import parse_document
from rag.releases.labels import (
    VersionLabel,
    extract_version_label,
    path_version_stem,
    strip_versions,
    text_versions,
    version_stem_key,
)
from rag.releases.order import parse_version, version_key, within_version

DEMO = Path(__file__).parents[2] / "demo"


def label_of(path: str, title: str = "", metadata: dict | None = None, **kwargs: object) -> VersionLabel | None:
    return extract_version_label(path=path, title=title, metadata=metadata or {}, **kwargs)  # type: ignore[arg-type]


# --- parsing and ordering -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("v2.1", "2.1"), ("V3", "3"), ("3.2.25", "3.2.25"), ("1.4.0rc1", "1.4.0rc1"), ("2.0-beta", "2.0b0"),
     (" 2.1 ", "2.1")],
)  # fmt: skip
def test_parse_version_reads_labels_with_or_without_v(text: str, expected: str) -> None:
    assert parse_version(text) == Version(expected)


@pytest.mark.parametrize("text", ["", "v", "latest", "draft 2", "2.1 final", "HTTP/1.1", "version"])
def test_parse_version_rejects_what_is_not_a_version(text: str) -> None:
    assert parse_version(text) is None
    assert version_key(text) is None


def test_version_key_orders_like_packaging() -> None:
    labels = [
        "0.9", "1.0.dev1", "1.0a1", "1.0a2.dev1", "1.0a2", "1.0b1", "1.0rc1", "1.0", "1.0.post1.dev3", "1.0.post1",
        "1.0.1", "1.1", "1.9", "1.10", "1.10.1", "2", "2.0.1", "2.1", "2.9", "2.10", "3.0rc1", "3.0", "3.2.25",
        "10.0", "2024.1", "1!0.1",
    ]  # fmt: skip
    shuffled = labels[:]
    random.Random(7).shuffle(shuffled)
    by_key = sorted(shuffled, key=lambda label: version_key(label) or "")
    by_packaging = sorted(shuffled, key=Version)
    assert [Version(label) for label in by_key] == [Version(label) for label in by_packaging]


def test_version_key_cases_the_brief_names() -> None:
    assert version_key("2.10") > version_key("2.9")  # type: ignore[operator]
    assert version_key("3.0rc1") < version_key("3.0")  # type: ignore[operator]
    assert version_key("v3") == version_key("3.0") == version_key("3.0.0")
    assert version_key("2.1.0") == version_key("v2.1")


def test_version_key_refuses_numbers_too_long_to_pad() -> None:
    assert version_key("20240315123000.1") is None


def test_within_version_counts_patch_releases_of_the_bound() -> None:
    assert within_version("2.1.2", "2.1")  # the runbook at revision 2.1.2 belongs to the 2.1 docs
    assert within_version("2.0", "2.1")
    assert within_version("3.0.0", "3.0")
    assert not within_version("2.2", "2.1")
    assert not within_version("3.0", "2.1")
    assert not within_version("junk", "2.1")


# --- each source ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [({"version": 2.1}, "2.1"), ({"version": 3}, "3"), ({"version": "v2.1.0"}, "2.1.0"),
     ({"version": "Release 3.0 (LTS)"}, "3.0")],
)  # fmt: skip
def test_frontmatter_version_number_or_string(metadata: dict, expected: str) -> None:
    label = label_of("notes.md", "Lumen Gateway 9.9 Notes", metadata)
    assert label is not None
    assert (label.label, label.source) == (expected, "frontmatter")


def test_asciidoc_revnumber() -> None:
    label = label_of("guide.adoc", "Guide", {"revnumber": "3.0.0", "revdate": "2025-10-06"}, doc_format="asciidoc")
    assert label == VersionLabel("3.0.0", version_key("3.0.0") or "", "asciidoc_revnumber")


def test_rst_docinfo_version_is_named_as_such() -> None:
    by_extension = label_of("guide.rst", "Guide", {"version": "2.1", "date": "2025-02-27"})
    sniffed = label_of("guide.txt", "Guide", {"version": "2.1"}, doc_format="rst")
    assert by_extension is not None and by_extension.source == "rst_version"
    assert sniffed is not None and (sniffed.label, sniffed.source) == ("2.1", "rst_version")
    sphinx_source = label_of("guide.rst.txt", "Guide", {"version": "2.1"})
    assert sphinx_source is not None and sphinx_source.source == "rst_version"


def test_html_meta_version() -> None:
    label = label_of("guide.html", "Guide", {"version": "2.0"})
    assert label is not None and label.source == "html_meta"


@pytest.mark.parametrize(
    ("pdf_metadata", "expected"),
    [({"Version": "v4.2"}, "4.2"), ({"Title": "Lumen Gateway 3.0 Architecture"}, "3.0"),
     ({"Title": "Hardening Guide", "Subject": "Production checklist for Lumen Gateway 3.0"}, "3.0")],
)  # fmt: skip
def test_pdf_metadata_version_title_or_subject(pdf_metadata: dict, expected: str) -> None:
    label = label_of("Guide.pdf", "Guide", {}, pdf_metadata=pdf_metadata)
    assert label is not None and (label.label, label.source) == (expected, "pdf_metadata")


def test_pdf_info_passed_as_metadata_counts_as_pdf_metadata() -> None:
    label = label_of("a.pdf", "Guide", {"Title": "Lumen Gateway 2.0 - Admin API Reference", "Producer": "fpdf2"})
    assert label is not None and (label.label, label.source) == ("2.0", "pdf_metadata")


@pytest.mark.parametrize(
    ("title", "expected"),
    [("Lumen Gateway 3.0 Admin API Reference", "3.0"), ("Lumen Gateway Admin API Reference v2.1", "2.1"),
     ("LUMEN GATEWAY 2.0 - CONFIGURATION REFERENCE", "2.0"), ("Lumen Gateway Operations Runbook (2.1)", "2.1"),
     ("Upgrading from Lumen Gateway 2.0 to 2.1", "2.1"), ("Upgrade Guide: Lumen Gateway 2.1 to 3.0", "3.0"),
     ("Lumen Gateway version 3", "3"), ("What's new in Celery 5.2 (Dawn Chorus)", "5.2"),
     ("Lumen 1.4.0rc1 Release Notes", "1.4.0rc1"), ("2.1 Release Notes", "2.1"),
     ("Lumen Gateway 3.0 on Kubernetes 1.29", "3.0")],
)  # fmt: skip
def test_title_versions(title: str, expected: str) -> None:
    label = label_of("doc.md", title)
    assert label is not None and (label.label, label.source) == (expected, "title")


@pytest.mark.parametrize(
    ("name", "expected"),
    [("api-reference-v2.1.md", "2.1"), ("RELEASE_NOTES_3.0.txt", "3.0"), ("release-notes-2.1.md", "2.1"),
     ("configuration-reference-v3.rst", "3"), ("Architecture_v3.pdf", "3"), ("user_guide_2.1.rst", "2.1"),
     ("celery-5.2.7-whatsnew.rst", "5.2.7"), ("upgrading-from-2.0-to-2.1.md", "2.1"), ("lumen-3.0-rc1.md", "3.0rc1"),
     ("upgrading-to-2.1 (export).md", "2.1"), ("release-5-notes.md", "5")],
)  # fmt: skip
def test_file_name_versions(name: str, expected: str) -> None:
    label = label_of(f"docs/{name}", "Some Guide")
    assert label is not None and (label.label, label.source) == (expected, "filename")


@pytest.mark.parametrize(
    ("path", "expected"),
    [("v2.0/install-guide.md", "2.0"), ("docs/3.2.25/x.md", "3.2.25"), ("archive/v3/guide.md", "3"),
     ("lumen-2.1/docs/guide.md", "2.1"), ("v2.0/sub/v2.1/guide.md", "2.1")],
)  # fmt: skip
def test_folder_versions_deepest_first(path: str, expected: str) -> None:
    label = label_of(path, "Guide")
    assert label is not None and (label.label, label.source) == (expected, "path")


def test_evidence_order_first_found_wins() -> None:
    path, title = "v1.0/guide-v1.5.md", "Lumen Gateway 2.0 Guide"
    assert label_of(path, title, {"version": "3.0"}).source == "frontmatter"  # type: ignore[union-attr]
    assert label_of(path, title).source == "title"  # type: ignore[union-attr]
    assert label_of(path, "Guide").label == "1.5"  # type: ignore[union-attr]
    assert label_of("v1.0/guide.md", "Guide").label == "1.0"  # type: ignore[union-attr]


# --- false positives ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "title",
    ["Release notes 2024-03-15", "Nightly build 20240315", "ADR 0007: Cursor-based pagination for Admin API v2",
     "Keep-alive in HTTP/1.1", "Configuring OAuth 2.0", "TLS 1.3 everywhere", "IPv4 and IPv6 listeners",
     "Routing /api/v2 requests", "Listening on port 8080", "Top 10 errors", "Running on Python 3.11",
     "Supported on Ubuntu 22.04", "3.2 Configuration", "Timeouts of 2.5 seconds", "A 1.5x speed-up",
     "Section 4.2 Limits", "Published March 15, 2024", "Reachable at 10.0.0.1", "Costs $2.50 a month",
     "Lumen Gateway Troubleshooting Guide"],
)  # fmt: skip
def test_titles_without_a_product_version(title: str) -> None:
    assert label_of("doc.md", title) is None


@pytest.mark.parametrize(
    "path",
    ["adr/0007-cursor-pagination.md", "notes-2024-03-15.md", "report_20240315.md", "http-1.1-guide.md",
     "docs/api/v2/endpoints.md", "oauth-2.0.md", "top-10.md", "running-on-python-3.11.md", "chapter-3.md",
     "Troubleshooting (old).txt", "glossary.txt", "2024/03/notes.md"],
)  # fmt: skip
def test_paths_without_a_version(path: str) -> None:
    assert label_of(path, "Guide") is None
    assert path_version_stem(path) is None


def test_text_versions_strict_and_loose() -> None:
    assert [str(m.version) for m in text_versions("3.2 Configuration")] == []
    assert [str(m.version) for m in text_versions("3.2 Configuration", strict=False)] == ["3.2"]
    assert [str(m.version) for m in text_versions("What's New In Python 3.11")] == ["3.11"]


# --- the demo corpus ------------------------------------------------------------------------------

# path -> (label, source). None where neither the name, the title nor the metadata names a
# version: those documents get theirs from their family's order. The AsciiDoc revision
# numbers are more precise than the manifest: 3.0.0 is 3.0, and the runbook's 2.1.2 is in 2.1.
DEMO_LABELS: dict[str, tuple[str, str] | None] = {
    "v2.0/api_reference.pdf": ("2.0", "pdf_metadata"),
    "api-reference-v2.1.md": ("2.1", "title"),
    "api/api-reference-v3.adoc": ("3.0.0", "asciidoc_revnumber"),
    "v2.0/architecture-overview.rst": ("2.0", "rst_version"),
    "architecture/Architecture_v3.pdf": ("3.0", "pdf_metadata"),
    "adr/0007-cursor-pagination.md": None,
    "v2.0/install-guide.md": ("2.0", "title"),
    "archive/configuration-reference-2.0.txt": ("2.0", "title"),
    "upgrading-to-2.1.md": ("2.1", "title"),
    "archive/upgrading-to-2.1 (export).md": ("2.1", "title"),
    "ops_runbook.adoc": ("2.1.2", "asciidoc_revnumber"),
    "upgrade-guide-3.0.adoc": ("3.0", "title"),
    "configuration-reference-v3.rst": ("3.0", "rst_version"),
    "operations/operations-guide-3.0.html": ("3.0", "title"),
    "Security Hardening Guide.pdf": ("3.0", "pdf_metadata"),
    "Troubleshooting (old).txt": None,
    "troubleshooting/troubleshooting-2.1.pdf": ("2.1", "pdf_metadata"),
    "troubleshooting/troubleshooting.md": ("3.0", "title"),
    "v2.0/user-guide.html": ("2.0", "title"),
    "user_guide_2.1.rst": ("2.1", "rst_version"),
    "docs/user-guide-3.0.md": ("3.0", "title"),
    "release-notes/release-notes-2.1.md": ("2.1", "title"),
    "release-notes/RELEASE_NOTES_3.0.txt": ("3.0", "title"),
    "glossary.txt": None,
    "support/support-playbook-3.0.md": ("3.0", "frontmatter"),
}
MANIFEST = json.loads((DEMO / "manifest.json").read_text())["files"]


def test_demo_table_covers_the_manifest() -> None:
    assert sorted(DEMO_LABELS) == sorted(entry["path"] for entry in MANIFEST)


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda entry: entry["path"])
def test_demo_corpus_label(entry: dict) -> None:
    path = DEMO / "corpus" / entry["path"]
    parsed = parse_document(path, path.read_bytes())
    label = extract_version_label(
        path=entry["path"], title=parsed.title, metadata=parsed.metadata, doc_format=parsed.format
    )
    expected = DEMO_LABELS[entry["path"]]
    assert ((label.label, label.source) if label else None) == expected
    if label is not None:  # what it found is the manifest's version (or a revision of it)
        assert within_version(label.label, entry["version"])
        assert Version(label.label) >= Version(entry["version"])


# --- same document, other version ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [("Lumen Gateway 3.0 Admin API Reference", "Lumen Gateway Admin API Reference v2.1"),
     ("Lumen Gateway 2.0 - Admin API Reference", "Lumen Gateway 3.0 Admin API Reference"),
     ("LUMEN GATEWAY 3.0 - RELEASE NOTES", "Lumen Gateway 2.1 Release Notes"),
     ("Lumen Gateway Operations Runbook (2.1)", "Lumen Gateway Operations Runbook, version 3.0."),
     ("Release Notes 2024-03-15", "Release notes (March 2025)"),
     ("3.2 Configuration", "4.1 Configuration"), ("user_guide_2.1", "User Guide 3.0")],
)  # fmt: skip
def test_strip_versions_makes_versions_of_a_title_equal(first: str, second: str) -> None:
    assert strip_versions(first) == strip_versions(second)


def test_strip_versions_output() -> None:
    assert strip_versions("Lumen Gateway 3.0 Admin API Reference") == "lumen gateway admin api reference"
    assert strip_versions("Upgrading from Lumen Gateway 2.0 to 2.1") == "upgrading from lumen gateway"
    assert strip_versions("  Lumen   Gateway v3:  ") == "lumen gateway"


def test_strip_versions_keeps_protocol_versions_and_other_titles_apart() -> None:
    assert strip_versions("Configuring OAuth 2.0") != strip_versions("Configuring OAuth 1.0")
    assert strip_versions("Lumen Gateway User Guide 2.0") != strip_versions("Lumen Gateway Admin Guide 2.0")


@pytest.mark.parametrize(
    ("path", "stem"),
    [("v2.0/user-guide.html", "{v}/user-guide.html"), ("docs/user-guide-3.0.md", "docs/user-guide-{v}.md"),
     ("api-reference-v2.1.md", "api-reference-{v}.md"), ("api/api-reference-v3.adoc", "api/api-reference-{v}.adoc"),
     ("docs/3.2.25/api/reference.md", "docs/{v}/api/reference.md"),
     ("upgrading-from-2.0-to-2.1.md", "upgrading-from-{v}-to-{v}.md"),
     ("whatsnew-5.2.rst.txt", "whatsnew-{v}.rst.txt")],
)  # fmt: skip
def test_path_version_stem(path: str, stem: str) -> None:
    assert path_version_stem(path) == stem


def test_version_stem_key_compares_file_names_without_extension() -> None:
    # The version in the file name: the file name alone decides, whatever the folder and format.
    assert version_stem_key("api-reference-v2.1.md") == version_stem_key("api/api-reference-v3.adoc")
    assert version_stem_key("release-notes/RELEASE_NOTES_3.0.txt") == version_stem_key("release-notes-2.1.md")
    assert version_stem_key("upgrading-to-2.1.md") == version_stem_key("archive/upgrading-to-2.1 (export).md")
    # The version in a folder: the rest of the path decides.
    assert version_stem_key("v2.0/install-guide.md") == version_stem_key("v3.0/install-guide.rst")
    assert version_stem_key("v2.0/user-guide.html") != version_stem_key("docs/user-guide-3.0.md")
    assert version_stem_key("glossary.txt") is None
    assert version_stem_key("whatsnew-5.2.rst.txt") == version_stem_key("whatsnew-5.3.rst") == "whatsnew-{v}"


@pytest.mark.parametrize("name", [
    "40b08594_index.txt", "58c20104_sitemaps.md", "59a74893_builtins.txt", "6600693b81-guide.rst",
    "550e8400-e29b-41d4-a716-446655440000.md", "build-20240113.4.md", "3a2b1c_x.md", "12345678_index.md",
])
def test_hashes_uuids_and_build_numbers_in_a_name_are_never_versions(name):
    assert extract_version_label(path=f"/corpus/{name}", title="Index", metadata={}) is None


@pytest.mark.parametrize(("name", "label"), [
    ("release-2.0b1.md", "2.0b1"), ("sphinx-3.1rc2-notes.md", "3.1rc2"), ("notes-2.2.28.txt", "2.2.28"),
    ("api-reference-v2.1.md", "2.1"),
])
def test_a_pre_release_is_read_where_a_person_reads_one(name, label):
    assert extract_version_label(path=f"/corpus/{name}", title="Index", metadata={}).label == label
