"""Chat pages: one view per action, HTMX fragments from the same templates."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from chat import services
from chat.answering import llm_configured
from chat.forms import AskForm, SearchOptionsForm
from chat.models import Message
from chat.selectors import conversation_get, conversation_list
from licensing.features import PROVENANCE, RETRIEVAL_INTEGRATION
from licensing.services import has_feature, tier_for_feature
from rag.models import DocType
from rag.selectors import version_labels


def _doc_type_choices() -> list[tuple[str, str]]:
    return [(dt.slug, dt.name) for dt in DocType.objects.all()]


def _page_context(request: HttpRequest, conversation, options_form=None) -> dict:
    workspace = conversation.workspace
    options = dict(conversation.search_options)
    form = options_form or SearchOptionsForm(initial=options, doc_types=_doc_type_choices(),
                                             version_labels=version_labels(workspace=workspace))
    return {
        "conversation": conversation,
        "conversations": conversation_list(user=request.user, workspace=workspace)[:30],
        "messages_list": conversation.messages.all(),
        "ask_form": AskForm(),
        "options_form": form,
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
    return render(request, "chat/index.html", {"conversations": conversations})


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
    asked, reply = services.message_ask(
        conversation=conversation, question=form.cleaned_data["question"], stream=bool(request.htmx)
    )
    if request.htmx:
        return render(request, "chat/partials/_exchange.html", {"messages_pair": [asked, reply], "conversation": conversation})
    return redirect(f"/chat/{conversation.pk}/#m{reply.pk}")


@require_POST
def options_update(request: HttpRequest, pk: int) -> HttpResponse:
    conversation = conversation_get(user=request.user, pk=pk)
    form = SearchOptionsForm(request.POST, doc_types=_doc_type_choices(),
                             version_labels=version_labels(workspace=conversation.workspace))
    if not form.is_valid():
        if request.htmx:
            # 422, not 400: the panel comes back with its messages inline, and django-htmx's debug
            # script would replace the whole page with a 400 response.
            context = _page_context(request, conversation, options_form=form)
            return render(request, "chat/conversation.html#options", context, status=422)
        return HttpResponseBadRequest("Bad search options: " + "; ".join(
            f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    services.conversation_options_update(conversation=conversation, options=form.as_options())
    if request.htmx:
        return render(request, "chat/conversation.html#options", _page_context(request, conversation))
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
    """
    message = _own_message(request, pk)
    response = StreamingHttpResponse(services.message_stream(message=message), content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
