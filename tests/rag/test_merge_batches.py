"""Documents merged in batches end exactly as merged one by one (issue 52): the same families, the same current
document, the same version order, the same canonical records, at every batch size.

The documents are drawn from labelled versions, undated copies, one Git file at several tags and on its branch,
siblings (one template filled in for several customers) and near-duplicates under other names; the drawn order is
the order they were indexed in. One workspace merges them one by one, as the merge task used to; its twin merges
them in batches of a given size, as rag.jobs.merging does now.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, UTC

import pytest
from hypothesis import HealthCheck, example, given, settings as hypothesis_settings, strategies as st

from rag.dedup import releases_settle
from rag.jobs.merging import document_merge_settle, documents_merge_settle
from rag.models import Chunk, Contradiction, Document, DocumentSibling, Workspace
from rag.releases import version_key
from tests.factories import WorkspaceFactory
from tests.rag.dedup_support import SECTIONS, assert_invariants, partition
from tests.rag.factories import ChunkFactory, DocumentFactory

pytestmark = pytest.mark.django_db

BATCH_SIZES = [1, 2, 7, 50]

# One chunk each, as tests/rag/test_sources_git.py has them: too far apart for their content alone to make them
# candidates of each other, so only their shared name (one file of one repository) finds the pair.
GUIDE = {
    "1.0": ["The gateway listens on port 8080 by default."],
    "1.2": ["The gateway listens on port 9090 by default since this release."],
    "main": ["The gateway listens on port 9443 by default since this release, behind the new edge proxy."],
}
AGREEMENT = [
    "This Service Agreement (No. {number}) is made on 2025-02-01 between Northwind Services and {customer} "
    "(the Customer), {city}. Northwind Services and the Customer are together the Parties.",
    "Northwind Services will provide endpoint management for up to 150 devices, a first-line helpdesk and managed "
    "cloud hosting. Changes to the Services are agreed in writing and priced separately.",
    "The Customer pays a monthly fee of EUR {fee} for the Services, excluding VAT.",
]
CUSTOMERS = [("Acme Corporation", "Lyon", 4100, 17), ("Globex Industries", "Hamburg", 5200, 23),
             ("Initech Limited", "Leeds", 3900, 31)]
RUNBOOK = [f"Step {step}: on the database host restart the replication service after its cache warms, then check "
           "that the replica lag stays under {lag} seconds for five minutes." for step in range(1, 4)]
POLICY = ["Employees are entitled to {days} days of paid annual leave per calendar year, and up to five unused days "
          "can be carried over until the end of March of the next year.",
          "A request for leave is made in the portal at least two weeks ahead and approved by the team lead."]


@dataclass(frozen=True)
class Spec:
    """One document to index: its path, title, label, date and the text of each chunk."""

    path: str
    title: str
    texts: tuple[str, ...]
    label: str = ""
    version_source: str = ""
    date: datetime | None = None
    date_source: str = "frontmatter"


def _guide(version: str, *, path: str | None = None, dated: bool = True) -> Spec:
    release = {"2.0": datetime(2024, 6, 3, tzinfo=UTC), "2.1": datetime(2025, 3, 5, tzinfo=UTC),
               "3.0": datetime(2025, 10, 6, tzinfo=UTC)}[version]
    return Spec(path=path or f"/corpus/troubleshooting-{version}.md",
                title=f"Lumen Gateway {version} Troubleshooting Guide", texts=tuple(s[version] for s in SECTIONS),
                label=version, version_source="title", date=release if dated else None,
                date_source="frontmatter" if dated else "")


def _git(ref: str, day: int) -> Spec:
    tagged = ref != "main"
    return Spec(path=f"git/docs/{'v' + ref if tagged else 'main@0d152285e6'}/docs/guide.md", title="Gateway guide",
                texts=tuple(GUIDE[ref]), label=ref if tagged else "", version_source="git_tag" if tagged else "",
                date=datetime(2024, 1, day, tzinfo=UTC), date_source="git_commit")


def _agreement(index: int) -> Spec:
    customer, city, fee, number = CUSTOMERS[index]
    return Spec(path=f"/contracts/agreement-{number}.md", title="Service Agreement",
                texts=tuple(t.format(number=number, customer=customer, city=city, fee=fee) for t in AGREEMENT),
                date=datetime(2025, 2, 1, tzinfo=UTC))


def _runbook(name: str, lag: int, day: int | None) -> Spec:
    return Spec(path=f"/ops/{name}.md", title=f"Replica runbook ({name})",
                texts=tuple(t.format(lag=lag) for t in RUNBOOK),
                date=datetime(2025, 5, day, tzinfo=UTC) if day else None, date_source="mtime" if day else "")


def _policy(name: str, days: int) -> Spec:
    return Spec(path=f"/hr/{name}.md", title=f"Leave policy {name}", texts=tuple(t.format(days=days) for t in POLICY),
                date=datetime(2025, 1, 6, tzinfo=UTC))


UNIVERSE = [
    _guide("2.0"), _guide("2.1"), _guide("3.0"),
    _guide("2.1", path="/mirror/troubleshooting-copy.md", dated=False),  # an undated copy of 2.1
    _guide("3.0", path="/mirror/troubleshooting-latest.md", dated=False),  # an undated copy of 3.0
    _git("1.0", 2), _git("1.2", 4), _git("main", 5),  # one Git file at two tags and on its branch
    _agreement(0), _agreement(1), _agreement(2),  # siblings: one template, three customers
    _runbook("replica-a", 30, 3), _runbook("replica-b", 30, 9), _runbook("replica-c", 45, None),  # near-duplicates
    _policy("office", 25), _policy("remote", 27),  # one date, two values: a contradiction, no family
]
GIT_1_0, GIT_1_2, GIT_MAIN = 5, 6, 7


def _index(workspace: Workspace, specs: list[Spec]) -> list[int]:
    """The documents as indexing leaves them (chunks embedded by the hashing encoder), in this order."""
    ids = []
    for spec in specs:
        document = DocumentFactory(
            workspace=workspace, path=spec.path, title=spec.title, doc_date=spec.date, date_source=spec.date_source,
            version_label=spec.label, version_key=version_key(spec.label) or "" if spec.label else "",
            version_source=spec.version_source, chunk_count=len(spec.texts),
            indexed_at=datetime(2026, 1, 1, tzinfo=UTC))
        for index, text in enumerate(spec.texts):
            ChunkFactory(document=document, text=text, chunk_index=index, total_chunks=len(spec.texts),
                         heading_path=spec.title)
        ids.append(document.pk)
    return ids


def _state(workspace: Workspace) -> dict:
    """Everything merging decides, by path: comparable across two workspaces."""
    documents = {pk: path for pk, path in Document.objects.filter(workspace=workspace).values_list("pk", "path")}
    families: dict[int, set[str]] = {}
    members = {}
    for pk, family_id, position, latest, copy_of, note in Document.objects.filter(workspace=workspace).values_list(
            "pk", "family_id", "family_position", "is_latest_version", "copy_of_id", "lineage_note"):
        if family_id is not None:
            families.setdefault(family_id, set()).add(documents[pk])
        members[documents[pk]] = (position, latest, documents.get(copy_of), note)
    chunk_key = {pk: (documents[document_id], index) for pk, document_id, index in
                 Chunk.objects.filter(workspace=workspace).values_list("pk", "document_id", "chunk_index")}
    chunks = {chunk_key[pk]: (lineage, chunk_key.get(superseded)) for pk, lineage, superseded in
              Chunk.objects.filter(workspace=workspace).values_list("pk", "lineage", "superseded_by_id")}
    contradictions = {(frozenset({chunk_key[a], chunk_key[b]}), status) for a, b, status in
                      Contradiction.objects.filter(workspace=workspace).values_list("chunk_a_id", "chunk_b_id", "status")}
    siblings = {frozenset({documents[a], documents[b]}) for a, b in
                DocumentSibling.objects.filter(workspace=workspace).values_list("document_a_id", "document_b_id")}
    return {"families": {frozenset(group) for group in families.values()}, "members": members, "chunks": chunks,
            "records": partition(workspace), "contradictions": contradictions, "siblings": siblings}


def _merge_one_by_one(workspace: Workspace, ids: list[int]) -> None:
    for document_id in ids:
        document_merge_settle(document_id=document_id)
    releases_settle(workspace_id=workspace.pk, rebuild=False)  # what the last merge of a job runs


def _merge_in_batches(workspace: Workspace, ids: list[int], size: int) -> None:
    for start in range(0, len(ids), size):
        documents_merge_settle(document_ids=ids[start:start + size])
    releases_settle(workspace_id=workspace.pk, rebuild=False)


def _assert_version_order(workspace: Workspace) -> None:
    """Within a family, a member with a higher label comes later, and the highest-labelled is current unless a
    newer unlabelled member (a branch's head) follows it."""
    rows = list(Document.objects.filter(workspace=workspace, family__isnull=False, copy_of__isnull=True)
                .values_list("family_id", "version_key", "family_position", "is_latest_version", "path"))
    for family_id, key, position, _latest, path in rows:
        for other_family, other_key, other_position, _other_latest, other_path in rows:
            if other_family == family_id and key and other_key and key < other_key:
                assert position < other_position, (path, other_path)


@pytest.mark.parametrize("size", BATCH_SIZES)
def test_a_batch_ends_as_merging_one_by_one(size):
    @hypothesis_settings(max_examples=6, deadline=None, database=None, derandomize=True,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(st.lists(st.sampled_from(range(len(UNIVERSE))), unique=True, min_size=2, max_size=len(UNIVERSE)))
    @example([GIT_1_0, GIT_1_2])  # the shape that failed: two tagged versions of one file in one batch
    @example([GIT_1_2, GIT_1_0, GIT_MAIN])
    @example(list(range(len(UNIVERSE))))
    def merged(order: list[int]) -> None:
        specs = [UNIVERSE[index] for index in order]
        one_by_one, batched = WorkspaceFactory(), WorkspaceFactory()
        _merge_one_by_one(one_by_one, _index(one_by_one, specs))
        _merge_in_batches(batched, _index(batched, specs), size)

        expected, found = _state(one_by_one), _state(batched)
        for part in expected:
            assert found[part] == expected[part], (part, [spec.path for spec in specs])
        assert_invariants(batched)
        _assert_version_order(batched)

    merged()


@pytest.mark.parametrize("size", BATCH_SIZES)
def test_the_newest_tag_of_a_git_file_is_current_at_every_batch_size(size):
    """The test the first batching failed (tests/rag/test_sources_git.py): 1.0 and 1.2 of one file, 1.2 current."""
    workspace = WorkspaceFactory()
    old, new = _index(workspace, [UNIVERSE[GIT_1_0], UNIVERSE[GIT_1_2]])
    _merge_in_batches(workspace, [old, new], size)
    rows = dict(Document.objects.filter(pk__in=[old, new]).values_list("pk", "is_latest_version"))
    family = set(Document.objects.filter(pk__in=[old, new]).values_list("family_id", flat=True))
    assert rows == {old: False, new: True} and len(family) == 1 and None not in family


@pytest.mark.parametrize("size", BATCH_SIZES)
def test_labelled_versions_arriving_newest_first_are_ordered_by_label_at_every_batch_size(size):
    workspace = WorkspaceFactory()
    ids = _index(workspace, [_guide("3.0"), _guide("2.0"), _guide("2.1", dated=False)])
    _merge_in_batches(workspace, ids, size)
    order = list(Document.objects.filter(pk__in=ids).order_by("family_position").values_list("version_label", flat=True))
    assert order == ["2.0", "2.1", "3.0"]
    assert list(Document.objects.filter(pk__in=ids, is_latest_version=True).values_list("version_label", flat=True)) == [
        "3.0"]


