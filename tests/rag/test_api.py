"""`GET /api/v1/search` and `/metrics`: authentication, workspace scope, JSON errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from rag.middleware import SESSION_KEY
from rag.tokens import api_token_create
from tests.factories import UserFactory, WorkspaceFactory
from tests.rag.retrieval_helpers import add_document, chunk_of, license_workspace, make_record
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db

URL = "/api/v1/search"


@pytest.fixture
def indexed(workspace):
    add_document(workspace, "/w/tls.md", ["The gateway terminates TLS on port 8443."],
                 doc_date=datetime(2025, 4, 1, tzinfo=UTC), doc_type="operations", tags=["network"])
    add_document(workspace, "/w/keys.md", ["API keys rotate every ninety days."], doc_type="api")
    return workspace


def test_anonymous_gets_json_401_not_a_login_redirect(client, indexed):
    response = client.get(URL, {"q": "tls port"})
    assert response.status_code == 401
    assert response.json() == {"error": "authentication required (a session, or Authorization: Bearer <token>)"}
    assert response["WWW-Authenticate"] == 'Bearer realm="docent"'


def test_search_in_the_current_workspace(logged_in_client, indexed):
    response = logged_in_client.get(URL, {"q": "which port terminates TLS", "top_k": "1"})
    assert response.status_code == 200
    body = response.json()
    assert body["workspace"] == indexed.slug and body["count"] == 1
    assert body["results"][0]["path"] == "tls.md"  # a member reads no server folder (issue 49)
    assert body["results"][0]["doc_date"] == "2025-04-01T00:00:00+00:00"
    assert body["canonical_filtering"] == "unlicensed"
    first = body["results"][0]
    assert first["url"] == (f"http://testserver/documents/{first['document_id']}/"
                            f"?chunk={first['chunk_id']}#chunk-{first['chunk_id']}")
    assert logged_in_client.get(first["url"]).status_code == 200


def test_same_options_as_the_command_line(logged_in_client, indexed):
    license_workspace(indexed)
    body = logged_in_client.get(URL, {
        "q": "port", "workspace": indexed.slug, "mode": "lexical", "include_variants": "true", "dedup": "false",
        "created_after": "2025-01-01", "doc_type": "operations", "tag": "network", "when": "since 2025",
    }).json()
    assert [r["path"] for r in body["results"]] == ["tls.md"]
    assert body["canonical_filtering"] == "off"
    assert body["options"]["mode"] == "lexical" and body["options"]["dedup"] is False
    assert body["filters"]["tags"] == ["network"] and body["filters"]["date_phrase"] == "since 2025"


def test_a_workspace_you_are_not_in_is_404(logged_in_client, indexed):
    stranger = WorkspaceFactory(slug="strangers")
    add_document(stranger, "/s/tls.md", ["TLS terminates on port 9443 here."])
    response = logged_in_client.get(URL, {"q": "tls port", "workspace": "strangers"})
    assert response.status_code == 404 and "strangers" in response.json()["error"]


def test_the_chosen_workspace_is_searched_not_the_session_one(client, indexed, user):
    second = WorkspaceFactory(slug="second", members=[user])
    add_document(second, "/second/tls.md", ["TLS terminates on port 9443 here."])
    client.force_login(user)
    session = client.session
    session[SESSION_KEY] = indexed.pk
    session.save()
    body = client.get(URL, {"q": "tls port", "workspace": "second"}).json()
    assert [r["document_id"] for r in body["results"]] == [second.documents.get().pk]


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({}, "q", "q: Field required"),
        ({"q": "x", "top_k": "many"}, "top_k", "top_k: Input should be a valid integer"),
        ({"q": "x", "top_k": "500"}, "top_k", "top_k: Input should be less than or equal to 100"),
        ({"q": "x", "mode": "vibes"}, "mode", "mode: Input should be 'hybrid', 'semantic' or 'lexical'"),
        ({"q": "x", "created_after": "last tuesday"}, "created_after", "created_after: "),
        ({"q": "x", "when": "someday"}, "when", "when: unknown date phrase"),
        ({"q": "x", "dedup": "perhaps"}, "dedup", "dedup: Input should be a valid boolean"),
        ({"q": "x", "colour": "blue"}, "colour", "colour: unknown parameter"),
        ({"q": "x", "as_of_version": "v" * 51}, "as_of_version", "as_of_version: String should have at most 50"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(logged_in_client, indexed, params, field, message):
    """The schema validates (issue 39): the same 400 as the hand-written parsing gave, with the field named."""
    response = logged_in_client.get(URL, params)
    assert response.status_code == 400
    assert response.json()["field"] == field and response.json()["error"].startswith(message)


def test_a_user_without_workspaces_gets_404(client):
    client.force_login(UserFactory())
    assert client.get(URL, {"q": "anything"}).status_code == 404


# --- /metrics --------------------------------------------------------------------------------------


def test_metrics_for_staff_and_for_the_token_only(client, indexed, user, settings):
    settings.METRICS_TOKEN = "s3cret-token"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    client.force_login(user)
    client.get(URL, {"q": "tls"})
    assert client.get("/metrics").status_code == 403  # logged in, not staff

    scraped = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert scraped.status_code == 200
    text = scraped.content.decode()
    for name in ("docent_search_duration_seconds_bucket", "docent_search_results_bucket",
                 "docent_search_variants_filtered_total", "docent_search_canonical_hit_rate_bucket"):
        assert name in text
    assert 'canonical_aware="false"' in text

    staff = UserFactory(is_staff=True)
    client.force_login(staff)
    assert client.get("/metrics").status_code == 200


def test_metrics_count_http_requests_and_database_queries_beside_search(logged_in_client, indexed, settings):
    """django-prometheus's middleware and database backend write to the registry /metrics reads."""
    settings.METRICS_TOKEN = "s3cret-token"
    assert logged_in_client.get(URL, {"q": "tls"}).status_code == 200
    text = logged_in_client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token").content.decode()
    lines = text.splitlines()
    assert any(line.startswith('django_http_requests_total_by_method_total{method="GET"}') for line in lines)
    assert any(line.startswith("django_http_responses_total_by_status_view_method_total{")
               and 'view="api:search"' in line for line in lines)
    executed = next(line for line in lines if line.startswith('django_db_execute_total{alias="default"'))
    assert float(executed.split()[-1]) > 0
    assert "django_db_query_duration_seconds_bucket{" in text
    assert "docent_search_duration_seconds_bucket" in text  # one exposition, search's figures beside them


