"""What each older passage of a family became: superseded by its counterpart in a newer member, or retired."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from django.conf import settings
from django.db.models import Q

from rag.lineage.evidence import VectorCache, similarity
from rag.models import Chunk


def chunks_supersede(order: list[int], latest: set[int], copies: dict[int, int], related: dict[int, set[int]],
                     vectors: VectorCache) -> None:
    """Each chunk of an older member: superseded by its counterpart in the newest related member that has one
    (same heading once labels are stripped, else the nearest chunk above the threshold), or retired."""
    threshold = settings.FAMILY_COUNTERPART_THRESHOLD
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
            nearest = scores.argmax(axis=1)
            for row, chunk_id in enumerate(older.ids):
                if chunk_id in counterpart:
                    continue
                if same[row, by_heading[row]]:
                    counterpart[chunk_id] = newer.ids[int(by_heading[row])]
                elif scores[row, nearest[row]] >= threshold:
                    counterpart[chunk_id] = newer.ids[int(nearest[row])]
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
    chunks_current(chunk_ids=current, by_chunk=True)
    if retired:
        Chunk.objects.filter(pk__in=retired).exclude(lineage=Chunk.Lineage.RETIRED, superseded_by=None).update(
            lineage=Chunk.Lineage.RETIRED, superseded_by=None)
    stored = dict(((pk, (lineage, target)) for pk, lineage, target
                   in Chunk.objects.filter(pk__in=superseded).values_list("pk", "lineage", "superseded_by_id")))
    changed = [Chunk(pk=pk, lineage=Chunk.Lineage.SUPERSEDED, superseded_by_id=target)
               for pk, target in superseded.items() if stored.get(pk) != (Chunk.Lineage.SUPERSEDED, target)]
    Chunk.objects.bulk_update(changed, ["lineage", "superseded_by"], batch_size=1000)  # only what changed


def chunks_current(document_ids: Iterable[int] = (), *, chunk_ids: Iterable[int] = (), by_chunk: bool = False) -> None:
    """Chunks that are nobody's older version any more."""
    query = Q(pk__in=list(chunk_ids)) if by_chunk else Q(document_id__in=list(document_ids))
    Chunk.objects.filter(query).exclude(lineage=Chunk.Lineage.CURRENT, superseded_by=None).update(
        lineage=Chunk.Lineage.CURRENT, superseded_by=None)
