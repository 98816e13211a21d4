"""What each older passage of a family became: superseded by its counterpart in a newer member, or retired."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from django.conf import settings
from django.db import connection

from rag.lineage.evidence import VectorCache, similarity
from rag.models import Chunk


def chunks_supersede(order: list[int], latest: set[int], copies: dict[int, int], related: dict[int, set[int]],
                     vectors: VectorCache) -> None:
    """Each chunk of an older member: superseded by its counterpart in the newest related member that has one
    (same heading once labels are stripped, else the nearest chunk above the threshold, else for the text under
    the title alone the closest such text above a looser threshold: chunk boundaries move between releases), or
    retired."""
    threshold = settings.FAMILY_COUNTERPART_THRESHOLD
    opening_threshold = settings.FAMILY_OPENING_COUNTERPART_THRESHOLD
    superseded: dict[int, int] = {}
    retired: list[int] = []
    current: list[int] = []
    for index, pk in enumerate(order):
        older = vectors[pk]
        if pk in latest:
            current.extend(older.ids)
            continue
        versions_of = related[copies.get(pk, pk)]
        counterpart: dict[int, int] = {}
        for other in reversed(order[index + 1:]):  # the newest member with a counterpart supersedes
            if copies.get(other, other) not in versions_of:
                continue
            newer = vectors[other]
            if not newer.ids:
                continue
            scores = similarity(older, newer)
            # Under the same heading the closest section is the counterpart, however far; else the closest chunk
            # above the threshold.
            same = (older.headings[:, None] == newer.headings[None, :]) & (older.headings[:, None] != 0)
            by_heading = np.where(same, scores, -np.inf).argmax(axis=1)
            # The text under the title alone (no heading of its own, in both): the closest of it, if close at all.
            opening = (older.headings[:, None] == 0) & (newer.headings[None, :] == 0)
            by_opening = np.where(opening, scores, -np.inf).argmax(axis=1)
            nearest = scores.argmax(axis=1)
            for row, chunk_id in enumerate(older.ids):
                if chunk_id in counterpart:
                    continue
                if same[row, by_heading[row]]:
                    counterpart[chunk_id] = newer.ids[int(by_heading[row])]
                elif scores[row, nearest[row]] >= threshold:
                    counterpart[chunk_id] = newer.ids[int(nearest[row])]
                elif opening[row, by_opening[row]] and scores[row, by_opening[row]] >= opening_threshold:
                    counterpart[chunk_id] = newer.ids[int(by_opening[row])]
        for chunk_id in older.ids:
            if chunk_id in counterpart:
                superseded[chunk_id] = counterpart[chunk_id]
            else:
                retired.append(chunk_id)
    # A counterpart in a middle member may itself be superseded: point at the newest text of the passage.
    for chunk_id, target in superseded.items():
        seen = {chunk_id}
        while target in superseded and target not in seen:
            seen.add(target)
            target = superseded[target]
        superseded[chunk_id] = target
    # Lineage's members are str at run time (TextChoices); without django-stubs mypy reads their (value, label) tuples.
    wanted: dict[int, tuple[str, int | None]] = {pk: (Chunk.Lineage.CURRENT, None) for pk in current}  # type: ignore[misc]
    wanted.update({pk: (Chunk.Lineage.RETIRED, None) for pk in retired})  # type: ignore[misc]
    wanted.update({pk: (Chunk.Lineage.SUPERSEDED, target) for pk, target in superseded.items()})  # type: ignore[misc]
    _lineage_write(wanted)


def _lineage_write(wanted: dict[int, tuple[str, int | None]]) -> None:
    """Chunks' lineage as wanted, in one read and one UPDATE of the rows that change: a family's chunks are
    rewritten at each new version (they point at the newest), and an ORM bulk_update's CASE per row cost more
    than the write itself."""
    if not wanted:
        return
    table = Chunk._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, lineage, superseded_by_id FROM {table} WHERE id = ANY(%s)", [list(wanted)])
        changed = [pk for pk, lineage, target in cursor.fetchall() if wanted[pk] != (lineage, target)]
        if changed:
            changed.sort()  # one lock order for concurrent writers
            cursor.execute(
                f"UPDATE {table} AS c SET lineage = v.lineage, superseded_by_id = v.target "
                "FROM unnest(%s::bigint[], %s::varchar[], %s::bigint[]) AS v(id, lineage, target) WHERE c.id = v.id",
                [changed, [wanted[pk][0] for pk in changed], [wanted[pk][1] for pk in changed]])


def chunks_current(document_ids: Iterable[int]) -> None:
    """The chunks of documents that are nobody's older version any more."""
    Chunk.objects.filter(document_id__in=list(document_ids)).exclude(lineage=Chunk.Lineage.CURRENT, superseded_by=None).update(
        lineage=Chunk.Lineage.CURRENT, superseded_by=None)