def test_no_token_configured_means_staff_only(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401


def test_a_user_past_the_rate_gets_429_with_retry_after_whichever_token_or_session(client, indexed, user, settings):
    """Issue 37: nothing limited the API; every token of one user and their session count together."""
    settings.API_REQUESTS_PER_MINUTE = 3
    _, first = api_token_create(user=user, name="one")
    _, second = api_token_create(user=user, name="two")
    client.force_login(user)
    answers = [client.get(URL, {"q": "tls"}, HTTP_AUTHORIZATION=f"Bearer {first}").status_code,
               client.get(URL, {"q": "tls"}, HTTP_AUTHORIZATION=f"Bearer {second}").status_code,
               client.get(URL, {"q": "tls"}).status_code]
    assert answers == [200, 200, 200]
    refused = client.get(URL, {"q": "tls"}, HTTP_AUTHORIZATION=f"Bearer {first}")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["error"].startswith("more than 3 requests a minute; try again in")
    other = UserFactory()
    indexed.members.add(other)
    _, theirs = api_token_create(user=other, name="theirs")
    assert client.get(URL, {"q": "tls"}, HTTP_AUTHORIZATION=f"Bearer {theirs}").status_code == 200


def test_guessed_tokens_are_limited_by_address(client, settings):
    settings.API_REQUESTS_PER_MINUTE = 2
    answers = [client.get(URL, {"q": "x"}, HTTP_AUTHORIZATION=f"Bearer docent_guess{n}").status_code for n in range(3)]
    assert answers == [401, 401, 429]


# --- server paths (issue 49) -----------------------------------------------------------------------


@pytest.fixture
def share(workspace):
    """A folder source's documents: the server's path, the path inside the source, one record of two copies."""
    license_workspace(workspace)
    plan = add_document(workspace, "/srv/share/team/plan.md", ["The gateway terminates TLS on port 8443."],
                        display_path="team/plan.md")
    copy = add_document(workspace, "/srv/share/old/plan.md", ["The gateway terminates TLS on port 8443."],
                        display_path="old/plan.md")
    make_record(chunk_of(plan), chunk_of(copy))
    return workspace


def test_a_member_reads_paths_relative_to_the_source_never_the_servers(logged_in_client, share):
    body = logged_in_client.get(URL, {"q": "tls port", "variant_metadata": "true", "provenance": "true",
                                      "dedup": "true"}).json()
    first = body["results"][0]
    assert first["path"] == "team/plan.md"
    assert [v["path"] for v in first["variants"]] == ["old/plan.md"]
    assert {m["path"] for m in first["provenance"]["members"]} == {"team/plan.md", "old/plan.md"}
    assert "/srv/" not in json.dumps(body)


def test_staff_keep_the_full_path(client, share, staff_user):
    share.members.add(staff_user)
    client.force_login(staff_user)
    body = client.get(URL, {"q": "tls port", "workspace": share.slug, "variant_metadata": "true"}).json()
    assert body["results"][0]["path"] == "/srv/share/team/plan.md"
    assert body["results"][0]["variants"][0]["path"] == "/srv/share/old/plan.md"
