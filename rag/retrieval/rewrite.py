"""Query rewrite by an LLM (optional): the question restated as documentation would state it.

When SEARCH_LLM_REWRITE is on and an OpenAI-compatible endpoint is configured
(LLM_BASE_URL, LLM_MODEL, LLM_API_KEY), the search asks the model for one
rewrite of the question and adds the rewrite's semantic list to the fusion
(weight RRF_WEIGHTS["rewrite"]), beside the original question's lists: a
rewrite can only add candidates, never hide the question's own.

A rewrite must never cost an answer: any failure (unreachable, slow past
SEARCH_LLM_REWRITE_TIMEOUT_SECONDS, HTTP error, an empty or malformed reply)
is logged and the search goes on with the original question alone.

This is a plain, non-streamed completion through rag.llm, the one client.
"""

from __future__ import annotations

import logging

from django.conf import settings

from rag.llm import LLMError, complete_chat

logger = logging.getLogger("rag.retrieval")

MAX_REWRITE_CHARS = 500
PROMPT = (
    "Rewrite the user's question as a search query for technical documentation: state the fact it asks "
    "for in the words a reference manual would use, keep every identifier (setting, option, header, "
    "command, error code) exactly as written, add no explanation. Reply with the query only."
)


def rewrite_enabled() -> bool:
    return bool(settings.SEARCH_LLM_REWRITE and settings.LLM_BASE_URL)


def question_rewrite(question: str) -> str:
    """One rewrite of `question`; raises LLMError when the model cannot give one."""
    text = complete_chat([{"role": "system", "content": PROMPT}, {"role": "user", "content": question}],
                         timeout=settings.SEARCH_LLM_REWRITE_TIMEOUT_SECONDS, temperature=0)
    rewrite = " ".join(text.split())[:MAX_REWRITE_CHARS]
    if not rewrite:
        raise LLMError("model server sent an empty rewrite")
    return rewrite


def rewrite_or_none(question: str) -> tuple[str | None, str | None]:
    """(rewrite, None) or (None, the reason there is none): a failure is logged, never raised."""
    try:
        return question_rewrite(question), None
    except LLMError as exc:
        logger.warning("query rewrite skipped", extra={"reason": str(exc)})
        return None, str(exc)
