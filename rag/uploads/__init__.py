"""Files becoming indexing jobs: paths on this machine and browser uploads (staging.py), within the limits of
what an upload and a workspace may store (limits.py; settings.FILE_UPLOAD_HANDLERS names its handler)."""

from rag.uploads.limits import size_text, workspace_storage, workspace_storage_used
from rag.uploads.staging import (
    IncomingFile, folder_walk, indexing_job_create, job_retry_create, safe_upload_path, upload_job_create,
)

__all__ = ["IncomingFile", "folder_walk", "indexing_job_create", "job_retry_create", "safe_upload_path",
           "size_text", "upload_job_create", "workspace_storage", "workspace_storage_used"]
