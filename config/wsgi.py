"""The WSGI application; the encoder is loaded here, at start, not by the first question.

Under `gunicorn --preload` (as `make run` runs it) this happens once in the master
before it forks: every web process answers its first question as fast as its tenth,
and the processes share the model's memory.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()


def _warm_up() -> None:
    from django.db import connections

    from rag.embeddings import warm_up

    warm_up()
    connections.close_all()  # a forked process must not share a database socket with its parent


_warm_up()
