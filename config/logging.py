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
