"""The WSGI application, warmed up at start so that the first question is answered as fast as the tenth.

Under `gunicorn --preload` (as `make run` runs it) this happens once in the master
before it forks: every web process starts with the URLconf and views imported,
templates compiled, the sentence splitter's rules built and the query encoder's
ONNX export on disk; each process builds its onnxruntime session after the fork
(config/web_server.py). Torch is never imported here: questions are encoded by ONNX. Measured on the demo: without it the first answer
took 1.75x the median of the next nine (model aside: ~0.6 s of imports, ~0.7 s of
regex compiling). The embedded services start (or are found) first: the warm-up and
every request need them, and settings only say where they are.
"""

import os

from django.core.wsgi import get_wsgi_application

from config.configuration import first_start
from config.embedded import services_start
from rag.sentences import sentence_spans

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
first_start()  # DATA_DIR and the kept secret key, before the settings are read
services_start()  # in gunicorn's master under --preload: its web processes share its lease
application = get_wsgi_application()


def _templates_compile() -> None:
    from pathlib import Path

    from django.apps import apps
    from django.conf import settings
    from django.template import TemplateSyntaxError, loader

    folders = [Path(folder) for engine in settings.TEMPLATES for folder in engine.get("DIRS", [])]
    folders += [Path(app.path) / "templates" for app in apps.get_app_configs()]
    for folder in folders:
        for path in folder.rglob("*.html") if folder.is_dir() else []:
            try:
                loader.get_template(str(path.relative_to(folder)))  # the cached loader keeps it
            except TemplateSyntaxError:
                pass  # a template of an app that is not wired in; the page that uses it would say so


def _page_render() -> None:
    """One anonymous GET of the login page: middleware, sessions, context processors and locale formats load."""
    import io

    from django.conf import settings
    from django.urls import reverse

    host = next((h for h in settings.ALLOWED_HOSTS if h not in ("*",) and not h.startswith(".")), "localhost")
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": reverse("login"), "SERVER_NAME": host, "SERVER_PORT": "443",
               "HTTP_HOST": host, "HTTP_X_FORWARDED_PROTO": "https", "wsgi.url_scheme": "https",
               "wsgi.input": io.BytesIO(), "wsgi.errors": io.StringIO()}
    b"".join(application(environ, lambda status, headers, exc_info=None: None))


def _warm_up() -> None:
    from django.db import connections
    from django.urls import get_resolver

    # import here: rag's modules load Django's models, and this module imports them only once the app is built.
    from rag.embeddings import query_encoder_prepare

    get_resolver().url_patterns  # noqa: B018 - the access imports every view module
    _templates_compile()
    sentence_spans("Docent starts. It warms up first.")
    from chat.followups import english_words  # import here: rag.releases, below it, needs Django's apps loaded

    english_words()  # the typo check's English word list: 0.1-0.3 s to read, not on the first question
    _page_render()
    query_encoder_prepare()
    # onnxruntime is not imported here: its import starts native threads that a forked process does not
    # have, and the process then aborts (std::system_error, SIGABRT) or hangs as it exits. Each web process
    # imports it after the fork, building its session before its first request (config/web_server.py).
    connections.close_all()  # a forked process must not share a database socket with its parent


_warm_up()
