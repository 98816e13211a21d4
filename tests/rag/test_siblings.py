"""Siblings are not versions (issue 42): one template filled in for two subjects never makes a family, a
contradiction or one record; a question that names a subject is answered from its document, in its name."""

from __future__ import annotations

from pathlib import Path

import pytest

from chat.extractive import compose_extractive
from rag.dedup.merge import document_merge
from rag.jobs.run import job_item_run
from rag.lineage.subjects import template_blanks
from rag.models import CanonicalRecord, ChunkVariant, Contradiction, Document, DocumentSibling
from rag.retrieval import search
from rag.uploads import indexing_job_create
from tests.rag.retrieval_helpers import encoder, minilm, options, retrieval_isolation  # noqa: F401 (fixtures)

AGREEMENT = """---
title: Service Agreement
date: {date}
---

# Service Agreement

This Service Agreement (No. {number}) is made on {date} between Northwind Services and {customer} (the Customer), {city}. Northwind Services and the Customer are together the Parties.

## Services

Northwind Services will provide endpoint management for up to 150 devices, a first-line helpdesk and managed cloud hosting. Changes to the Services are agreed in writing and priced separately.

## Fees

The Customer pays a monthly fee of EUR {fee} for the Services, excluding VAT.

## Payment

Invoices are issued monthly in advance and are payable within {days} days of the invoice date. Late payments bear interest at 8% a year.
"""

POLICY = """---
title: Employment Policy
date: {date}
---

# Employment Policy

This policy applies to every employee of Northwind Services employed in {country}. It supplements the Group Employee Handbook. Edition {edition}.

## Annual leave

Employees are entitled to {days} days of paid annual leave per calendar year. Up to 5 unused days can be carried over until 31 March of the next year.
"""


def _lines(text: str) -> tuple[str, ...]:
    return tuple(line for line in text.splitlines() if line.strip())


@pytest.mark.parametrize(("ours", "theirs", "names"), [
    ("This policy applies to every employee employed in Norway.",
     "This policy applies to every employee employed in Sweden.", [("Norway", "Sweden")]),
    ("Dear Maria Lopez, we are pleased to offer you the position of Data Analyst.",
     "Dear Jonas Berg, we are pleased to offer you the position of Data Analyst.", [("Maria Lopez", "Jonas Berg")]),
    ("Cirrus R20 - branch-office router by Northwind Services.",
     "Nimbus X320 - indoor Wi-Fi 6 access point by Northwind Services.", [("Cirrus R20", "Nimbus X320")]),
])
def test_one_template_filled_with_two_names_has_blanks(ours, theirs, names):
    assert [(blank.ours, blank.theirs) for blank in template_blanks(_lines(ours), _lines(theirs))] == names


@pytest.mark.parametrize(("ours", "theirs"), [
    # a version: the same names, other values and wording
    ("This Service Agreement (No. NS-2023-0855) is made on 31.08.2023 between Northwind Services and Juniper Legal.",
     "This Amended and Restated Service Agreement (No. NS-2023-0855-A) is made on 24.02.2025 between Northwind "
     "Services and Juniper Legal."),
    # two releases of a product's documentation: versions and wording, not names
    ("Django 2.2 supports Python 3.5, 3.6 and 3.7.", "Django 3.2 supports Python 3.6, 3.7, 3.8 and 3.9."),
    ("How to write custom model fields", "Writing custom model fields"),  # a sentence's first word names nothing
    ("Call Field.clean to validate the value.", "Call Field to validate the value."),  # code is no name
    ("Set USE_L10N in your settings.", "Set USE_THOUSAND_SEPARATOR in your settings."),
    ("Northwind Services and the Customer are together the Parties.",
     "This Amended Service Agreement is made between Northwind Services and Juniper Legal (the Customer), Oslo, "
     "and replaces the agreement of 31.08.2023 in full."),  # a short sentence inside a long one is not the same
    # two releases of one guide whose example picked another name (issue 51): the example's name is no subject
    ("For example, Alice Smith signs in with a passkey and opens the Routes page.",
     "For example, Bob Jones signs in with a passkey and opens the Routes page."),
    ("Plugins such as Okta Connector add single sign-on to the dashboard.",
     "Plugins such as Keycloak Bridge add single sign-on to the dashboard."),
])
def test_versions_and_rewordings_have_no_blanks(ours, theirs):
    assert template_blanks(_lines(ours), _lines(theirs)) == []


def _ingest(workspace, folder: Path) -> dict[str, Document]:
    job = indexing_job_create(workspace=workspace, paths=[folder], enqueue=False)
    for item in job.items.order_by("path"):
        assert job_item_run(item_id=item.pk) == "indexed"
        item.refresh_from_db()
        document_merge(document_id=item.document_id)
    return {Path(d.path).name: d for d in Document.objects.filter(workspace=workspace)}


