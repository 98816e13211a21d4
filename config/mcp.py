"""The MCP server at /mcp: an agent asks Docent's documents through the Model Context Protocol, version-aware.

Served by the web server `make run` starts, as a plain Django view: the request passes the site's middleware
(allowed hosts, request ids, /metrics), the caller is checked as the JSON API checks it (a personal token,
`Authorization: Bearer`, and API_REQUESTS_PER_MINUTE), then the official SDK's Streamable HTTP app answers it.
That app is ASGI; a2wsgi runs it on one event loop per web process. It runs stateless and answers JSON, never an
SSE stream, so that each exchange is one request on one of gunicorn's threads, like any page.

Each tool calls the JSON API's route or the selector behind it with the caller's request, so an agent reads
the same passages, answers and refusals as `GET /api/v1/search` and `POST /api/v1/answers` give.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import io
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

from a2wsgi import ASGIMiddleware
from django.contrib.auth.decorators import login_not_required
from django.db import close_old_connections
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from ninja.errors import AuthenticationError, HttpError
from pydantic import Field, ValidationError

from chat.api import AnswerIn, answer_create
from config.api import api
from rag.api import SearchQuery, TokenOrSession, api_base_url, api_workspace, search_view
from rag.releases import parse_version, release_calendar_entries
from rag.retrieval import SearchOptionError, SearchParams
from rag.selectors import document_family, document_get, version_labels

REQUEST_KEY = "docent.mcp.request"  # where the view leaves the checked Django request for the tools

Workspace = Annotated[str, Field(min_length=1, description="the workspace's slug (see its page's address)")]
Question = Annotated[str, Field(min_length=1, max_length=2000, description="the question, in plain words")]
AsOfVersion = Annotated[str, Field(max_length=50, description="answer as of this release, e.g. \"2.0\" "
                                                               "(a release the `releases` tool lists)")]
AsOfDate = Annotated[dt.date | None, Field(description="answer as of this date (ISO 8601); not with as_of_version")]

server = MCPServer(
    name="docent",
    instructions="Docent answers from a workspace's own documents, newest release first. Ask `releases` which "
                 "releases exist, then pass as_of_version (or as_of_date) to `answer` or `search` when the "
                 "question is about an older one; `changes` compares two releases. Cite the URLs returned.",
)

T = TypeVar("T")


def _request(ctx: Context) -> HttpRequest:
    request = ctx.request_context.request
    return request.scope["wsgi_environ"][REQUEST_KEY]  # type: ignore[union-attr]


@contextmanager
def _refusals_as_tool_errors() -> Iterator[None]:
    """The API's refusals, said to the agent as a tool error it can read (a 404 or 429 is no protocol fault)."""
    try:
        yield
    except Http404 as exc:
        raise ToolError(str(exc) or "not found") from None
    except HttpError as exc:
        raise ToolError(exc.message) from None
    except (SearchOptionError, ValidationError) as exc:
        raise ToolError(str(exc)) from None


def _with_database(call: Callable[[], T]) -> T:
    """Run on the SDK's worker thread as a request would: stale connections go before and after, as Django's
    request signals do on the web threads."""
    close_old_connections()
    try:
        with _refusals_as_tool_errors():
            return call()
    finally:
        close_old_connections()


@server.tool(description="Passages of the workspace's documents that answer a question, ranked, each with its "
                         "release (version_label, is_latest_version), date, document and URL. Newest release "
                         "first unless as_of_version or as_of_date asks for an older one.")
def search(question: Question, workspace: Workspace, ctx: Context, as_of_version: AsOfVersion = "",
           as_of_date: AsOfDate = None,
           doc_type: Annotated[str, Field(max_length=50, description="only documents of this type, e.g. api")] = "",
           top_k: Annotated[int, SearchParams.model_fields["top_k"]] = 5) -> dict[str, Any]:
    request = _request(ctx)
    return _with_database(lambda: search_view(request, SearchQuery(
        q=question, workspace=workspace, as_of_version=as_of_version, as_of_date=as_of_date,
        only_doc_type=[doc_type] if doc_type else [], top_k=top_k)))


def _answer(request: HttpRequest, question: str, workspace: str, **options: Any) -> dict[str, Any]:  # noqa: ANN401
    """The answer POST /api/v1/answers gives (kept as a conversation, under the chat's ask limit)."""
    reply = answer_create(request, AnswerIn(question=question, workspace=workspace, **options))["answer"]
    return {key: reply[key] for key in ("text", "abstained", "notice", "release", "citations", "closest_matches")}


@server.tool(description="Answer a question from the workspace's documents, with numbered citations [n] and the "
                         "release the answer speaks for (release.mode: present = the newest, as_of = the one "
                         "asked for, change = two compared). abstained=true means the documents do not say; "
                         "closest_matches then lists where to look. Pass as_of_version for an older release.")
def answer(question: Question, workspace: Workspace, ctx: Context, as_of_version: AsOfVersion = "",
           as_of_date: AsOfDate = None) -> dict[str, Any]:
    request = _request(ctx)
    return _with_database(lambda: _answer(request, question, workspace, as_of_version=as_of_version,
                                          as_of_date=as_of_date))


def _releases(request: HttpRequest, slug: str) -> dict[str, Any]:
    workspace = api_workspace(request, slug)
    dated = {entry.version: entry for entry in release_calendar_entries(workspace_id=workspace.pk)}
    labels = version_labels(workspace=workspace)  # newest first
    releases = []
    for label in labels:
        entry = dated.get(parse_version(label))  # type: ignore[arg-type]
        releases.append({"version": label, "date": entry.date.date().isoformat() if entry else None,
                         "series": entry.series if entry else "", "newest": label == labels[0]})
    return {"workspace": workspace.slug, "newest": labels[0] if labels else None, "releases": releases}


