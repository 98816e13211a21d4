"""What every page shows a reader: paths relative to the ingested folder, job finish times, a favicon."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from rag.jobs.run import job_item_run
from rag.models import Document, DocumentFamily, IndexingJob, shown_path
from rag.uploads import indexing_job_create
from tests.rag.factories import DocumentFactory
from tests.rag.samples import GUIDE_MD

pytestmark = pytest.mark.django_db


def test_pages_and_the_json_show_a_member_paths_relative_to_the_ingested_folder(
        logged_in_client, workspace, tmp_path):
    folder = tmp_path / "handbook"
    (folder / "guides").mkdir(parents=True)
    (folder / "guides" / "deploy.md").write_text(GUIDE_MD)
    job = indexing_job_create(workspace=workspace, paths=[folder], enqueue=False)
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    document = Document.objects.get(workspace=workspace)
    assert document.path == str(folder / "guides" / "deploy.md")  # the CLI's contract, and staff's in the API
    assert document.display_path == "guides/deploy.md"
    for url in ("/documents/", f"/documents/{document.pk}/", f"/jobs/{job.pk}/"):
        # A path is written with line-break opportunities after its separators (path_breaks): read as shown.
        page = logged_in_client.get(url).content.decode().replace("<wbr>", "")
        assert "guides/deploy.md" in page and str(tmp_path) not in page, url
    api = logged_in_client.get("/api/v1/search", {"q": "deploy", "workspace": workspace.slug, "mode": "lexical"})
    assert api.status_code == 200 and api.json()["results"][0]["path"] == "guides/deploy.md"  # issue 49


def test_uploads_show_their_uploaded_name_and_a_server_path_never_shows():
    assert shown_path("uploads/team/notes.md") == "team/notes.md"
    assert shown_path("/home/someone/corpus/api/v2.md") == "v2.md"
    assert shown_path("C:\\\\docs\\\\a.md") == "a.md"
    assert shown_path("relative/a.md") == "relative/a.md"


def test_a_finished_job_says_when_it_finished(logged_in_client, workspace):
    logged_in_client.post("/documents/upload/", {"files": [SimpleUploadedFile("guide.md", GUIDE_MD.encode())]})
    job = IndexingJob.objects.get(workspace=workspace)
    assert "finished at" not in logged_in_client.get(f"/jobs/{job.pk}/").content.decode()
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    job.refresh_from_db()
    page = logged_in_client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'finished at <time datetime="{job.finished_at.isoformat()}' in page and ", after " in page
    assert "guide.md" in page and "uploads/guide.md" not in page


def test_favicon_is_served_to_anyone(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    assert b"".join(response.streaming_content)[:4] == b"\x00\x00\x01\x00"  # an ICO header


def test_date_and_version_sources_read_as_words_on_every_page(logged_in_client, staff_user, workspace):
    family = DocumentFamily.objects.create(workspace=workspace, name="Gateway guide")
    for source, version_source in (("pdf_moddate", "title"), ("html_meta_date", "filename"), ("rst_date", "path")):
        DocumentFactory(workspace=workspace, date_source=source, version_label="2.0", version_source=version_source,
                        family=family)
    listing = logged_in_client.get("/documents/").content.decode()
    assert "PDF modification date" in listing and "HTML date meta tag" in listing and ":Date: field" in listing
    staff_client = Client()
    staff_client.force_login(staff_user)
    admin_pages = [staff_client.get("/admin/rag/document/").content.decode(),
                   staff_client.get(f"/admin/rag/documentfamily/{family.pk}/change/").content.decode()]
    assert "HTML date meta tag" in admin_pages[0] and "file name" in admin_pages[0]  # the list filters
    assert "PDF modification date" in admin_pages[1] and "folder name" in admin_pages[1]  # the members
    for page in [listing, *admin_pages]:
        shown = re.sub(r'(href|value|name|class|id)="[^"]*"', "", page)  # what a reader sees, not the query strings
        for code in ("pdf_moddate", "html_meta_date", "rst_date", "filename"):
            assert code not in shown


def test_the_user_name_is_not_a_link_beside_admin(staff_client):
    page = staff_client.get("/documents/").content.decode()
    assert 'Signed in as <strong>reviewer</strong>' in page
    assert '<a class="user-tokens" href="/account/tokens/">API tokens</a>' in page
    assert not re.search(r"<a [^>]*>\s*reviewer\s*</a>", page)
