"""Document families: which documents are versions of one another, in what order, and what each
older passage became.

A family holds the versions of one document, at most one per release (plus copies). The steps,
each bounded by a document's candidates, never by the workspace:

1. `documents_lineage_evidence` (outside the merge's lock; it writes only the documents' own title and
   path keys): each document's candidates, from the merge's neighbour pairs, the stored title and path
   keys and its current relations, and the evidence against each one (rag.lineage.evidence).
2. `documents_lineage_update` (under the lock): the relations are stored, and the families they
   touch are regrouped once for the batch from their stored relations (rag.lineage.grouping: strongest
   first, joined only when the members line up, so nothing chains and arrival order does not matter).
3. `family_refresh`: order, latest flag, copies and supersession of one family from its members
   and their stored relations (no pair compared again).

Within a family, members are ordered by version label where both have one, else by date (an
explicit date before a file mtime before an upload time). A member whose content repeats another
is a copy: it takes that member's place whatever its own date, because a newer version is one whose
content changed. Each chunk of a member that is not the newest is then superseded or retired
(rag.lineage.supersession). A family a person drew (`edited_by_hand`) takes in new documents that
relate to it and is never reshaped by evidence.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from rag.lineage.evidence import Member, VectorCache, load_members, pairs_evidence, relation_strength
from rag.lineage.grouping import Relation, copies_of, date_rank, group_documents, pair_key, version_order
from rag.releases import version_key
from rag.lineage.siblings import SiblingPair, sibling_pair, siblings_store, subjects_refresh, workspace_siblings_replace
from rag.lineage.supersession import chunks_current, chunks_supersede
from rag.models import Chunk, Document, DocumentFamily, DocumentRelation

logger = logging.getLogger(__name__)


@dataclass
class LineageEvidence:
    """What a document's merge learned about its versions before taking the lock."""

    document_id: int
    candidates: set[int] = field(default_factory=set)  # compared, related or not
    relations: list[Relation] = field(default_factory=list)  # the related ones
    siblings: list[SiblingPair] = field(default_factory=list)  # one template filled in for another subject
    active: bool = True
    vectors: VectorCache = field(default_factory=VectorCache, repr=False)  # what was loaded, reused under the lock


# --- candidates and evidence (read-only) -------------------------------------------------------------


