"""What an older passage became: its counterpart in the newer version, or retired."""

from __future__ import annotations

import numpy as np
import pytest

from rag.lineage.evidence import Vectors
from rag.lineage.supersession import chunks_supersede
from rag.models import Chunk
from tests.rag.factories import ChunkFactory, DocumentFactory

pytestmark = pytest.mark.django_db


def _unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def _document(workspace, rows: list[tuple[int, np.ndarray]]):
    """A document whose chunks have these heading ids (0: the text under the title alone) and vectors."""
    document = DocumentFactory(workspace=workspace, chunk_count=len(rows))
    chunks = [ChunkFactory(document=document, chunk_index=index, total_chunks=len(rows)) for index in range(len(rows))]
    return document.pk, Vectors(ids=[c.pk for c in chunks], matrix=np.stack([vector for _h, vector in rows]),
                                headings=np.array([heading for heading, _v in rows], dtype=np.int64),
                                hashes=frozenset(c.text_hash for c in chunks))


def test_a_sentence_moved_between_opening_chunks_is_superseded_not_retired(workspace):
    """Django's tutorial: 4.2's second opening chunk ("supports Python 3.8 and later") has its sentence in 5.1's
    first ("... 3.10 and later") at cosine 0.70, below the counterpart threshold: it was retired, and answered
    current questions about the supported Pythons."""
    old, old_vectors = _document(workspace, [(0, _unit(1, 0, 0, 0)), (0, _unit(0, 1, 0, 0)), (7, _unit(0, 0, 0, 1))])
    new, new_vectors = _document(workspace, [(0, _unit(0.6, 0.7, 0.4, 0)), (7, _unit(0, 0, 0.2, 1))])
    closest = float(old_vectors.matrix[1] @ new_vectors.matrix[0])
    assert 0.65 <= closest < 0.80
    chunks_supersede([old, new], {new}, {}, {old: {new}, new: {old}}, {old: old_vectors, new: new_vectors})
    lineage = dict(Chunk.objects.filter(pk__in=old_vectors.ids).values_list("pk", "lineage"))
    assert lineage[old_vectors.ids[1]] == Chunk.Lineage.SUPERSEDED
    # A section of its own that is far from everything stays retired: the opening rule reaches no further.
    far, far_vectors = _document(workspace, [(0, _unit(1, 0, 0, 0)), (9, _unit(0, 1, 0, 0))])
    chunks_supersede([far, new], {new}, {}, {far: {new}, new: {far}}, {far: far_vectors, new: new_vectors})
    assert Chunk.objects.get(pk=far_vectors.ids[1]).lineage == Chunk.Lineage.RETIRED
