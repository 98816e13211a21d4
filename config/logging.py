"""Log lines as `time level logger message key=value ...`, or JSON (LOG_FORMAT=json), each with the request or task
it belongs to."""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING

from celery import current_task

if TYPE_CHECKING:  # settings import this module: Django's request machinery is not loaded for it
    from django.http import HttpRequest, HttpResponse

_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
LOG_FORMATS = ("text", "json")
REQUEST_ID_HEADER = "X-Request-ID"
# A proxy's id is kept when it looks like one (no spaces or quotes to break a line), else a new one is made.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_context_keys = ("request_id", "task_id")
request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)


class RequestIdMiddleware:
    """Gives each request an id (the proxy's X-Request-ID, else a new one) that every log line of it carries and
    the response returns, so one request's lines can be found across web processes and the access log."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        token = request_id_var.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response[REQUEST_ID_HEADER] = request_id
        return response


class LogContextFilter(logging.Filter):
    """Puts the current request's id and Celery task's id on every record (None outside either)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        task = current_task._get_current_object() if current_task else None
        record.task_id = getattr(getattr(task, "request", None), "id", None)
        return True


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extras = {k: v for k, v in vars(record).items() if k not in _RESERVED and not k.startswith("_")
                  and not (k in _context_keys and v is None)}
        line = f"{self.formatTime(record, '%Y-%m-%dT%H:%M:%S')} {record.levelname} {record.name} {record.getMessage()}"
        for key, value in extras.items():
            text = value if isinstance(value, (int, float)) else json.dumps(str(value))
            line += f" {key}={text}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class HealthProbeFilter(logging.Filter):
    """Drops django.request's "Service Unavailable: /healthz" line: a 503 there is a reported state, not an error.

    It is what every start looks like until the worker is up, and a load balancer polls it all day.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        return not (getattr(record, "status_code", None) == 503 and getattr(request, "path", "") == "/healthz")


def logging_config(level: str, log_format: str = "text") -> dict:
    """settings.LOGGING: one structured line per event on the console, database and pgserver chatter held back.

    `json`: one JSON object a line (python-json-logger) with time, level, logger, message, request_id, task_id and
    the record's extras, for a log collector that parses JSON.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "text": {"()": "config.logging.KeyValueFormatter"},
            "json": {"()": "pythonjsonlogger.json.JsonFormatter",
                     "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s %(task_id)s",
                     "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
                     "datefmt": "%Y-%m-%dT%H:%M:%S%z"},
        },
        "filters": {"health_probe": {"()": "config.logging.HealthProbeFilter"},
                    "context": {"()": "config.logging.LogContextFilter"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": log_format,
                                 "filters": ["health_probe", "context"]}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "django.db.backends": {"level": "WARNING"},
            "pgserver": {"level": "WARNING"},
        },
    }