@pytest.mark.django_db
@pytest.mark.real_encoder
def test_siblings_stay_apart_and_answer_for_their_own_subject(workspace, encoder, tmp_path, logged_in_client,
                                                            staff_user):
    folder = tmp_path / "contracts"
    folder.mkdir()
    files = {
        "acme.md": AGREEMENT.format(date="2024-03-01", number="NS-2024-0101", customer="Acme Corp", city="Bergen",
                                    fee="1,000", days=30),
        "fjord.md": AGREEMENT.format(date="2024-03-21", number="NS-2024-0133", customer="Fjord AS", city="Oslo",
                                     fee="3,750", days=45),
        "cobalt.md": AGREEMENT.format(date="2024-04-10", number="NS-2024-0150", customer="Cobalt GmbH",
                                      city="Hamburg", fee="2,200", days=60),
        "acme-amended.md": AGREEMENT.format(date="2025-02-01", number="NS-2024-0101-A", customer="Acme Corp",
                                            city="Bergen", fee="1,200", days=30),
        "norway-2024.md": POLICY.format(date="2024-01-05", country="Norway", edition=2024, days=25),
        "norway-2025.md": POLICY.format(date="2025-01-05", country="Norway", edition=2025, days=27),
        "sweden-2024.md": POLICY.format(date="2024-01-09", country="Sweden", edition=2024, days=30),
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    docs = _ingest(workspace, folder)

    # Versions: one subject over time. Siblings: one template, other subjects.
    assert docs["acme.md"].family_id and docs["acme.md"].family_id == docs["acme-amended.md"].family_id
    assert docs["fjord.md"].family_id is None and docs["cobalt.md"].family_id is None
    assert docs["norway-2024.md"].family_id == docs["norway-2025.md"].family_id and docs["sweden-2024.md"].family_id is None
    assert docs["acme-amended.md"].is_latest_version and not docs["acme.md"].is_latest_version
    # A new edition that changed a number is a version, not a copy of the old one: it is the current one.
    assert docs["norway-2025.md"].copy_of_id is None and docs["norway-2025.md"].is_latest_version
    # Whom each fills the template for, the customer first (the city differs too here).
    assert {docs[name].subject.split("; ")[0] for name in ("acme.md", "fjord.md", "cobalt.md")} == {
        "Acme Corp", "Fjord AS", "Cobalt GmbH"}
    docs = {name: Document.objects.get(pk=doc.pk) for name, doc in docs.items()}
    assert docs["sweden-2024.md"].subject == "Sweden"
    pairs = set(DocumentSibling.objects.filter(workspace=workspace).values_list("document_a_id", "document_b_id"))
    fjord, cobalt = docs["fjord.md"].pk, docs["cobalt.md"].pk
    assert (min(fjord, cobalt), max(fjord, cobalt)) in pairs

    # Two customers' fees are each true: no contradiction, no record that hides one behind the other.
    sibling_ids = {fjord, cobalt, docs["acme-amended.md"].pk}
    assert not Contradiction.objects.filter(workspace=workspace, chunk_a__document_id__in=sibling_ids,
                                            chunk_b__document_id__in=sibling_ids).exists()
    fees = {doc.chunks.get(text__contains="monthly fee").pk for doc in (docs["fjord.md"], docs["cobalt.md"])}
    records = set(CanonicalRecord.objects.filter(canonical_chunk_id__in=fees).values_list("pk", flat=True)) | set(
        ChunkVariant.objects.filter(chunk_id__in=fees).values_list("record_id", flat=True))
    assert len(records) != 1 or len(fees) == 1

    # The question names whose fee: that document first, and the answer says whose it is.
    results = search("What monthly fee does Fjord AS pay?", options(workspace, top_k=5))
    assert results[0].document_id == fjord and results.stats["subjects"] == [docs["fjord.md"].subject]
    answer = compose_extractive("What monthly fee does Fjord AS pay?", results)
    assert answer.text.startswith("Fjord AS: The Customer pays a monthly fee of EUR 3,750"), answer.text
    assert "1,000" not in answer.text and "2,200" not in answer.text  # no other customer's fee as an older version

    results = search("what are the payment terms for cobalt gmbh", options(workspace, top_k=5))
    assert results[0].document_id == cobalt

    # Shown as a template group on each sibling's page and in the admin, never as versions.
    from django.urls import reverse

    page = logged_in_client.get(reverse("document-detail", args=[fjord])).content.decode()
    assert "Made from the same template" in page and "Cobalt GmbH" in page and "Fjord AS" in page
    logged_in_client.force_login(staff_user)
    admin_page = logged_in_client.get(reverse("admin:rag_document_change", args=[fjord])).content.decode()
    assert "made from the same template as" in admin_page.lower() and "Cobalt GmbH" in admin_page
