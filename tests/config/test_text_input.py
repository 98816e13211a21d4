"""Text PostgreSQL cannot store is a 400 naming the field, never a 500 (config/text_input.py, issue 49).

A question, `doc_type`, `as_of_version` or a search `q` holding U+0000 was an HTML 500 from psycopg. The property
test throws generated strings (control characters, lone surrogates, very long ones, right-to-left marks) at every
API route and every form, field by field, and asserts that nothing answers 500.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest
from django.contrib.auth.forms import AuthenticationForm
from django.test import Client
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from chat.api import AnswerIn, AskIn, Workspaced
from chat.forms import AskForm, SearchOptionsForm
from chat.models import Conversation
from rag.api import SearchQuery
from rag.forms import DocumentFilterForm
from rag.sources.forms import SourceForm
from tests.factories import UserFactory
from tests.rag.retrieval_helpers import add_document

pytestmark = pytest.mark.django_db

NUL = "\x00"
# Each example fills every field of one request: the inputs thrown are the fields of all the examples.
EXAMPLES, WANTED_INPUTS = 1_000, 10_000


@pytest.fixture
def member(client, workspace, user, settings):
    settings.CHAT_ASKS_PER_MINUTE = 1_000_000  # the rate is not under test: every ask reaches the answer
    settings.API_REQUESTS_PER_MINUTE = 0
    settings.AXES_FAILURE_LIMIT = 1_000_000
    add_document(workspace, "/srv/share/limits.md", ["Each API key may send 1200 requests per minute."],
                 display_path="limits.md", doc_type="api")
    client.force_login(user)
    return client


# --- one request-level check: a 400 naming the field -------------------------------------------------------


@pytest.mark.parametrize(("method", "url", "data", "field"), [
    ("get", "/api/v1/search", {"q": f"port{NUL}"}, "q"),
    ("get", "/api/v1/search", {"q": "port", "as_of_version": f"3{NUL}"}, "as_of_version"),
    ("post", "/api/v1/answers", {"question": f"How many{NUL}?"}, "question"),
    ("post", "/api/v1/answers", {"question": "How many?", "doc_type": f"api{NUL}"}, "doc_type"),
    ("post", "/api/v1/answers", {"question": "How many \ud800?"}, "question"),  # a lone surrogate: no UTF-8
    ("post", "/api/v1/conversations", {"as_of_version": f"2.0{NUL}"}, "as_of_version"),
])
def test_the_api_refuses_unstorable_text_with_a_json_400_naming_the_field(member, method, url, data, field):
    if method == "get":
        response = member.get(url, data)
    else:
        response = member.post(url, json.dumps(data), content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert response.json()["field"] == field and response.json()["error"].startswith(f"{field}: ")


def test_a_form_posted_to_the_api_is_read_by_the_api_after_the_check(member):
    """The check reads a form body; the API still reads it (a multipart body read as a stream was a 500)."""
    assert member.post("/api/v1/answers", {"question": f"How{NUL}?"}).json()["field"] == "question"
    assert member.post("/api/v1/answers", {"question": "How many?"}).status_code == 400  # a form is no JSON body


def test_forms_and_page_parameters_refuse_unstorable_text_naming_the_field(member, workspace, user):
    conversation = Conversation.objects.create(workspace=workspace, user=user)
    for response, field in (
        (member.get("/documents/", {"q": f"plan{NUL}"}), "q"),
        (member.post(f"/chat/{conversation.pk}/ask/", {"question": f"How{NUL}?"}), "question"),
        (member.post(f"/chat/{conversation.pk}/options/", {"date": "any", "doc_type": f"a{NUL}"}), "doc_type"),
        (member.post("/account/tokens/", {"name": f"ci{NUL}"}), "name"),
        (Client().post("/accounts/login/", {"username": f"al{NUL}ice", "password": "x"}), "username"),
    ):
        assert response.status_code == 400 and response.content.decode().startswith(f"{field}: "), field


# --- the property test ------------------------------------------------------------------------------------

ANY_CHARACTER = st.characters(exclude_categories=())  # lone surrogates and control characters included
NASTY = st.one_of(
    st.text(ANY_CHARACTER, max_size=40),
    st.text(st.sampled_from(["\x00", "\x01", "\x1b", "\x7f", "\u200f", "\u202e", "\u2066", "\ufeff", "\ud800",
                             "\udfff", "\u0301", "a", "é", " ", "/", "%", "'", '"', "<", "\\"]), max_size=30),
    # Very long: a short piece repeated (generating thousands of characters one by one costs more than a request).
    st.builds(lambda piece, times: (piece * times)[:6_000], st.text(ANY_CHARACTER, min_size=1, max_size=8),
              st.integers(min_value=200, max_value=6_000)),
    # Or a value the field takes, so that the other fields' strings get past its validation.
    st.sampled_from(["", " ", "3.0", "2025-01-01", "api", "any", "after", "boost", "filter", "hybrid", "true", "5"]),
)


@dataclass
class Target:
    """One route or form: its fields, and how to send them."""

    name: str
    fields: tuple[str, ...]
    send: Callable[[dict[str, str]], object]


def _as_sent(values: dict[str, str]) -> str:
    """A form's or query string's bytes as a client sends them: UTF-8, a lone surrogate as its invalid bytes."""
    return urlencode({field: value.encode("utf-8", "surrogatepass") for field, value in values.items()})


BOUNDARY = "docent-fuzz-boundary"


def _multipart(file_name: str, file_info: str) -> bytes:
    """A browser's upload of one file named `file_name`, its name escaped as the HTML standard says
    (`"`, CR and LF as %22, %0D, %0A), so that the server, not the test's client, meets whatever it holds."""
    name = file_name.encode("utf-8", "surrogatepass")
    for raw, escaped in ((b'"', b"%22"), (b"\r", b"%0D"), (b"\n", b"%0A")):
        name = name.replace(raw, escaped)
    boundary = BOUNDARY.encode()
    return b"\r\n".join([
        b"--" + boundary, b'Content-Disposition: form-data; name="file_info"', b"",
        file_info.encode("utf-8", "surrogatepass"),
        b"--" + boundary, b'Content-Disposition: form-data; name="files"; filename="' + name + b'"',
        b"Content-Type: text/plain", b"", b"hello",
        b"--" + boundary + b"--", b"",
    ])


