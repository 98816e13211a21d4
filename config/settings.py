"""The one settings module. Every difference between installs is an env var."""

from __future__ import annotations

import ipaddress
import os
import re
import sys
from datetime import timedelta
from pathlib import Path

import environ

from config.file_storage import file_storage_config
from config.instance import LOCAL_HOSTS, is_loopback, secret_key_read_or_create, serves_network
from config.logging import LOG_FORMATS, logging_config
from config.embedded import ServiceError, embedded_database_url, embedded_redis_url, ensure_data_dir, redis_database_url

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# A local .env is convenient in development; real deployments set the environment.
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def _fail(message: str) -> None:
    """Bad configuration stops the process with one line, not a traceback."""
    sys.stderr.write(f"docent: configuration error: {message}\n")
    raise SystemExit(2)


# Off unless asked for: Django's debug pages list every URL pattern and setting to anyone who hits an error.
DEBUG = env.bool("DEBUG", default=False)
DATA_DIR = Path(env.str("DATA_DIR", default=str(BASE_DIR / "var"))).resolve()
try:
    ensure_data_dir(DATA_DIR)
except ServiceError as exc:
    _fail(str(exc))

# --- hosts and secrets ----------------------------------------------------------
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=LOCAL_HOSTS)
# Serving any host but this machine's is production: a set SECRET_KEY, HTTPS by default, no development license
# key. Said by the hosts named, `make run`'s DOCENT_HOST, or DOCENT_SERVES_NETWORK=true (a web server started by
# hand, or behind a proxy that may send `Host: 127.0.0.1`); config/web_server.py refuses a bind beyond loopback
# on an instance that does not serve the network.
SERVES_NETWORK = env.bool("DOCENT_SERVES_NETWORK", default=serves_network(ALLOWED_HOSTS)
                          or not is_loopback(env.str("DOCENT_HOST", default="127.0.0.1")))
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if SERVES_NETWORK:
        _fail("SECRET_KEY must be set when the instance serves the network (ALLOWED_HOSTS names hosts other than "
              "this machine's, DOCENT_HOST is not loopback, or DOCENT_SERVES_NETWORK=true)")
    # This machine only (`make run`): generated once and kept, so sessions survive restarts.
    SECRET_KEY = secret_key_read_or_create(DATA_DIR / "secret_key")
# Behind a TLS proxy (the default when serving the network): redirect to HTTPS, secure cookies, HSTS.
# `make run` on http://127.0.0.1 is plain HTTP, where those would lock the user out.
HTTPS = env.bool("DOCENT_HTTPS", default=SERVES_NETWORK and not DEBUG)

CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
# Where people open Docent: the `url` of `search --json` results (the API answers with the address it was asked on).
PUBLIC_URL = env.str("DOCENT_PUBLIC_URL", default="").rstrip("/") or (
    f"http://{env.str('DOCENT_HOST', default='127.0.0.1')}:{env.str('DOCENT_PORT', default='8000')}")

# --- services ----------------------------------------------------------------
# The embedded server's cache: the HNSW index must stay in it for kNN to stay fast (100k
# chunks: ~200 MB). A quarter of the memory, at most 1 GB, as PostgreSQL's docs advise.
_memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
EMBEDDED_PG_SHARED_BUFFERS = env.str("EMBEDDED_PG_SHARED_BUFFERS", default="") or f"{max(128, min(1024, _memory_mb // 4))}MB"
if not re.fullmatch(r"\d+(kB|MB|GB)", EMBEDDED_PG_SHARED_BUFFERS):
    _fail(f"EMBEDDED_PG_SHARED_BUFFERS={EMBEDDED_PG_SHARED_BUFFERS!r} is not a size such as 512MB or 1GB")
