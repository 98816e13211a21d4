"""Contradictions merging raises, and a reviewer's keep or dismiss, against the real database."""

from __future__ import annotations

from datetime import datetime, UTC
from pathlib import Path

import pytest
from django.core.management import call_command

from rag.dedup.merge import contradiction_resolve, document_merge, workspace_merge
from rag.models import CanonicalRecord, Contradiction, Document
from tests.rag.dedup_support import (
    PAYLOAD_TOO_LARGE,
    RATE_LIMITED,
    TOKEN_EXPIRED,
    UNIQUE,
    assert_invariants,
    basis,
    blend,
    one_release,
    partition,
    section_chunk,
    troubleshooting_document,
    vector_chunk,
)
from tests.rag.dedup_support import merge_each as _merge
from tests.rag.dedup_support import RELEASE, members_free_workspace  # noqa: F401 (the workspace fixture)
from tests.rag.dedup_support import user_unhashed as _user


# --- contradictions ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_versions_of_one_family_change_and_raise_no_contradiction(workspace):
    v20, v21, v30 = (troubleshooting_document(workspace, v) for v in ("2.0", "2.1", "3.0"))
    _merge(v20, v21, v30)

    assert len({d.family_id for d in Document.objects.filter(pk__in=[v20.pk, v21.pk, v30.pk])} - {None}) == 1
    # "600 -> 1000 requests" is what 2.1 changed: the family's timeline shows it; nobody has to review it.
    assert not Contradiction.objects.filter(workspace=workspace).exists()


@pytest.mark.django_db
def test_two_current_documents_that_disagree_raise_pending_contradictions_naming_the_spans(workspace):
    # Two documents of one release (one date written in each), one of them stale: both are current.
    guide = troubleshooting_document(workspace, "2.1")
    faq = troubleshooting_document(workspace, "2.0", path="/support/faq.md", doc_date=guide.doc_date)
    Document.objects.filter(pk__in=[guide.pk, faq.pk]).update(date_source="frontmatter")
    _merge(guide, faq)

    assert Document.objects.filter(pk__in=[guide.pk, faq.pk], family__isnull=True, is_latest_version=True).count() == 2
    rate = Contradiction.objects.get(chunk_a=section_chunk(guide, RATE_LIMITED), chunk_b=section_chunk(faq, RATE_LIMITED))
    assert rate.status == "pending" and rate.similarity >= 0.85
    assert [(d["kind"], d["a"], d["b"]) for d in rate.differences] == [("number", "1000 requests", "600 requests")]
    # They say the same about tokens: identical texts raise nothing.
    assert not Contradiction.objects.filter(chunk_a=section_chunk(guide, TOKEN_EXPIRED),
                                            chunk_b=section_chunk(faq, TOKEN_EXPIRED)).exists()
    assert all(c.chunk_a_id < c.chunk_b_id for c in Contradiction.objects.all())


@pytest.mark.django_db
def test_a_reworded_near_duplicate_raises_no_contradiction(workspace):
    original = ("Each API key is limited to 1000 requests per minute by default, measured over a sliding "
                "60-second window. Change the limit per consumer with the rate_limit field.")
    reworded = ("By default, every API key may send 1000 requests per minute, counted over a sliding "
                "window of 60 seconds. The rate_limit field changes the limit for one consumer.")
    first = vector_chunk(workspace, basis(0), text=original)
    # Same vector: the encoder would call them near-identical; the facts decide.
    second = vector_chunk(workspace, blend(basis(0), basis(1), 0.97), text=reworded)
    _merge(first.document, second.document)
    assert CanonicalRecord.objects.filter(workspace=workspace).count() == 1
    assert not Contradiction.objects.exists()


