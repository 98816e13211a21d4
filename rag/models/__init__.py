"""Workspaces and everything indexed in them, one module per area; import models from here."""

from rag.models.workspaces import (
    Workspace,
    DocType,
    QueryExpansion,
    ApiToken,
)
from rag.models.documents import (
    DocumentFamily,
    DocumentQuerySet,
    Document,
    DocumentRelation,
    DocumentSibling,
    Chunk,
    EmbeddingCache,
    CanonicalRecord,
    ChunkVariant,
    Contradiction,
    EMBEDDING_DIM,
    UPLOAD_PREFIX,
    shown_path,
    shown_path_sql,
)
from rag.models.releases import Release
from rag.models.jobs import (
    IndexingJob,
    IndexingJobItem,
    Source,
    SourceFile,
)

__all__ = [
    "Workspace",
    "DocType",
    "QueryExpansion",
    "ApiToken",
    "DocumentFamily",
    "DocumentQuerySet",
    "Document",
    "DocumentRelation",
    "DocumentSibling",
    "Chunk",
    "EmbeddingCache",
    "CanonicalRecord",
    "ChunkVariant",
    "Contradiction",
    "EMBEDDING_DIM",
    "UPLOAD_PREFIX",
    "shown_path",
    "shown_path_sql",
    "IndexingJob",
    "IndexingJobItem",
    "Source",
    "SourceFile",
    "Release",
]
