"""What a search returns: `SearchResult`s in a `SearchResultSet` that also says how they were found."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.urls import reverse

if TYPE_CHECKING:
    from rag.releases import VersionPlan

# canonical_filtering values
APPLIED = "applied"  # one result per canonical record, newest version shown
UNLICENSED = "unlicensed"  # asked for, but the workspace's license lacks the feature: searched as if off
OFF = "off"  # not asked for (respect_canonicals=False)


def chunk_url_path(*, document_id: int, chunk_id: int) -> str:
    """The document page scrolled to a chunk: where a result or a citation links."""
    return f"{reverse('document-detail', args=[document_id])}?chunk={chunk_id}#chunk-{chunk_id}"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


@dataclass
class SearchResult:
    chunk_id: int
    document_id: int
    path: str
    title: str
    doc_date: datetime | None
    doc_type: str
    heading_path: str
    text: str
    score: float
    similarity: float | None = None  # cosine similarity to the query (None in lexical mode)
    chunk_index: int = 0
    page: int | None = None  # the page or slide the chunk starts on, where its format has pages
    source_type: str = ""
    canonical_record_id: int | None = None
    variant_count: int = 0
    has_contradictions: bool = False
    is_variant: bool = False  # the chunk shown is an older version within its record
    ranks: dict[str, int] = field(default_factory=dict)  # "semantic"/"lexical" -> rank in that list
    collapsed_chunk_ids: list[int] = field(default_factory=list)  # candidates this result stands for
    variants: list[dict] | None = None  # include_variant_metadata
    provenance: dict | None = None  # include_provenance
    family_id: int | None = None
    version_label: str = ""  # the release it speaks for: its own label, else the one inferred for it
    is_latest_version: bool = True
    lineage: str = ""  # "" current, "superseded" (shown only when asked for an older version), "retired"
    superseded_by: int | None = None  # the newer counterpart's chunk id
    superseded_by_label: str = ""  # its document's version label, for "2.1 · superseded by 3.0"
    replaced_chunk_id: int | None = None  # the older chunk whose slot this newer one took
    subject: str = ""  # whom its document's template was filled in for ("Acme Corp"), where it has siblings

    def url_path(self) -> str:
        return chunk_url_path(document_id=self.document_id, chunk_id=self.chunk_id)

    def to_dict(self, *, base_url: str = "") -> dict[str, Any]:
        """`base_url` ("https://docs.example.com") makes `url` absolute; without it `url` is a path."""
        data: dict[str, Any] = {
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "path": self.path,
            "url": base_url + self.url_path(),
            "title": self.title,
            "doc_date": _iso(self.doc_date),
            "doc_type": self.doc_type,
            "heading_path": self.heading_path,
            "page": self.page,
            "score": round(self.score, 6),
            "similarity": round(self.similarity, 6) if self.similarity is not None else None,
            "canonical_record_id": self.canonical_record_id,
            "variant_count": self.variant_count,
            "has_contradictions": self.has_contradictions,
            "is_variant": self.is_variant,
            "chunk_index": self.chunk_index,
            "source_type": self.source_type,
            "ranks": self.ranks,
            "collapsed_chunk_ids": self.collapsed_chunk_ids,
            "family_id": self.family_id,
            "version_label": self.version_label,
            "is_latest_version": self.is_latest_version,
            "lineage": self.lineage,
            "superseded_by": self.superseded_by,
            "superseded_by_label": self.superseded_by_label,
            "replaced_chunk_id": self.replaced_chunk_id,
            "subject": self.subject,
            "text": self.text,
        }
        if self.variants is not None:
            data["variants"] = [_jsonable(v) for v in self.variants]
        if self.provenance is not None:
            data["provenance"] = _jsonable(self.provenance)
        return data


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


@dataclass(frozen=True)
class ChangeSide:
    """The results that answer for one release of a change question: the answer states each side."""

    label: str
    chunk_ids: tuple[int, ...]

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "chunk_ids": list(self.chunk_ids)}


class SearchResultSet(list):
    """The results, best first, plus what was applied, so that a caller can show and store it.

    `canonical_filtering` is "applied", "unlicensed" or "off"; "unlicensed"
    means the caller asked for canonical-aware results and the workspace's
    license does not include them, so the UI can say why duplicates show.
    """

    def __init__(
        self,
        results: list[SearchResult],
        *,
        query: str,
        canonical_filtering: str,
        options: dict[str, Any],
        filters: dict[str, Any],
        stats: dict[str, Any],
    ) -> None:
        super().__init__(results)
        self.query = query
        self.canonical_filtering = canonical_filtering
        self.options = options
        self.filters = filters
        self.stats = stats
        # What the question asked of time, and for a change question which results answer for which release, oldest
        # first: typed for the answer (chat.answering); `stats` holds them as printed ("versions", "change_sides").
        self.plan: VersionPlan | None = None
        self.change_sides: tuple[ChangeSide, ...] = ()

    def describe(self) -> dict[str, Any]:
        """Everything but the results: what to persist beside an answer."""
        return {
            "query": self.query,
            "canonical_filtering": self.canonical_filtering,
            "options": self.options,
            "filters": self.filters,
            "stats": self.stats,
        }

    def to_dict(self, *, base_url: str = "") -> dict[str, Any]:
        return {**self.describe(), "count": len(self),
                "results": [result.to_dict(base_url=base_url) for result in self]}


def interleaved(sides: list[SearchResultSet], *, top_k: int) -> SearchResultSet:
    """New side, old side, new, old...: a change question's answer needs both, each in the first places."""
    merged: list[SearchResult] = []
    seen: set[int] = set()
    for rank in range(max(len(side) for side in sides)):
        for side in sides:
            if rank < len(side) and side[rank].chunk_id not in seen:
                seen.add(side[rank].chunk_id)
                merged.append(side[rank])
    first = sides[0]
    stats = dict(first.stats)
    stats["sides"] = [len(side) for side in sides]
    return SearchResultSet(merged[:top_k], query=first.query, canonical_filtering=first.canonical_filtering,
                           options=first.options, filters=first.filters, stats=stats)
