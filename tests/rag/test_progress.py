"""A job's rate and time left: measured from its finished items, shown on the job page and the ingest bar."""

from __future__ import annotations

from datetime import datetime, timedelta, UTC

import pytest
from django.core.management import call_command

from rag.jobs.run import job_item_run
from rag.models import IndexingJob
from rag.progress import format_duration, job_rates
from rag.progress import job_progress
from rag.uploads import indexing_job_create

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0 s"), (45, "45 s"), (200, "3 min 20 s"), (7500, "2 h 05 min")])
def test_durations_read_as_a_person_would_say_them(seconds, text):
    assert format_duration(seconds) == text


def test_time_left_follows_the_measured_file_rate():
    rates = job_rates(finished=30, total=300, chunks=600, first_started=NOW - timedelta(seconds=60), now=NOW)

    assert rates["files_per_second"] == pytest.approx(0.5)
    assert rates["chunks_per_second"] == pytest.approx(10.0)
    assert rates["eta_seconds"] == pytest.approx(540.0)  # 270 files left at 0.5 files/s
    assert rates["eta_text"] == "9 min 00 s"


def test_no_rate_before_anything_finished():
    rates = job_rates(finished=0, total=10, chunks=0, first_started=NOW - timedelta(seconds=30), now=NOW)
    assert rates["eta_seconds"] is None and rates["eta_text"] == ""


@pytest.mark.django_db
def test_job_page_and_ingest_bar_show_chunks_rate_and_time_left(logged_in_client, workspace, tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    for index in range(3):
        (folder / f"guide-{index}.md").write_text(f"# Guide {index}\n\nStep {index}: rotate the key every {index} days.\n")
    job = indexing_job_create(workspace=workspace, paths=[folder], enqueue=False)
    first = job.items.order_by("pk").first()
    job_item_run(item_id=first.pk)
    # The first file took a minute: two are left at that rate.
    job.items.filter(pk=first.pk).update(started_at=NOW - timedelta(seconds=60))
    progress = job_progress(job=job)
    first.refresh_from_db()
    assert (progress["finished"], progress["chunks"]) == (1, first.chunk_count)
    assert progress["eta_seconds"] > 100

    page = logged_in_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "files/s" in page and "chunks/s" in page and "left" in page

    more = tmp_path / "more"
    more.mkdir()
    for index in range(2):
        (more / f"note-{index}.md").write_text(f"# Note {index}\n\nThe quota resets every {index + 1} hours.\n")
    call_command("ingest", str(more), "--workspace", workspace.slug, "--sync")
    captured = capsys.readouterr()
    assert "chunks/s" in captured.err and IndexingJob.objects.filter(workspace=workspace).count() == 2