def _content_candidates(document_id: int, chunk_count: int,
                        neighbour_pairs: Iterable[tuple[int, int, float]]) -> set[int]:
    """Documents whose chunks answer enough of this one's above the counterpart threshold to be a version of it.

    A content relation needs half of either side's chunks matched and comparable sizes: a document of another
    size, or one that a quarter of the smaller side's chunks do not reach, cannot be one (a shared title is found
    by its key instead), so its vectors are never read. The neighbour search is a top-k per chunk, so the count
    is a lower bound, hence the margin.
    """
    threshold = settings.FAMILY_COUNTERPART_THRESHOLD
    near = [(a, b) for a, b, score in neighbour_pairs if score >= threshold]
    documents = dict(Chunk.objects.filter(pk__in={c for pair in near for c in pair}).values_list("pk", "document_id"))
    matched: dict[int, set[int]] = defaultdict(set)  # other document -> this one's chunks that reach it
    for a, b in near:
        if a in documents and b in documents:
            mine, theirs = (a, b) if documents[a] == document_id else (b, a)
            if documents[mine] == document_id and documents[theirs] != document_id:
                matched[documents[theirs]].add(mine)
    sizes = dict(Document.objects.filter(pk__in=matched).values_list("pk", "chunk_count"))
    own = max(chunk_count, 1)
    candidates = set()
    for pk, chunks in matched.items():
        other = max(sizes.get(pk, 0), 1)
        comparable = min(own, other) / max(own, other) >= settings.FAMILY_MIN_SIZE_RATIO
        if comparable and len(chunks) >= max(1, min(own, other) // 4):
            candidates.add(pk)
    return candidates


def _named_candidates(me: Member, workspace_id: int) -> set[int]:
    """Documents with this one's title or path key, through their indexes; never for pages written once per
    release (their name is shared by the whole series)."""
    if me.per_release:
        return set()
    named = Q()
    if me.title_key:
        named |= Q(title_key=me.title_key)
    if me.path_key:
        named |= Q(path_key=me.path_key)
    if not named:
        return set()
    rows = (Document.objects.filter(named, workspace_id=workspace_id, archived=False, status=Document.Status.INDEXED)
            .exclude(pk=me.id).order_by("-doc_date", "path").values_list("pk", flat=True))
    return set(rows[:settings.FAMILY_NAMED_CANDIDATES_MAX])


def _stored_relations(document_ids: Iterable[int], *, within: bool) -> list[Relation]:
    """Stored relations touching these documents (`within`: with both sides among them)."""
    ids = list(document_ids)
    rows = DocumentRelation.objects.filter(Q(document_a_id__in=ids) & Q(document_b_id__in=ids) if within
                                           else Q(document_a_id__in=ids) | Q(document_b_id__in=ids))
    return [Relation(a, b, strength, identical) for a, b, strength, identical
            in rows.values_list("document_a_id", "document_b_id", "strength", "identical")]


def _evaluate(me: Member, others: dict[int, Member], vectors: VectorCache) -> tuple[list[Relation], list[SiblingPair]]:
    vectors.load([me.id, *others])
    relations, siblings = [], []
    for pk, evidence in zip(sorted(others), pairs_evidence([(vectors[me.id], vectors[pk]) for pk in sorted(others)])):
        strength = relation_strength(me, others[pk], evidence)
        if strength is not None:
            a, b = pair_key(me.id, pk)
            relations.append(Relation(a, b, strength, evidence.identical))
        elif (pair := sibling_pair(me.id, pk, evidence)) is not None:
            siblings.append(pair)
    return relations, siblings


def document_lineage_evidence(*, document_id: int, neighbour_pairs: list[tuple[int, int, float]],
                              vectors: VectorCache | None = None) -> LineageEvidence:
    """The document's candidates and its relations to them: reads only, so the merge runs it before its lock."""
    document = Document.objects.filter(pk=document_id).values("workspace_id").first()
    me = load_members(Document.objects.filter(pk=document_id)).get(document_id)
    if document is None or me is None:
        return LineageEvidence(document_id, active=False)
    candidates = _content_candidates(document_id, me.chunk_count, neighbour_pairs)
    candidates |= _named_candidates(me, document["workspace_id"])
    candidates |= {pk for relation in _stored_relations([document_id], within=False)
                   for pk in (relation.a, relation.b)} - {document_id}  # re-checked: the content may have changed
    others = load_members(Document.objects.filter(pk__in=candidates, workspace_id=document["workspace_id"]))
    vectors = vectors or VectorCache()
    relations, siblings = _evaluate(me, others, vectors)
    return LineageEvidence(document_id, set(candidates), relations, siblings, vectors=vectors)


def documents_lineage_evidence(*, neighbour_pairs: dict[int, list[tuple[int, int, float]]],
                               vectors: VectorCache | None = None) -> dict[int, LineageEvidence]:
    """document_lineage_evidence of documents merged together, each from its own neighbour pairs, one vector cache.

    Their title and path keys are stored first: a document finds another by name through the stored keys, and one
    by one each found the keys of those merged before it, where read all before any was stored two versions of one
    Git file in one batch found each other by neither (the older stayed current). Read before any of them stores
    its relations, where one by one each re-checks those stored before it: the same relations, since a pair is
    judged alike from either side (tests/rag/test_merge_batches.py compares the two).
    """
    _keys_store(load_members(Document.objects.filter(pk__in=list(neighbour_pairs))).values())
    vectors = vectors or VectorCache()
    return {pk: document_lineage_evidence(document_id=pk, neighbour_pairs=pairs, vectors=vectors)
            for pk, pairs in sorted(neighbour_pairs.items())}


def _relations_store(workspace_id: int, document_id: int, evidence: LineageEvidence) -> None:
    """The document's relations to its candidates as found now; others' relations stay as they are."""
    kept = {pair_key(r.a, r.b) for r in evidence.relations}
    stale = [pair_key(document_id, pk) for pk in evidence.candidates if pair_key(document_id, pk) not in kept]
    if stale:
        DocumentRelation.objects.filter(
            Q(document_a_id=document_id, document_b_id__in=[b for a, b in stale if a == document_id])
            | Q(document_b_id=document_id, document_a_id__in=[a for a, b in stale if b == document_id])).delete()
    existing = set(Document.objects.filter(pk__in={pk for r in evidence.relations for pk in (r.a, r.b)})
                   .values_list("pk", flat=True))  # a candidate deleted since the evidence was read is skipped
    _relations_upsert(workspace_id, [r for r in evidence.relations if r.a in existing and r.b in existing])


def _keys_store(members: Iterable[Member]) -> None:
    """The title and path keys candidates are found by, where they changed (a new title, a new path)."""
    changed = [Document(pk=m.id, title_key=m.title_key, path_key=m.path_key) for m in members
               if (m.title_key, m.path_key) != (m.title_key_stored, m.path_key_stored)]
    Document.objects.bulk_update(changed, ["title_key", "path_key"], batch_size=1000)


# --- the entry points --------------------------------------------------------------------------------


def document_lineage_update(*, document_id: int, neighbour_pairs: list[tuple[int, int, float]] | None = None,
                            evidence: LineageEvidence | None = None) -> set[int]:
    """Put one (re-)indexed document in its family; returns the families refreshed (documents_lineage_update)."""
    return documents_lineage_update(document_ids=[document_id], neighbour_pairs={document_id: neighbour_pairs or []},
                                    evidence={document_id: evidence} if evidence else None)


def documents_lineage_update(*, document_ids: Iterable[int], neighbour_pairs: dict[int, list[tuple[int, int, float]]]
                             | None = None, evidence: dict[int, LineageEvidence] | None = None) -> set[int]:
    """Put (re-)indexed documents of one workspace in their families; returns the families refreshed.

    Runs inside the merge's transaction and workspace lock, with the evidence the merge read before taking it
    (or reads it now from each document's `neighbour_pairs`); membership is decided here, from the families as
    they are under the lock. Every document's relations are stored first, then their neighbourhood is regrouped
    and each family refreshed once: a job's files that are versions of one another cost one regroup, not one each.
    """
    workspaces = dict(Document.objects.filter(pk__in=list(document_ids)).values_list("pk", "workspace_id"))
    if not workspaces:
        return set()
    workspace_id = next(iter(workspaces.values()))
    present = load_members(Document.objects.filter(pk__in=list(workspaces)))
    # Archived or failed since: they leave their families.
    changed = documents_leave_families(document_ids=[pk for pk in sorted(workspaces) if pk not in present])
    # One cache for the batch (the merge read its evidence with one): a vector is loaded once, whoever needs it.
    vectors = next((found.vectors for found in (evidence or {}).values() if found is not None), None) or VectorCache()
    _keys_store(present.values())
    seeds: set[int] = set()
    evidence = dict(evidence or {})
    unread = [pk for pk in present if evidence.get(pk) is None or not evidence[pk].active]
    if unread:
        evidence.update(documents_lineage_evidence(vectors=vectors, neighbour_pairs={
            pk: (neighbour_pairs or {}).get(pk, []) for pk in unread}))
    for document_id in sorted(present):
        found = evidence[document_id]
        _relations_store(workspace_id, document_id, found)
        subjects_refresh(document_ids=siblings_store(workspace_id=workspace_id, document_id=document_id,
                                                     candidates=found.candidates, found=found.siblings))
        related = {pk for relation in _stored_relations([document_id], within=False)
                   for pk in (relation.a, relation.b)} - {document_id}
        if related or present[document_id].family_id is not None:  # else a document of its own: nothing to regroup
            seeds |= related | {document_id}
    if seeds:
        neighbourhood = _relation_component(workspace_id, seeds)
        members = load_members(Document.objects.filter(workspace_id=workspace_id, pk__in=neighbourhood))
        changed |= _regroup(workspace_id, members, _stored_relations(members, within=True))
        # Their own families too: their chunks are new.
        changed |= set(Document.objects.filter(pk__in=seeds & set(present)).values_list("family_id", flat=True))
    return _refresh_all(changed, vectors) if changed else set()


def _relation_component(workspace_id: int, seed: set[int]) -> set[int]:
    """The documents linked to `seed` by stored relations or shared families, all of them: grouping decides a
    connected set as a whole (strongest relation first), so regrouping only the new document's neighbours would
    leave two related documents apart that another arrival order joins. Bounded by
    LINEAGE_REGROUP_DOCUMENTS_MAX (a component that large is cut, and said in the log)."""
    found, frontier = set(seed), set(seed)
    limit = settings.LINEAGE_REGROUP_DOCUMENTS_MAX
    while frontier:
        linked = set(Document.objects.filter(workspace_id=workspace_id, family_id__in=Document.objects.filter(
            pk__in=frontier, family__isnull=False).values("family_id")).values_list("pk", flat=True))
        for a, b in DocumentRelation.objects.filter(Q(document_a_id__in=frontier) | Q(document_b_id__in=frontier)) \
                .values_list("document_a_id", "document_b_id"):
            linked |= {a, b}
        frontier = linked - found
        if len(found) + len(frontier) > limit:
            logger.warning("lineage: relation component cut", extra={"documents": len(found) + len(frontier)})
            frontier = set(sorted(frontier)[:max(0, limit - len(found))])
        found |= frontier
    return found


def workspace_lineage_rebuild(*, workspace_id: int, neighbour_pairs: list[tuple[int, int, float]]) -> set[int]:
    """Families of the whole workspace from scratch, keeping ids where members stay; a second run writes nothing."""
    everyone = load_members(Document.objects.filter(workspace_id=workspace_id))
    _keys_store(everyone.values())
    chunk_document = dict(Chunk.objects.filter(
        pk__in={c for a, b, score in neighbour_pairs if score >= settings.FAMILY_COUNTERPART_THRESHOLD
                for c in (a, b)}).values_list("pk", "document_id"))
    pairs = {pair_key(chunk_document[a], chunk_document[b]) for a, b, score in neighbour_pairs
             if a in chunk_document and b in chunk_document and chunk_document[a] != chunk_document[b]}
    named: dict[tuple[str, str], list[int]] = defaultdict(list)
    for member in everyone.values():
        if not member.per_release:
            if member.title_key:
                named[("title", member.title_key)].append(member.id)
            if member.path_key:
                named[("path", member.path_key)].append(member.id)
    limit = settings.FAMILY_NAMED_CANDIDATES_MAX
    for group in named.values():
        group = sorted(group, key=lambda pk: date_rank(everyone[pk]), reverse=True)
        pairs |= {pair_key(a, b) for index, a in enumerate(group) for b in group[index + 1:index + 1 + limit]}
    pairs = {pair for pair in pairs if pair[0] in everyone and pair[1] in everyone}
    vectors = VectorCache()
    vectors.load({pk for pair in pairs for pk in pair})  # one query, not one per document
    relations, siblings = [], []
    for (a, b), evidence in zip(sorted(pairs), pairs_evidence([(vectors[a], vectors[b]) for a, b in sorted(pairs)])):
        strength = relation_strength(everyone[a], everyone[b], evidence)
        if strength is not None:
            relations.append(Relation(a, b, strength, evidence.identical))
        elif (pair := sibling_pair(a, b, evidence)) is not None:
            siblings.append(pair)
    with transaction.atomic():
        _relations_replace(workspace_id, relations)
        workspace_siblings_replace(workspace_id=workspace_id, found=siblings)
        touched = _regroup(workspace_id, everyone, relations)
        touched |= set(DocumentFamily.objects.filter(workspace_id=workspace_id).values_list("pk", flat=True))
        refreshed = _refresh_all(touched, vectors)
        DocumentFamily.objects.filter(workspace_id=workspace_id, members__isnull=True).delete()
    return refreshed


def _relations_replace(workspace_id: int, relations: list[Relation]) -> None:
    """The workspace's stored relations become exactly these; only differences are written."""
    wanted = {pair_key(r.a, r.b): r for r in relations}
    stored = {(a, b): (strength, identical) for a, b, strength, identical in DocumentRelation.objects.filter(
        workspace_id=workspace_id).values_list("document_a_id", "document_b_id", "strength", "identical")}
    gone = [pair for pair in stored if pair not in wanted]
    for start in range(0, len(gone), 1000):
        batch = gone[start:start + 1000]
        query = Q()
        for a, b in batch:
            query |= Q(document_a_id=a, document_b_id=b)
        DocumentRelation.objects.filter(query).delete()
    _relations_upsert(workspace_id, [r for pair, r in wanted.items() if stored.get(pair) != (r.strength, r.identical)])


def _regroup(workspace_id: int, members: dict[int, Member], relations: list[Relation]) -> set[int]:
    """Make the families of these documents the groups their relations give; returns the families whose members
    changed (those that kept theirs need no refresh).

    Each group keeps the family it overlaps most (ties: the older family), so ids survive; a person's family
    keeps its members and takes in documents that relate to it.
    """
    family_ids = {m.family_id for m in members.values()} - {None}
    hand_made = set(DocumentFamily.objects.filter(pk__in=family_ids, edited_by_hand=True).values_list("pk", flat=True))
    current: dict[int, set[int]] = defaultdict(set)
    for member in members.values():
        if member.family_id is not None:
            current[member.family_id].add(member.id)
    groups = group_documents(members, relations, fixed=[current[pk] for pk in sorted(hand_made)])
    taken: set[int] = set()
    wanted: dict[int, int] = {}  # document -> its family
    touched: set[int] = set()
    for group in sorted(groups, key=lambda g: min(members[pk].path for pk in g)):
        overlaps = sorted(((len(group & ids), -family_id) for family_id, ids in current.items()
                           if family_id not in taken and group & ids), reverse=True)
        family_id = -overlaps[0][1] if overlaps else None
        if family_id is None:
            newest = max(group, key=lambda pk: date_rank(members[pk]))
            family_id = DocumentFamily.objects.create(workspace_id=workspace_id, name=_family_name(members[newest])).pk
        taken.add(family_id)
        if current.get(family_id) != group:
            touched.add(family_id)
        wanted.update({pk: family_id for pk in group})
    moved: dict[int, list[int]] = defaultdict(list)
    alone = []
    for pk, member in members.items():
        if pk not in wanted:
            if member.family_id is not None:
                alone.append(pk)
        elif member.family_id != wanted[pk]:
            moved[wanted[pk]].append(pk)
        if member.family_id is not None and wanted.get(pk) != member.family_id:
            touched.add(member.family_id)  # it lost a member
    for family_id, ids in moved.items():
        Document.objects.filter(pk__in=ids).update(family_id=family_id)
    if alone:
        Document.objects.filter(pk__in=alone).update(family=None, family_position=None, is_latest_version=True,
                                                     copy_of=None)
        chunks_current(alone)
    return touched


def documents_leave_families(*, document_ids: list[int]) -> set[int]:
    """Take documents out of their families (archived, failed, about to be deleted); returns the families to refresh."""
    families = set(Document.objects.filter(pk__in=document_ids, family__isnull=False)
                   .values_list("family_id", flat=True))
    Document.objects.filter(pk__in=document_ids).update(family=None, family_position=None,
                                                        is_latest_version=True, copy_of=None)
    chunks_current(document_ids)
    Chunk.objects.filter(superseded_by__document_id__in=document_ids).update(superseded_by=None)
    return families


def family_refresh(*, family_id: int, vectors: VectorCache | None = None) -> None:
    """Order, latest flag, copies and chunk supersession of one family, from its members and their stored
    relations as they are now."""
    family = DocumentFamily.objects.filter(pk=family_id).first()
    if family is None:
        return
    members = load_members(Document.objects.filter(family_id=family_id))
    gone = list(Document.objects.filter(family_id=family_id).exclude(pk__in=members).values_list("pk", flat=True))
    if gone:  # archived or failed members leave the family
        documents_leave_families(document_ids=gone)
    if len(members) < 2 and not family.edited_by_hand:
        documents_leave_families(document_ids=list(members))
        family.delete()
        return
    vectors = vectors or VectorCache()
    vectors.load(members)
    relations = _member_relations(family.workspace_id, members, vectors)
    copies = copies_of(members, {pair_key(r.a, r.b) for r in relations if r.identical})
    floors = _version_floors(members)
    order = _hand_order(members) if family.edited_by_hand else version_order(
        members, copies, floors, _inferred_releases(members))
    position = {pk: index for index, pk in enumerate(order)}
    root = {pk: copies.get(pk, pk) for pk in members}
    related: dict[int, set[int]] = defaultdict(set)
    pairs = [(a, b) for a in members for b in members if a < b] if family.edited_by_hand \
        else [(r.a, r.b) for r in relations]
    for a, b in pairs:
        if root[a] != root[b]:
            related[root[a]].add(root[b])
            related[root[b]].add(root[a])
    # Latest: no newer member is a version of it. A family can have several (a manual split into
    # pages: each page is current), and a member is superseded only by members it is related to.
    latest = {pk for pk in members if not any(position[other] > position[root[pk]] for other in related[root[pk]])}
    notes = _order_notes(members, order)
    updates = [Document(pk=pk, family_position=position[pk], is_latest_version=pk in latest,
                        copy_of_id=copies.get(pk), lineage_note=notes.get(pk, "")) for pk, m in members.items()
               if (m.family_position, m.is_latest_version, m.copy_of_id, m.lineage_note)
               != (position[pk], pk in latest, copies.get(pk), notes.get(pk, ""))]  # only what changed
    Document.objects.bulk_update(updates, ["family_position", "is_latest_version", "copy_of", "lineage_note"])
    if not family.edited_by_hand:
        name = _family_name(members[order[-1]])
        if name != family.name:
            DocumentFamily.objects.filter(pk=family_id).update(name=name)
    chunks_supersede(order, latest, copies, related, vectors)


def _member_relations(workspace_id: int, members: dict[int, Member], vectors: VectorCache) -> list[Relation]:
    """The stored relations among a family's members; a member with none (a family formed before relations were
    stored, or joined by hand) is compared with the others once, and what relates is stored."""
    relations = _stored_relations(members, within=True)
    missing = set(members) - {pk for r in relations for pk in (r.a, r.b)}
    for pk in sorted(missing):
        others = {other: m for other, m in members.items() if other != pk}
        found = [r for r in _evaluate(members[pk], others, vectors)[0] if pair_key(r.a, r.b) not in
                 {pair_key(x.a, x.b) for x in relations}]
        _relations_upsert(workspace_id, found)
        relations.extend(found)
    return relations


def _relations_upsert(workspace_id: int, relations: list[Relation]) -> None:
    DocumentRelation.objects.bulk_create(
        [DocumentRelation(workspace_id=workspace_id, document_a_id=r.a, document_b_id=r.b, strength=r.strength,
                          identical=r.identical) for r in relations],
        update_conflicts=True, unique_fields=["document_a", "document_b"], update_fields=["strength", "identical"],
        batch_size=1000)


def _refresh_all(family_ids: Iterable[int], vectors: VectorCache | None = None) -> set[int]:
    refreshed = set()
    for family_id in sorted(set(family_ids) - {None}):
        family_refresh(family_id=family_id, vectors=vectors)
        refreshed.add(family_id)
    DocumentFamily.objects.filter(pk__in=refreshed, members__isnull=True, edited_by_hand=False).delete()
    return refreshed


def _family_name(member: Member) -> str:
    return (member.title or member.path)[:500]


def _version_floors(members: dict[int, Member]) -> dict[int, str]:
    """The newest version a member's Sphinx directives name ("Changed in version 5.3"): it is at least that new."""
    floors = {}
    for pk, metadata in Document.objects.filter(pk__in=members).values_list("pk", "metadata"):
        keys = [version_key(str(entry.get("version", ""))) for entry in (metadata or {}).get("version_directives", [])
                if isinstance(entry, dict)]
        floors[pk] = max((key for key in keys if key), default="")
    return floors


def _inferred_releases(members: dict[int, Member]) -> dict[int, str]:
    """The release inferred from each unlabelled member's own content (rag.releases.inference), as a version key:
    "after 3.2" sorts above 3.2 and below 3.2.1."""
    found = {}
    for pk, label, after in Document.objects.filter(pk__in=members).values_list("pk", "inferred_label",
                                                                                "inferred_after"):
        key = version_key(label) if label else (version_key(after) if after else None)
        if key:
            found[pk] = key if label else key + "~"
    return found


def _hand_order(members: dict[int, Member]) -> list[int]:
    return sorted(members, key=lambda pk: (members[pk].family_position is None,
                                           members[pk].family_position or 0, date_rank(members[pk])))


def _order_notes(members: dict[int, Member], order: list[int]) -> dict[int, str]:
    """Where a trustworthy date says a member is older than one its label puts it after."""
    notes = {}
    for index, pk in enumerate(order):
        member = members[pk]
        if not member.version_key or not member.doc_date or member.date_confidence == 0:
            continue
        for later_pk in order[index + 1:]:
            later = members[later_pk]
            if later.version_key and later.version_key != member.version_key and later.doc_date \
                    and later.date_confidence > 0 and later.doc_date < member.doc_date:
                notes[pk] = (f"version {member.version_label} is dated {member.doc_date.date().isoformat()}, "
                             f"after {later.version_label} ({later.doc_date.date().isoformat()}): "
                             "the version label decides the order")
                break
    return notes
