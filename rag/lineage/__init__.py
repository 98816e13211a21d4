"""Version lineage: version labels, document families, superseded passages and version-aware query analysis.

The package exports what other apps (chat) may call: `version_key`, the order of version labels.
"""

from rag.lineage.labels import version_key

__all__ = ["version_key"]
