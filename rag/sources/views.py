"""The Sources page under Documents: list, add (the add_source permission: a source reads the server's folders),
"Sync now"."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from rag.sources.forms import SourceForm
from rag.sources.selectors import source_get, source_list, source_row
from rag.sources.services import SourceError, source_add, source_sync_request


@require_http_methods(["GET", "POST"])
def sources(request: HttpRequest) -> HttpResponse:
    if request.workspace is None:
        return render(request, "rag/no_workspace.html")
    form = SourceForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if not request.user.has_perm("rag.add_source"):
            messages.error(request, "Only staff allowed to add sources do: a source reads folders and repositories "
                                    "on the server.")
            return redirect("sources")
        if form.is_valid():
            try:
                source = source_add(workspace=request.workspace, user=request.user, **form.cleaned_data)
            except SourceError as exc:
                form.add_error(None, str(exc))
            else:
                then = (f"then every {source.every_minutes} min" if source.every_minutes
                        else "then when someone presses Sync now (no schedule)")
                messages.success(request, f"Added {source.name}: its first sync is queued, {then}.")
                return redirect("sources")
        status = 400
    return render(request, _template(request), {**_table(request), "form": form}, status=status)


def _table(request: HttpRequest) -> dict:
    staff = request.user.is_staff  # members read why a sync failed, not where on the server
    rows = [(source, source_row(source, staff=staff)) for source in source_list(workspace=request.workspace)]
    # While a sync is queued or running the table asks again (hx-trigger="every 2s"), as a job's page does.
    syncing = any(row["sync_queued"] or (row["last_job_id"] and not row["last_job_finished"]) for _s, row in rows)
    return {"rows": rows, "syncing": syncing}


def _template(request: HttpRequest) -> str:
    return "rag/sources.html#source-table" if request.htmx else "rag/sources.html"


@require_POST
def source_sync_now(request: HttpRequest, pk: int) -> HttpResponse:
    source = source_get(user=request.user, pk=pk)
    failure = ""
    try:
        source_sync_request(source=source, user=request.user)
    except SourceError as exc:
        failure = f"{source.name}: {exc}"
    if not request.htmx:  # without JavaScript: the page again, with what happened
        if failure:
            messages.error(request, failure)
        else:
            messages.info(request, f"{source.name}: sync queued; its job shows here once a worker starts it.")
        return redirect("sources")
    return render(request, _template(request), {**_table(request), "sync_failure": failure})
