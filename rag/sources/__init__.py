"""Folder and Git sources that a workspace keeps in sync: each sync is an indexing job (rag.uploads, rag.jobs)."""
