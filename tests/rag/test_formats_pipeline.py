"""The new formats through the whole pipeline and the document pages, on files the tests write."""

from __future__ import annotations

import io
from pathlib import Path

import msoffcrypto
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from rag.models import Chunk, Document, IndexingJob
from rag.jobs.run import job_item_run
from devkit.format_files import write_docx, write_eml, write_huge_xlsx, write_odt, write_pptx, write_xlsx
from devkit.scans import PAGE_TEXT, image_bytes, scanned_page
from tests.factories import UserFactory, WorkspaceFactory
from tests.rag.test_pipeline import encoder, ingest_sync  # noqa: F401 - encoder is a fixture
from tests.rag.test_uploads import _run, _upload

pytestmark = pytest.mark.django_db


def _items(job: IndexingJob) -> dict[str, tuple[str, str, str]]:
    return {Path(item.path).name: (item.status, item.error, item.note) for item in job.items.all()}


def test_a_batch_of_every_new_format_with_bad_files_among_them(workspace, tmp_path, settings, encoder):
    settings.XLSX_MAX_CELLS_PER_SHEET = 30
    folder = tmp_path / "pile"
    folder.mkdir()
    good_docx = write_docx(version="2.1")
    (folder / "guide.docx").write_bytes(good_docx)
    (folder / "deck.pptx").write_bytes(write_pptx())
    (folder / "limits.xlsx").write_bytes(write_xlsx(rows=50))
    (folder / "handbook.odt").write_bytes(write_odt())
    (folder / "notice.png").write_bytes(image_bytes(scanned_page(PAGE_TEXT[:3], dpi=150)))
    (folder / "announce.eml").write_bytes(write_eml(attachments={"guide-3.0.docx": write_docx(title="Deployment "
                                                                 "Guide 3.0"), "logs.zip": b"PK\x05\x06" + b"\0" * 18}))
    (folder / "corrupt.docx").write_bytes(good_docx[:2000])
    (folder / "corrupt.xlsx").write_bytes(b"PK\x03\x04 not really")
    (folder / "corrupt.msg").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600)
    locked = io.BytesIO()
    msoffcrypto.OfficeFile(io.BytesIO(good_docx)).encrypt("secret", locked)
    (folder / "locked.docx").write_bytes(locked.getvalue())

    job = ingest_sync(workspace, folder)
    items = _items(job)
    for name in ("guide.docx", "deck.pptx", "limits.xlsx", "handbook.odt", "notice.png", "announce.eml"):
        assert items[name][0] == "indexed", (name, items[name])
    assert items["corrupt.docx"][0] == "failed" and "not a readable .docx" in items["corrupt.docx"][1]
    assert items["corrupt.xlsx"][0] == "failed" and "not a readable .xlsx" in items["corrupt.xlsx"][1]
    assert items["corrupt.msg"][0] == "failed" and "not a readable .msg" in items["corrupt.msg"][1]
    assert items["locked.docx"][0] == "failed" and items["locked.docx"][1].startswith("password-protected .docx")
    assert "sheet 'Limits': read the first" in items["limits.xlsx"][2]
    assert "1 attachment(s) indexed as their own documents: guide-3.0.docx" in items["announce.eml"][2]
    assert "attachment logs.zip not indexed: unsupported file type .zip" in items["announce.eml"][2]

    docs = {Path(d.path).name.split("::")[-1]: d for d in Document.objects.filter(workspace=workspace)}
    guide, message, attachment = docs["guide.docx"], docs["announce.eml"], docs["guide-3.0.docx"]
    assert (guide.version_label, guide.version_source, guide.date_source) == ("2.1", "office_property",
                                                                              "office_modified")
    assert message.date_source == "mail_date" and message.metadata["sender"] == "Ana Ops <ana@example.com>"
    assert attachment.parent_id == message.pk and attachment.path.endswith("announce.eml::guide-3.0.docx")
    assert attachment.version_label == "3.0" and attachment.chunk_count > 0
    assert docs["notice.png"].metadata["ocr_pages"] == [1]
    assert list(Chunk.objects.filter(document=docs["deck.pptx"]).order_by("chunk_index")
                .values_list("page", flat=True)) == [1, 2]
    assert set(Chunk.objects.filter(document=docs["notice.png"]).values_list("page", flat=True)) == {1}


def test_a_100_mb_spreadsheet_is_refused_by_size_or_read_to_the_cell_bound(workspace, tmp_path, settings, encoder):
    folder = tmp_path / "big"
    folder.mkdir()
    rows = write_huge_xlsx(folder / "customers.xlsx", target_bytes=100 * 1024 * 1024)
    assert (folder / "customers.xlsx").stat().st_size > 100 * 1024 * 1024 and rows > 500_000
    status, error, _ = _items(ingest_sync(workspace, folder))["customers.xlsx"]
    assert status == "failed" and "over the 50 MB limit" in error

    settings.INGEST_MAX_FILE_BYTES = 200 * 1024 * 1024
    settings.XLSX_MAX_CELLS_PER_SHEET = 3_000
    status, error, note = _items(ingest_sync(workspace, folder))["customers.xlsx"]
    assert status == "indexed", error
    assert note.startswith("sheet 'Limits': read the first 3,000 cells (1,000 rows with text); the rest was skipped")


