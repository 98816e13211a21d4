"""Document pages. Views check input, call one selector or service, render."""

from __future__ import annotations

import logging
import re

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.contrib.staticfiles import finders
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from rag.chunk_blocks import chunk_blocks
from rag.forms import DocumentFilterForm, UploadForm
from rag.releases import release_labels
from rag.comparison import document_comparison
from rag.middleware import SESSION_KEY
from rag.models import DocType, Document
from rag.selectors import (
    document_attachments,
    document_compare_base,
    document_family,
    document_get,
    document_list,
    document_siblings,
    job_get,
    job_list,
    sees_server_paths,
    workspace_get,
)
from rag.progress import job_progress, upload_received
from rag.documents import document_retry_job, documents_remove
from rag.sentences import sentence_spans
from rag.storage import StorageUnavailable
from rag.tokens import api_token_create, api_token_list, api_token_revoke
from rag.uploads import job_retry_create, upload_job_create, workspace_storage

logger = logging.getLogger(__name__)


@require_POST
def workspace_switch(request: HttpRequest) -> HttpResponse:
    slug = request.POST.get("workspace", "")
    if not slug:
        return HttpResponseBadRequest("Choose a workspace.")
    workspace = workspace_get(user=request.user, slug=slug)
    request.session[SESSION_KEY] = workspace.pk
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        target = "home"
    return redirect(target)


def _no_workspace(request: HttpRequest) -> HttpResponse:
    return render(request, "rag/no_workspace.html")


