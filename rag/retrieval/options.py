"""What a search is asked to do: `SearchFilters` (SQL, before ranking) and `SearchOptions`.

Defaults that a user may tune are settings (config/settings.py, "retrieval");
an option left at None takes the setting when the search runs, so a change of
setting needs no change of caller. `SearchParams` is the typed schema of the
same options as a caller writes them (the JSON API's query, the `search`
command's flags): pydantic validates them, naming the bad field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date, datetime, time
from typing import Annotated, Any, Literal, get_args

from django.conf import settings
from django.utils import timezone
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from rag.dates import DatePhraseError, DateRange, parse_date_phrase

# Each choice is named once, as a Literal that pydantic validates and mypy reads; the tuples are its values.
Mode = Literal["hybrid", "semantic", "lexical"]
MatchMode = Literal["any", "all"]
RecencyMode = Literal["auto", "on", "off"]
DocTypeMode = Literal["boost", "filter"]
MODES: tuple[str, ...] = get_args(Mode)
MATCH_MODES: tuple[str, ...] = get_args(MatchMode)
RECENCY_MODES: tuple[str, ...] = get_args(RecencyMode)
# What a chosen doc type does, as an options panel says it: rank it higher, or keep only it.
DOC_TYPE_MODES: dict[DocTypeMode, str] = {"boost": "Prefer this type", "filter": "Only this type"}
MAX_TOP_K = 100
MAX_CANDIDATE_POOL = 1000
MAX_VERSION_LABEL = 50  # Document.version_label's length


class SearchOptionError(ValueError):
    """A bad option; the message is shown to the person who gave it (API 400, CLI error)."""


def parse_datetime_bound(
    value: str | date | datetime | None, *, name: str, end_of_day: bool = False,
) -> datetime | None:
    """An ISO date or date-time as an aware datetime; a bare date means its local midnight.

    `end_of_day` makes a bare date mean its last instant instead: "as of 2025-03-15"
    includes what was written that day.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if timezone.is_aware(value) else timezone.make_aware(value)
    day_time = time.max if end_of_day else time.min
    if isinstance(value, date):
        return timezone.make_aware(datetime.combine(value, day_time))
    text = str(value).strip()
    try:
        if len(text) == 10:
            return timezone.make_aware(datetime.combine(date.fromisoformat(text), day_time))
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SearchOptionError(f"{name}: {value!r} is not an ISO date (YYYY-MM-DD) or date-time") from None
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed)


@dataclass(frozen=True)
class SearchFilters:
    """Hard filters on documents, applied in SQL before anything is ranked.

    Dates are the documents' own `doc_date`; a document with no date never
    passes a date filter. `date_to` is exclusive. Several given date bounds
    all apply (the narrowest range wins).
    """

    date_from: datetime | None = None
    date_to: datetime | None = None
    date_phrase: str = ""  # "last 7 days", "this month", "since 2024", ...
    created_after: datetime | None = None  # the document was written (doc_date) on or after this
    source_types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    tags_match: str = "any"
    entities: tuple[str, ...] = ()
    entities_match: str = "any"
    doc_types: tuple[str, ...] = ()
    include_archived: bool = False
    document_ids: tuple[int, ...] | None = None  # only these documents (a question about a version or a date)

    def phrase_range(self, *, now: datetime | None = None) -> DateRange | None:
        if not self.date_phrase:
            return None
        try:
            return parse_date_phrase(self.date_phrase, now=now)
        except DatePhraseError as exc:
            raise SearchOptionError(str(exc)) from None

    def date_bounds(self, *, now: datetime | None = None) -> DateRange:
        """All date conditions folded into one [start, end) range."""
        starts = [d for d in (self.date_from, self.created_after) if d]
        ends = [self.date_to] if self.date_to else []
        phrase = self.phrase_range(now=now)
        if phrase:
            starts += [phrase.start] if phrase.start else []
            ends += [phrase.end] if phrase.end else []
        return DateRange(max(starts) if starts else None, min(ends) if ends else None)

    def validate(self) -> None:
        for name in ("tags_match", "entities_match"):
            if getattr(self, name) not in MATCH_MODES:
                raise SearchOptionError(f"{name} must be one of {', '.join(MATCH_MODES)}")
        self.phrase_range()

    def describe(self, *, now: datetime | None = None) -> dict[str, Any]:
        """JSON-ready, with the phrase resolved, so that a caller can store what was applied."""
        data = asdict(self)
        for key in ("date_from", "date_to", "created_after"):
            data[key] = data[key].isoformat() if data[key] else None
        for key in ("source_types", "tags", "entities", "doc_types"):
            data[key] = list(data[key])
        if self.document_ids is not None:
            data["document_ids"] = list(self.document_ids)
        data["resolved_date_range"] = self.date_bounds(now=now).as_dict()
        return data