# Where the services are, nothing more: the processes that use them start the embedded ones
# (config.embedded.services_start), so importing the settings never spawns a server.
EMBEDDED_DATABASE = not env.str("DATABASE_URL", default="")
EMBEDDED_REDIS = not env.str("REDIS_URL", default="")
DATABASE_URL = env.str("DATABASE_URL", default="") or embedded_database_url(DATA_DIR)
REDIS_URL = env.str("REDIS_URL", default="") or embedded_redis_url(DATA_DIR)

DATABASES = {"default": env.db_url_config(DATABASE_URL)}
# Django's PostgreSQL backend with query and connection counters for /metrics (django-prometheus).
DATABASES["default"]["ENGINE"] = "django_prometheus.db.backends.postgresql"
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DB_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = env.int("DB_CONNECT_TIMEOUT", default=5)
DATABASES["default"]["TEST"] = {"NAME": env.str("TEST_DATABASE_NAME", default="test_docent")}

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
if env.list("PASSWORD_HASHERS", default=[]):
    PASSWORD_HASHERS = env.list("PASSWORD_HASHERS")
LOGIN_URL = "login"
AUTHENTICATION_BACKENDS = ["config.sign_in.SignInThrottle", "django.contrib.auth.backends.ModelBackend"]
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
MEDIA_ROOT = DATA_DIR / "uploads"
STATIC_ROOT.mkdir(exist_ok=True)
# Files Docent keeps and hands to workers (uploads, zip members): Django's storage API, read through rag.storage.
# Default: DATA_DIR/uploads on this machine. STORAGE_URL=s3://bucket/prefix: any S3-compatible store, so web and
# workers may run on different machines. Credentials come from boto3's own chain (AWS_ACCESS_KEY_ID and
# AWS_SECRET_ACCESS_KEY in the environment, a profile, an instance role): never a setting here, never logged.
STORAGE_URL = env.str("STORAGE_URL", default="")
STORAGE_ENDPOINT_URL = env.str("AWS_S3_ENDPOINT_URL", default="") or env.str("STORAGE_ENDPOINT_URL", default="")
STORAGE_REGION = env.str("STORAGE_REGION", default="") or env.str("AWS_DEFAULT_REGION", default="")
# Path-style addressing (http://host/bucket/key): what MinIO, Ceph and most self-hosted stores expect.
STORAGE_ADDRESSING_STYLE = env.str("STORAGE_ADDRESSING_STYLE", default="path" if STORAGE_ENDPOINT_URL else "auto")
# An unreachable store is a transient fault: an indexing task waits this long between tries, this many times
# (10 s x 30: an outage of five minutes costs no file).
STORAGE_RETRY_SECONDS = env.int("STORAGE_RETRY_SECONDS", default=10)
STORAGE_RETRY_MAX = env.int("STORAGE_RETRY_MAX", default=30)

STORAGES = {
    "default": file_storage_config(STORAGE_URL, endpoint=STORAGE_ENDPOINT_URL, region=STORAGE_REGION,
                                   addressing_style=STORAGE_ADDRESSING_STYLE),
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
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
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    # /healthz is polled by load balancers over plain HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# --- sign-in throttling and the API's rate -------------------------------------------
# Counted in a cache every web process shares: Redis, in a database of its own beside the broker's, so that
# clearing the cache never drops a queued task.
CACHE_URL = env.str("CACHE_URL", default="") or redis_database_url(REDIS_URL, database=1)
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
# Failed sign-ins for one user name from one address before both are refused (django-axes, config/sign_in.py).
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
# How long a locked-out pair waits: guessing becomes slow, a user who mistyped waits minutes, not forever.
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # a guesser locks out itself, not the account's owner
# Behind a reverse proxy every client has the proxy's address: the header the proxy names the client in
# ("X-Forwarded-For", "X-Real-IP"), believed only from TRUSTED_PROXIES; none by default: the direct address.
TRUSTED_PROXY_HEADER = env.str("TRUSTED_PROXY_HEADER", default="")
TRUSTED_PROXIES = env.list("TRUSTED_PROXIES", default=["127.0.0.1", "::1"])  # addresses or networks (10.0.0.0/8)
for _proxy in TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        _fail(f"TRUSTED_PROXIES: {_proxy!r} is not an address or a network such as 10.0.0.0/8")
AXES_CLIENT_IP_CALLABLE = "config.sign_in.client_address"
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # nor keeps a shared address locked by trying on
AXES_HANDLER = "axes.handlers.cache.AxesCacheHandler"
AXES_LOCKOUT_CALLABLE = "config.sign_in.lockout_response"
AXES_ENABLE_ADMIN = False  # attempts live in the cache, not in the tables its admin screens would show
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False  # no line per process start and sign-in; a lockout is still logged as a warning
# Search API requests one user may make a minute (tokens and session together); past it a 429 says when to retry.
API_REQUESTS_PER_MINUTE = env.int("API_REQUESTS_PER_MINUTE", default=60)

# --- Celery (what no install changes, serializers and acknowledgement, is set on the app: config/celery.py) --------
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=600)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=660)
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
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("BROKER_VISIBILITY_TIMEOUT", default=7200),
                                   "queue_order_strategy": "priority"}
