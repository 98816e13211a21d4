"""Version lineage: document families, the evidence that two documents are versions or copies, superseded passages
and template siblings.

The face everyone outside the package uses, with plain imports. Version order and labels, which families are built
on, live below in rag.releases.
"""

from __future__ import annotations

from rag.lineage.evidence import different_releases_of_a_series
from rag.lineage.families import (
    LineageEvidence, document_lineage_evidence, document_lineage_update, documents_leave_families,
    documents_lineage_evidence, documents_lineage_update, family_refresh, workspace_lineage_rebuild,
)

__all__ = ["LineageEvidence", "different_releases_of_a_series", "document_lineage_evidence", "document_lineage_update",
           "documents_leave_families", "documents_lineage_evidence", "documents_lineage_update", "family_refresh", "workspace_lineage_rebuild"]
