"""Version families, supersession and version-aware retrieval, with the real encoder on demo files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rag.dedup.merge import document_merge, workspace_merge
from rag.documents import documents_archive
from rag.jobs.run import job_item_run
from rag.lineage.families import family_refresh
from rag.models import Chunk, Contradiction, Document, DocumentFamily
from rag.retrieval import search
from rag.uploads import indexing_job_create
from tests.factories import WorkspaceFactory
from tests.rag.retrieval_helpers import options
from tests.rag.retrieval_helpers import encoder, minilm, retrieval_isolation  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.real_encoder]

DEMO = Path(__file__).resolve().parents[2] / "demo" / "corpus"
API = ["v2.0/api_reference.pdf", "api-reference-v2.1.md", "api/api-reference-v3.adoc"]


def ingest(workspace, *paths: Path) -> list[Document]:
    """Index and merge in this process, in the order given (the merge task's job after each document)."""
    job = indexing_job_create(workspace=workspace, paths=list(paths), enqueue=False)
    documents = []
    for item in job.items.order_by("pk"):
        assert job_item_run(item_id=item.pk) in ("indexed", "unchanged")
        item.refresh_from_db()
        document_merge(document_id=item.document_id)
        documents.append(Document.objects.get(pk=item.document_id))
    return documents


def copy_demo(tmp_path: Path, *names: str) -> list[Path]:
    copies = []
    for name in names:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(DEMO / name, target)
        copies.append(target)
    return copies


def by_name(workspace) -> dict[str, Document]:
    return {Path(d.path).name: d for d in Document.objects.filter(workspace=workspace)}


def snapshot(workspace) -> tuple:
    documents = sorted(Document.objects.filter(workspace=workspace).values_list(
        "pk", "family_id", "family_position", "is_latest_version", "copy_of_id", "lineage_note"))
    chunks = sorted(Chunk.objects.filter(workspace=workspace).values_list("pk", "lineage", "superseded_by_id"))
    return documents, chunks


def test_versions_form_one_family_ordered_by_label_with_older_passages_superseded(workspace, encoder, tmp_path):
    ingest(workspace, *copy_demo(tmp_path, *API, "glossary.txt"))

    docs = by_name(workspace)
    family = docs["api-reference-v3.adoc"].family
    assert family is not None and docs["glossary.txt"].family is None
    members = list(family.members.order_by("family_position"))
    assert [m.version_label for m in members] == ["2.0", "2.1", "3.0.0"]
    assert [m.is_latest_version for m in members] == [False, False, True]
    assert docs["api-reference-v2.1.md"].version_source == "title"

    old_limit = Chunk.objects.get(document=docs["api-reference-v2.1.md"], text__contains="1000 requests per minute")
    assert old_limit.lineage == Chunk.Lineage.SUPERSEDED
    assert old_limit.superseded_by.document == docs["api-reference-v3.adoc"]
    assert "1200 requests per minute" in old_limit.superseded_by.text
    assert not Chunk.objects.filter(document=docs["api-reference-v3.adoc"]).exclude(lineage="").exists()
    assert not Chunk.objects.filter(document=docs["glossary.txt"]).exclude(lineage="").exists()

    before = snapshot(workspace)
    workspace_merge(workspace_id=workspace.pk)  # a rebuild from scratch reaches the same families
    assert snapshot(workspace) == before
    family_refresh(family_id=family.pk)
    assert snapshot(workspace) == before


def test_a_family_from_content_alone_and_one_from_versioned_paths(workspace, encoder, tmp_path):
    body = (DEMO / "user_guide_2.1.rst").read_text().split(":Version: 2.1", 1)[1]
    renamed = tmp_path / "handbook.rst"  # another title, another name, the same sections
    rule = "#" * 37
    renamed.write_text(f"{rule}\nHandbook for operators of the gateway\n{rule}\n\n:Version: 2.2\n{body}")
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    (tmp_path / "v1" / "setup.md").write_text(
        "# Setup\n\nInstall the package with pip and run the migrate command before the first start.\n\n"
        "## Ports\n\nThe server listens on port 8080 by default.\n")
    (tmp_path / "v2" / "setup.md").write_text(
        "# Getting started\n\nThe container image replaces the pip package; pull it and start it.\n\n"
        "## Ports\n\nThe server listens on port 9090 by default.\n")
    ingest(workspace, *copy_demo(tmp_path, "user_guide_2.1.rst"), renamed, tmp_path / "v1" / "setup.md",
           tmp_path / "v2" / "setup.md")

    docs = Document.objects.filter(workspace=workspace)
    guide_doc = docs.get(path__endswith="user_guide_2.1.rst")
    handbook = docs.get(path__endswith="handbook.rst")
    assert guide_doc.family_id is not None and guide_doc.family_id == handbook.family_id
    assert (guide_doc.is_latest_version, handbook.is_latest_version) == (False, True)

    old_setup, new_setup = docs.get(path__endswith="v1/setup.md"), docs.get(path__endswith="v2/setup.md")
    assert old_setup.family_id is not None and old_setup.family_id == new_setup.family_id
    assert old_setup.family_id != guide_doc.family_id
    old_ports = Chunk.objects.get(document=old_setup, text__contains="8080")
    assert old_ports.superseded_by.document_id == new_setup.pk  # the same heading, new value


def test_an_old_copy_uploaded_today_is_not_the_newest_version(workspace, encoder, tmp_path):
    ingest(workspace, *copy_demo(tmp_path, *API))
    # The 2.1 reference without its frontmatter: no date inside, so its date is today's mtime.
    text = (DEMO / "api-reference-v2.1.md").read_text().split("---", 2)[2]
    upload = tmp_path / "uploads" / "admin-api.md"
    upload.parent.mkdir()
    upload.write_text(text)
    (copy,) = ingest(workspace, upload)

    copy.refresh_from_db()
    docs = by_name(workspace)
    assert copy.family_id == docs["api-reference-v3.adoc"].family_id
    assert copy.copy_of_id == docs["api-reference-v2.1.md"].pk
    assert not copy.is_latest_version and docs["api-reference-v3.adoc"].is_latest_version

    results = search("What is the default rate limit per API key?", options(workspace, top_k=5))
    assert "1200 requests per minute" in results[0].text
    assert not any("1000 requests per minute" in r.text or "600 requests per minute" in r.text
                   for r in results), [r.text[:80] for r in results]


def test_an_undated_old_copy_uploaded_through_the_browser_keeps_answers_current(
        workspace, encoder, tmp_path, logged_in_client):
    """The issue's case end to end: the 2.1 reference without its frontmatter, uploaded today by a browser."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from rag.models import IndexingJob

    ingest(workspace, *copy_demo(tmp_path, *API))
    text = (DEMO / "api-reference-v2.1.md").read_text().split("---", 2)[2]
    response = logged_in_client.post("/documents/upload/", {"files": [SimpleUploadedFile("admin-api.md", text.encode())]})
    assert response.status_code == 302
    item = IndexingJob.objects.order_by("-pk").first().items.get()
    assert job_item_run(item_id=item.pk) == "indexed"
    item.refresh_from_db()
    document_merge(document_id=item.document_id)

    upload = Document.objects.get(pk=item.document_id)
    assert upload.date_source == "upload_time" and upload.version_label == "2.1"
    assert not upload.is_latest_version and upload.family_id == by_name(workspace)["api-reference-v3.adoc"].family_id
    results = search("What is the default rate limit per API key?", options(workspace, top_k=5))
    assert "1200 requests per minute" in results[0].text
    assert not any("1000 requests per minute" in r.text for r in results)


def test_retrieval_answers_from_the_present_unless_asked_about_a_version(workspace, encoder, tmp_path):
    ingest(workspace, *copy_demo(tmp_path, *API))
    docs = by_name(workspace)

    present = search("What is the default rate limit per API key?", options(workspace, top_k=3))
    assert present[0].document_id == docs["api-reference-v3.adoc"].pk
    assert present[0].is_latest_version and present[0].version_label == "3.0.0"
    assert present.stats["superseded_replaced"] >= 1  # older passages ranked, and gave their slots away
    assert all(r.lineage == "" and r.is_latest_version for r in present)
    assert not any("1000 requests per minute" in r.text or "600 requests per minute" in r.text for r in present)
    unaware = search("What is the default rate limit per API key?", options(workspace, top_k=3, version_aware=False,
                                                                            respect_canonicals=False, dedup=False))
    assert any(not r.is_latest_version for r in unaware)  # what the replacement had to do

    past = search("What was the rate limit per API key in 2.1?", options(workspace, top_k=3))
    assert past.stats["versions"]["mode"] == "as_of"
    assert past[0].document_id == docs["api-reference-v2.1.md"].pk and "1000 requests per minute" in past[0].text
    assert {r.document_id for r in past} <= {docs["api-reference-v2.1.md"].pk}

    explicit = search("rate limit per API key", options(workspace, top_k=3, as_of_version="2.0"))
    assert explicit[0].document_id == docs["api_reference.pdf"].pk

    change = search("What changed in the rate limit between 2.1 and 3.0?", options(workspace, top_k=4))
    assert change.stats["versions"]["change"] == ["2.1", "3.0.0"]
    sides = {r.document_id for r in change[:2]}
    assert sides == {docs["api-reference-v2.1.md"].pk, docs["api-reference-v3.adoc"].pk}


def test_the_version_plan_crosses_to_the_answer_typed_and_prints_as_before(workspace, encoder, tmp_path):
    """chat.answering reads the plan and the change sides as attributes; `stats` keeps their printed form."""
    ingest(workspace, *copy_demo(tmp_path, *API))
    with CaptureQueriesContext(connection) as queries:
        change = search("What changed in the rate limit between 2.1 and 3.0?", options(workspace, top_k=4))
    assert change.plan is not None and change.plan.mode == "change" and change.plan.change == ("2.1", "3.0.0")
    assert change.plan.topic == "rate limit"
    # The two sides' candidate lists are read in one round trip: both kNN statements travel together.
    knn = [query["sql"].count("AS distance FROM rag_chunk") for query in queries if "AS distance FROM" in query["sql"]]
    assert knn[0] == 2
    assert [side.label for side in change.change_sides] == ["2.1", "3.0.0"]  # oldest first
    assert {r.chunk_id for r in change} <= {chunk for side in change.change_sides for chunk in side.chunk_ids}
    assert change.stats["versions"] == change.plan.describe()
    assert change.stats["change_sides"] == [{"label": side.label, "chunk_ids": list(side.chunk_ids)}
                                            for side in change.change_sides]
    present = search("What is the default rate limit per API key?", options(workspace, top_k=3))
    assert present.plan is not None and present.plan.mode == "present" and present.change_sides == ()
    assert "change_sides" not in present.stats and present.stats["versions"]["topic"] == ""


def test_retired_passages_are_demoted_and_labelled(workspace, encoder, tmp_path, settings):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shared = ("## Authentication\n\nClients authenticate with an API key sent in the X-API-Key header.\n\n"
              "## Pagination\n\nLists return fifty items per page and a cursor for the next page.\n\n")
    (tmp_path / "a" / "guide-v1.md").write_text(
        "# Gateway Guide 1.0\n\n" + shared + "## SOAP bridge\n\nThe SOAP bridge translates XML envelopes into "
        "JSON calls for legacy clients.\n")
    (tmp_path / "b" / "guide-v2.md").write_text("# Gateway Guide 2.0\n\n" + shared.replace("fifty", "one hundred"))
    ingest(workspace, tmp_path / "a" / "guide-v1.md", tmp_path / "b" / "guide-v2.md")

    soap = Chunk.objects.get(text__contains="SOAP bridge translates")
    assert soap.lineage == Chunk.Lineage.RETIRED and soap.superseded_by is None
    results = search("How do legacy clients send XML envelopes through the SOAP bridge?", options(workspace, top_k=3))
    retired = next(r for r in results if r.chunk_id == soap.pk)
    assert retired.lineage == "retired" and retired.version_label == "1.0" and not retired.is_latest_version
    undemoted = search("How do legacy clients send XML envelopes through the SOAP bridge?",
                       options(workspace, top_k=3, version_aware=False))
    plain_score = next(r.score for r in undemoted if r.chunk_id == soap.pk)
    # Demoted as retired, and as a passage of an older release (1.0) than another candidate's (2.0).
    assert retired.score == pytest.approx(plain_score * settings.RETIRED_DEMOTION * settings.OLDER_RELEASE_DEMOTION)


def test_archive_reindex_and_rebuild_keep_the_family_true(workspace, encoder, tmp_path):
    paths = copy_demo(tmp_path, *API)
    ingest(workspace, *paths)
    docs = by_name(workspace)
    family_id = docs["api-reference-v3.adoc"].family_id

    documents_archive(documents=Document.objects.filter(pk=docs["api-reference-v3.adoc"].pk))
    docs = by_name(workspace)
    assert docs["api-reference-v3.adoc"].family_id is None
    assert docs["api-reference-v2.1.md"].is_latest_version and docs["api-reference-v2.1.md"].family_id == family_id
    assert not Chunk.objects.filter(document=docs["api-reference-v2.1.md"]).exclude(lineage="").exists()

    # The 3.0 file comes back with an edit: re-indexed, it rejoins and supersedes again.
    paths[2].write_text(paths[2].read_text().replace("1200 requests per minute", "1500 requests per minute"))
    ingest(workspace, *paths)
    docs = by_name(workspace)
    assert docs["api-reference-v3.adoc"].family_id == family_id and docs["api-reference-v3.adoc"].is_latest_version
    old_limit = Chunk.objects.get(document=docs["api-reference-v2.1.md"], text__contains="1000 requests per minute")
    assert "1500 requests per minute" in old_limit.superseded_by.text
    assert DocumentFamily.objects.filter(workspace=workspace).count() == 1


def test_families_are_the_same_whatever_order_the_files_arrive_in(workspace, encoder, tmp_path):
    names = [*API, "troubleshooting/troubleshooting-2.1.pdf", "troubleshooting/troubleshooting.md",
             "support/support-playbook-3.0.md", "release-notes/release-notes-2.1.md",
             "release-notes/RELEASE_NOTES_3.0.txt"]
    paths = copy_demo(tmp_path, *names)
    other = WorkspaceFactory()

    def families(target) -> set[frozenset[str]]:
        groups: dict[int, set[str]] = {}
        for document in Document.objects.filter(workspace=target, family__isnull=False):
            groups.setdefault(document.family_id, set()).add(str(Path(document.path).relative_to(tmp_path)))
        return {frozenset(group) for group in groups.values()}

    ingest(workspace, *paths)
    ingest(other, *reversed(paths))
    found = families(workspace)
    assert found == families(other)
    assert frozenset(API) in found
    # The playbook is current beside the 3.0 guide (one release), never a version of it; release notes are a series.
    assert frozenset(["troubleshooting/troubleshooting-2.1.pdf", "troubleshooting/troubleshooting.md"]) in found
    assert not any("support/support-playbook-3.0.md" in group or any("release-notes" in n for n in group)
                   for group in found)


def test_two_releases_notes_are_neither_a_family_nor_a_contradiction(workspace, encoder, tmp_path):
    """Scale corpus: Django's release notes of 1.3.1 and 1.2.6 (two security releases, one text) were one family,
    and every two releases' notes were queued as contradictions (4,235 pending)."""
    body = ("Django {v} fixes two security issues in {old}. All users are encouraged to upgrade. "
            "The session backend now rejects cookies larger than {size} KB, and the password reset view "
            "no longer reveals whether an account exists.")
    files = []
    for name, version, old, size, title in [("notes-a.md", "1.2.6", "1.2.5", 4, "Django 1.2.6 release notes"),
                                            ("notes-b.md", "1.3.1", "1.3", 8, "Django 1.3.1 release notes"),
                                            ("guide-a.md", "", "1.3", 4, "Session guide"),
                                            ("guide-b.md", "", "1.3", 8, "Cookie handbook")]:
        (tmp_path / name).write_text(f"# {title}\n\n" + body.format(v=version or "now", old=old, size=size))
        files.append(tmp_path / name)
    notes_a, notes_b, guide_a, guide_b = ingest(workspace, *files)
    assert notes_a.family_id is None and notes_b.family_id is None
    pending = {frozenset((c.chunk_a.document_id, c.chunk_b.document_id)) for c in Contradiction.objects.filter(
        workspace=workspace, status=Contradiction.Status.PENDING).select_related("chunk_a", "chunk_b")}
    assert frozenset((notes_a.pk, notes_b.pk)) not in pending  # each release's own page
    assert not any({notes_a.pk, notes_b.pk} & pair for pair in pending)  # notes speak for their release, not today
    assert frozenset((guide_a.pk, guide_b.pk)) in pending  # two current guides that disagree: for review
    guide_a.refresh_from_db(), guide_b.refresh_from_db()
    assert guide_b.copy_of_id != guide_a.pk and guide_a.copy_of_id != guide_b.pk  # 4 KB against 8 KB: no copy


def test_a_change_search_keeps_each_release_s_full_width(workspace, encoder, tmp_path):
    """A change answer is told from each side's own statements: every result of each side reaches the answer,
    not the first half of an interleaving cut to one side's width."""
    ingest(workspace, *copy_demo(tmp_path, *API))
    change = search("What changed in the rate limit between 2.1 and 3.0?", options(workspace, top_k=3))
    found = {r.chunk_id for r in change}
    assert all(len(side.chunk_ids) == 3 for side in change.change_sides)
    assert {chunk for side in change.change_sides for chunk in side.chunk_ids} == found