# Seconds a new pool process has to report UP before the parent kills it. With the encoder preloaded
# in the parent a process is up in well under a second; a process that loads the model itself
# (preload off or failed) took 6-25 s on a busy 2-core machine, hence the margin over Celery's 4 s.
# Workers log through settings.LOGGING (config/celery.py's setup_logging), never Celery's own root handler.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_WORKER_PROC_ALIVE_TIMEOUT = env.float("WORKER_PROC_ALIVE_TIMEOUT", default=60)
# The worker's parent loads the encoder before forking its pool: the processes share the weights, and
# a replacement for a dead process starts at once. Off only for an encoder that cannot survive a fork.
WORKER_PRELOAD_ENCODER = env.bool("WORKER_PRELOAD_ENCODER", default=True)
# An indexing item RUNNING past its lease lost its worker: the reaper queues it again. Longer than
# rag.tasks.index_document's hard time limit (660 s), so that a live run never loses its item.
JOB_ITEM_LEASE_SECONDS = env.int("JOB_ITEM_LEASE_SECONDS", default=720)
# How many times an item whose worker died is queued again before it fails: a file that kills its
# worker every time (a parser crash, out of memory) must not take the pool down forever.
JOB_ITEM_MAX_LOST_RUNS = env.int("JOB_ITEM_MAX_LOST_RUNS", default=3)
# How often Celery beat runs the reaper (rag.tasks.reap_job_items); `make run` runs beat in its worker.
JOB_REAPER_INTERVAL_SECONDS = env.int("JOB_REAPER_INTERVAL_SECONDS", default=60)
# How often beat looks for folder and Git sources whose schedule says they are due (rag.sources).
SOURCE_SCHEDULE_TICK_SECONDS = env.int("SOURCE_SCHEDULE_TICK_SECONDS", default=60)
CELERY_BEAT_SCHEDULE = {
    "reap-job-items": {"task": "rag.tasks.reap_job_items", "schedule": float(JOB_REAPER_INTERVAL_SECONDS)},
    "sync-due-sources": {"task": "rag.sources.tasks.sync_due_sources", "schedule": float(SOURCE_SCHEDULE_TICK_SECONDS)},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# Workers and beat write a heartbeat this often; /healthz reads it (stale after three) rather than broadcasting pings.
WORKER_HEARTBEAT_SECONDS = env.int("WORKER_HEARTBEAT_SECONDS", default=5)

# --- logging: one structured line per event -----------------------------------
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
# "json" for a collector that parses JSON lines; "text" reads best in a terminal.
LOG_FORMAT = env.str("LOG_FORMAT", default="text")
if LOG_FORMAT not in LOG_FORMATS:
    _fail(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, not {LOG_FORMAT!r}")
LOGGING = logging_config(LOG_LEVEL, LOG_FORMAT)

# --- Docent knobs ---------------------------------------------------------------
# The indexing encoder: "minilm" (all-MiniLM-L6-v2, 384 dims), "minilm-int8", "onnx", "onnx-int8", or "hashing" (tests only).
EMBEDDING_ENCODER = env.str("EMBEDDING_ENCODER", default="minilm")
# The encoder of questions (and of the sentences an answer compares with them): empty for the indexing
# encoder's torch-free twin ("minilm" -> "onnx", the same vectors): a question took 1.3-4.7 s on torch
# under load and 36-141 ms on ONNX, and a web process that never imports torch stays ~1 GB smaller.
QUERY_ENCODER = env.str("QUERY_ENCODER", default="")
# onnxruntime's intra-op threads per process for questions; 0: the cores divided by the web processes.
QUERY_ENCODER_THREADS = env.int("QUERY_ENCODER_THREADS", default=0)

# Git sources' HTTPS credentials bound to hosts (JSON: host[:port] -> {"username", "password"}); never over http://.
GIT_SOURCE_CREDENTIALS = env.json("GIT_SOURCE_CREDENTIALS", default={})
# Git sync limits, each failing a sync with its reason: entries of a tree walked (a Git bomb), blob bytes staged, fetch.
GIT_SOURCE_MAX_TREE_ENTRIES = env.int("GIT_SOURCE_MAX_TREE_ENTRIES", default=100_000)
GIT_SOURCE_MAX_SYNC_BYTES = env.int("GIT_SOURCE_MAX_SYNC_BYTES", default=1024 * 1024 * 1024)
GIT_SOURCE_FETCH_TIMEOUT_SECONDS = env.int("GIT_SOURCE_FETCH_TIMEOUT_SECONDS", default=300)
# A fetch's pack may be this large (a first fetch carries the whole history); past it the remote is refused, not
# allowed to stream into DATA_DIR for the whole timeout on every sync.
GIT_SOURCE_MAX_FETCH_BYTES = env.int("GIT_SOURCE_MAX_FETCH_BYTES", default=2 * 1024 * 1024 * 1024)
# Files one Git sync may queue; the rest wait for the next sync, so one push cannot fill the queue for hours.
GIT_SOURCE_MAX_SYNC_ITEMS = env.int("GIT_SOURCE_MAX_SYNC_ITEMS", default=5000)
# Folder sources and local Git repositories must lie inside one of these folders (never in DATA_DIR). By default a
# `sources/` folder beside DATA_DIR: staff who may add a source must not index any file the server can read.
# Set to empty: no source reads this machine's files; set to `/` to allow anywhere but DATA_DIR.
SOURCE_FOLDER_ROOTS = env.list("SOURCE_FOLDER_ROOTS", default=[str(DATA_DIR.parent / "sources")])
# Folder sources with file-system watching: events closer together than this make one sync.
SOURCE_WATCH_DEBOUNCE_SECONDS = env.float("SOURCE_WATCH_DEBOUNCE_SECONDS", default=5.0)

# Ingestion: files larger than this fail with a reason instead of filling memory.
INGEST_MAX_FILE_BYTES = env.int("INGEST_MAX_FILE_BYTES", default=50 * 1024 * 1024)
# Uploads: a folder holds more files than Django's default 100 per request; a .zip is unpacked
# only up to these many supported members and bytes in all, so that a zip bomb fails as one item.
DATA_UPLOAD_MAX_NUMBER_FILES = env.int("UPLOAD_MAX_FILES", default=2000)
UPLOAD_ZIP_MAX_MEMBERS = env.int("UPLOAD_ZIP_MAX_MEMBERS", default=5000)
# Entries of any kind (folders, hidden and unsupported files too), counted before the archive's directory is read.
UPLOAD_ZIP_MAX_ENTRIES = env.int("UPLOAD_ZIP_MAX_ENTRIES", default=4 * UPLOAD_ZIP_MAX_MEMBERS)
UPLOAD_ZIP_MAX_BYTES = env.int("UPLOAD_ZIP_MAX_BYTES", default=1024 * 1024 * 1024)
# An Office or OpenDocument file is a zip: past this many unpacked bytes (sheets aside) it is refused as a bomb.
OFFICE_MAX_UNPACKED_BYTES = env.int("OFFICE_MAX_UNPACKED_BYTES", default=256 * 1024 * 1024)
# Cells read per spreadsheet sheet (streamed); the rest is skipped and the job says so.
XLSX_MAX_CELLS_PER_SHEET = env.int("XLSX_MAX_CELLS_PER_SHEET", default=200_000)
# Pages OCR reads per file (scanned PDF or image): ~3-7 s a page on one core, kept under the task's time limit.
OCR_MAX_PAGES = env.int("OCR_MAX_PAGES", default=60)
# Mail attachments nested this deep (a message attached to a message ...) are still indexed.
MAIL_ATTACHMENT_MAX_DEPTH = env.int("MAIL_ATTACHMENT_MAX_DEPTH", default=2)
# Bytes one upload request may store, files and unpacked zip members together: a request past it is
# stopped as it arrives (rag.uploads.limits), so one request cannot fill the disk.
UPLOAD_MAX_BYTES = env.int("UPLOAD_MAX_BYTES", default=1024 * 1024 * 1024)
# Bytes of stored upload copies a workspace may hold (shown on its documents page); an upload past it is refused.
WORKSPACE_STORAGE_QUOTA_BYTES = env.int("WORKSPACE_STORAGE_QUOTA_BYTES", default=10 * 1024 * 1024 * 1024)
# The first handler counts each file's bytes as they arrive and refuses one past INGEST_MAX_FILE_BYTES.
FILE_UPLOAD_HANDLERS = [
    "rag.uploads.limits.UploadLimitHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# Chunk size in words: all-MiniLM-L6-v2 reads only 256 word pieces (measured: 200-250 words of
# technical prose are ~308), so longer chunks would leave their tail out of the embedding.
CHUNK_TARGET_WORDS = env.int("CHUNK_TARGET_WORDS", default=170)
CHUNK_MAX_WORDS = env.int("CHUNK_MAX_WORDS", default=200)
# Overlap keeps a sentence that straddles a split findable from both sides.
CHUNK_OVERLAP_WORDS = env.int("CHUNK_OVERLAP_WORDS", default=25)
# Texts per encoder call inside one document's batch.
EMBEDDING_BATCH_SIZE = env.int("EMBEDDING_BATCH_SIZE", default=32)

# --- licensing -------------------------------------------------------------------
# Genuine licenses verify against the vendor keys built into licensing/trust.py, never a key from here.
# This extra Ed25519 public key (base64 of the 32 raw bytes, or PEM) lets developers and the tests sign
# their own; it grants only while the instance serves this machine alone (SERVES_NETWORK false), and a
# license it verifies is shown as "development key: not a genuine license".
LICENSE_DEVELOPMENT_KEY = env.str("LICENSE_DEVELOPMENT_KEY", default="", multiline=True)
if env.str("LICENSE_PUBLIC_KEY", default=""):
    _fail("LICENSE_PUBLIC_KEY is no longer read: licenses verify against the vendor keys built in; "
          "for a key of your own on this machine only, set LICENSE_DEVELOPMENT_KEY instead")
# The demo workspace's built-in Writer Pro trial: long enough to try every feature on your own documents
# (at most 30 days, whatever this says: licensing.services.TRIAL_MAX_DAYS).
DEMO_TRIAL_DAYS = env.int("DEMO_TRIAL_DAYS", default=30)

# Answers: how many statements an extractive answer quotes (1-3 reads as an answer, more as a search
# result), and how close to the best one the others must score.
ANSWER_MAX_UNITS = env.int("ANSWER_MAX_UNITS", default=3)
ANSWER_SENTENCE_MIN_RATIO = env.float("ANSWER_SENTENCE_MIN_RATIO", default=0.85)
# Below this score (0.7 x encoder cosine + 0.3 x the question's rare terms found) no statement answers:
# the answer abstains. Calibrated on make eval's questions against off-topic ones (docs/development.md).
ANSWER_RELEVANCE_FLOOR = env.float("ANSWER_RELEVANCE_FLOOR", default=0.30)
# A statement of a superseded or retired passage scores this much of its value: the current one leads.
ANSWER_STALE_FACTOR = env.float("ANSWER_STALE_FACTOR", default=0.9)
# A definition, a list item with its lead-in or two sentences that lean on each other are quoted whole up to this.
ANSWER_UNIT_MAX_WORDS = env.int("ANSWER_UNIT_MAX_WORDS", default=70)
# Sources an abstention names as closest matches.
ANSWER_CLOSEST_MATCHES = env.int("ANSWER_CLOSEST_MATCHES", default=3)
# Results an answer is built from: more gives an LLM context, fewer keeps extractive answers focused.
ANSWER_TOP_K = env.int("ANSWER_TOP_K", default=5)
# Longer "sentences" are tables or lists run together: unreadable as a quote.
ANSWER_SENTENCE_MAX_WORDS = env.int("ANSWER_SENTENCE_MAX_WORDS", default=60)
# Sentences of two documents this close in meaning, with different facts, are versions that disagree.
ANSWER_CONFLICT_SIMILARITY = env.float("ANSWER_CONFLICT_SIMILARITY", default=0.75)
# Statements per side a change answer weighs against each other to find the one that changed.
ANSWER_CHANGE_CANDIDATES = env.int("ANSWER_CHANGE_CANDIDATES", default=8)
# What a pair of statements whose facts differ gains over its relevance: enough to prefer the change
# itself, too little for a change of something else to win.
ANSWER_CHANGE_BONUS = env.float("ANSWER_CHANGE_BONUS", default=0.2)
# What orders an answer's statements: "learned" (chat/answer_ranker.json, trained by benchmarks/
# train_answer_ranker.py) or "hand": relevance + this weight x answering power (make eval's ablation).
ANSWER_RANKER = env.str("ANSWER_RANKER", default="learned")
if ANSWER_RANKER not in ("learned", "hand"):
    _fail(f"ANSWER_RANKER must be learned or hand, not {ANSWER_RANKER!r}")
ANSWER_POWER_WEIGHT = env.float("ANSWER_POWER_WEIGHT", default=0.12)
# An OpenAI-compatible chat-completions server switches answers to generated ones.
LLM_BASE_URL = env.str("LLM_BASE_URL", default="")
LLM_MODEL = env.str("LLM_MODEL", default="")
LLM_API_KEY = env.str("LLM_API_KEY", default="")
LLM_TIMEOUT_SECONDS = env.float("LLM_TIMEOUT_SECONDS", default=60)
# A whole generated answer must be in by then, else the extractive answer stands with a notice.
LLM_ANSWER_DEADLINE_SECONDS = env.float("LLM_ANSWER_DEADLINE_SECONDS", default=120)
# Questions one user may ask a minute, all conversations together: each costs a search, maybe a model call.
CHAT_ASKS_PER_MINUTE = env.int("CHAT_ASKS_PER_MINUTE", default=10)
# Answer streams one web process serves at once: each holds one of its 4 threads, so pages keep the rest.
CHAT_STREAMS_PER_PROCESS = env.int("CHAT_STREAMS_PER_PROCESS", default=2)
# A stream ends after this long and the page opens another: no reader holds a thread for a whole slow answer.
CHAT_STREAM_MAX_SECONDS = env.float("CHAT_STREAM_MAX_SECONDS", default=20)

# --- the numbers that tune dedup, lineage and search: config/tuning.py ----------------------
from config.tuning import *  # noqa: E402,F403 - one env var each, read there

# Bearer token that lets a Prometheus scraper read /metrics without a staff login; empty: staff only.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
