"""Folder and Git sources that a workspace keeps in sync: each sync is an indexing job (rag.uploads, rag.jobs).

The face the admin and the commands use: the services (add, remove, sync), the reads, how a Git location is
shown, and the watcher of folders. The Sources page lives here too (views.py, forms.py), reached by rag/urls.py's
include("rag.sources.urls").
"""

from rag.sources.git import location_shown
from rag.sources.selectors import changes_text, source_get, source_list, source_row
from rag.sources.services import (
    SourceError, source_add, source_check, source_remove, source_sync, source_sync_request,
)
from rag.sources.watch import sources_watch, watched_folders

__all__ = ["SourceError", "changes_text", "location_shown", "source_add", "source_check", "source_get", "source_list",
           "source_remove", "source_row", "source_sync", "source_sync_request", "sources_watch", "watched_folders"]
