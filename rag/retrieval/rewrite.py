"""Query rewrite by an LLM (optional): the question restated as documentation would state it.

When SEARCH_LLM_REWRITE is on and an OpenAI-compatible endpoint is configured
(LLM_BASE_URL, LLM_MODEL, LLM_API_KEY), the search asks the model for one
rewrite of the question and adds the rewrite's semantic list to the fusion
(weight RRF_WEIGHTS["rewrite"]), beside the original question's lists: a
rewrite can only add candidates, never hide the question's own.

A rewrite must never cost an answer: any failure (unreachable, slow past
SEARCH_LLM_REWRITE_TIMEOUT_SECONDS, HTTP error, an empty or malformed reply)
is logged and the search goes on with the original question alone.

This is a plain, non-streamed completion. rag cannot use chat.llm (apps
depend downward only: chat -> rag), so the few lines of HTTP live here.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request

from django.conf import settings

logger = logging.getLogger("rag.retrieval")

MAX_REWRITE_CHARS = 500
PROMPT = (
    "Rewrite the user's question as a search query for technical documentation: state the fact it asks "
    "for in the words a reference manual would use, keep every identifier (setting, option, header, "
    "command, error code) exactly as written, add no explanation. Reply with the query only."
)


class RewriteError(Exception):
    """The model gave no usable rewrite; the search goes on without one."""


def rewrite_enabled() -> bool:
    return bool(settings.SEARCH_LLM_REWRITE and settings.LLM_BASE_URL)


def question_rewrite(question: str) -> str:
    """One rewrite of `question`; raises RewriteError when the model cannot give one."""
    url = settings.LLM_BASE_URL.rstrip("/") + "/chat/completions"
    body = json.dumps({
        "model": settings.LLM_MODEL, "stream": False, "temperature": 0,
        "messages": [{"role": "system", "content": PROMPT}, {"role": "user", "content": question}],
    }).encode()
    headers = {"Content-Type": "application/json"}
    if settings.LLM_API_KEY:
        headers["Authorization"] = f"Bearer {settings.LLM_API_KEY}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=settings.SEARCH_LLM_REWRITE_TIMEOUT_SECONDS) as response:
            reply = json.loads(response.read().decode("utf-8", "replace"))
        text = reply["choices"][0]["message"]["content"]
    except urllib.error.HTTPError as exc:
        raise RewriteError(f"model server answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise RewriteError(f"model server unreachable or too slow: {getattr(exc, 'reason', exc)}") from exc
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise RewriteError("model server sent no completion") from exc
    rewrite = " ".join(str(text or "").split())[:MAX_REWRITE_CHARS]
    if not rewrite:
        raise RewriteError("model server sent an empty rewrite")
    return rewrite


def rewrite_or_none(question: str) -> tuple[str | None, str | None]:
    """(rewrite, None) or (None, the reason there is none): a failure is logged, never raised."""
    try:
        return question_rewrite(question), None
    except RewriteError as exc:
        logger.warning("query rewrite skipped", extra={"reason": str(exc)})
        return None, str(exc)
