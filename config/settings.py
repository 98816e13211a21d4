"""The one settings module. Every difference between installs is an env var, declared in config/variables.py and
config/tuning.py (docs/configuration.md is generated from them).

Importing it creates no file and never exits: a bad value stays at its default and is reported by name by
`manage.py check` (config/checks.py) and by config.configuration.first_start, the step every serving process takes
first (DATA_DIR and this machine's secret key are made there).
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import environ

from config.configuration import (
    STATIC_FOLDER,
    configuration_read,
    data_dir,
    instance_serves_network,
    kept_secret_key,
    secret_key_missing,
)
from config.embedded import embedded_database_url, embedded_redis_url, redis_database_url
from config.file_storage import file_storage_config
from config.logging import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent

_config, _problems = configuration_read()
# Every variable declared as a setting of its own name is one, as read; the others are derived below.
globals().update({name: getattr(_config, name) for name, field in type(_config).model_fields.items()
                  if (field.json_schema_extra or {}).get("setting", True)})

DATA_DIR = data_dir(_config)

# --- hosts and secrets ----------------------------------------------------------
# Serving any host but this machine's is production: a set SECRET_KEY, HTTPS by default, no development license
# key. config/web_server.py refuses a bind beyond loopback on an instance that does not serve the network.
SERVES_NETWORK = instance_serves_network(_config)
# This machine only (`make run`): generated once by first_start and kept, so sessions survive restarts.
SECRET_KEY = kept_secret_key(_config)
# Behind a TLS proxy (the default when serving the network): redirect to HTTPS, secure cookies, HSTS.
# `make run` on http://127.0.0.1 is plain HTTP, where those would lock the user out.
HTTPS = _config.DOCENT_HTTPS if _config.DOCENT_HTTPS is not None else SERVES_NETWORK and not _config.DEBUG
# Where people open Docent: the `url` of `search --json` results (the API answers with the address it was asked on).
PUBLIC_URL = _config.DOCENT_PUBLIC_URL.rstrip("/") or f"http://{_config.DOCENT_HOST}:{_config.DOCENT_PORT}"
# What `manage.py check` reports (config/checks.py, which adds a DATA_DIR it cannot write), each naming its variable.
CONFIGURATION_PROBLEMS = [*_problems, *filter(None, [secret_key_missing(_config)])]

# --- services ----------------------------------------------------------------
# The embedded server's cache: the HNSW index must stay in it for kNN to stay fast (100k
# chunks: ~200 MB). A quarter of the memory, at most 1 GB, as PostgreSQL's docs advise.
_memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
EMBEDDED_PG_SHARED_BUFFERS = _config.EMBEDDED_PG_SHARED_BUFFERS or f"{max(128, min(1024, _memory_mb // 4))}MB"
# Where the services are, nothing more: the processes that use them start the embedded ones
# (config.embedded.services_start), so importing the settings never spawns a server.
EMBEDDED_DATABASE = not _config.DATABASE_URL
EMBEDDED_REDIS = not _config.REDIS_URL
DATABASE_URL = _config.DATABASE_URL or embedded_database_url(DATA_DIR)
REDIS_URL = _config.REDIS_URL or embedded_redis_url(DATA_DIR)

DATABASES = {"default": environ.Env.db_url_config(DATABASE_URL)}
# Django's PostgreSQL backend with query and connection counters for /metrics (django-prometheus).
DATABASES["default"]["ENGINE"] = "django_prometheus.db.backends.postgresql"
DATABASES["default"]["CONN_MAX_AGE"] = _config.DB_CONN_MAX_AGE
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = _config.DB_CONNECT_TIMEOUT
DATABASES["default"]["TEST"] = {"NAME": _config.TEST_DATABASE_NAME}

# --- applications ----------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "template_partials",
    "ninja",  # the API docs page's Swagger UI from the package's static files, not a CDN (config/api.py)
    "axes",  # sign-in throttling (config/sign_in.py)
    "config",  # `manage.py services`: the embedded services of this DATA_DIR
    "licensing",
    "rag",
    "chat",
    "evaluation",  # `make eval`'s commands; nothing in the request path imports it
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",  # first and (nearly) last: /metrics' HTTP figures
    "django.middleware.security.SecurityMiddleware",
    "config.logging.RequestIdMiddleware",  # before all that logs: every later line of the request carries its id
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.text_input.UnstorableTextMiddleware",  # U+0000 in any field: a 400 naming it, before anything queries
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",  # settings.CONTENT_SECURITY_POLICY (django-csp)
    "django_htmx.middleware.HtmxMiddleware",
    "rag.middleware.CurrentWorkspaceMiddleware",
    "licensing.middleware.FeatureCacheMiddleware",
    # Outside axes, so that the figures count the 429 axes turns a locked-out sign-in into.
    "django_prometheus.middleware.PrometheusAfterMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: turns a locked-out sign-in into its 429
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "rag.context_processors.workspaces",
                "licensing.context_processors.workspace_tier",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [{"NAME": f"django.contrib.auth.password_validation.{name}"} for name in (
    "UserAttributeSimilarityValidator", "MinimumLengthValidator", "CommonPasswordValidator",
    "NumericPasswordValidator")]
# Overridable only so the test suite can trade hashing cost for speed (config/testing.py).
if _config.PASSWORD_HASHERS:
    PASSWORD_HASHERS = _config.PASSWORD_HASHERS
LOGIN_URL = "login"
AUTHENTICATION_BACKENDS = ["config.sign_in.SignInThrottle", "django.contrib.auth.backends.ModelBackend"]
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / STATIC_FOLDER
MEDIA_ROOT = DATA_DIR / "uploads"
# Files Docent keeps and hands to workers (uploads, zip members): Django's storage API, read through rag.storage.
# Default: DATA_DIR/uploads on this machine. STORAGE_URL=s3://bucket/prefix: any S3-compatible store, so web and
# workers may run on different machines. Credentials come from boto3's own chain (AWS_ACCESS_KEY_ID and
# AWS_SECRET_ACCESS_KEY in the environment, a profile, an instance role): never a setting here, never logged.
STORAGE_ENDPOINT_URL = _config.AWS_S3_ENDPOINT_URL or _config.STORAGE_ENDPOINT_URL
STORAGE_REGION = _config.STORAGE_REGION or _config.AWS_DEFAULT_REGION
# Path-style addressing (http://host/bucket/key): what MinIO, Ceph and most self-hosted stores expect.
STORAGE_ADDRESSING_STYLE = _config.STORAGE_ADDRESSING_STYLE or ("path" if STORAGE_ENDPOINT_URL else "auto")
# An unreachable store is a transient fault: an indexing task waits STORAGE_RETRY_SECONDS between tries,
# STORAGE_RETRY_MAX times (10 s x 30: an outage of five minutes costs no file).

STORAGES = {
    "default": file_storage_config(_config.STORAGE_URL, endpoint=STORAGE_ENDPOINT_URL, region=STORAGE_REGION,
                                   addressing_style=STORAGE_ADDRESSING_STYLE),
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if _config.DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- security ----------------------------------------------------------------------
# Django's defaults stand: the session cookie HttpOnly, X-Frame-Options DENY, nosniff, a same-origin referrer.
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
# Everything from this server only, no inline script or handler (the pages' behaviour is in static/js), no framing.
CONTENT_SECURITY_POLICY = {"DIRECTIVES": {
    "default-src": ["'self'"], "img-src": ["'self'", "data:"], "object-src": ["'none'"], "base-uri": ["'self'"],
    "form-action": ["'self'"], "frame-ancestors": ["'none'"]}}
if HTTPS:
    SECURE_SSL_REDIRECT = _config.SECURE_SSL_REDIRECT
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = _config.SECURE_HSTS_SECONDS
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    # /healthz is polled by load balancers over plain HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# --- sign-in throttling and the API's rate -------------------------------------------
# Counted in a cache every web process shares: Redis, in a database of its own beside the broker's, so that
# clearing the cache never drops a queued task.
CACHE_URL = _config.CACHE_URL or redis_database_url(REDIS_URL, database=1)
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
# Failed sign-ins for one user name from one address before both are refused (django-axes, config/sign_in.py).
AXES_FAILURE_LIMIT = _config.LOGIN_FAILURE_LIMIT
# How long a locked-out pair waits: guessing becomes slow, a user who mistyped waits minutes, not forever.
AXES_COOLOFF_TIME = timedelta(minutes=_config.LOGIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # a guesser locks out itself, not the account's owner
# Behind a reverse proxy every client has the proxy's address: the header the proxy names the client in
# (TRUSTED_PROXY_HEADER: "X-Forwarded-For", "X-Real-IP"), believed only from TRUSTED_PROXIES; none by default.
AXES_CLIENT_IP_CALLABLE = "config.sign_in.client_address"
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # nor keeps a shared address locked by trying on
AXES_HANDLER = "axes.handlers.cache.AxesCacheHandler"
AXES_LOCKOUT_CALLABLE = "config.sign_in.lockout_response"
AXES_ENABLE_ADMIN = False  # attempts live in the cache, not in the tables its admin screens would show
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False  # no line per process start and sign-in; a lockout is still logged as a warning

# --- Celery (what no install changes, serializers and acknowledgement, is set on the app: config/celery.py) --------
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ROUTES = {
    "rag.tasks.index_*": {"queue": "ingest"},
    "rag.tasks.merge_*": {"queue": "merge"},
    # A generated answer holds its worker process for the model's whole reply: its own queue.
    "chat.tasks.*": {"queue": "answers"},
}
CELERY_TASK_DEFAULT_QUEUE = "default"
# Redis hands an unacknowledged task to another worker after this long: it must outlast the longest
# task's hard time limit (merge_workspace, 3660 s; tests/config/test_celery_limits.py checks), or a
# long task runs twice. A task whose worker died still comes back: after this, or through the reaper.
# queue_order_strategy "priority": a worker takes from its queues in the order -Q names them (`default,ingest,merge`):
# files are indexed before what they indexed is merged, in batches as large as what waits (rag.jobs.merging), where
# taking turns kept indexing behind merges (1,000 small files, 2 processes: indexed at 3.7 files/s, merges 57 passes).
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": _config.BROKER_VISIBILITY_TIMEOUT,
                                   "queue_order_strategy": "priority"}
# Seconds a new pool process has to report UP before the parent kills it. With the encoder preloaded
# in the parent a process is up in well under a second; a process that loads the model itself
# (preload off or failed) took 6-25 s on a busy 2-core machine, hence the margin over Celery's 4 s.
# Workers log through settings.LOGGING (config/celery.py's setup_logging), never Celery's own root handler.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_WORKER_PROC_ALIVE_TIMEOUT = _config.WORKER_PROC_ALIVE_TIMEOUT
CELERY_BEAT_SCHEDULE = {
    "reap-job-items": {"task": "rag.tasks.reap_job_items", "schedule": float(_config.JOB_REAPER_INTERVAL_SECONDS)},
    "sync-due-sources": {"task": "rag.sources.tasks.sync_due_sources",
                         "schedule": float(_config.SOURCE_SCHEDULE_TICK_SECONDS)},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")

# --- logging: one structured line per event -----------------------------------
LOGGING = logging_config(_config.LOG_LEVEL, _config.LOG_FORMAT)

# --- Docent knobs: the rest are the variables of the same name ------------------------
# Folder sources and local Git repositories must lie inside one of these folders (never in DATA_DIR). By default a
# `sources/` folder beside DATA_DIR: staff who may add a source must not index any file the server can read.
SOURCE_FOLDER_ROOTS = (_config.SOURCE_FOLDER_ROOTS if _config.SOURCE_FOLDER_ROOTS is not None
                       else [str(DATA_DIR.parent / "sources")])
# Uploads: a folder holds more files than Django's default 100 per request.
DATA_UPLOAD_MAX_NUMBER_FILES = _config.UPLOAD_MAX_FILES
UPLOAD_ZIP_MAX_ENTRIES = _config.UPLOAD_ZIP_MAX_ENTRIES or 4 * _config.UPLOAD_ZIP_MAX_MEMBERS
# The first handler counts each file's bytes as they arrive and refuses one past INGEST_MAX_FILE_BYTES.
FILE_UPLOAD_HANDLERS = [
    "rag.uploads.limits.UploadLimitHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# Per-list weights of the fusion (semantic kNN, full-text lexical, whole-token identifiers, an LLM's rewrite of the
# question, the documents whose subject a question names: rag/retrieval/subjects.py).
RRF_WEIGHTS = {"semantic": _config.RRF_WEIGHT_SEMANTIC, "lexical": _config.RRF_WEIGHT_LEXICAL,
               "identifiers": _config.RRF_WEIGHT_IDENTIFIERS, "rewrite": _config.RRF_WEIGHT_REWRITE,
               "subject": _config.RRF_WEIGHT_SUBJECT}
