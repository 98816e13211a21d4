"""Reads scoped by workspace membership, so that no view can forget the scope."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import F, Q, QuerySet
from django.http import Http404

from rag.releases import release_lines, workspace_version_labels
from rag.models import (
    CanonicalRecord,
    Chunk,
    Contradiction,
    Document,
    DocumentSibling,
    IndexingJob,
    Workspace,
    shown_path,
    shown_path_sql,
)
from rag.records import RecordMember, record_members


def workspace_list(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Workspace]:
    if not user.is_authenticated:
        return Workspace.objects.none()
    return Workspace.objects.filter(members=user)


def workspace_get(*, user: AbstractBaseUser | AnonymousUser, slug: str) -> Workspace:
    """404 (not 403) for a workspace the user is not in: existence is not leaked."""
    try:
        return workspace_list(user=user).get(slug=slug)
    except Workspace.DoesNotExist:
        raise Http404("No such workspace") from None


def sees_server_paths(user: Any) -> bool:
    """Staff read where a document lies on the server; a member reads its path inside its source (issue 49)."""
    return bool(getattr(user, "is_staff", False))


_Data = TypeVar("_Data")


def paths_as_seen(data: _Data, *, full: bool) -> _Data:
    """Every "path" beside a "document_id" in `data` (dicts and lists, as answers and results are kept and sent),
    set to the document's full path (`full`, staff) or the path pages show, in place; one read for all of them."""
    found: list[dict] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "path" in value and isinstance(value.get("document_id"), int):
                found.append(value)
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(data)
    if not found:
        return data
    documents = Document.objects.filter(pk__in={entry["document_id"] for entry in found}).only("path", "display_path")
    paths = {document.pk: document.path if full else document.shown_path for document in documents}
    for entry in found:
        if entry["document_id"] in paths:
            entry["path"] = paths[entry["document_id"]]
        elif not full:  # the document is gone: at least not the server's folders
            entry["path"] = shown_path(str(entry["path"] or ""))
    return data


def document_list(
    *,
    workspace: Workspace,
    doc_type: str = "",
    status: str = "",
    query: str = "",
    date_from=None,
    date_to=None,
    include_archived: bool = False,
    full_paths: bool = False,
) -> QuerySet[Document]:
    """`full_paths`: `query` matches the server path (staff), else the path a member reads."""
    documents = Document.objects.filter(workspace=workspace)
    if not include_archived:
        documents = documents.filter(archived=False)
    if doc_type:
        documents = documents.filter(doc_type=doc_type)
    if status == "archived":
        documents = Document.objects.filter(workspace=workspace, archived=True)
    elif status:
        documents = documents.filter(status=status)
    if query:
        if full_paths:
            documents = documents.filter(Q(title__icontains=query) | Q(path__icontains=query))
        else:
            documents = documents.alias(shown=shown_path_sql()).filter(Q(title__icontains=query) | Q(shown__icontains=query))
    if date_from:
        documents = documents.filter(doc_date__date__gte=date_from)
    if date_to:
        documents = documents.filter(doc_date__date__lte=date_to)
    return documents.order_by(F("doc_date").desc(nulls_last=True), "path")


def document_get(*, user, pk: int) -> Document:
    """A document of one of the user's workspaces, else 404."""
    try:
        return (Document.objects.select_related("workspace", "family", "version_set_by", "date_set_by", "parent")
                .get(pk=pk, workspace__members=user))
    except Document.DoesNotExist:
        raise Http404("No such document") from None


def document_attachments(*, document: Document) -> list[Document]:
    """The documents indexed from a message's attachments, in its workspace (already scoped by document_get)."""
    return list(Document.objects.filter(parent_id=document.pk, workspace_id=document.workspace_id).order_by("path"))


def job_get(*, user, pk: int) -> IndexingJob:
    try:
        return IndexingJob.objects.select_related("workspace").get(pk=pk, workspace__members=user)
    except IndexingJob.DoesNotExist:
        raise Http404("No such job") from None


