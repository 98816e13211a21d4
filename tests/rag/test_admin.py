"""The admin: documents, indexing jobs, canonical records, and the contradiction review flow end to end."""

from __future__ import annotations

from datetime import datetime, UTC

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from rag.dedup.merge import document_merge
from rag.models import CanonicalRecord, ChunkVariant, Contradiction, Document, IndexingJob, IndexingJobItem
from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import LicenseFactory
from tests.rag.dedup_support import (
    PAYLOAD_TOO_LARGE,
    RATE_LIMITED,
    assert_invariants,
    one_release,
    section_chunk,
    troubleshooting_document,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def workspace(db):
    return WorkspaceFactory()


def _versions(workspace, *versions: str, prefix: str = "/corpus") -> list[Document]:
    """Guides with the texts of these versions, all current (one release's): their disagreements are for review,
    where versions of one family would only be changes."""
    documents = [troubleshooting_document(workspace, v, path=f"{prefix}/troubleshooting-{v}.md") for v in versions]
    one_release(*documents)
    for document in documents:
        document_merge(document_id=document.pk)
    return documents


def _fill(copies: int) -> None:
    """`copies` workspaces, each with three merged versions, contradictions and an indexing job."""
    for _ in range(copies):
        workspace = WorkspaceFactory()
        documents = _versions(workspace, "2.0", "2.1", "3.0")
        job = IndexingJob.objects.create(workspace=workspace, source=IndexingJob.Source.CLI, description="x")
        IndexingJobItem.objects.bulk_create(
            IndexingJobItem(job=job, path=d.path, source_file=d.path, document=d, status="indexed") for d in documents)


PAGES = ["admin:rag_document_changelist", "admin:rag_canonicalrecord_changelist", "admin:rag_contradiction_changelist",
         "admin:rag_indexingjob_changelist"]


def test_list_pages_make_the_same_number_of_queries_for_few_and_many_rows(staff_client):
    def counts() -> dict[str, int]:
        result = {}
        for name in PAGES:
            with CaptureQueriesContext(connection) as queries:
                response = staff_client.get(reverse(name))
            assert response.status_code == 200, name
            result[name] = len(queries)
        return result

    _fill(1)
    few = counts()
    _fill(4)  # five times the documents, records, contradictions and jobs
    many = counts()
    assert many == few, "a list page's queries grow with its rows (N+1)"
    assert CanonicalRecord.objects.count() == 15 and Contradiction.objects.count() == 40


def test_record_page_shows_the_canonical_and_variants_with_their_provenance(staff_client, workspace):
    v20, v21, v30 = _versions(workspace, "2.0", "2.1", "3.0")
    record = CanonicalRecord.objects.get(canonical_chunk=section_chunk(v30, RATE_LIMITED))
    page = staff_client.get(reverse("admin:rag_canonicalrecord_change", args=[record.pk])).content.decode()
    assert v30.path in page and RATE_LIMITED["3.0"][:60] in page
    for variant in record.variants.select_related("chunk__document"):
        assert variant.chunk.document.path in page
        assert f"{variant.similarity:.3f}"[:4] in page
    assert "2024-06-03" in page or "June 3, 2024" in page

    listing = staff_client.get(reverse("admin:rag_canonicalrecord_changelist")).content.decode()
    assert v30.title in listing


def test_reviewing_a_contradiction_side_by_side_and_keeping_the_older_text(staff_client, staff_user, workspace):
    LicenseFactory(workspace=workspace)
    v21, v30 = _versions(workspace, "2.1", "3.0")
    old, new = section_chunk(v21, PAYLOAD_TOO_LARGE), section_chunk(v30, PAYLOAD_TOO_LARGE)
    contradiction = Contradiction.objects.get(chunk_a=old, chunk_b=new)

    listing = staff_client.get(reverse("admin:rag_contradiction_changelist") + "?status__exact=pending")
    assert f"/admin/rag/contradiction/{contradiction.pk}/change/" in listing.content.decode()
    assert "25 MB → 50 MB" in listing.content.decode()

    url = reverse("admin:rag_contradiction_change", args=[contradiction.pk])
    page = staff_client.get(url).content.decode()
    assert "<mark>25 MB</mark>" in page and "<mark>50 MB</mark>" in page
    assert v21.path in page and v30.path in page
    assert page.index("<mark>25 MB</mark>") < page.index("<mark>50 MB</mark>")  # A left, B right
    assert 'value="keep_a"' in page and 'value="keep_b"' in page and 'value="dismiss"' in page

    response = staff_client.post(url, {"action": "keep_a", "note": "3.0 draft is wrong"})
    assert response.status_code == 302 and response.url == reverse("admin:rag_contradiction_changelist")
    said = staff_client.get(response.url).content.decode()
    assert f"Kept “{v21.title}”: answers now quote it" in said and "): kept a" not in said
    contradiction.refresh_from_db()
    assert (contradiction.status, contradiction.resolution, contradiction.reviewed_by, contradiction.note) == (
        "resolved", "kept_a", staff_user, "3.0 draft is wrong")
    assert contradiction.reviewed_at is not None
    record = CanonicalRecord.objects.get(canonical_chunk=old)
    assert list(record.variants.values_list("chunk_id", flat=True)) == [new.pk]
    assert_invariants(workspace)

    reviewed = staff_client.get(url).content.decode()
    assert "Resolved" in reviewed and staff_user.username in reviewed and "3.0 draft is wrong" in reviewed
    assert staff_client.post(url, {"action": "explode"}).status_code == 400


def test_bulk_actions_keep_b_and_dismiss_record_who_and_when(staff_client, staff_user, workspace):
    LicenseFactory(workspace=workspace)
    v20, v21 = _versions(workspace, "2.0", "2.1")
    rate = Contradiction.objects.get(chunk_a=section_chunk(v20, RATE_LIMITED))
    payload = Contradiction.objects.get(chunk_a=section_chunk(v20, PAYLOAD_TOO_LARGE))
    changelist = reverse("admin:rag_contradiction_changelist")
    kept = staff_client.post(changelist, {"action": "keep_b", "_selected_action": [rate.pk]}, follow=True)
    assert "Kept side B in 1 contradiction." in kept.content.decode()
    staff_client.post(changelist, {"action": "dismiss", "_selected_action": [payload.pk]})
    rate.refresh_from_db()
    payload.refresh_from_db()
    assert (rate.status, rate.resolution, rate.reviewed_by) == ("resolved", "kept_b", staff_user)
    assert (payload.status, payload.resolution, payload.reviewed_by) == ("dismissed", "dismissed", staff_user)
    assert CanonicalRecord.objects.get(canonical_chunk=section_chunk(v21, RATE_LIMITED))


def test_review_decisions_are_gated_and_say_what_they_would_add(staff_client, workspace):
    """A Free workspace's contradictions are listed and shown, but settling them is Writer Pro's."""
    v21, v30 = _versions(workspace, "2.1", "3.0")
    contradiction = Contradiction.objects.get(chunk_a=section_chunk(v21, PAYLOAD_TOO_LARGE))
    url = reverse("admin:rag_contradiction_change", args=[contradiction.pk])
    page = staff_client.get(url).content.decode()
    assert "<mark>25 MB</mark>" in page and 'value="keep_a"' not in page
    assert "Reviewing contradictions comes with the Writer Pro plan" in page
    response = staff_client.post(url, {"action": "keep_a"})
    assert response.status_code == 403 and b"Writer Pro" in response.content
    changelist = reverse("admin:rag_contradiction_changelist")
    bulk = staff_client.post(changelist, {"action": "keep_b", "_selected_action": [contradiction.pk]}, follow=True)
    assert "1 contradiction(s) left as they were" in bulk.content.decode()
    contradiction.refresh_from_db()
    assert contradiction.status == "pending" and contradiction.reviewed_by is None


def test_document_admin_filters_actions_and_read_only_chunks(staff_client, workspace):
    v20, v21, v30 = _versions(workspace, "2.0", "2.1", "3.0")
    changelist = reverse("admin:rag_document_changelist")
    for query in (f"workspace__id__exact={workspace.pk}", "doc_type__exact=user", "status__exact=indexed",
                  "archived__exact=0", "doc_date__gte=2025-01-01+00:00:00%2B00:00", "doc_date__year=2025"):
        assert staff_client.get(f"{changelist}?{query}").status_code == 200, query
    page = staff_client.get(f"{changelist}?doc_date__year=2024").content.decode()
    assert v20.title in page and v30.title not in page

    staff_client.post(changelist, {"action": "archive", "_selected_action": [v30.pk]})
    v30.refresh_from_db()
    assert v30.archived
    assert not CanonicalRecord.objects.filter(canonical_chunk__document=v30).exists()
    assert_invariants(workspace)
    staff_client.post(changelist, {"action": "unarchive", "_selected_action": [v30.pk]})
    v30.refresh_from_db()
    assert not v30.archived
    staff_client.post(changelist, {"action": "reindex", "_selected_action": [v21.pk]})
    assert IndexingJob.objects.filter(workspace=workspace, source="reindex").count() == 1

    change = staff_client.get(reverse("admin:rag_document_change", args=[v20.pk])).content.decode()
    assert RATE_LIMITED["2.0"][:50] in change
    assert 'name="chunks-0-text"' not in change  # read-only inline: no editable chunk fields


def test_deleting_a_document_in_the_admin_keeps_records_true(staff_client, workspace):
    v20, v21, v30 = _versions(workspace, "2.0", "2.1", "3.0")
    url = reverse("admin:rag_document_delete", args=[v30.pk])
    assert staff_client.post(url, {"post": "yes"}).status_code == 302
    assert not Document.objects.filter(pk=v30.pk).exists()
    assert set(CanonicalRecord.objects.values_list("canonical_chunk__document", flat=True)) == {v21.pk}
    assert ChunkVariant.objects.filter(record__workspace=workspace).count() == 3
    assert_invariants(workspace)


def test_indexing_job_admin_lists_and_shows_items(staff_client, workspace):
    job = IndexingJob.objects.create(workspace=workspace, source=IndexingJob.Source.UPLOAD, description="2 files",
                                     finished_at=datetime(2026, 1, 1, tzinfo=UTC))
    IndexingJobItem.objects.create(job=job, path="uploads/a.md", source_file="/tmp/a.md", status="failed",
                                   error="no text to index")
    assert staff_client.get(reverse("admin:rag_indexingjob_changelist")).status_code == 200
    page = staff_client.get(reverse("admin:rag_indexingjob_change", args=[job.pk])).content.decode()
    assert "uploads/a.md" in page and "no text to index" in page


def test_document_actions_need_change_permission(client, workspace):
    """Staff who may only view documents see no re-index, archive or unarchive, and a forged post does nothing."""
    (document,) = _versions(workspace, "2.0")
    viewer = UserFactory(is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_document"))
    client.force_login(viewer)
    changelist = reverse("admin:rag_document_changelist")
    page = client.get(changelist).content.decode()
    assert 'value="archive"' not in page and 'value="reindex"' not in page and 'value="unarchive"' not in page
    for action in ("archive", "reindex"):
        client.post(changelist, {"action": action, "_selected_action": [document.pk]})
    Document.objects.filter(pk=document.pk).update(archived=True)
    client.post(changelist, {"action": "unarchive", "_selected_action": [document.pk]})
    document.refresh_from_db()
    assert document.archived  # the forged unarchive did nothing, as the archive before it
    assert not IndexingJob.objects.filter(workspace=workspace, source="reindex").exists()