@server.tool(description="The workspace's release calendar, newest first: each release's version, its date "
                         "where a release page or staff gave one, and which release is the newest. Use these "
                         "versions for as_of_version and for `changes`.")
def releases(workspace: Workspace, ctx: Context) -> dict[str, Any]:
    request = _request(ctx)
    return _with_database(lambda: _releases(request, workspace))


@server.tool(description="What changed about a subject between two releases: each release's statement with its "
                         "value and citation, oldest first (the change answer of `answer`).")
def changes(workspace: Workspace, ctx: Context,
            subject: Annotated[str, Field(min_length=1, max_length=300, description="what changed, e.g. "
                                                                                     "\"the rate limit\"")],
            from_version: Annotated[str, Field(min_length=1, max_length=50, description="the older release")],
            to_version: Annotated[str, Field(min_length=1, max_length=50, description="the newer release")],
            ) -> dict[str, Any]:
    request = _request(ctx)
    question = f"What changed in {subject} between {from_version} and {to_version}?"
    return _with_database(lambda: _answer(request, question, workspace))


def _document(request: HttpRequest, slug: str, document_id: int) -> dict[str, Any]:
    workspace = api_workspace(request, slug)
    document = document_get(user=request.auth, pk=document_id)
    if document.workspace_id != workspace.pk:
        raise Http404(f"no document {document_id} in {workspace.slug!r}")
    base = api_base_url(request)

    def described(member: Any) -> dict[str, Any]:  # noqa: ANN401 - a Document
        return {"document_id": member.pk, "title": member.title, "version_label": member.version_label,
                "doc_date": member.doc_date.isoformat() if member.doc_date else None,
                "is_latest_version": member.is_latest_version,
                "url": base + reverse("document-detail", args=[member.pk])}

    passages = [{"chunk_id": chunk.pk, "heading_path": chunk.heading_path, "text": chunk.text}
                for chunk in document.chunks.order_by("chunk_index")]
    return {**described(document), "path": document.shown_path, "doc_type": document.doc_type,
            "archived": document.archived, "passages": passages,
            "family": [described(member) for member in document_family(document=document).members]}


@server.tool(description="One document: its passages in order, its release and date, and its family (every "
                         "version of it, oldest first, is_latest_version marking the current one). document_id "
                         "comes from a search result or a citation.")
def document(workspace: Workspace, ctx: Context,
             document_id: Annotated[int, Field(ge=1, description="a document_id from `search` or `answer`")],
             ) -> dict[str, Any]:
    request = _request(ctx)
    return _with_database(lambda: _document(request, workspace, document_id))


# --- HTTP: the view at /mcp and the SDK's ASGI app behind it -------------------------------------------------

async def _manager_run(manager: StreamableHTTPSessionManager, started: threading.Event) -> None:
    """What the ASGI app's lifespan would do: a2wsgi sends no lifespan events, so the manager runs here."""
    async with manager.run():
        started.set()
        await asyncio.Event().wait()  # as long as the process lives


@functools.cache
def _bridge(pid: int) -> ASGIMiddleware:
    """The SDK's app on its own event loop thread, once per process: threads do not survive gunicorn's fork."""
    # Django has checked the host (ALLOWED_HOSTS) and every caller sends a token, which a page in a browser
    # that rebinds a name to this server does not have: the SDK's DNS-rebinding guard would only refuse
    # the names this server is reached by.
    app = server.streamable_http_app(stateless_http=True, json_response=True,
                                     transport_security=TransportSecuritySettings(
                                         enable_dns_rebinding_protection=False))
    bridge = ASGIMiddleware(app)  # type: ignore[arg-type]
    started = threading.Event()
    asyncio.run_coroutine_threadsafe(_manager_run(server.session_manager, started), bridge.loop)
    if not started.wait(timeout=30):
        raise RuntimeError(f"the MCP session manager did not start in process {pid}")
    return bridge


@csrf_exempt  # a token, never a session: nothing a browser sends on its own is accepted
@login_not_required  # answers 401 in JSON, as the API does
def mcp_view(request: HttpRequest) -> HttpResponse:
    """Check the caller as the JSON API does, then let the SDK answer the MCP exchange."""
    if request.method != "POST":
        # Stateless and answered in JSON, the server opens no event stream: the SDK would hold a GET open with
        # nothing to send, and with it one of the web process's threads, until the client gave up. The protocol's
        # answer for "no stream here" is a 405.
        response = JsonResponse({"error": "MCP is served by POST at this address (Streamable HTTP, no event "
                                          "stream)"}, status=405)
        response["Allow"] = "POST"
        return response
    try:
        if not request.headers.get("Authorization"):
            raise AuthenticationError(401, "authentication required: Authorization: Bearer <token>")
        request.auth = TokenOrSession()(request)  # type: ignore[attr-defined]
    except HttpError as exc:
        return api.on_exception(request, exc)
    body = request.body
    environ = {**request.environ, "SCRIPT_NAME": "", "PATH_INFO": "/mcp", "wsgi.input": io.BytesIO(body),
               "CONTENT_LENGTH": str(len(body)), REQUEST_KEY: request}
    answered: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:  # noqa: ANN401
        answered.update(status=int(status.split()[0]), headers=headers)

    content = b"".join(_bridge(os.getpid())(environ, start_response))  # type: ignore[arg-type]
    response = HttpResponse(content, status=answered["status"])
    for name, value in answered["headers"]:
        if name.lower() not in ("content-length", "connection", "transfer-encoding"):
            response[name] = value
    return response
