"""Log lines as `time level logger message key=value ...`, grep- and parse-friendly."""

from __future__ import annotations

import json
import logging

_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extras = {k: v for k, v in vars(record).items() if k not in _RESERVED and not k.startswith("_")}
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


def logging_config(level: str) -> dict:
    """settings.LOGGING: one structured line per event on the console, database and pgserver chatter held back."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"kv": {"()": "config.logging.KeyValueFormatter"}},
        "filters": {"health_probe": {"()": "config.logging.HealthProbeFilter"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "kv", "filters": ["health_probe"]}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "django.db.backends": {"level": "WARNING"},
            "pgserver": {"level": "WARNING"},
        },
    }