@pytest.mark.django_db
def test_near_duplicates_below_the_merge_threshold_still_raise_a_contradiction(workspace):
    a = vector_chunk(workspace, basis(0), text="Keys created in 2.1 expire after 365 days by default.", release="3.0")
    b = vector_chunk(workspace, blend(basis(0), basis(1), 0.9),
                     text="Keys created in 3.0 expire after 90 days by default.", release="3.0")
    _merge(a.document, b.document)
    assert not CanonicalRecord.objects.exists()
    contradiction = Contradiction.objects.get()
    assert contradiction.similarity == pytest.approx(0.9, abs=1e-4)
    assert {(d["a"], d["b"]) for d in contradiction.differences} == {("2.1", "3.0"), ("365 days", "90 days")}

    far = vector_chunk(workspace, blend(basis(0), basis(2), 0.8), text="Keys created in 3.1 expire after 30 days.",
                       release="3.0")
    document_merge(document_id=far.document_id)
    assert Contradiction.objects.count() == 1  # 0.8 is below the contradiction threshold


# --- review -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_keeping_the_older_side_makes_it_canonical_until_a_newer_version_arrives(workspace):
    reviewer = _user()
    v21, v30 = troubleshooting_document(workspace, "2.1"), troubleshooting_document(workspace, "3.0")
    one_release(v21, v30)  # two guides current together: their disagreement is for a reviewer
    _merge(v21, v30)
    old, new = section_chunk(v21, PAYLOAD_TOO_LARGE), section_chunk(v30, PAYLOAD_TOO_LARGE)
    contradiction = Contradiction.objects.get(chunk_a=old, chunk_b=new)
    record = CanonicalRecord.objects.get(canonical_chunk=new)

    contradiction_resolve(contradiction_id=contradiction.pk, action="keep_a", user=reviewer,
                          note="50 MB is a typo in the 3.0 draft")
    contradiction.refresh_from_db()
    assert (contradiction.status, contradiction.resolution, contradiction.reviewed_by, contradiction.note) == (
        "resolved", "kept_a", reviewer, "50 MB is a typo in the 3.0 draft")
    assert contradiction.reviewed_at is not None
    record.refresh_from_db()
    assert record.canonical_chunk == old
    assert list(record.variants.values_list("chunk_id", flat=True)) == [new.pk]
    assert_invariants(workspace)

    # The decision survives a rebuild and re-merges...
    workspace_merge(workspace_id=workspace.pk)
    document_merge(document_id=v30.pk)
    record.refresh_from_db()
    assert record.canonical_chunk == old
    # ...until a newer version of the text arrives.
    v31 = troubleshooting_document(workspace, "3.0", path="/corpus/troubleshooting-3.1.md",
                                   doc_date=datetime(2026, 1, 10, tzinfo=UTC))
    document_merge(document_id=v31.pk)
    record.refresh_from_db()
    assert record.canonical_chunk == section_chunk(v31, PAYLOAD_TOO_LARGE)
    assert_invariants(workspace)


@pytest.mark.django_db
def test_keeping_one_of_two_unmerged_chunks_joins_them_under_it(workspace):
    reviewer = _user()
    a = vector_chunk(workspace, basis(0), text="Keys created in 2.1 expire after 365 days by default.",
                     doc_date=datetime(2025, 3, 1, tzinfo=UTC), release="3.0")
    b = vector_chunk(workspace, blend(basis(0), basis(1), 0.9), text="Keys created in 3.0 expire after 90 days.",
                     doc_date=datetime(2025, 10, 1, tzinfo=UTC), release="3.0")
    _merge(a.document, b.document)
    contradiction = Contradiction.objects.get()
    contradiction_resolve(contradiction_id=contradiction.pk, action="keep_b", user=reviewer)
    record = CanonicalRecord.objects.get()
    assert record.canonical_chunk == b and list(record.variants.values_list("chunk_id", flat=True)) == [a.pk]
    assert record.variants.get().similarity == pytest.approx(0.9, abs=1e-4)

    # Changing one's mind: dismissing unlinks them again.
    contradiction_resolve(contradiction_id=contradiction.pk, action="dismiss", user=reviewer, note="different keys")
    assert not CanonicalRecord.objects.exists()
    contradiction.refresh_from_db()
    assert (contradiction.status, contradiction.resolution, contradiction.note) == ("dismissed", "dismissed",
                                                                                   "different keys")


