"""pytest plugin loaded before Django (`-p config.testing`): test speed knobs only.

Tests get their own DATA_DIR so that their embedded services, broker queues and
files never mix with a development instance's.
"""

import os
from pathlib import Path

os.environ.setdefault("DATA_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test"))
os.environ.setdefault("EMBEDDING_ENCODER", "hashing")
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("DB_CONN_MAX_AGE", "0")  # live-server threads must not keep the test database busy
os.environ.setdefault("PASSWORD_HASHERS", "django.contrib.auth.hashers.MD5PasswordHasher")  # hashing cost is not under test
