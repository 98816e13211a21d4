"""How an environment variable is declared: its type, default, one-line meaning and group (config/variables.py,
config/tuning.py), so that the checks, the settings and docs/configuration.md all read the one declaration."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BeforeValidator, Field
from pydantic_settings import NoDecode, SettingsConfigDict

# The groups of docs/configuration.md, in its order.
GROUPS = (
    "Data and services", "Hosts and security", "Sign-in and rate limits", "make run", "Workers and jobs",
    "Logging and metrics", "Uploads and ingestion", "Sources", "Encoders", "Answers and chat", "Licensing",
    "Dedup merging", "Version lineage", "Retrieval", "Tests",
)
# Read exactly as named, from the environment (a `.env` file in the project folder is loaded into it first).
VARIABLES_CONFIG = SettingsConfigDict(case_sensitive=True, extra="ignore")


def variable(default: Any, meaning: str, group: str, *, shown: str | None = None, setting: bool = True,
             **constraints: Any) -> Any:
    """One variable: `shown` is the default as the docs say it when it is computed (the field's default then stands
    for "not set"); `setting=False` when Django's settings hold it under another name, or not at all."""
    if group not in GROUPS:
        raise ValueError(f"{group!r} is not one of the groups {GROUPS}")
    return Field(default, description=meaning, json_schema_extra={"group": group, "shown": shown, "setting": setting},
                 **constraints)


def _comma_separated(value: Any) -> Any:
    return [item.strip() for item in value.split(",") if item.strip()] if isinstance(value, str) else value


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _escaped_newlines(value: Any) -> Any:
    return value.replace("\\n", "\n") if isinstance(value, str) else value


# `a,b,c`; set but empty: an empty list.
CommaList = Annotated[list[str], NoDecode, BeforeValidator(_comma_separated)]
JsonObject = Annotated[dict[str, Any], NoDecode, BeforeValidator(_json)]
# A PEM key on one line of an env file, its line breaks written `\n`.
Multiline = Annotated[str, BeforeValidator(_escaped_newlines)]
