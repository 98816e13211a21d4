"""A web process answers questions without torch: ONNX encodes them, built after the fork."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.conf import settings

from rag import embeddings
from tests.conftest import _test_database_url
from tests.rag.retrieval_helpers import encoder, minilm  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[2]

# What gunicorn does in a web process of `make run`: the master imports config.wsgi (--preload),
# config.web_server.post_worker_init runs after the fork; then one question through the chat view.
WEB_PROCESS = textwrap.dedent("""
    import json, sys
    from types import SimpleNamespace
    import config.wsgi
    from config.web_server import post_worker_init
    post_worker_init(SimpleNamespace(cfg=SimpleNamespace(workers=2)))
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import setup_test_environment
    from chat.models import Message
    from rag import embeddings
    setup_test_environment()
    client = Client()
    client.force_login(get_user_model().objects.get(pk=int(sys.argv[1])))
    response = client.post(f"/chat/{sys.argv[2]}/ask/", {"question": sys.argv[3]}, headers={"HX-Request": "true"},
                           secure=True)
    encoder = embeddings.get_query_encoder()
    print(json.dumps({"status": response.status_code, "torch": "torch" in sys.modules,
                      "sentence_transformers": "sentence_transformers" in sys.modules,
                      "encoder": encoder.name, "threads": encoder.session.get_session_options().intra_op_num_threads,
                      "replies": Message.objects.filter(conversation_id=int(sys.argv[2]), role="assistant").count(),
                      "reply": Message.objects.filter(conversation_id=int(sys.argv[2]), role="assistant")
                      .values_list("content", flat=True).first()}))
""")


def _web_env() -> dict[str, str]:
    """A web process of `make run` on the tests' database, Redis and DATA_DIR, encoding questions with ONNX."""
    return {**os.environ, "DATABASE_URL": _test_database_url(), "REDIS_URL": settings.REDIS_URL,
            "DATA_DIR": str(settings.DATA_DIR), "EMBEDDING_ENCODER": "minilm", "QUERY_ENCODER": "",
            "QUERY_ENCODER_THREADS": "0", "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ROOT)}


@pytest.mark.real_encoder
def test_answering_in_a_web_process_leaves_torch_unimported(transactional_db, django_db_serialized_rollback, user,
                                                             conversation, encoder, api_versions,  # noqa: F811
                                                             licensed, workspace) -> None:
    """The subprocess sees only committed rows, hence transactional_db; serialized rollback keeps the
    seeded license tiers that transactional tests flush. Indexed with the model the web process asks with
    (its ONNX twin): vectors of another 384-dimension encoder would be compared without an error."""
    assert embeddings.index_models(workspace_id=workspace.pk) == {embeddings.MINILM_NAME}
    env = _web_env()
    done = subprocess.run([sys.executable, "-c", WEB_PROCESS, str(user.pk), str(conversation.pk),
                           "How many requests per minute may an API key send?"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)

    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["status"] == 200 and seen["replies"] == 1 and "1200 requests per minute" in seen["reply"]
    assert seen["encoder"] == "all-MiniLM-L6-v2+onnx"
    assert seen["threads"] == max(1, (os.cpu_count() or 1) // 2)
    assert not seen["torch"] and not seen["sentence_transformers"]


# gunicorn's master and one web process, forked as --preload forks them; the process then exits as a worker
# told to stop does (sys.exit: interpreter finalization, native destructors and all).
FORKED_WEB_PROCESS = textwrap.dedent("""
    import os, sys
    from types import SimpleNamespace
    import config.wsgi
    print("onnxruntime in the master:", "onnxruntime" in sys.modules, flush=True)
    pid = os.fork()
    if pid == 0:
        from config.web_server import post_worker_init
        from rag import embeddings
        post_worker_init(SimpleNamespace(cfg=SimpleNamespace(workers=2)))
        embeddings.get_query_encoder().encode(["Where is the badge office?"])
        sys.exit(0)
    _, status = os.waitpid(pid, 0)
    print("web process:", os.waitstatus_to_exitcode(status), flush=True)
""")


@pytest.mark.real_encoder
def test_a_forked_web_process_stops_cleanly(transactional_db, django_db_serialized_rollback) -> None:
    env = _web_env()
    done = subprocess.run([sys.executable, "-c", FORKED_WEB_PROCESS], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "std::system_error" not in done.stderr, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert "onnxruntime in the master: False" in lines
    assert lines[-1] == "web process: 0"  # not -6 (SIGABRT as the thread pool is torn down)