def job_list(*, workspace: Workspace) -> QuerySet[IndexingJob]:
    return IndexingJob.objects.filter(workspace=workspace).order_by("-created_at")


def version_labels(*, workspace: Workspace) -> list[str]:
    """The workspace's release lines ("2.1", never "2.1.2" beside it), newest first: the choices of "answer as of"."""
    return list(release_lines(workspace_id=workspace.pk))


# --- a document's family and the version to compare it with -------------------------------------


@dataclass
class FamilyTimeline:
    members: list[Document]  # oldest first
    previous: Document | None  # the nearest older version whose content differs from this one's


def _content_root(document: Document) -> int:
    return document.copy_of_id or document.pk


def document_family(*, document: Document) -> FamilyTimeline:
    """The family of a document already scoped by document_get; empty when it has none."""
    if document.family_id is None:
        return FamilyTimeline(members=[], previous=None)
    members = list(Document.objects.filter(family_id=document.family_id, workspace_id=document.workspace_id)
                   .select_related("copy_of").order_by(F("family_position").asc(nulls_last=True), "pk"))
    position = document.family_position if document.family_position is not None else -1
    older = [m for m in members if m.family_position is not None and m.family_position < position
             and _content_root(m) != _content_root(document)]
    return FamilyTimeline(members=members, previous=older[-1] if older else None)


def document_siblings(*, document: Document) -> list[Document]:
    """Its template group: the active documents made from its template for other subjects (rag.lineage.siblings),
    by subject. `document` is already scoped by document_get."""
    pairs = DocumentSibling.objects.filter(Q(document_a=document) | Q(document_b=document)).values_list(
        "document_a_id", "document_b_id")
    ids = {pk for pair in pairs for pk in pair} - {document.pk}
    return list(Document.objects.active().filter(pk__in=ids, workspace_id=document.workspace_id)
                .order_by("subject", "title", "pk"))


def document_compare_base(*, user, document: Document, other_id: int | None) -> Document | None:
    """The version to compare `document` with: the one asked for (same workspace, else 404) or the previous one."""
    if other_id is None:
        return document_family(document=document).previous
    try:
        return Document.objects.get(pk=other_id, workspace_id=document.workspace_id, workspace__members=user)
    except Document.DoesNotExist:
        raise Http404("No such document") from None


def workspace_release_labels(*, workspace_id: int) -> list[str]:
    """Every release a question may name in this workspace, oldest first: a change answer never takes one of
    them for the value that changed."""
    return workspace_version_labels(workspace_id=workspace_id)