@require_GET
def documents(request: HttpRequest) -> HttpResponse:
    if request.workspace is None:
        return _no_workspace(request)
    form = DocumentFilterForm(request.GET)
    if not form.is_valid():
        return HttpResponseBadRequest("Bad filter: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    filters = form.cleaned_data
    queryset = document_list(
        workspace=request.workspace, doc_type=filters["doc_type"], status=filters["status"], query=filters["q"],
        date_from=filters["date_from"], date_to=filters["date_to"], full_paths=sees_server_paths(request.user),
    )
    page = Paginator(queryset, 50).get_page(request.GET.get("page"))
    context = {"form": form, "page": page, "doc_types": DocType.objects.all(), "jobs": job_list(workspace=request.workspace)[:5],
               "storage": workspace_storage(workspace=request.workspace)}
    template = "rag/documents.html#document-table" if request.htmx else "rag/documents.html"
    return render(request, template, context)


_SENTENCE_ID = re.compile(r"^(\d+)\.(\d+)$")


def _cited_ranges(text: str, chunk_id: int, sentence_ids: list[str]) -> list[tuple[int, int]]:
    """(start, end) of the cited sentences of this chunk, so the template can mark them."""
    wanted = {int(m.group(2)) for m in map(_SENTENCE_ID.match, sentence_ids) if m and int(m.group(1)) == chunk_id}
    return [(span.start, span.end) for span in sentence_spans(text) if span.index in wanted]


@require_GET
def document_detail(request: HttpRequest, pk: int) -> HttpResponse:
    document = document_get(user=request.user, pk=pk)
    chunks = list(document.chunks.select_related("superseded_by__document").order_by("chunk_index"))
    highlight = request.GET.get("chunk", "")
    sentence_ids = [s for s in request.GET.get("s", "").split(",") if s]
    if (highlight and not highlight.isdigit()) or any(not _SENTENCE_ID.match(s) for s in sentence_ids):
        return HttpResponseBadRequest("chunk must be a chunk id and s a comma-separated list of chunk_id.sentence ids")
    for chunk in chunks:
        cited = _cited_ranges(chunk.text, chunk.pk, sentence_ids) if str(chunk.pk) == highlight else []
        chunk.blocks = chunk_blocks(chunk.text, cited)
    context = {"document": document, "chunks": chunks, "highlight": highlight, "family": document_family(document=document),
               "releases": release_labels(workspace_id=document.workspace_id),
               "attachments": document_attachments(document=document), "siblings": document_siblings(document=document)}
    return render(request, "rag/document_detail.html", context)


@require_POST
def document_retry(request: HttpRequest, pk: int) -> HttpResponse:
    """Index a failed document again; an attachment is indexed again with its message, which holds its bytes."""
    document = document_get(user=request.user, pk=pk)
    job = document_retry_job(document=document, created_by=request.user)
    if job is None:
        messages.error(request, "Nothing to index again.")
        return redirect("document-detail", pk=pk)
    messages.info(request, f"Indexing {document.shown_path} again.")
    return redirect("job-detail", pk=job.pk)


@require_http_methods(["GET", "POST"])
def document_remove(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks for confirmation (works without JavaScript); POST removes the document for good."""
    document = document_get(user=request.user, pk=pk)
    if request.method == "GET":
        return render(request, "rag/document_remove.html", {"document": document})
    removed = documents_remove(documents=Document.objects.filter(pk=document.pk))
    messages.success(request, f"Removed {document.shown_path}" + (f" and {removed - 1} attachment(s)." if removed > 1 else "."))
    return redirect("documents")


@require_GET
def document_compare(request: HttpRequest, pk: int) -> HttpResponse:
    other = request.GET.get("with", "")
    if other and not other.isdigit():
        return HttpResponseBadRequest("with must be a document id")
    document = document_get(user=request.user, pk=pk)
    base = document_compare_base(user=request.user, document=document, other_id=int(other) if other else None)
    comparison = document_comparison(first=base, second=document) if base else None
    return render(request, "rag/compare.html", {"document": document, "comparison": comparison,
                                                "releases": release_labels(workspace_id=document.workspace_id)})


@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    if request.workspace is None:
        return _no_workspace(request)
    form = UploadForm(request.POST or None, request.FILES or None)
    limits = workspace_storage(workspace=request.workspace)
    if request.method == "POST":
        refused = getattr(request, "upload_refused", "")  # the whole upload stopped as it arrived (rag.uploads.limits)
        if refused:
            return render(request, "rag/upload.html", {"form": UploadForm(), "limits": limits, "refused": refused},
                          status=413)
        if not form.is_valid():
            return render(request, "rag/upload.html", {"form": form, "limits": limits}, status=400)
        try:
            job = upload_job_create(workspace=request.workspace, files=form.incoming_files(), created_by=request.user)
        except StorageUnavailable:
            logger.exception("upload not stored: the file storage is unreachable")
            refused = "The file storage cannot be reached just now; nothing was queued. Try again in a minute."
            return render(request, "rag/upload.html", {"form": UploadForm(), "limits": limits, "refused": refused},
                          status=503)
        text, warns = upload_received(job=job)
        (messages.warning if warns else messages.info)(request, text)
        return redirect("job-detail", pk=job.pk)
    return render(request, "rag/upload.html", {"form": form, "limits": limits})


def _duration(elapsed) -> str:
    seconds = max(0, round(elapsed.total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


@require_GET
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = job_get(user=request.user, pk=pk)
    context = {"job": job, "progress": job_progress(job=job), "items": job.items.select_related("document"),
               "took": _duration(job.finished_at - job.created_at) if job.finished_at else ""}
    template = "rag/job_detail.html#job-status" if request.htmx else "rag/job_detail.html"
    return render(request, template, context)


@require_POST
def job_retry(request: HttpRequest, pk: int) -> HttpResponse:
    """Try a job's failed and skipped files again, as a new job."""
    job = job_get(user=request.user, pk=pk)
    again = job_retry_create(job=job, created_by=request.user)
    if again is None:
        messages.info(request, "No failed or skipped file to try again.")
        return redirect("job-detail", pk=pk)
    return redirect("job-detail", pk=again.pk)


@login_not_required  # browsers ask for it on every page, the login page included
@cache_control(max_age=86400, public=True)
@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    found = finders.find("favicon.ico")
    if not found:
        raise Http404("no favicon")
    return FileResponse(open(found, "rb"), content_type="image/x-icon")


NEW_TOKEN_SESSION_KEY = "new_api_token"


@never_cache  # a freshly made token is on this page once; no cache may keep it
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    """The user's personal API tokens. POST makes one, then redirects (a reload must not make another);
    the next GET shows its text, once."""
    if request.method == "POST":
        name = request.POST.get("name", "").strip()
        if not name or len(name) > 100:
            messages.error(request, "Name the token (at most 100 characters), e.g. 'CI docs check'.")
        else:
            _token, request.session[NEW_TOKEN_SESSION_KEY] = api_token_create(user=request.user, name=name)
        return redirect("api-tokens")
    created = request.session.pop(NEW_TOKEN_SESSION_KEY, "")
    return render(request, "rag/api_tokens.html", {"tokens": api_token_list(user=request.user), "created": created})


@require_POST
def api_token_revoke_view(request: HttpRequest, pk: int) -> HttpResponse:
    token = api_token_revoke(user=request.user, token_id=pk)
    messages.success(request, f"Revoked {token}.")
    return redirect("api-tokens")
