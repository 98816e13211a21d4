"""STORAGES["default"] from STORAGE_URL (config/settings.py): where Docent keeps the files it hands to workers."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured


def file_storage_config(url: str, *, endpoint: str = "", region: str = "", addressing_style: str = "auto") -> dict:
    """STORAGES["default"] for STORAGE_URL: local DATA_DIR/uploads, or S3Storage for s3://bucket/prefix."""
    if not url:
        return {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    scheme, _, rest = url.partition("://")
    bucket, _, prefix = rest.partition("/")
    if scheme != "s3" or not bucket:
        raise ImproperlyConfigured(f"STORAGE_URL must look like s3://bucket/prefix, not {url!r}")
    from botocore.config import Config  # import here: only an S3 set-up pays for importing botocore

    options = {
        # Names carry a uuid: overwriting spares the HEAD request that would look for a free one.
        "bucket_name": bucket, "location": prefix.strip("/"), "file_overwrite": True, "querystring_auth": False,
        "endpoint_url": endpoint or None, "region_name": region or None, "addressing_style": addressing_style,
        # Fail fast when the store is away: the indexing task's own retries (STORAGE_RETRY_SECONDS) outwait an
        # outage, not one request.
        "client_config": Config(connect_timeout=5, read_timeout=30, retries={"max_attempts": 2, "mode": "standard"},
                                s3={"addressing_style": addressing_style}),
    }
    return {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options}
