"""50 people ask at once while the model is slow: the web server must stay responsive and every answer must end.

    python benchmarks/bench_answers_load.py [--askers 50] [--words 15] [--word-delay 0.2]

On loopback, as `make run` runs them: gunicorn (2 processes x 4 threads, --preload) and the
answers worker (one process of DOCENT_ANSWER_THREADS threads, queue answers), against a fake
OpenAI-compatible server that streams --words words --word-delay seconds apart (3 s an
answer by default). Each asker signs in, asks once with HX-Request and then does what the
page's script does: reads the answer's stream, waits when told the server is busy (429),
fetches the saved answer and reads again while it is still being written. Meanwhile a
prober asks for /healthz and a conversation page four times a second, and a sampler counts
PostgreSQL's connections twice a second.

Targets: /healthz and pages p95 < 1 s; connections below max_connections at every sample;
every answer completes, or fails with a reason shown to the asker. Bounded: askers give up
after LLM_ANSWER_DEADLINE_SECONDS + 60 s. Its own DATA_DIR (var/bench/answers); the hashing
encoder, since the web server's threads, not retrieval, are under test here.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

from _setup import ROOT, SMOKE, django_setup, percentile, target
from bench_chat import PASSWORD, Client, _free_port, server_wait

DATA_DIR = Path(os.environ.get("BENCH_ANSWERS_DATA_DIR", ROOT / "var" / "bench" / "answers")).resolve()
DEADLINE_SECONDS = 120  # LLM_ANSWER_DEADLINE_SECONDS's default
TARGET_P95_SECONDS = 1.0
IDLE_SECONDS = 1 if SMOKE else 15  # probes before the askers start: what the machine gives an idle server


def _prepare(askers: int) -> tuple[list[tuple[str, int]], tuple[str, int]]:
    """The demo corpus indexed in its own workspace; `askers` users and a prober, each with a conversation."""
    from django.contrib.auth import get_user_model

    from chat.models import Conversation, Message
    from rag.bootstrap import demo_corpus_prepare
    from rag.jobs.run import job_item_run
    from rag.models import Workspace
    from rag.uploads import indexing_job_create

    workspace, created = Workspace.objects.get_or_create(slug="bench-answers", defaults={"name": "Bench answers"})
    if created:
        job = indexing_job_create(workspace=workspace, paths=[demo_corpus_prepare()], enqueue=False)
        for item_id in job.items.values_list("pk", flat=True):
            job_item_run(item_id=item_id, merge_inline=True)
    Message.objects.filter(conversation__workspace=workspace).delete()  # a rerun starts with no pending answer
    users = []
    for number in range(askers + 1):
        user, made = get_user_model().objects.get_or_create(username=f"asker{number}")
        if made:
            user.set_password(PASSWORD)
            user.save()
        workspace.members.add(user)
        conversation, _ = Conversation.objects.get_or_create(user=user, workspace=workspace, title="bench")
        users.append((user.username, conversation.pk))
    return users[1:], users[0]


def _get(client: Client, path: str, *, timeout: float = 60) -> tuple[int, str, dict]:
    try:
        with client.opener.open(client.base + path, timeout=timeout) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), dict(error.headers)


def _ask_and_watch(client: Client, conversation_id: int, question: str, give_up: float) -> tuple[str, str, float]:
    """(outcome, reason, seconds): what the asker finally sees, as the page's script would get there."""
    started = time.monotonic()
    request = urllib.request.Request(
        client.base + f"/chat/{conversation_id}/ask/", data=urllib.parse.urlencode({"question": question}).encode(),
        headers={"X-CSRFToken": client.csrf(), "HX-Request": "true", "Referer": client.base + "/"},
    )
    try:
        with client.opener.open(request, timeout=60) as response:
            exchange = response.read().decode()
    except urllib.error.HTTPError as error:
        return "refused", f"HTTP {error.code}: {error.read().decode()[:80]}", time.monotonic() - started
    message_id = re.findall(r'data-stream-url="/chat/messages/(\d+)/stream/"', exchange)
    if not message_id:
        return "completed", "answered in the POST (no model call)", time.monotonic() - started
    stream, final = f"/chat/messages/{message_id[-1]}/stream/", f"/chat/messages/{message_id[-1]}/"
    while time.monotonic() < give_up:
        status, _, headers = _get(client, stream)
        if status == 429:
            time.sleep(float(headers.get("Retry-After", 2)))
            continue
        status, html, _ = _get(client, final)
        if status != 200:
            time.sleep(1)
            continue
        if "data-stream-url" in html:
            time.sleep(1)  # the stream ended at its time limit: the page looks again a second later
            continue
        seconds = time.monotonic() - started
        notice = re.search(r'<p class="notice" role="note">([^<]*)</p>', html)
        if "Generated answer" in html:
            return "completed", "generated", seconds
        if notice and "Extractive answer" in html:
            return "completed", f"extractive fallback: {notice.group(1)[:70]}", seconds
        shown = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()
        return "failed", notice.group(1)[:90] if notice else f"NO REASON SHOWN: {shown[:60]}", seconds
    return "unfinished", "still pending when the asker gave up", time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--askers", type=int, default=2 if SMOKE else 50)
    parser.add_argument("--words", type=int, default=3 if SMOKE else 15)
    parser.add_argument("--word-delay", type=float, default=0.01 if SMOKE else 0.2)
    args = parser.parse_args()
    django_setup(encoder="hashing", data_dir=DATA_DIR)
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from config.launcher import answers_worker_command, metrics_dir_prepare, web_command
    from devkit.llm_server import FakeLLM

    askers, prober = _prepare(args.askers)
    call_command("collectstatic", interactive=False, verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_connections")
        max_connections = int(cursor.fetchone()[0])
    reply = " ".join(["The limit is 1200 requests per minute [1]."] * (args.words // 8 + 1)).split(" ")[:args.words]
    llm = FakeLLM(" ".join(reply), word_delay=args.word_delay).__enter__()
    logs = DATA_DIR / "logs"
    logs.mkdir(exist_ok=True)
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": settings.DATABASE_URL, "REDIS_URL": settings.REDIS_URL,
           "LLM_BASE_URL": llm.url, "LLM_MODEL": "bench", "LOG_LEVEL": "WARNING", "EMBEDDING_ENCODER": "hashing",
           "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir_prepare(DATA_DIR))}
    worker_args = answers_worker_command(env)
    with open(logs / "answers.log", "a") as worker_log:
        worker = subprocess.Popen(worker_args, cwd=ROOT, env=env, stdout=worker_log, stderr=subprocess.STDOUT)
    web = subprocess.Popen(web_command("127.0.0.1", str(port), logs), cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    connection.close()
    try:
        server_wait(base)
        stop = threading.Event()
        phase = ["warm-up"]  # then "idle" (the machine's own state, for comparison), then "load"
        probes: dict[tuple[str, str], list[float]] = {(when, name): [] for when in ("idle", "load")
                                                      for name in ("healthz", "page")}
        probe_status: Counter = Counter()
        connections_seen: list[int] = []

        def probe() -> None:
            client = Client(base)
            client.login(prober[0])
            while not stop.is_set():
                for name, path in (("healthz", "/healthz"), ("page", f"/chat/{prober[1]}/")):
                    started = time.perf_counter()
                    try:
                        status = _get(client, path, timeout=30)[0]
                    except OSError as exc:
                        status = type(exc).__name__
                    if phase[0] != "warm-up":
                        probes[(phase[0], name)].append(time.perf_counter() - started)
                        probe_status[(phase[0], name, status)] += 1
                stop.wait(0.25)

        def sample_connections() -> None:
            import psycopg

            with psycopg.connect(settings.DATABASE_URL, autocommit=True) as sampler:
                while not stop.is_set():
                    connections_seen.append(sampler.execute("SELECT count(*) FROM pg_stat_activity "
                                                            "WHERE backend_type = 'client backend'").fetchone()[0])
                    stop.wait(0.5)

        outcomes: list[tuple[str, str, float]] = []
        lock = threading.Lock()

        # Signed in first, one after another: 50 password checks at once would be the load, not 50 questions.
        clients = []
        for username, conversation_id in askers:
            client = Client(base)
            client.login(username)
            clients.append((client, conversation_id))
        start_together = threading.Barrier(len(clients))

        def asker(client: Client, conversation_id: int) -> None:
            start_together.wait()
            try:
                outcome = _ask_and_watch(client, conversation_id, "How many requests per minute may an API key send?",
                                         give_up)
            except OSError as exc:  # counted, not raised: the run goes on
                outcome = ("error", f"{type(exc).__name__}: {exc}"[:90], 0.0)
            with lock:
                outcomes.append(outcome)

        watchers = [threading.Thread(target=probe), threading.Thread(target=sample_connections)]
        for thread in watchers:
            thread.start()
        time.sleep(1 if SMOKE else 3)  # the prober signs in and warms the pages up
        def probed_until(seconds: float) -> None:  # and at least one probe of each page in this phase
            until = time.monotonic() + seconds
            while time.monotonic() < until or not all(probes[(phase[0], name)] for name in ("healthz", "page")):
                time.sleep(0.1)

        phase[0] = "idle"
        load_before = os.getloadavg()[0]
        probed_until(IDLE_SECONDS)
        phase[0] = "load"
        started = time.monotonic()
        give_up = started + DEADLINE_SECONDS + 60
        threads = [threading.Thread(target=asker, args=pair) for pair in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - started
        probed_until(0)  # a smoke run's askers may be done before the first probe under load
        load_after = os.getloadavg()[0]
        stop.set()
        for thread in watchers:
            thread.join()
    finally:
        web.terminate()
        worker.terminate()
        web.wait(timeout=30)
        worker.wait(timeout=60)
        llm.__exit__(None, None, None)

    answer_seconds = args.words * args.word_delay
    threads = worker_args[worker_args.index("--concurrency") + 1]
    print(f"{args.askers} askers at once, fake model {answer_seconds:.1f} s an answer, gunicorn 2x4, answers worker "
          f"{threads} threads; all finished in {wall:.1f}s")
    kinds = Counter((outcome, reason) for outcome, reason, _ in outcomes)
    for (outcome, reason), count in sorted(kinds.items()):
        print(f"  {count:3d} {outcome}: {reason}")
    done = [seconds for outcome, _, seconds in outcomes if outcome == "completed"]
    if done:
        print(f"time to a final answer: p50 {percentile(done, 50):.1f}s, p95 {percentile(done, 95):.1f}s, "
              f"max {max(done):.1f}s")
    for (when, name), latencies in probes.items():
        statuses = {status: n for (seen_when, kind, status), n in probe_status.items() if (seen_when, kind) == (when, name)}
        print(f"{name:8s} {when:4s} {len(latencies)} probes: p50 {percentile(latencies, 50) * 1000:.0f} ms, "
              f"p95 {percentile(latencies, 95) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms; statuses {statuses}")
    print(f"machine load average (1 min, {os.cpu_count()} cores, shared): {load_before:.1f} before, {load_after:.1f} after")
    print(f"PostgreSQL client connections: max {max(connections_seen)} of max_connections {max_connections}")
    print(f"LLM requests: {len(llm.requests)} for {args.askers} questions")
    p95s = {name: percentile(latencies, 95) for (when, name), latencies in probes.items() if when == "load"}
    every_end = all(outcome in ("completed", "failed") and not reason.startswith("NO REASON SHOWN")
                    for outcome, reason, _ in outcomes)
    target("", f"/healthz and page p95 < {TARGET_P95_SECONDS:.0f} s under {args.askers} generated answers",
           ", ".join(f"{name} {seconds:.2f} s" for name, seconds in p95s.items()),
           max(p95s.values()) < TARGET_P95_SECONDS)
    target("", "connections < max_connections", f"max {max(connections_seen)} of {max_connections}",
           max(connections_seen) < max_connections)
    target("", "every answer completes or fails with a reason", ", ".join(
        f"{count} {outcome}" for outcome, count in Counter(outcome for outcome, _, _ in outcomes).items()), every_end)
    return 0


if __name__ == "__main__":
    sys.exit(main())
