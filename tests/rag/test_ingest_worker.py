"""The queued flow: real broker, real worker processes, the ingest command's progress loop."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from rag.models import Document
from tests.factories import UserFactory, WorkspaceFactory
from tests.rag.samples import write_corpus


@pytest.mark.worker
def test_ingest_through_two_real_workers(start_worker, tmp_path, capsys):
    workspace = WorkspaceFactory(members=[UserFactory()])
    write_corpus(tmp_path / "docs")
    (tmp_path / "docs" / "broken.pdf").write_bytes(b"%PDF-1.7 truncated")
    start_worker(queues="ingest,merge,default")
    start_worker(queues="ingest,merge,default")

    with pytest.raises(Exception, match="1 document"):
        call_command("ingest", str(tmp_path / "docs"), workspace=workspace.slug, timeout=120, verbosity=0)
    out = capsys.readouterr().out
    assert "6 indexed, 1 failed" in out
    assert Document.objects.filter(workspace=workspace, status="indexed").count() == 6
    assert Document.objects.get(workspace=workspace, path__endswith="broken.pdf").error
