"""Hand-set version labels and dates: the merge follows a hand-set date, and each can go back to automatic."""

from __future__ import annotations

from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from config.celery import app
from rag.dedup.merge import workspace_merge
from rag.jobs.run import job_item_run
from rag.admin.edits import document_date_set, document_version_set
from rag.models import CanonicalRecord, Document
from rag.uploads import indexing_job_create

pytestmark = pytest.mark.django_db

COPIED = "Rotate every API key at least every 90 days, and revoke a key at once when a laptop that held it is lost."
SECURITY = ["## Audit logs\n\nAudit logs are kept for one year in the control plane database.",
            "## TLS\n\nThe proxy accepts TLS 1.2 and 1.3 only; older clients are refused during the handshake."]
ONBOARDING = ["## First day\n\nNew staff get a laptop, a badge and a buddy who walks them through the office.",
              "## Payroll\n\nSalaries are paid on the last working day of each month by bank transfer."]


def _index(workspace, folder: Path) -> dict[str, Document]:
    job = indexing_job_create(workspace=workspace, paths=[folder], enqueue=False)
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    workspace_merge(workspace_id=workspace.pk)
    return {Path(document.path).name: document for document in Document.objects.filter(workspace=workspace)}


@contextmanager
def _queued_tasks_run_here(capture):
    """The one place these tests run the queued flow (re-index, merge) in-process."""
    app.conf.task_always_eager = True
    try:
        with capture(execute=True):
            yield
    finally:
        app.conf.task_always_eager = False


@pytest.fixture
def copied(workspace, tmp_path) -> dict[str, Document]:
    """Two unrelated guides sharing one paragraph: one record, the newer guide's copy canonical."""
    folder = tmp_path / "guides"
    folder.mkdir()
    for name, date, sections in (("security.md", "2024-01-10", SECURITY), ("onboarding.md", "2025-01-10", ONBOARDING)):
        body = "\n\n".join([sections[0], f"## Keys\n\n{COPIED}", *sections[1:]])
        (folder / name).write_text(f"---\ntitle: {name[:-3].title()} guide\ndate: {date}\nversion: 2.1\n---\n\n{body}\n")
    return _index(workspace, folder)


def _canonical_documents() -> set[str]:
    return {Path(path).name for path in CanonicalRecord.objects.values_list("canonical_chunk__document__path", flat=True)}


def test_a_hand_set_date_runs_the_merge_again(copied, staff_user, django_capture_on_commit_callbacks):
    assert _canonical_documents() == {"onboarding.md"}
    with _queued_tasks_run_here(django_capture_on_commit_callbacks):
        document_date_set(document_id=copied["security.md"].pk, doc_date=datetime(2026, 1, 1, tzinfo=UTC),
                          user=staff_user)
    assert _canonical_documents() == {"security.md"}  # now the newest copy


def test_hand_set_label_and_date_go_back_to_automatic_from_the_admin(
        copied, staff_user, staff_client, django_capture_on_commit_callbacks):
    document = copied["security.md"]
    document_version_set(document_id=document.pk, version_label="9.0", user=staff_user)
    document_date_set(document_id=document.pk, doc_date=datetime(2030, 1, 1, tzinfo=UTC), user=staff_user)
    url = f"/admin/rag/document/{document.pk}/change/"
    page = staff_client.get(url).content.decode()
    assert f'formaction="/admin/rag/document/{document.pk}/automatic/version/">Version label back to automatic' in page
    assert f'formaction="/admin/rag/document/{document.pk}/automatic/date/">Date back to automatic' in page

    with _queued_tasks_run_here(django_capture_on_commit_callbacks):
        response = staff_client.post(f"/admin/rag/document/{document.pk}/automatic/version/")
    assert response.status_code == 302 and response["Location"] == url
    document.refresh_from_db()
    assert (document.version_label, document.version_source, document.version_set_by) == ("2.1", "frontmatter", None)
    assert (document.doc_date.year, document.date_source) == (2030, "set_by_hand")  # only the label went back

    with _queued_tasks_run_here(django_capture_on_commit_callbacks):
        staff_client.post(f"/admin/rag/document/{document.pk}/automatic/date/")
    document.refresh_from_db()
    assert (document.doc_date.date().isoformat(), document.date_source) == ("2024-01-10", "frontmatter")
    page = staff_client.get(url).content.decode()
    assert "Version label back to automatic" not in page and "Date back to automatic" not in page
    assert staff_client.get(f"/admin/rag/document/{document.pk}/automatic/date/").status_code == 400
