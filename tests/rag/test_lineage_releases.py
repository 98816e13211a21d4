""""3.0" and "3.0.0" are one release: one label in sources, in the API; "Answer as of" offers lines ("2.1", its newest
patch 2.1.2 answering), newest first."""

from __future__ import annotations

import pytest

from chat.models import Conversation
from rag.releases import version_key
from rag.releases.display import release_labels, release_line_said, release_lines
from rag.retrieval import SearchOptions, search
from rag.selectors import version_labels
from tests.rag.retrieval_helpers import add_document
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db


def _labelled(workspace, path: str, label: str, text: str):
    return add_document(workspace, path, [text], version_label=label, version_key=version_key(label))


@pytest.fixture
def releases(workspace):
    _labelled(workspace, "/d/admin-api-3.0.0.md", "3.0.0", "The admin API listens on port 9090 by default.")
    _labelled(workspace, "/d/user-guide-3.0.md", "3.0", "The proxy listens on port 8080 for client traffic.")
    _labelled(workspace, "/d/security-3.0.md", "3.0", "Never expose the admin port 9090 to the internet.")
    _labelled(workspace, "/d/user-guide-2.1.md", "2.1", "The proxy listens on port 8000 for client traffic.")
    _labelled(workspace, "/d/notes-2.1.2.md", "2.1.2", "Release 2.1.2 fixes the admin port binding.")
    return workspace


def test_each_release_has_one_label_the_one_most_documents_carry(releases):
    assert release_labels(workspace_id=releases.pk) == {
        version_key("3.0"): "3.0", version_key("2.1"): "2.1", version_key("2.1.2"): "2.1.2"}


def test_answer_as_of_lists_each_release_line_once_newest_first(releases):
    # A person picks the 2.1 line; its newest patch answers (issue 54): 2.1.2 is not offered beside 2.1.
    assert version_labels(workspace=releases) == ["3.0", "2.1"]
    assert release_lines(workspace_id=releases.pk) == {"3.0": "3.0", "2.1": "2.1.2"}


def test_an_answer_names_the_line_and_the_patch_that_answers(releases):
    assert release_line_said(workspace_id=releases.pk, label="2.1") == "2.1 (2.1.2)"
    assert release_line_said(workspace_id=releases.pk, label="2.1.2") == "2.1 (2.1.2)"
    assert release_line_said(workspace_id=releases.pk, label="3.0.0") == "3.0"  # the line is its own newest


def test_sources_show_one_label_for_one_release(releases):
    results = search("admin port 9090", SearchOptions(workspace=releases.pk, top_k=5, mode="lexical"))
    by_path = {result.path: result.version_label for result in results}
    assert by_path["/d/admin-api-3.0.0.md"] == by_path["/d/security-3.0.md"] == "3.0"


def test_a_stored_as_of_label_of_the_same_release_is_offered_once(logged_in_client, releases, user):
    conversation = Conversation.objects.create(user=user, workspace=releases,
                                               search_options={"as_of_version": "3.0.0"})
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    select = page[page.index('name="as_of_version"'):page.index("</select>", page.index('name="as_of_version"'))]
    assert select.count("<option") == 3  # Latest, 3.0, 2.1
    assert '<option value="3.0" selected>3.0</option>' in select and "3.0.0" not in select


def test_a_stored_patch_is_offered_as_its_line(logged_in_client, releases, user):
    conversation = Conversation.objects.create(user=user, workspace=releases,
                                               search_options={"as_of_version": "2.1.2"})
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    select = page[page.index('name="as_of_version"'):page.index("</select>", page.index('name="as_of_version"'))]
    assert select.count("<option") == 3 and "2.1.2" not in select
    assert '<option value="2.1" selected>2.1</option>' in select


def test_a_document_page_shows_its_release_and_the_label_its_file_gave(logged_in_client, releases):
    document = releases.documents.get(version_label="3.0.0")
    page = logged_in_client.get(f"/documents/{document.pk}/").content.decode()
    assert "<dd>3.0 <span class=\"muted\">(labelled 3.0.0 · from" in page


def test_the_compare_page_shows_the_release_as_the_document_page_does(logged_in_client, releases):
    newer, older = releases.documents.get(version_label="3.0.0"), releases.documents.get(path="/d/user-guide-2.1.md")
    page = logged_in_client.get(f"/documents/{newer.pk}/compare/?with={older.pk}").content.decode()
    assert "<h1>Changes from 2.1 to 3.0</h1>" in page
    assert "· 3.0 ·" in page and "· 3.0.0 ·" not in page and "Added in 3.0<" in page
