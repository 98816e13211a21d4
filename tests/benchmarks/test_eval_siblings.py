"""What benchmarks/eval_siblings.py counts, on hand-made documents: a version group is a page to eval_families'
scoring, a sibling hidden behind another subject's document is counted and an older version is not, and a
contradiction is filed by what its two documents are."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# benchmarks/ is no package (and site-packages holds an unrelated "benchmarks"): found by path.
BENCHMARKS = Path(__file__).resolve().parent.parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.append(str(BENCHMARKS))

from eval_families import family_scores  # noqa: E402
from eval_siblings import (  # noqa: E402
    contradiction_figures, family_listing, other_siblings_values, siblings_superseded, versions_taken_for_copies,
)
from rag.models import Contradiction, Document, DocumentFamily  # noqa: E402
from tests.rag.factories import ChunkFactory, DocumentFactory  # noqa: E402


def _file(name: str, template: str, subject: str, edition: int = 1, fee: str = "") -> tuple[str, dict]:
    return name, {"path": f"contracts/{name}", "template": template, "subject": subject,
                  "version_group": f"{template}/{subject}", "edition": edition, "edition_label": str(2023 + edition),
                  "date": f"{2023 + edition}-01-01", "facts": {"monthly_fee": {"text": fee, "pattern": fee.lower()}}}


LISTING = dict([
    _file("acme.md", "service_agreement", "Acme Corp", 1, "1,000 EUR"),
    _file("acme-amended.md", "service_agreement", "Acme Corp", 2, "1,100 EUR"),
    _file("fjord.md", "service_agreement", "Fjord AS", 1, "2,000 EUR"),
    _file("cobalt.md", "service_agreement", "Cobalt GmbH", 1, "3,000 EUR"),
    _file("norway.md", "country_policy", "Norway"),
])


def test_a_version_group_is_a_page_and_a_family_of_two_customers_is_impure() -> None:
    scores = family_scores({"acme.md": 1, "acme-amended.md": 1, "fjord.md": 1, "cobalt.md": None, "norway.md": None},
                           family_listing(LISTING))
    assert scores["purity"] == pytest.approx(2 / 3)
    assert scores["recall"] == 1.0 and scores["pages_in_2_plus_releases"] == 1


def test_the_wrong_values_of_a_sibling_question_are_the_other_subjects_of_its_template() -> None:
    question = {"template": "service_agreement", "field": "monthly_fee", "expected_path": "contracts/acme-amended.md"}
    by_path = {entry["path"]: entry for entry in LISTING.values()}
    assert [entry["path"] for entry in other_siblings_values(question, by_path)] == ["contracts/fjord.md",
                                                                                   "contracts/cobalt.md"]


@pytest.mark.django_db
def test_a_sibling_behind_another_subject_counts_and_an_older_version_does_not(workspace) -> None:
    def document(name: str, family: DocumentFamily | None = None, position: int = 0, latest: bool = True) -> Document:
        return DocumentFactory(workspace=workspace, path=f"/corpus/contracts/{name}", family=family,
                               family_position=position if family else None, is_latest_version=latest)

    versions = DocumentFamily.objects.create(workspace=workspace, name="Service Agreement")
    lumped = DocumentFamily.objects.create(workspace=workspace, name="Service Agreement")
    document("acme.md", versions, 0, latest=False)
    document("acme-amended.md", versions, 1)
    document("fjord.md", lumped, 0, latest=False)
    document("cobalt.md", lumped, 1)
    norway = ChunkFactory(document=document("norway.md"), text="Employees get 25 days of annual leave.")
    denmark = ChunkFactory(document=DocumentFactory(workspace=workspace, path="/corpus/policies/denmark.md"))
    norway.lineage, norway.superseded_by = "superseded", denmark
    norway.save()
    listing = {**LISTING, "denmark.md": {**_file("denmark.md", "country_policy", "Denmark")[1],
                                         "path": "policies/denmark.md"}}

    found = siblings_superseded(Document.objects.filter(workspace=workspace), listing)

    assert [(entry["subject"], entry["superseded_by"]) for entry in found] == [
        ("Fjord AS", ["contracts/cobalt.md (Cobalt GmbH)"]), ("Norway", ["policies/denmark.md (Denmark)"])]


@pytest.mark.django_db
def test_contradictions_are_filed_as_between_siblings_versions_or_templates(workspace) -> None:
    chunks = {name: ChunkFactory(document=DocumentFactory(workspace=workspace, path=f"/corpus/contracts/{name}"))
              for name in LISTING}
    for a, b in (("fjord.md", "cobalt.md"), ("acme.md", "acme-amended.md"), ("acme.md", "norway.md")):
        Contradiction.objects.create(workspace=workspace, chunk_a=chunks[a], chunk_b=chunks[b], similarity=0.9,
                                     differences=[{"kind": "number", "a": "2,000", "b": "3,000"}])

    figures = contradiction_figures(workspace.pk, LISTING)

    assert figures["pending"] == {"siblings": 1, "versions": 1, "unrelated": 1, "unknown": 0}
    assert figures["sibling_examples"][0]["a"] == "contracts/fjord.md (Fjord AS)"


@pytest.mark.django_db
def test_an_amended_agreement_stored_as_a_copy_of_the_original_is_a_version_taken_for_a_copy(workspace) -> None:
    documents = {name: DocumentFactory(workspace=workspace, path=f"/corpus/contracts/{name}") for name in LISTING}
    for copy, original in (("acme-amended.md", "acme.md"), ("fjord.md", "cobalt.md")):
        documents[copy].copy_of = documents[original]
        documents[copy].save()

    assert versions_taken_for_copies(Document.objects.filter(workspace=workspace), LISTING) == [
        "contracts/acme-amended.md (2025) copy of contracts/acme.md (2024)"]