def _targets(member: Client, staff: Client, anonymous: Client, *, conversation: Callable[[], int],
             document: int) -> list[Target]:
    """Every API route that reads text and every form, with the fields its schema or form class declares."""
    def get(url: str | Callable[[], str], client: Client = member) -> Callable[[dict[str, str]], object]:
        return lambda values: client.get(f"{url() if callable(url) else url}?{_as_sent(values)}")

    def post(url: str | Callable[[], str], client: Client = member) -> Callable[[dict[str, str]], object]:
        return lambda values: client.post(url() if callable(url) else url, _as_sent(values),
                                          content_type="application/x-www-form-urlencoded")

    def post_json(url: str | Callable[[], str]) -> Callable[[dict[str, str]], object]:
        return lambda values: member.post(url() if callable(url) else url, json.dumps(values),
                                          content_type="application/json")

    def upload(values: dict[str, str]) -> object:
        return member.post("/documents/upload/", _multipart(values["name"], values["file_info"]),
                           content_type=f"multipart/form-data; boundary={BOUNDARY}")

    def chat(path: str) -> Callable[[], str]:
        return lambda: f"/chat/{conversation()}/{path}"  # a fresh conversation: its page stays one question long

    options = (*SearchOptionsForm.base_fields, "doc_type", "as_of_version")
    return [
        Target("GET /api/v1/search", tuple(SearchQuery.model_fields), get("/api/v1/search")),
        Target("POST /api/v1/answers", tuple(AnswerIn.model_fields), post_json("/api/v1/answers")),
        Target("POST /api/v1/conversations", tuple(Workspaced.model_fields), post_json("/api/v1/conversations")),
        Target("GET /api/v1/conversations", ("workspace", "page", "limit", "offset"), get("/api/v1/conversations")),
        Target("POST /api/v1/conversations/{id}/messages", tuple(AskIn.model_fields),
               post_json(lambda: f"/api/v1/conversations/{conversation()}/messages")),
        Target("GET /documents/", (*DocumentFilterForm.base_fields, "page"), get("/documents/")),
        Target("POST /chat/{pk}/ask/", tuple(AskForm.base_fields), post(chat("ask/"))),
        Target("POST /chat/{pk}/options/", options, post(chat("options/"))),
        Target("GET /chat/{pk}/", ("page",), get(chat(""))),
        Target("GET /documents/{pk}/", ("chunk", "s"), get(f"/documents/{document}/")),
        Target("GET /documents/{pk}/compare/", ("with",), get(f"/documents/{document}/compare/")),
        Target("POST /workspaces/switch/", ("workspace", "next"), post("/workspaces/switch/")),
        Target("POST /account/tokens/", ("name",), post("/account/tokens/")),
        Target("POST /accounts/login/", (*AuthenticationForm.base_fields, "next"), post("/accounts/login/", anonymous)),
        Target("POST /documents/upload/", ("name", "file_info"), upload),
        Target("POST /documents/sources/", tuple(SourceForm.base_fields), post("/documents/sources/", staff)),
    ]


@pytest.fixture
def quiet_refusals():
    """A line per refused request (django.request's 4xx warnings) would cost more than the requests; a 500 is
    still logged, as an error."""
    request_log = logging.getLogger("django.request")
    level, request_log.level = request_log.level, logging.ERROR
    yield
    request_log.setLevel(level)


def test_no_generated_input_is_a_500(member, workspace, user, quiet_refusals):
    """At least WANTED_INPUTS generated strings over every API route and form, none answered with a 500."""
    superuser = UserFactory(is_staff=True, is_superuser=True)
    workspace.members.add(superuser)
    staff = Client(raise_request_exception=False)
    staff.force_login(superuser)
    member.raise_request_exception = False  # a 500 is a status to assert on, with the request that caused it

    def conversation() -> int:
        return Conversation.objects.create(workspace=workspace, user=user).pk

    targets = _targets(member, staff, Client(raise_request_exception=False), conversation=conversation,
                       document=workspace.documents.get().pk)
    # Drawn in proportion to their fields (at least four), so that a field of the search is thrown at about as often
    # as the question of a chat.
    weighted = [target for target in targets for _share in range(max(4, len(target.fields)))]
    thrown: list[int] = []

    @hypothesis_settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def throw(data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(weighted), label="target")
        values = {field: data.draw(NASTY, label=field) for field in target.fields}
        response = target.send(values)
        thrown.append(len(values))
        assert response.status_code < 500, (target.name, values, response.content[:500])

    throw()
    assert sum(thrown) >= WANTED_INPUTS, sum(thrown)