def chunks_other_versions(*, chunks: Iterable[tuple[int, int | None, str]]) -> dict[int, list[Chunk]]:
    """chunk id -> the other versions of its statement, documents loaded, for (chunk id, record id, text) of
    many chunks in a fixed number of queries: the older passages of its family it supersedes, the newer one that
    replaced it and its pending contradictions, in active documents; else the variants of its canonical record
    (rag.records) whose text differs, most similar first. Only chunks of the asked chunks' workspace.

    Read by chat's extractive answers, which name the disagreeing versions beside the one they quote.
    """
    asked = {chunk_id: (record_id, text) for chunk_id, record_id, text in chunks}
    ids = set(asked)
    partners: dict[int, set[int]] = {chunk_id: set() for chunk_id in ids}
    pairs = Contradiction.objects.filter(status=Contradiction.Status.PENDING).filter(
        Q(chunk_a_id__in=ids) | Q(chunk_b_id__in=ids)
    ).values_list("chunk_a_id", "chunk_b_id")
    # A change between versions is not a contradiction: lineage records it as supersession. The asked chunks'
    # own rows come too, for their workspace.
    rows = list(Chunk.objects.filter(Q(superseded_by_id__in=ids) | Q(pk__in=ids))
                .values_list("pk", "superseded_by_id", "document__workspace_id"))
    superseded = [(pk, newer) for pk, newer, _ in rows if newer is not None]
    workspaces = {workspace_id for pk, _, workspace_id in rows if pk in ids}
    for a, b in [*pairs, *superseded]:
        if a in ids:
            partners[a].add(b)
        if b in ids:
            partners[b].add(a)
    # The members of the asked chunks' records, read before the chunks so that one query loads them all.
    record_ids = {record_id for record_id, _ in asked.values() if record_id}
    members = {record_id: member for workspace_id in (workspaces if record_ids else ())
               for record_id, member in record_members(record_ids=record_ids, workspace_id=workspace_id).items()}
    variants = {record_id: sorted((m for m in record_rows if m.role == "variant"), key=lambda m: -(m.similarity or 0))
                for record_id, record_rows in members.items()}
    wanted = set().union(*partners.values())
    # Other versions in active documents; a record's variants wherever they are (an archived one says it too).
    loaded = list(Chunk.objects.filter(document__workspace_id__in=workspaces).filter(
        Q(pk__in=wanted, document__archived=False)
        | Q(pk__in=[m.chunk_id for record_rows in variants.values() for m in record_rows])
    ).select_related("document")) if wanted or variants else []
    found = {chunk_id: [chunk for chunk in loaded if chunk.pk in partners[chunk_id] and not chunk.document.archived]
             for chunk_id in ids}
    by_pk = {chunk.pk: chunk for chunk in loaded}
    for chunk_id in ids:
        record_id, text = asked[chunk_id]
        if not found[chunk_id] and record_id in variants:
            found[chunk_id] = [by_pk[m.chunk_id] for m in variants[record_id]
                               if m.chunk_id in by_pk and by_pk[m.chunk_id].text.strip() != text.strip()]
    return found


def contradiction_decisions(*, chunk_ids: Iterable[int]) -> list[tuple[int, int, int, int]]:
    """(chunk a, chunk b, kept, overruled) of every reviewer decision on a contradiction among these chunks,
    latest first: read once for a whole answer, then asked about each group of versions (`decision_among`)."""
    ids = set(chunk_ids)
    decisions = Contradiction.objects.filter(
        status=Contradiction.Status.RESOLVED, chunk_a_id__in=ids, chunk_b_id__in=ids,
    ).order_by("-reviewed_at").values_list("chunk_a_id", "chunk_b_id", "resolution")
    return [(a, b, *((a, b) if resolution == "kept_a" else (b, a))) for a, b, resolution in decisions]


def contradicted_chunks(*, chunk_ids: Iterable[int]) -> set[int]:
    """The chunks among these that a pending or decided (resolved) contradiction sets against another of them:
    what a "Documents disagree" flag may say of the passages an answer cites. Dismissed ones never count."""
    ids = set(chunk_ids)
    if len(ids) < 2:
        return set()
    pairs = Contradiction.objects.filter(
        status__in=(Contradiction.Status.PENDING, Contradiction.Status.RESOLVED), chunk_a_id__in=ids, chunk_b_id__in=ids,
    ).values_list("chunk_a_id", "chunk_b_id")
    return {chunk_id for pair in pairs for chunk_id in pair}


def decision_among(decisions: list[tuple[int, int, int, int]], chunk_ids: Iterable[int]) -> tuple[int, int] | None:
    """(kept, overruled) of the latest of `decisions` (contradiction_decisions) between two of these chunks."""
    ids = set(chunk_ids)
    for a, b, kept, overruled in decisions:
        if a in ids and b in ids:
            return kept, overruled
    return None


def record_provenance(*, record_id: int, user: AbstractBaseUser | None = None) -> list[RecordMember]:
    """Where a record's text comes from: its canonical, then its variants newest first (a query, not a copy).

    With `user`, only records of that user's workspaces are found.
    """
    records = CanonicalRecord.objects.filter(pk=record_id)
    if user is not None:
        records = records.filter(workspace__members=user)
    workspace_id = records.values_list("workspace_id", flat=True).first()
    if workspace_id is None:
        raise CanonicalRecord.DoesNotExist(f"no record {record_id}")
    return record_members(record_ids=[record_id], workspace_id=workspace_id).get(record_id, [])
