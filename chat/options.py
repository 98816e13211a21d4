"""A conversation's search options, one schema: the defaults, the rules, the JSON a conversation stores.

`Conversation.search_options` and `SearchDefaults.search_options` hold `ConversationOptions.as_json()`
and are read back with `ConversationOptions.read`; the options form (chat.forms) offers these choices and
checks its input with this model; the API (chat.api) takes it as its body; chat.search turns it into
rag's SearchOptions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator

from rag.dates import NAMED_PERIODS
from rag.retrieval import DOC_TYPE_MODES, MAX_VERSION_LABEL, SearchOptionError, validation_message

# The date choices by key, as the options panel names them; `NAMED_PERIODS` says which period each means.
DATES = {"any": "Any time", **{key: phrase.capitalize() for key, phrase in NAMED_PERIODS.items()},
         "after": "After a date"}


def _stored(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("stored"))


class ConversationOptions(BaseModel):
    """What a conversation's answers search, as the chat's options panel sets it.

    The rules between fields hold where options are chosen (the form, the API); options already stored
    are read as they are (see `read`).
    """

    dedup: bool = Field(True, description="hide duplicate passages")
    include_archived: bool = False
    provenance: bool = Field(False, description="list every version of a cited record (Writer Pro)")
    date: Literal[tuple(DATES)] = "any"
    after: dt.date | None = Field(None, validate_default=True,
                                  description="with date=after: documents dated on or after")
    doc_type: str = Field("", max_length=50, description="a document type's slug")
    doc_type_mode: Literal[tuple(DOC_TYPE_MODES)] = Field("boost", description="prefer the type, or only it")
    as_of_version: str = Field("", max_length=MAX_VERSION_LABEL, description="answer as of this release")
    as_of_date: dt.date | None = Field(None, validate_default=True,
                                       description="answer as of this date (the whole day counts)")

    # Field validators, not a model validator: the error then names its field (the API's 400 says which).
    @field_validator("after")
    @classmethod
    def _after_needs_a_date(cls, value: dt.date | None, info: ValidationInfo) -> dt.date | None:
        if info.data.get("date") == "after" and not value and not _stored(info):
            raise ValueError("pick the date to search after (date=after)")
        return value

    @field_validator("as_of_date")
    @classmethod
    def _version_or_date(cls, value: dt.date | None, info: ValidationInfo) -> dt.date | None:
        if value and info.data.get("as_of_version") and not _stored(info):
            raise ValueError("answer as of a version or as of a date, not both")
        return value

    @classmethod
    def read(cls, stored: Mapping[str, Any]) -> ConversationOptions:
        """Options as a conversation stored them: missing or empty keys take the defaults, unknown keys are
        ignored, and the rules above are not asked again (they held when the options were chosen; a row
        written otherwise is searched as it says). A value of the wrong type raises SearchOptionError."""
        present = {key: value for key, value in stored.items() if value not in ("", None)}
        try:
            return cls.model_validate(present, context={"stored": True})
        except ValidationError as exc:
            raise SearchOptionError(validation_message(exc.errors())[1]) from None

    def as_json(self) -> dict[str, Any]:
        """As a conversation stores them; "as of" only when chosen, so that an unset one reads as the latest."""
        # Only the options: a subclass (the API's body) adds where and what to ask, which are not stored.
        data = self.model_dump(include=set(ConversationOptions.model_fields) - {"as_of_version", "as_of_date"})
        data["after"] = self.after.isoformat() if self.after else ""
        if self.as_of_version:
            data["as_of_version"] = self.as_of_version
        if self.as_of_date:
            data["as_of_date"] = self.as_of_date.isoformat()
        return data

    def as_defaults(self) -> ConversationOptions:
        """These options as where new conversations start: without "as of", which answers one conversation's
        question about the past (a default would quietly date every new conversation)."""
        return self.model_copy(update={"as_of_version": "", "as_of_date": None})
