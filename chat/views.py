"""Chat pages: one view per action, HTMX fragments from the same templates."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import reswap, retarget

from chat import services
from chat.answering import llm_configured
from chat.forms import AskForm, SearchOptionsForm
from chat.models import Message
from chat.options import ConversationOptions
from chat.selectors import conversation_get, conversation_list, conversation_sidebar
from chat.streams import stream_slot_take
from licensing.features import PROVENANCE, RETRIEVAL_INTEGRATION
from licensing.services import has_feature, tier_for_feature
from rag.models import DocType
from rag.selectors import version_labels


def _doc_type_choices() -> list[tuple[str, str]]:
    return [(dt.slug, dt.name) for dt in DocType.objects.all()]


def _options_form(conversation, data=None) -> SearchOptionsForm:
    """The options panel's form; a control the plan does not offer is locked to the stored value."""
    # Deduplication is every plan's; provenance is Writer Pro's.
    provenance = has_feature(conversation.workspace_id, PROVENANCE)
    return SearchOptionsForm(
        data, initial=ConversationOptions.read(conversation.search_options).as_json(), doc_types=_doc_type_choices(),
        version_labels=version_labels(workspace=conversation.workspace), locked=() if provenance else ("provenance",),
    )


def _page_context(request: HttpRequest, conversation, options_form=None, options_saved: str = "") -> dict:
    workspace = conversation.workspace
    return {
        "conversation": conversation,
        "conversations": conversation_sidebar(user=request.user, workspace=workspace),
        "options_saved": options_saved,
        "messages_list": conversation.messages.all(),
        "ask_form": AskForm(),
        "options_form": options_form or _options_form(conversation),
        # Near-duplicate collapse and newest versions are every plan's; merged records and provenance are Writer Pro's.
        "canonical_licensed": has_feature(workspace.pk, RETRIEVAL_INTEGRATION),
        "provenance_licensed": has_feature(workspace.pk, PROVENANCE),
        "feature_tier": tier_for_feature(PROVENANCE),
        "llm": llm_configured(),
    }


@require_GET
def conversation_index(request: HttpRequest) -> HttpResponse:
    if request.workspace is None:
        return render(request, "rag/no_workspace.html")
    conversations = conversation_list(user=request.user, workspace=request.workspace)
    latest = conversations.first()
    if latest is not None and not request.GET.get("all"):
        return redirect("conversation-detail", pk=latest.pk)
    labelled = conversation_sidebar(user=request.user, workspace=request.workspace, limit=None)
    return render(request, "chat/index.html", {"conversations": labelled})


@require_POST
def conversation_new(request: HttpRequest) -> HttpResponse:
    if request.workspace is None:
        return render(request, "rag/no_workspace.html")
    conversation = services.conversation_create(user=request.user, workspace=request.workspace)
    return redirect("conversation-detail", pk=conversation.pk)


@never_cache  # Back from a cited document must show the exchange just appended, not a cached page.
@require_GET
def conversation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    conversation = conversation_get(user=request.user, pk=pk)
    services.messages_expire_pending(conversation=conversation)
    return render(request, "chat/conversation.html", _page_context(request, conversation))


@require_POST
def message_create(request: HttpRequest, pk: int) -> HttpResponse:
    conversation = conversation_get(user=request.user, pk=pk)
    form = AskForm(request.POST)
    if not form.is_valid():
        if request.htmx:
            return HttpResponseBadRequest("Type a question (at most 2,000 characters).")
        context = _page_context(request, conversation)
        context["ask_form"] = form
        return render(request, "chat/conversation.html", context, status=400)
    try:
        # Generated answers always run in the answers queue: a request without HX-Request must not hold a thread either.
        asked, reply = services.message_ask(conversation=conversation, question=form.cleaned_data["question"], stream=True)
    except services.AskRefused as refused:
        if request.htmx:
            # Into the form's error line (the form swaps a 429 in), the typed question kept.
            refusal = render(request, "chat/partials/_ask_refused.html", {"reason": str(refused)}, status=429)
            return reswap(retarget(refusal, "#ask-error"), "innerHTML")
        form.add_error("question", str(refused))
        context = _page_context(request, conversation)
        context["ask_form"] = form
        return render(request, "chat/conversation.html", context, status=429)
    if request.htmx:
        return render(request, "chat/partials/_exchange.html", {
            "messages_pair": [asked, reply], "conversation": conversation,
            "conversations": conversation_sidebar(user=request.user, workspace=conversation.workspace),
        })
    return redirect(f"/chat/{conversation.pk}/#m{reply.pk}")


@require_POST
def options_update(request: HttpRequest, pk: int) -> HttpResponse:
    conversation = conversation_get(user=request.user, pk=pk)
    form = _options_form(conversation, request.POST)
    if not form.is_valid():
        # The panel comes back with its messages inline and nothing stored. With HTMX it is 422, not
        # 400: django-htmx's debug script would replace the whole page with a 400 response. Without
        # JavaScript the whole conversation page comes back, the panel saying what to fix.
        context = _page_context(request, conversation, options_form=form)
        if request.htmx:
            return render(request, "chat/conversation.html#options", context, status=422)
        return render(request, "chat/conversation.html", context, status=400)
    services.conversation_options_update(conversation=conversation, options=form.as_options())
    if request.htmx:
        return render(request, "chat/conversation.html#options", _page_context(request, conversation))
    return redirect("conversation-detail", pk=conversation.pk)


@require_POST
def options_make_default(request: HttpRequest, pk: int) -> HttpResponse:
    conversation = conversation_get(user=request.user, pk=pk)
    services.search_defaults_save(conversation=conversation)
    saved = "New conversations will start with these options."
    if request.htmx:
        return render(request, "chat/conversation.html#options", _page_context(request, conversation, options_saved=saved))
    return redirect("conversation-detail", pk=conversation.pk)


def _own_message(request: HttpRequest, pk: int) -> Message:
    message = get_object_or_404(Message.objects.select_related("conversation__workspace"), pk=pk)
    conversation_get(user=request.user, pk=message.conversation_id)  # 404 unless it is theirs
    return message


@require_GET
def message_detail(request: HttpRequest, pk: int) -> HttpResponse:
    message = _own_message(request, pk)
    return render(request, "chat/partials/_message.html", {"message": message, "conversation": message.conversation})


@require_GET
def message_stream(request: HttpRequest, pk: int) -> HttpResponse:
    """Plain-text stream of a pending LLM answer, read from its row; the page swaps in the saved message at the end.

    Read-only: the POST that asked started the generation, so a reload or a second tab only watches.
    Bounded in count per process (429 past it) and in time (chat.streams, chat.services.message_stream).
    """
    message = _own_message(request, pk)
    pieces = stream_slot_take(services.message_stream(message=message))
    if pieces is None:  # this process serves its limit of streams: the page tries again (429, not a 5xx to log)
        return HttpResponse("The server is busy with other answers; this answer follows in a moment.", status=429, headers={"Retry-After": "2"},
                            content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(pieces, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
