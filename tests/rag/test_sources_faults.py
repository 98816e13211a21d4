"""The issue's fault runs, small and fast (benchmarks/fault_sources.py runs them at full size): each ends as it
should, with its reason, in bounded time (issue 37, "Measure")."""

from __future__ import annotations

import pytest

from rag.models import IndexingJob, Source
from rag.sources import source_add
from tests.factories import UserFactory, WorkspaceFactory
from devkit.source_faults import big_blob_repo, first_sync_taken, git_bomb, press_flood, stalled_remote, sync_outcome


def test_a_git_bomb_fails_at_the_entry_limit_before_anything_is_made(workspace, tmp_path, settings):
    files = git_bomb(tmp_path / "bomb", width=16, depth=3)
    settings.GIT_SOURCE_MAX_TREE_ENTRIES = 1000
    source = source_add(workspace=workspace, name="bomb", kind=Source.Kind.GIT, location=str(tmp_path / "bomb"))
    outcome = sync_outcome(source.pk)
    assert files == 4096 and outcome["outcome"] == "failed"
    assert "more than 1000 files (GIT_SOURCE_MAX_TREE_ENTRIES)" in outcome["reason"]
    assert not IndexingJob.objects.exists()


def test_a_blob_over_the_file_limit_fails_alone(workspace, tmp_path, settings):
    big_blob_repo(tmp_path / "big", size=2 * 1024 * 1024)
    settings.INGEST_MAX_FILE_BYTES = 1024 * 1024
    source = source_add(workspace=workspace, name="big", kind=Source.Kind.GIT, location=str(tmp_path / "big"))
    outcome = sync_outcome(source.pk)
    assert outcome["outcome"] == "job" and outcome["items"] == {"failed": 1, "queued": 1}
    assert "over INGEST_MAX_FILE_BYTES" in outcome["errors"][0]


def test_a_remote_that_never_answers_fails_the_sync_in_its_time(workspace, settings):
    settings.GIT_SOURCE_FETCH_TIMEOUT_SECONDS = 1
    with stalled_remote() as url:
        source = source_add(workspace=workspace, name="stalls", kind=Source.Kind.GIT, location=url)
        outcome = sync_outcome(source.pk)
    assert outcome["outcome"] == "failed" and "cannot fetch" in outcome["reason"]
    assert outcome["seconds"] < 10


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_presses_from_many_members_at_once_queue_one_sync_and_pages_keep_answering(tmp_path, monkeypatch):
    members = [UserFactory(password=None) for _ in range(4)]
    workspace = WorkspaceFactory(members=members)
    (tmp_path / "share").mkdir()
    # The first sync adding queues is sent nowhere (no worker here to take it); the presses are what this measures.
    monkeypatch.setattr("rag.sources.services.task_send", lambda *args: None)
    source = source_add(workspace=workspace, name="share", kind=Source.Kind.FOLDER, location=str(tmp_path / "share"))
    first_sync_taken(source.pk)
    flood = press_flood(source_id=source.pk, members=members, presses=40, probe_user=members[0],
                        probes=["/healthz", "/chat/"])
    assert flood["presses"] == 40 and flood["statuses"] == {200: 40}
    assert flood["said"] == {"sync queued": 1, "already queued": 39} and flood["sent"] == 1
    assert flood["probes"]["/chat/"]["statuses"] == {200: flood["probes"]["/chat/"]["count"]}
    assert set(flood["probes"]["/healthz"]["statuses"]) <= {200, 503}  # 503: no worker runs in the tests
