"""Upload, job progress, document list and page; other workspaces stay invisible."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rag.jobs.run import job_item_run
from rag.models import Document, IndexingJob
from rag.uploads import indexing_job_create
from tests.factories import UserFactory, WorkspaceFactory
from tests.rag.samples import GUIDE_MD, write_corpus

pytestmark = pytest.mark.django_db


def _index_folder(workspace, folder):
    job = indexing_job_create(workspace=workspace, paths=[folder], enqueue=False)
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    return job


def test_upload_several_files_then_follow_the_job(logged_in_client, workspace, django_capture_on_commit_callbacks):
    files = [
        SimpleUploadedFile("guide.md", GUIDE_MD.encode()),
        SimpleUploadedFile("../../etc/passwd.txt", b"Root notes\n\nNothing to see here but text.\n"),
        SimpleUploadedFile("guide.md", GUIDE_MD.encode()),
    ]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = logged_in_client.post("/documents/upload/", {"files": files})
    assert response.status_code == 302
    job = IndexingJob.objects.get(workspace=workspace)
    assert response["Location"] == f"/jobs/{job.pk}/"
    assert len(callbacks) == 1  # enqueued only once the job is committed
    paths = sorted(job.items.values_list("path", flat=True))
    assert paths == ["uploads/guide.md", "uploads/guide.md", "uploads/passwd.txt"]  # the second guide.md is the first
    for item in job.items.all():
        assert item.source_file.startswith("stored:uploads/") and ".." not in item.source_file

    page = logged_in_client.get(f"/jobs/{job.pk}/")
    assert b'hx-trigger="every 1s"' in page.content and b"1 of 3" in page.content
    assert b"identical to uploads/guide.md in this upload" in page.content
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    fragment = logged_in_client.get(f"/jobs/{job.pk}/", headers={"HX-Request": "true"})
    assert b"<html" not in fragment.content
    assert b"3 of 3" in fragment.content and b"every 1s" not in fragment.content


def test_same_file_uploaded_twice_is_unchanged_the_second_time(logged_in_client, workspace):
    for _ in range(2):
        logged_in_client.post("/documents/upload/", {"files": [SimpleUploadedFile("guide.md", GUIDE_MD.encode())]})
        job = IndexingJob.objects.filter(workspace=workspace).first()
        for item_id in job.items.values_list("pk", flat=True):
            job_item_run(item_id=item_id)
    statuses = [j.items.get().status for j in IndexingJob.objects.filter(workspace=workspace).order_by("pk")]
    assert statuses == ["indexed", "unchanged"]
    assert Document.objects.filter(workspace=workspace).count() == 1


def test_upload_without_files_is_a_400(logged_in_client, workspace):
    assert logged_in_client.post("/documents/upload/", {}).status_code == 400


def test_documents_list_filters_and_document_page(logged_in_client, workspace, tmp_path):
    write_corpus(tmp_path / "docs")
    _index_folder(workspace, tmp_path / "docs")
    listing = logged_in_client.get("/documents/").content.decode()
    assert "Lumen Deployment Guide" in listing and "Lumen API Reference" in listing

    ops = logged_in_client.get("/documents/", {"doc_type": "operations"}).content.decode()
    assert "Lumen Deployment Guide" in ops and "Lumen API Reference" not in ops
    found = logged_in_client.get("/documents/", {"q": "API Ref"}, headers={"HX-Request": "true"}).content.decode()
    assert "Lumen API Reference" in found and "Deployment Guide" not in found and "<html" not in found
    dated = logged_in_client.get("/documents/", {"date_from": "2025-06-01"}).content.decode()
    assert "Lumen API Reference" in dated and "Deployment Guide" not in dated
    assert logged_in_client.get("/documents/", {"date_from": "yesterday"}).status_code == 400

    guide = Document.objects.get(title="Lumen Deployment Guide")
    chunk = guide.chunks.first()
    page = logged_in_client.get(f"/documents/{guide.pk}/", {"chunk": chunk.pk}).content.decode()
    assert "frontmatter date" in page and "Kubernetes" in page and f'id="chunk-{chunk.pk}"' in page
    assert "highlighted" in page


def test_documents_of_another_workspace_are_404(client, tmp_path):
    alice, bob = UserFactory(), UserFactory()
    WorkspaceFactory(members=[alice])
    theirs = WorkspaceFactory(members=[bob])
    write_corpus(tmp_path / "docs")
    job = _index_folder(theirs, tmp_path / "docs")
    client.force_login(alice)
    document = Document.objects.filter(workspace=theirs).first()
    assert client.get(f"/documents/{document.pk}/").status_code == 404
    assert client.get(f"/jobs/{job.pk}/").status_code == 404
    assert document.title not in client.get("/documents/").content.decode()


def test_document_text_is_escaped(logged_in_client, workspace, tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "evil.md").write_text("# <script>alert(1)</script> Title\n\nBody with <img src=x onerror=alert(2)> markup.\n")
    _index_folder(workspace, folder)
    document = Document.objects.get(workspace=workspace)
    for url in ("/documents/", f"/documents/{document.pk}/"):
        body = logged_in_client.get(url).content.decode()
        assert "<script>alert(1)" not in body and "<img src=x" not in body
        assert "&lt;script&gt;" in body or "&lt;img" in body


def test_a_failed_document_says_it_failed_why_and_what_to_do(logged_in_client, workspace, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "handbook.docx").write_bytes(b"this is not a zip, whatever its name says")
    _index_folder(workspace, folder)
    document = Document.objects.get(workspace=workspace)
    assert document.status == Document.Status.FAILED

    page = logged_in_client.get(f"/documents/{document.pk}/").content.decode()
    failed = page[page.index('id="document-failed"'):page.index("</section>", page.index('id="document-failed"'))]
    assert "This file could not be indexed" in failed and document.error in failed
    assert "What to do:" in failed and "Try again" in failed
    assert "(from —)" not in page and "Date unknown" not in page
    assert "not read: indexing failed before the format was checked" in page


def test_a_member_finds_documents_by_the_shown_path_not_the_servers(client, workspace, user, staff_user, tmp_path):
    """Issue 49: `?q=` matched the full path, so a member could confirm guesses about the server's folders."""
    write_corpus(tmp_path / "docs")
    _index_folder(workspace, tmp_path / "docs")
    client.force_login(user)
    server = tmp_path.name
    assert "Lumen API Reference" not in client.get("/documents/", {"q": server}).content.decode()
    assert "Lumen API Reference" in client.get("/documents/", {"q": "api"}).content.decode()
    workspace.members.add(staff_user)
    client.force_login(staff_user)
    assert "Lumen API Reference" in client.get("/documents/", {"q": server}).content.decode()
