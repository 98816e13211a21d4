"""The one OpenAI-compatible client: chat completions, streamed (chat's generated answers) or not (the query rewrite).

Everything about talking to the server lives here: the endpoint and auth header from settings (LLM_BASE_URL,
LLM_MODEL, LLM_API_KEY), plain http.client (no proxy from the environment: the model server is the operator's),
timeouts that bound every read, and one error, LLMError, for anything that keeps a usable reply from arriving.
Callers decide what a failure costs (chat falls back to the extractive answer, search goes on without a rewrite).
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from django.conf import settings


class LLMError(Exception):
    """The model could not answer (timeout, deadline, HTTP error, bad reply); the caller falls back."""


# One server-sent event line is a few hundred bytes; a "line" past this is a broken or hostile server.
MAX_EVENT_LINE_BYTES = 1024 * 1024
# A non-streamed completion of a short prompt is a few kB; a reply past this is not one.
MAX_COMPLETION_BYTES = 1024 * 1024


def answer_deadline() -> float:
    """The monotonic instant by which a whole answer must be in (LLM_ANSWER_DEADLINE_SECONDS from now)."""
    return time.monotonic() + settings.LLM_ANSWER_DEADLINE_SECONDS


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LLMError(f"LLM_BASE_URL must be an http(s) URL, not {settings.LLM_BASE_URL!r}")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return kind(parts.hostname, parts.port, timeout=timeout), path


@contextmanager
def _completion_request(payload: dict, *, accept: str, timeout: float,
                        ) -> Iterator[tuple[http.client.HTTPResponse, socket.socket]]:
    """POST a chat completion; yields the 200 response and its socket, then closes the connection.

    HTTP errors, refused connections and OS errors become LLMError here; socket timeouts pass through,
    so that each caller can say which of its limits ran out.
    """
    body = json.dumps({"model": settings.LLM_MODEL, **payload}).encode()
    headers = {"Content-Type": "application/json", "Accept": accept}
    if settings.LLM_API_KEY:
        headers["Authorization"] = f"Bearer {settings.LLM_API_KEY}"
    connection, path = _connection(settings.LLM_BASE_URL.rstrip("/") + "/chat/completions", timeout)
    try:
        connection.request("POST", path, body=body, headers=headers)
        sock = connection.sock  # kept: the connection lets go of it once a closing response owns it
        response = connection.getresponse()
        if response.status != 200:
            raise LLMError(f"model server answered HTTP {response.status}")
        yield response, sock
    except TimeoutError:
        raise
    except (OSError, http.client.HTTPException) as exc:
        raise LLMError(f"model server unreachable: {exc}") from exc
    finally:
        connection.close()


def _lines(response: http.client.HTTPResponse, sock: socket.socket, wait_limit: Callable[[], float]) -> Iterator[str]:
    """The response's lines, each read checked against the whole answer's deadline.

    readline() would wait for a newline across any number of reads, so a server that sends
    a byte at a time without one could hold the answer open for ever; here every read asks
    wait_limit() first, which raises once the deadline has passed.
    """
    pending = b""
    while True:
        sock.settimeout(wait_limit())
        piece = response.read1(65536)
        if not piece:
            if pending:
                yield pending.decode("utf-8", "replace").strip()
            return
        pending += piece
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            yield raw.decode("utf-8", "replace").strip()
        if len(pending) > MAX_EVENT_LINE_BYTES:
            raise LLMError(f"bad stream from the model server: a line over {MAX_EVENT_LINE_BYTES} bytes")


def stream_chat(messages: list[dict[str, str]], *, deadline: float | None = None) -> Iterator[str]:
    """Yield the reply's text pieces as the server sends them (server-sent events).

    Two limits: each read waits at most LLM_TIMEOUT_SECONDS, and the whole reply must
    be in by `deadline` (a time.monotonic() instant): every read waits at most what is
    left, so neither a silent server nor one that trickles words forever holds an answer open.
    """
    deadline = deadline if deadline is not None else answer_deadline()
    too_late = f"no complete answer within {settings.LLM_ANSWER_DEADLINE_SECONDS:g} s"

    def wait_limit() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise LLMError(too_late)
        return min(settings.LLM_TIMEOUT_SECONDS, left)

    payload = {"messages": messages, "stream": True, "temperature": 0.1}
    try:
        with _completion_request(payload, accept="text/event-stream", timeout=wait_limit()) as (response, sock):
            for line in _lines(response, sock, wait_limit):
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
    except TimeoutError as exc:
        raise LLMError(too_late if time.monotonic() >= deadline - 0.05 else "model server too slow") from exc


def complete_chat(messages: list[dict[str, str]], *, timeout: float, temperature: float = 0.0) -> str:
    """The reply's text, not streamed; each read (connect, headers, body) waits at most `timeout` seconds."""
    payload = {"messages": messages, "stream": False, "temperature": temperature}
    try:
        with _completion_request(payload, accept="application/json", timeout=timeout) as (response, _sock):
            raw = response.read(MAX_COMPLETION_BYTES + 1)
    except TimeoutError as exc:
        raise LLMError("model server too slow") from exc
    if len(raw) > MAX_COMPLETION_BYTES:
        raise LLMError(f"bad reply from the model server: over {MAX_COMPLETION_BYTES} bytes")
    try:
        text = json.loads(raw.decode("utf-8", "replace"))["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise LLMError("model server sent no completion") from exc
    return str(text or "")
