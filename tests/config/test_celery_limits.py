"""Limits that must fit together: a task outlives neither the broker's patience nor its item's lease."""

from __future__ import annotations

from django.conf import settings

from config.celery import app


def _tasks():
    app.loader.import_default_modules()  # every app's tasks module, as a worker loads them
    return {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}


def test_the_broker_waits_longer_than_any_task_may_run():
    # Redis gives an unacknowledged message to another worker after the visibility timeout:
    # a task still running then would run twice. Raising a limit past it must fail here.
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    tasks = _tasks()
    assert {"rag.tasks.index_document", "rag.tasks.merge_workspace", "rag.tasks.reap_job_items"} <= set(tasks)
    for name, task in tasks.items():
        hard_limit = task.time_limit or app.conf.task_time_limit
        assert hard_limit, f"{name} has no hard time limit"
        # A retried task waits in the worker, unacknowledged, for its countdown too.
        longest_wait = hard_limit + (getattr(task, "retry_backoff_max", 0) if getattr(task, "autoretry_for", ()) else 0)
        assert longest_wait < visibility, f"{name}: {longest_wait}s may outlast the {visibility}s visibility timeout"


def test_an_indexing_item_keeps_its_lease_while_its_task_may_still_run():
    index_document = _tasks()["rag.tasks.index_document"]
    assert index_document.time_limit < settings.JOB_ITEM_LEASE_SECONDS
    assert settings.JOB_ITEM_LEASE_SECONDS < settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]


def test_a_replacement_pool_process_gets_more_time_to_start_than_celerys_default():
    assert app.conf.worker_proc_alive_timeout == settings.CELERY_WORKER_PROC_ALIVE_TIMEOUT >= 30
    assert app.conf.broker_transport_options["visibility_timeout"] == settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]


def test_a_worker_indexes_what_waits_before_it_merges():
    """Queues are taken in the order -Q names them, not in turns: merges wait for the files queued before them and
    then take them in batches (rag.jobs.merging)."""
    from config.launcher import worker_command
    from devkit.faults import QUEUES

    assert app.conf.broker_transport_options["queue_order_strategy"] == "priority"
    command = worker_command({}, 2)[0]
    queues = command[command.index("-Q") + 1].split(",")
    assert queues.index("ingest") < queues.index("merge") and QUEUES.split(",") == queues