@pytest.mark.django_db
def test_dismissing_changes_no_record_and_the_pair_is_not_raised_again(workspace):
    v20, v21 = troubleshooting_document(workspace, "2.0"), troubleshooting_document(workspace, "2.1")
    one_release(v20, v21)
    _merge(v20, v21)
    before = partition(workspace)
    contradiction = Contradiction.objects.filter(workspace=workspace).first()
    contradiction_resolve(contradiction_id=contradiction.pk, action="dismiss", user=_user())
    assert partition(workspace) == before
    workspace_merge(workspace_id=workspace.pk)
    contradiction.refresh_from_db()
    assert contradiction.status == "dismissed"
    with pytest.raises(ValueError, match="keep_a, keep_b or dismiss"):
        contradiction_resolve(contradiction_id=contradiction.pk, action="delete", user=None)


def _write_guide(folder: Path, version: str, *, extra: str = "") -> Path:
    """One team's guide, with the texts of `version`; every guide is labelled 2.1, so they are current together."""
    sections = {"Rate limited": RATE_LIMITED, "Payload too large": PAYLOAD_TOO_LARGE, "Support": UNIQUE}
    body = "\n\n".join(f"# {heading}\n\n{texts[version]}" for heading, texts in sections.items())
    path = folder / f"troubleshooting-{version}.md"
    path.write_text(f"---\ntitle: Troubleshooting {version}\nversion: \"2.1\"\ndate: {RELEASE[version]}\n---\n\n"
                    f"{body}{extra}\n")
    return path


@pytest.mark.django_db
def test_reviews_of_unchanged_text_survive_a_reindex_of_its_edited_file(workspace, tmp_path,
                                                                        django_capture_on_commit_callbacks):
    reviewer = _user()
    old_file, _ = _write_guide(tmp_path, "2.0"), _write_guide(tmp_path, "2.1")
    with django_capture_on_commit_callbacks(execute=True):
        call_command("ingest", str(tmp_path), workspace=workspace.slug, sync=True, verbosity=0)
    v20 = Document.objects.get(path=str(old_file))

    rate, payload = (Contradiction.objects.get(chunk_a__document=v20, chunk_a__text__contains=marker)
                     for marker in ("600 requests", "10 MB"))
    contradiction_resolve(contradiction_id=rate.pk, action="dismiss", user=reviewer, note="different plans")
    contradiction_resolve(contradiction_id=payload.pk, action="keep_a", user=reviewer, note="2.1 is wrong")
    assert CanonicalRecord.objects.get(canonical_chunk__text__contains="10 MB")

    # An edit elsewhere in the 2.0 file: re-indexed, its chunks get new (larger) ids than 2.1's.
    _write_guide(tmp_path, "2.0", extra="\n\n# Changelog\n\nThe 2.0 support section now names the log format.")
    with django_capture_on_commit_callbacks(execute=True):
        call_command("ingest", str(tmp_path), workspace=workspace.slug, sync=True, verbosity=0)

    rate.refresh_from_db()
    payload.refresh_from_db()
    assert (rate.status, rate.note) == ("dismissed", "different plans")
    assert rate.chunk_b.document == v20 and "600 requests" in rate.chunk_b.text  # the new chunk, now on side b
    assert (payload.status, payload.resolution) == ("resolved", "kept_b")  # what was kept is still the 2.0 text
    assert payload.chunk_b.document == v20 and "10 MB" in payload.chunk_b.text
    assert all(d["a"] in payload.chunk_a.text and d["b"] in payload.chunk_b.text for d in payload.differences)
    assert not Contradiction.objects.filter(workspace=workspace, status=Contradiction.Status.PENDING).exists()
    assert CanonicalRecord.objects.get(canonical_chunk=payload.chunk_b)
    assert_invariants(workspace)