@dataclass(frozen=True)
class SearchOptions:
    """Everything `rag.retrieval.search` needs besides the query text."""

    workspace: Any  # a Workspace or its id; results never leave it
    top_k: int = 5
    candidate_pool: int | None = None  # rows taken from each of the semantic and lexical lists
    mode: str = "hybrid"
    filters: SearchFilters = field(default_factory=SearchFilters)
    respect_canonicals: bool = True
    include_variant_metadata: bool = False
    include_provenance: bool = False
    include_archived: bool = False  # same as filters.include_archived; either one lets archived documents in
    dedup: bool = True  # retrieval-time near-duplicate collapse
    dedup_threshold: float | None = None
    doc_type_boost: float | None = None  # 1.0 switches the boost off
    doc_type_override: tuple[str, ...] = ()  # the user's choice of types to boost, instead of the classifier's
    recency: str | None = None  # "auto": trend queries only; "on": every query; "off": never (None: SEARCH_RECENCY)
    recency_half_life_days: float | None = None
    recency_weight: float | None = None
    query_embedding: tuple[float, ...] | None = None  # already encoded by the caller
    version_aware: bool = True  # superseded passages give way to their newest counterpart (every tier)
    as_of_version: str = ""  # answer from the family members current at this version label
    as_of_date: datetime | None = None  # ... or at this date
    analyse_query: bool = True  # read version, date and change mentions out of the query text
    identifiers: bool | None = None  # whole-token identifier list and heading boost (None: SEARCH_IDENTIFIERS)
    expansion: bool | None = None  # the workspace's domain dictionary on the lexical side (None: SEARCH_EXPANSION)
    rerank: bool | None = None  # sentence-level rerank of the head (None: SEARCH_RERANK)

    @property
    def workspace_id(self) -> int:
        return int(getattr(self.workspace, "pk", self.workspace))

    def resolved(self) -> SearchOptions:
        """A copy with every None replaced by its setting, validated."""
        resolved = replace(
            self,
            filters=replace(self.filters, include_archived=self.include_archived or self.filters.include_archived),
            include_archived=self.include_archived or self.filters.include_archived,
            candidate_pool=self.candidate_pool or settings.SEARCH_CANDIDATE_POOL,
            dedup_threshold=settings.SEARCH_DEDUP_THRESHOLD if self.dedup_threshold is None else self.dedup_threshold,
            doc_type_boost=settings.DOC_TYPE_BOOST if self.doc_type_boost is None else self.doc_type_boost,
            recency_half_life_days=self.recency_half_life_days or settings.RECENCY_HALF_LIFE_DAYS,
            recency_weight=settings.RECENCY_WEIGHT if self.recency_weight is None else self.recency_weight,
            recency=self.recency or settings.SEARCH_RECENCY,
            identifiers=settings.SEARCH_IDENTIFIERS if self.identifiers is None else self.identifiers,
            expansion=settings.SEARCH_EXPANSION if self.expansion is None else self.expansion,
            rerank=settings.SEARCH_RERANK if self.rerank is None else self.rerank,
        )
        resolved.validate()
        return resolved

    def validate(self) -> None:
        if self.workspace is None:
            raise SearchOptionError("a workspace is required")
        if not 1 <= self.top_k <= MAX_TOP_K:
            raise SearchOptionError(f"top_k must be between 1 and {MAX_TOP_K}")
        if self.candidate_pool is not None and not 1 <= self.candidate_pool <= MAX_CANDIDATE_POOL:
            raise SearchOptionError(f"candidate_pool must be between 1 and {MAX_CANDIDATE_POOL}")
        if self.mode not in MODES:
            raise SearchOptionError(f"mode must be one of {', '.join(MODES)}")
        if self.recency is not None and self.recency not in RECENCY_MODES:
            raise SearchOptionError(f"recency must be one of {', '.join(RECENCY_MODES)}")
        if self.dedup_threshold is not None and not 0 < self.dedup_threshold <= 1:
            raise SearchOptionError("dedup_threshold must be in (0, 1]")
        if self.doc_type_boost is not None and not 0 < self.doc_type_boost <= 10:
            raise SearchOptionError("doc_type_boost must be in (0, 10]")
        if self.recency_half_life_days is not None and self.recency_half_life_days <= 0:
            raise SearchOptionError("recency_half_life_days must be positive")
        if self.recency_weight is not None and not 0 <= self.recency_weight <= 1:
            raise SearchOptionError("recency_weight must be in [0, 1]")
        self.filters.validate()

    def describe(self) -> dict[str, Any]:
        data = {
            key: value
            for key, value in asdict(self).items()
            if key not in ("workspace", "filters", "query_embedding")
        }
        data["as_of_date"] = self.as_of_date.isoformat() if self.as_of_date else None
        data["doc_type_override"] = list(self.doc_type_override)
        data["workspace_id"] = self.workspace_id
        return data


