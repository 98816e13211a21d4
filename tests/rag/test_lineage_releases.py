""""3.0" and "3.0.0" are one release: one label in sources, in the API, and once in "Answer as of", newest first."""

from __future__ import annotations

import pytest

from chat.models import Conversation
from rag.releases import version_key
from rag.releases.display import release_labels
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


def test_answer_as_of_lists_each_release_once_newest_first(releases):
    assert version_labels(workspace=releases) == ["3.0", "2.1.2", "2.1"]


def test_sources_show_one_label_for_one_release(releases):
    results = search("admin port 9090", SearchOptions(workspace=releases.pk, top_k=5, mode="lexical"))
    by_path = {result.path: result.version_label for result in results}
    assert by_path["/d/admin-api-3.0.0.md"] == by_path["/d/security-3.0.md"] == "3.0"


def test_a_stored_as_of_label_of_the_same_release_is_offered_once(logged_in_client, releases, user):
    conversation = Conversation.objects.create(user=user, workspace=releases,
                                               search_options={"as_of_version": "3.0.0"})
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    select = page[page.index('name="as_of_version"'):page.index("</select>", page.index('name="as_of_version"'))]
    assert select.count("<option") == 4  # Latest, 3.0, 2.1.2, 2.1
    assert '<option value="3.0" selected>3.0</option>' in select and "3.0.0" not in select


def test_a_document_page_shows_its_release_and_the_label_its_file_gave(logged_in_client, releases):
    document = releases.documents.get(version_label="3.0.0")
    page = logged_in_client.get(f"/documents/{document.pk}/").content.decode()
    assert "<dd>3.0 <span class=\"muted\">(labelled 3.0.0 · from" in page


def test_the_compare_page_shows_the_release_as_the_document_page_does(logged_in_client, releases):
    newer, older = releases.documents.get(version_label="3.0.0"), releases.documents.get(path="/d/user-guide-2.1.md")
    page = logged_in_client.get(f"/documents/{newer.pk}/compare/?with={older.pk}").content.decode()
    assert "<h1>Changes from 2.1 to 3.0</h1>" in page
    assert "· 3.0 ·" in page and "· 3.0.0 ·" not in page and "Added in 3.0<" in page
