"""gunicorn's hooks (`--config python:config.web_server`): the bind checked before it listens; each web process
builds its query encoder after the fork; the access log's format, without query strings; a quick exit.

Before gunicorn binds, `on_starting` takes the first-start step (config.configuration.first_start) and refuses a
bind beyond loopback unless ALLOWED_HOSTS names the hosts served and the instance serves the network
(config.instance.web_bind_check): the launcher's own check does not run for a gunicorn started by hand.

The master (--preload) imports the app and makes sure the ONNX export exists (config/wsgi.py);
the onnxruntime session itself is built in each process, because a session's thread pool does
not survive a fork, and with cores / processes intra-op threads, so that the processes do not
fight over the cores. It is built before the process takes its first request.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from config.configuration import first_start
from config.instance import InstanceError, web_bind_check


# The access log: gunicorn's default less the query string and the referrer (which holds the previous page's):
# search text and filters (`/documents/?q=...`, `/api/v1/search?q=...`) are the reader's business, not the log's
# (issue 49). The response's X-Request-ID ties a line to the app's own log lines.
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s" %(M)sms %({x-request-id}o)s'


def on_starting(server: Any) -> None:
    # A SECRET_KEY when serving the network, DATA_DIR, the kept key: before the settings are read, and before the
    # web processes forked from this one read them.
    first_start()
    from django.conf import settings

    try:
        web_bind_check(server.cfg.address, list(settings.ALLOWED_HOSTS), serves_network=settings.SERVES_NETWORK)
    except InstanceError as exc:
        sys.stderr.write(f"docent: configuration error: {exc}\n")
        raise SystemExit(2) from None


def post_worker_init(worker: Any) -> None:
    # import here: gunicorn reads this file before it loads the app; Django is set up only after that.
    from rag.embeddings import query_warm_up

    query_warm_up(processes=max(1, int(worker.cfg.workers)))


def worker_exit(server: Any, worker: Any) -> None:
    """A web process that ended normally leaves at once, its requests answered and its connections closed.

    The interpreter's own shutdown (a garbage collection over the encoder's and Django's objects) took over
    10 s on a busy machine, past --graceful-timeout: the master then killed every web process and wrote
    "Worker was sent SIGKILL! Perhaps out of memory?" to web.log on each normal stop. Any other end (a boot
    error's exit code, which the master acts on) takes the normal way out.
    """
    ended = sys.exc_info()[1]
    if not isinstance(ended, SystemExit) or ended.code not in (0, None):
        return
    from django.db import connections

    connections.close_all()
    logging.shutdown()
    os._exit(0)