# --- the options as a caller writes them (the JSON API's query parameters, the `search` command) ---------


def _words(value: Any) -> list[str]:
    """Repeated parameters and comma-separated values both work: ?tag=a&tag=b or ?tag=a,b."""
    values = [value] if isinstance(value, str) else list(value or [])
    return [part.strip() for item in values for part in str(item).split(",") if part.strip()]


Words = Annotated[list[str], BeforeValidator(_words)]
DateBound = date | datetime | None  # an ISO date (the whole day where it ends a range) or date-time


class SearchParams(BaseModel):
    """The search options by their public names; `search_options` turns them into SearchOptions.

    Unknown names are refused: a misspelt option must not be silently ignored.
    """

    model_config = ConfigDict(extra="forbid")

    top_k: int = Field(5, ge=1, le=MAX_TOP_K, description="results to return")
    mode: Mode = "hybrid"
    pool: int | None = Field(None, ge=1, le=MAX_CANDIDATE_POOL, description="candidates per list before fusion")
    date_from: DateBound = Field(None, description="doc_date on or after")
    date_to: DateBound = Field(None, description="doc_date before")
    when: str = Field("", description='a date phrase: "last 7 days", "this month", "since 2024"')
    created_after: DateBound = Field(None, description="documents dated (doc_date) on or after")
    source_type: Words = []
    tag: Words = []
    tags_match: MatchMode = "any"
    entity: Words = []
    entities_match: MatchMode = "any"
    only_doc_type: Words = Field([], description="only documents of these types")
    doc_type: Words = Field([], description="boost these types instead of the guessed one (doc_type_mode=boost), "
                                            "or keep only them (filter)")
    doc_type_mode: DocTypeMode = "boost"
    include_archived: bool = False
    include_variants: bool = Field(False, description="show older versions beside their canonical record")
    dedup: bool = Field(True, description="collapse near-duplicates from different documents")
    dedup_threshold: float | None = Field(None, gt=0, le=1)
    variant_metadata: bool = False
    provenance: bool = False
    recency: RecencyMode | None = Field(None, description="recency decay (default: SEARCH_RECENCY)")
    doc_type_boost: float | None = Field(None, gt=0, le=10)
    version_aware: bool = Field(True, description="superseded passages give way to their newest counterpart")
    as_of_version: str = Field("", max_length=MAX_VERSION_LABEL, description="answer as of this version label")
    as_of_date: DateBound = Field(None, description="answer as of this date (the whole day counts)")

    @field_validator("when")
    @classmethod
    def _known_phrase(cls, value: str) -> str:
        value = value.strip()
        if value:
            try:
                parse_date_phrase(value)
            except DatePhraseError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("as_of_version")
    @classmethod
    def _label(cls, value: str) -> str:
        """A label as written ("3.0", "v2.1"); whether the workspace has it is the search's business."""
        value = value.strip()
        if not value.isprintable():
            raise ValueError("must be a version label such as 3.0")
        return value

    def search_options(self, *, workspace: Any) -> SearchOptions:
        only_chosen = self.doc_type_mode == "filter"
        filters = SearchFilters(
            date_from=parse_datetime_bound(self.date_from, name="date_from"),
            date_to=parse_datetime_bound(self.date_to, name="date_to"),
            date_phrase=self.when,
            created_after=parse_datetime_bound(self.created_after, name="created_after"),
            source_types=tuple(self.source_type),
            tags=tuple(self.tag),
            tags_match=self.tags_match,
            entities=tuple(self.entity),
            entities_match=self.entities_match,
            doc_types=tuple(self.only_doc_type) + (tuple(self.doc_type) if only_chosen else ()),
            include_archived=self.include_archived,
        )
        return SearchOptions(
            workspace=workspace, top_k=self.top_k, candidate_pool=self.pool, mode=self.mode, filters=filters,
            respect_canonicals=not self.include_variants, include_variant_metadata=self.variant_metadata,
            include_provenance=self.provenance, dedup=self.dedup, dedup_threshold=self.dedup_threshold,
            doc_type_boost=self.doc_type_boost, doc_type_override=() if only_chosen else tuple(self.doc_type),
            recency=self.recency, version_aware=self.version_aware, as_of_version=self.as_of_version,
            as_of_date=parse_datetime_bound(self.as_of_date, name="as_of_date", end_of_day=True),
        )


def validation_message(errors: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """The first bad field of pydantic's `errors()` and "field: what is wrong", for a 400 or a command error.

    `loc` starts with the field's name (what follows names a union member or a list item, not the field).
    """
    first = errors[0]
    loc = first.get("loc") or ("request",)
    field_name = str(loc[0])
    message = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
    if first.get("type") == "extra_forbidden":
        message = "unknown parameter"
    return field_name, f"{field_name}: {message}"
