"""The only code that calls a chat model: OpenAI-compatible chat completions, streamed."""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

from django.conf import settings

logger = logging.getLogger(__name__)


class LLMError(Exception):
    """The model could not answer (timeout, deadline, HTTP error, bad stream); the caller falls back."""


def answer_deadline() -> float:
    """The monotonic instant by which a whole answer must be in (LLM_ANSWER_DEADLINE_SECONDS from now)."""
    return time.monotonic() + settings.LLM_ANSWER_DEADLINE_SECONDS


def stream_chat(messages: list[dict[str, str]], *, deadline: float | None = None) -> Iterator[str]:
    """Yield the reply's text pieces as the server sends them (server-sent events).

    Two limits: each read waits at most LLM_TIMEOUT_SECONDS, and the whole reply must
    be in by `deadline` (a time.monotonic() instant), so a server that trickles words
    forever cannot hold an answer open.
    """
    deadline = deadline if deadline is not None else answer_deadline()
    url = settings.LLM_BASE_URL.rstrip("/") + "/chat/completions"
    body = json.dumps({"model": settings.LLM_MODEL, "messages": messages, "stream": True, "temperature": 0.1}).encode()
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if settings.LLM_API_KEY:
        headers["Authorization"] = f"Bearer {settings.LLM_API_KEY}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise LLMError(f"no complete answer within {settings.LLM_ANSWER_DEADLINE_SECONDS:g} s")
        return left

    try:
        with urllib.request.urlopen(request, timeout=min(settings.LLM_TIMEOUT_SECONDS, remaining())) as response:
            for raw in response:
                remaining()
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                try:
                    event = json.loads(data)
                except json.JSONDecodeError as exc:
                    raise LLMError(f"bad event from the model server: {data[:80]}") from exc
                if event.get("error"):
                    raise LLMError(f"model server error: {event['error']}")
                for choice in event.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        yield piece
    except urllib.error.HTTPError as exc:
        raise LLMError(f"model server answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        if time.monotonic() >= deadline:
            raise LLMError(f"no complete answer within {settings.LLM_ANSWER_DEADLINE_SECONDS:g} s") from exc
        reason = getattr(exc, "reason", exc)
        raise LLMError(f"model server unreachable or too slow: {reason}") from exc
