"""Version lineage: version labels, document families, superseded passages and version-aware query analysis."""
