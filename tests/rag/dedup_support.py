"""Shared by the dedup tests: realistic versioned sections, builders, the invariants, a record partition."""

from __future__ import annotations

import math
from datetime import datetime, UTC
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db.models import Count

from rag.releases import version_key
from rag.models import CanonicalRecord, Chunk, ChunkVariant, Document, Workspace
from rag.dedup.merge import document_merge
from rag.jobs.run import job_item_run
from rag.uploads import indexing_job_create
from tests.factories import UserFactory, WorkspaceFactory
from tests.rag.factories import ChunkFactory, DocumentFactory

# Sections of the Lumen Gateway troubleshooting guide as they read in 2.0, 2.1 and 3.0 (demo corpus):
# small facts change between versions, the wording mostly does not.
RATE_LIMITED = {
    "2.0": "LG1201 rate_limited (HTTP 429). The API key exceeded its rate limit. The default is 600 requests per "
           "minute per API key. The Retry-After header tells the client how many seconds to wait. Raise the limit "
           "for one consumer with its rate_limit field, or for everyone with ratelimit_default.",
    "2.1": "LG1201 rate_limited (HTTP 429). The API key exceeded its rate limit. The default is 1000 requests per "
           "minute per API key. The Retry-After header tells the client how many seconds to wait. Raise the limit "
           "for one consumer with its rate_limit field, or for everyone with ratelimit_default.",
    "3.0": "LG1201 rate_limited (HTTP 429). The API key exceeded its rate limit. The default is 1200 requests per "
           "minute per API key. The Retry-After header tells the client how many seconds to wait. Raise the limit "
           "for one consumer with its rate_limit field, or for everyone with ratelimit_default.",
}
TOKEN_EXPIRED = {
    "2.0": "LG1101 token_expired (HTTP 401). The Admin API access token is older than 24 hours. Request a new token "
           "from /api/v1/auth/token with the credentials of a dashboard user or a service account. Tokens cannot "
           "be extended; a client must log in again before the old token runs out.",
    "2.1": "LG1101 token_expired (HTTP 401). The Admin API access token is older than 24 hours. Request a new token "
           "from /api/v1/auth/token with the credentials of a dashboard user or a service account. Tokens cannot "
           "be extended; a client must log in again before the old token runs out.",
    "3.0": "LG1101 token_expired (HTTP 401). The Admin API access token is older than 12 hours. Request a new token "
           "from /api/v2/auth/token with the credentials of a dashboard user or a service account. Tokens cannot "
           "be extended; a client must log in again before the old token runs out.",
}
PAYLOAD_TOO_LARGE = {
    "2.0": "LG1301 payload_too_large (HTTP 413). The request body is bigger than max_body_size, which is 10 MB by "
           "default. Raise max_body_size if the upstream really needs larger uploads, and keep it below the "
           "memory available to each proxy worker.",
    "2.1": "LG1301 payload_too_large (HTTP 413). The request body is bigger than max_body_size, which is 25 MB by "
           "default. Raise max_body_size if the upstream really needs larger uploads, and keep it below the "
           "memory available to each proxy worker.",
    "3.0": "LG1301 payload_too_large (HTTP 413). The request body is bigger than max_body_size, which is 50 MB by "
           "default. Raise max_body_size if the upstream really needs larger uploads, and keep it below the "
           "memory available to each proxy worker.",
}
# Different in each version: never merged with anything.
UNIQUE = {
    "2.0": "Before opening a support ticket, collect the output of lumenctl version, the request_id of a failing "
           "request and the matching log lines. The 2.0 logs are plain text, so grep the proxy log for the "
           "request_id to see the whole request, from the matched route to the upstream answer.",
    "2.1": "New in 2.1: LG1103 insufficient_scope means that the token belongs to a scoped service account which "
           "lacks the scope for this endpoint. Add the missing scope under Settings, Service Accounts, or call the "
           "endpoint with a token of an account that already has it; personal logins are never scoped.",
    "3.0": "New in 3.0: LG1102 refresh_token_invalid. The refresh token has expired, was already used once, or "
           "belongs to a revoked token family. Reusing a refresh token revokes its whole family as a precaution, "
           "so two scripts that share one refresh token log each other out: give each client its own account.",
}
SECTIONS = [RATE_LIMITED, TOKEN_EXPIRED, PAYLOAD_TOO_LARGE, UNIQUE]
RELEASE_DATES = {
    "2.0": datetime(2024, 6, 3, tzinfo=UTC),
    "2.1": datetime(2025, 3, 5, tzinfo=UTC),
    "3.0": datetime(2025, 10, 6, tzinfo=UTC),
}


