"""Search options belong to one conversation: fresh defaults, locked controls, inline validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from chat.models import Conversation, SearchDefaults, default_search_options
from chat.options import DATES, ConversationOptions
from chat.selectors import conversation_sidebar
from rag.dates import NAMED_PERIODS, parse_date_phrase
from rag.retrieval import SearchOptionError

pytestmark = pytest.mark.django_db


def _new_conversation(client) -> Conversation:
    response = client.post("/chat/new/")
    return Conversation.objects.get(pk=int(response["Location"].strip("/").split("/")[-1]))


def test_a_new_conversation_starts_from_the_defaults_not_from_the_last_one(logged_in_client, workspace, licensed):
    first = _new_conversation(logged_in_client)
    logged_in_client.post(f"/chat/{first.pk}/options/", {"dedup": "on", "include_archived": "on", "date": "after",
                                                          "after": "2025-01-01", "doc_type": "api"})
    first.refresh_from_db()
    assert first.search_options["include_archived"] and first.search_options["after"] == "2025-01-01"
    second = _new_conversation(logged_in_client)
    assert second.search_options == default_search_options()
    first.refresh_from_db()
    assert first.search_options["doc_type"] == "api"  # the first keeps its own


def test_make_these_my_defaults_is_where_new_conversations_start(logged_in_client, workspace, user, licensed):
    first = _new_conversation(logged_in_client)
    logged_in_client.post(f"/chat/{first.pk}/options/", {"dedup": "on", "date": "this_year", "doc_type": "api",
                                                          "doc_type_mode": "filter"})
    response = logged_in_client.post(f"/chat/{first.pk}/options/default/", headers={"HX-Request": "true"})
    assert response.status_code == 200 and "New conversations will start with these options." in response.content.decode()
    assert SearchDefaults.objects.get(user=user, workspace=workspace).search_options["doc_type_mode"] == "filter"
    second = _new_conversation(logged_in_client)
    assert second.search_options["date"] == "this_year" and second.search_options["doc_type"] == "api"


def test_a_locked_control_never_overwrites_the_stored_value(logged_in_client, workspace, user):
    # Unlicensed: provenance is Writer Pro's, so its checkbox is disabled and the browser never sends it;
    # a value stored while the workspace had the plan survives, ready for when it has it again.
    conversation = Conversation.objects.create(workspace=workspace, user=user)
    conversation.search_options = {**conversation.search_options, "provenance": True}
    conversation.save(update_fields=["search_options"])
    response = logged_in_client.post(f"/chat/{conversation.pk}/options/", {"dedup": "on", "date": "any"},
                                     headers={"HX-Request": "true"})
    assert response.status_code == 200
    conversation.refresh_from_db()
    assert conversation.search_options["provenance"] is True
    # Even a forged "on" or "off" cannot change it; deduplication is every plan's, so the user's "off" holds.
    logged_in_client.post(f"/chat/{conversation.pk}/options/", {"date": "any"})
    conversation.refresh_from_db()
    assert conversation.search_options["provenance"] is True and conversation.search_options["dedup"] is False
    assert 'id="id_provenance" checked disabled' in response.content.decode()


def test_after_a_date_without_a_date_answers_inline_in_the_panel(logged_in_client, workspace, user, licensed):
    conversation = Conversation.objects.create(workspace=workspace, user=user)
    response = logged_in_client.post(f"/chat/{conversation.pk}/options/", {"dedup": "on", "date": "after"},
                                     headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 422 and html.lstrip().startswith('<aside id="options"')
    assert "Pick the date to search after." in html and "Not applied yet" in html
    conversation.refresh_from_db()
    assert conversation.search_options["date"] == "any"  # nothing stored
    # Without JavaScript, the whole page comes back with the same message in its panel.
    plain = logged_in_client.post(f"/chat/{conversation.pk}/options/", {"dedup": "on", "date": "after"})
    assert plain.status_code == 400 and "Pick the date to search after." in plain.content.decode()
    assert 'class="ask"' in plain.content.decode()


def test_duplicate_titles_are_told_apart_in_the_sidebar(workspace, user):
    for _ in range(3):
        Conversation.objects.create(workspace=workspace, user=user, title="Rate limits?")
    Conversation.objects.create(workspace=workspace, user=user, title="Other")
    labels = [label for _, label in conversation_sidebar(user=user, workspace=workspace)]
    assert sorted(labels) == ["Other", "Rate limits?", "Rate limits? (2)", "Rate limits? (3)"]
    assert labels[0] == "Other" and labels[1] == "Rate limits? (3)"  # newest first, numbered in order of start


def test_doc_type_filter_keeps_other_types_out_and_boost_only_reorders(workspace, api_versions, licensed):
    from rag.models import Document
    from chat.search import search_for_chat

    notes = Document.objects.get(workspace=workspace, path__endswith="notes.md")
    Document.objects.filter(pk=notes.pk).update(doc_type="user")
    question = "escape sequence script alert"
    boosted, _ = search_for_chat(question, workspace=workspace, top_k=5,
                                 options={**default_search_options(), "doc_type": "api"})
    assert notes.pk in {result.document_id for result in boosted}  # a boost never removes a document
    only, applied = search_for_chat(question, workspace=workspace, top_k=5,
                                    options={**default_search_options(), "doc_type": "api", "doc_type_mode": "filter"})
    assert only and {result.doc_type for result in only} == {"api"}
    assert applied["filters"]["doc_types"] == ["api"]


def test_the_conversation_list_page_numbers_duplicate_titles_too(logged_in_client, workspace, user):
    for _ in range(2):
        Conversation.objects.create(workspace=workspace, user=user, title="Same question")
    page = logged_in_client.get("/chat/?all=1").content.decode()
    assert ">Same question</a>" in page and ">Same question (2)</a>" in page


def test_dedup_stored_by_the_old_disabled_box_is_restored_where_no_license_ever_was(workspace, user, licensed):
    import importlib

    from django.apps import apps

    from tests.factories import WorkspaceFactory

    migration = importlib.import_module("chat.migrations.0003_dayone_restore_dedup")
    never_licensed = WorkspaceFactory(members=[user])
    stuck = Conversation.objects.create(workspace=never_licensed, user=user,
                                        search_options={**default_search_options(), "dedup": False})
    chosen = Conversation.objects.create(workspace=workspace, user=user,  # licensed: a person chose it
                                         search_options={**default_search_options(), "dedup": False})
    migration.restore(apps, None)
    stuck.refresh_from_db()
    chosen.refresh_from_db()
    assert stuck.search_options["dedup"] is True and chosen.search_options["dedup"] is False


def test_only_this_type_with_automatic_says_it_needs_a_type(logged_in_client, workspace, licensed):
    conversation = _new_conversation(logged_in_client)
    hint = "“Only this type” needs a type: choose one above. Until then every type is searched."
    panel = logged_in_client.post(f"/chat/{conversation.pk}/options/", {"date": "any", "doc_type": "",
                                                                         "doc_type_mode": "filter"}, HTTP_HX_REQUEST="true")
    assert hint in panel.content.decode()
    assert hint in logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    panel = logged_in_client.post(f"/chat/{conversation.pk}/options/", {"date": "any", "doc_type": "api",
                                                                         "doc_type_mode": "filter"}, HTTP_HX_REQUEST="true")
    assert "needs a type" not in panel.content.decode()


def test_the_options_schema_stores_reads_back_and_fills_the_defaults():
    chosen = ConversationOptions(date="after", after="2025-01-01", as_of_version="3.0")
    assert ConversationOptions.read(chosen.as_json()) == chosen
    assert ConversationOptions().as_json() == default_search_options()
    assert "as_of_version" not in chosen.as_defaults().as_json() and chosen.as_defaults().after == chosen.after
    assert ConversationOptions.read({"after": "", "colour": "blue"}) == ConversationOptions()  # old or odd rows


@pytest.mark.parametrize(("chosen", "field"), [
    ({"date": "after"}, "after"),
    ({"as_of_version": "3.0", "as_of_date": "2025-03-15"}, "as_of_date"),
])
def test_the_options_rules_name_their_field_and_hold_where_options_are_chosen(chosen, field):
    with pytest.raises(ValidationError) as refused:
        ConversationOptions.model_validate(chosen)
    assert [error["loc"] for error in refused.value.errors()] == [(field,)]
    ConversationOptions.read(chosen)  # stored ones are searched as they say


def test_a_stored_option_of_the_wrong_type_is_a_search_option_error():
    with pytest.raises(SearchOptionError, match="^after: "):
        ConversationOptions.read({"date": "after", "after": "someday"})


def test_every_named_date_choice_is_a_period_rag_reads():
    named = [key for key in DATES if key not in ("any", "after")]
    assert named == list(NAMED_PERIODS)
    assert all(parse_date_phrase(NAMED_PERIODS[key]).start for key in named)