def test_message_and_attachment_pages_link_each_other(logged_in_client, workspace, tmp_path, encoder):
    folder = tmp_path / "mail"
    folder.mkdir()
    (folder / "announce.eml").write_bytes(write_eml(attachments={"handbook.odt": write_odt()}))
    ingest_sync(workspace, folder)
    message = Document.objects.get(workspace=workspace, path__endswith="announce.eml")
    attachment = Document.objects.get(workspace=workspace, parent=message)
    page = logged_in_client.get(f"/documents/{message.pk}/").content.decode()
    assert f'href="/documents/{attachment.pk}/"' in page and "Ana Ops &lt;ana@example.com&gt;" in page
    assert "the mail&#x27;s Date header" in page or "the mail's Date header" in page
    page = logged_in_client.get(f"/documents/{attachment.pk}/").content.decode()
    assert "Attached to" in page and f'href="/documents/{message.pk}/"' in page


def test_members_retry_or_remove_a_failed_document_others_cannot(client, tmp_path, encoder):
    alice, mallory = UserFactory(), UserFactory()
    workspace = WorkspaceFactory(members=[alice])
    WorkspaceFactory(members=[mallory])
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "broken.docx").write_bytes(b"PK\x03\x04 broken")
    ingest_sync(workspace, folder)
    document = Document.objects.get(workspace=workspace)
    assert document.status == "failed"

    client.force_login(mallory)
    assert client.post(f"/documents/{document.pk}/retry/").status_code == 404
    assert client.post(f"/documents/{document.pk}/remove/").status_code == 404

    client.force_login(alice)
    page = client.get(f"/documents/{document.pk}/").content.decode()
    assert f'action="/documents/{document.pk}/retry/"' in page and f'href="/documents/{document.pk}/remove/"' in page
    (folder / "broken.docx").write_bytes(write_docx())  # fixed on disk, then tried again
    response = client.post(f"/documents/{document.pk}/retry/")
    job = IndexingJob.objects.filter(workspace=workspace).latest("pk")
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    job_item_run(item_id=job.items.get().pk)
    document.refresh_from_db()
    assert document.status == "indexed" and document.chunk_count > 0

    confirm = client.get(f"/documents/{document.pk}/remove/")
    assert confirm.status_code == 200 and "Remove it" in confirm.content.decode()
    assert Document.objects.filter(pk=document.pk).exists()  # asking removes nothing
    assert client.post(f"/documents/{document.pk}/remove/").status_code == 302
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()


def test_the_upload_picker_lists_the_supported_types(logged_in_client, workspace):
    page = logged_in_client.get("/documents/upload/").content.decode()
    assert 'accept=".md,' in page and ".docx" in page and ".msg" in page and ".tiff" in page and ".zip" in page


def test_browser_upload_and_the_cli_read_office_files_and_mail(logged_in_client, workspace, tmp_path, encoder):
    job = _upload(logged_in_client, files=[SimpleUploadedFile("guide.docx", write_docx(version="2.1")),
                                           SimpleUploadedFile("announce.eml", write_eml(attachments={
                                               "limits.xlsx": write_xlsx()}))])
    items = _run(job)
    assert {path: item.status for path, item in items.items()} == {"uploads/guide.docx": "indexed",
                                                                   "uploads/announce.eml": "indexed"}
    attachment = Document.objects.get(workspace=workspace, path="uploads/announce.eml::limits.xlsx")
    assert attachment.parent.path == "uploads/announce.eml" and attachment.date_source == "office_modified"

    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "deck.pptx").write_bytes(write_pptx())
    call_command("ingest", str(tmp_path / "cli"), workspace=workspace.slug, sync=True, verbosity=0)
    deck = Document.objects.get(workspace=workspace, path__endswith="deck.pptx")
    assert deck.status == "indexed" and deck.title == "Release 3.0 Overview" and deck.version_label == "3.0"


def test_a_job_tries_its_failed_and_skipped_files_again(client, tmp_path, encoder):
    alice, mallory = UserFactory(), UserFactory()
    workspace = WorkspaceFactory(members=[alice])
    WorkspaceFactory(members=[mallory])
    folder = tmp_path / "pile"
    folder.mkdir()
    (folder / "broken.docx").write_bytes(b"PK\x03\x04 broken")
    (folder / "diagram.gif").write_bytes(b"GIF89a")
    (folder / "fine.odt").write_bytes(write_odt())
    job = ingest_sync(workspace, folder)
    assert sorted(_items(job)[name][0] for name in ("broken.docx", "diagram.gif")) == ["failed", "skipped"]

    client.force_login(mallory)
    assert client.post(f"/jobs/{job.pk}/retry/").status_code == 404
    client.force_login(alice)
    assert "Try the 2 failed or skipped files again" in client.get(f"/jobs/{job.pk}/").content.decode()
    (folder / "broken.docx").write_bytes(write_docx())  # fixed in place
    response = client.post(f"/jobs/{job.pk}/retry/")
    again = IndexingJob.objects.filter(workspace=workspace).latest("pk")
    assert response.status_code == 302 and response["Location"] == f"/jobs/{again.pk}/" and again.pk != job.pk
    for item_id in again.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    assert {name: status for name, (status, _, _) in _items(again).items()} == {"broken.docx": "indexed",
                                                                               "diagram.gif": "skipped"}