def troubleshooting_document(workspace: Workspace, version: str, *, path: str | None = None,
                             doc_date: datetime | None | str = "release", indexed_at: datetime | None = None,
                             sections=SECTIONS) -> Document:
    """One version of the troubleshooting guide, its sections as chunks (embedded by the hashing encoder)."""
    document = DocumentFactory(
        workspace=workspace,
        path=path or f"/corpus/troubleshooting-{version}.md",
        title=f"Lumen Gateway {version} Troubleshooting Guide",
        doc_date=RELEASE_DATES[version] if doc_date == "release" else doc_date,
        indexed_at=indexed_at or datetime(2026, 1, 1, tzinfo=UTC),
        chunk_count=len(sections),
    )
    for index, section in enumerate(sections):
        ChunkFactory(document=document, text=section[version], chunk_index=index, total_chunks=len(sections),
                     heading_path=f"{document.title} > Error codes")
    return document


def one_release(*documents: Document, release: str = "3.0") -> None:
    """Label documents as one release's: two teams' guides current at the same time, not versions of each other."""
    Document.objects.filter(pk__in=[d.pk for d in documents]).update(version_label=release,
                                                                     version_key=version_key(release))


def section_chunk(document: Document, section: dict) -> Chunk:
    return document.chunks.get(text=section[document.title.split()[2]])


# --- vectors with a chosen cosine, for graph shapes that text cannot pin down -----------------


def basis(index: int, dims: int = 384) -> list[float]:
    vector = [0.0] * dims
    vector[index] = 1.0
    return vector


def blend(base: list[float], other: list[float], cosine: float) -> list[float]:
    """A unit vector at exactly `cosine` to `base` (both unit and orthogonal)."""
    sine = math.sqrt(1 - cosine * cosine)
    return [cosine * b + sine * o for b, o in zip(base, other)]


def unit(components: dict[int, float], dims: int = 384) -> list[float]:
    """A unit vector from a few non-zero components."""
    norm = math.sqrt(sum(value * value for value in components.values()))
    vector = [0.0] * dims
    for index, value in components.items():
        vector[index] = value / norm
    return vector


def vector_chunk(workspace: Workspace, vector: list[float], *, text: str, doc_date: datetime | None = None,
                 path: str | None = None, release: str = "") -> Chunk:
    """A one-chunk document whose embedding is given, not computed; `release` labels it (documents of one
    release are never versions of one another: they are current together)."""
    kwargs = {"path": path} if path else {}
    document = DocumentFactory(workspace=workspace, doc_date=doc_date, chunk_count=1,
                               indexed_at=datetime(2026, 1, 1, tzinfo=UTC), version_label=release,
                               version_key=version_key(release) or "" if release else "", **kwargs)
    return ChunkFactory(document=document, text=text, embedding=vector)


# --- what must always hold --------------------------------------------------------------------


def assert_invariants(workspace: Workspace) -> None:
    records = CanonicalRecord.objects.filter(workspace=workspace)
    canonicals = list(records.values_list("canonical_chunk_id", flat=True))
    assert None not in canonicals, "every record has a canonical chunk"
    assert len(canonicals) == len(set(canonicals)), "a chunk is the canonical of at most one record"
    variants = list(ChunkVariant.objects.filter(record__workspace=workspace).values_list("chunk_id", flat=True))
    assert len(variants) == len(set(variants)), "a chunk is a variant of at most one record"
    assert not set(canonicals) & set(variants), "no chunk is both a canonical and a variant"
    for record in records.annotate(variant_total=Count("variants")):
        assert record.merge_count == record.variant_total >= 1, f"{record}: merge_count equals its variants"
    members = set(canonicals) | set(variants)
    assert not Chunk.objects.filter(pk__in=members, document__archived=True).exists(), "no archived chunk is merged"
    assert not ChunkVariant.objects.filter(record__workspace=workspace).exclude(chunk__workspace=workspace).exists()


def partition(workspace: Workspace) -> set[tuple[str, frozenset]]:
    """Each record as (canonical text hash, members by (path, chunk index)): comparable across workspaces."""
    groups = set()
    records = CanonicalRecord.objects.filter(workspace=workspace).select_related("canonical_chunk__document")
    variants: dict[int, set] = {}
    for record_id, path, index in ChunkVariant.objects.filter(record__workspace=workspace).values_list(
            "record_id", "chunk__document__path", "chunk__chunk_index"):
        variants.setdefault(record_id, set()).add((path, index))
    for record in records:
        canonical = record.canonical_chunk
        members = variants.get(record.pk, set()) | {(canonical.document.path, canonical.chunk_index)}
        groups.add((canonical.text_hash, frozenset(members)))
    return groups


@pytest.fixture(name="workspace")
def members_free_workspace(db: None) -> Workspace:
    """No members: the shared fixture's user costs a password hash (about a second) per test."""
    return WorkspaceFactory()


def user_unhashed() -> User:
    return UserFactory(password=None)  # an unusable password: no hashing


def merge_each(*documents: Document) -> None:
    for document in documents:
        document_merge(document_id=document.pk)


RELEASE = {"2.0": "2024-06-03", "2.1": "2025-03-05", "3.0": "2025-10-06"}


def ingest_folder(workspace: Workspace, folder: Path) -> None:
    job = indexing_job_create(workspace=workspace, paths=[folder], enqueue=False)
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
