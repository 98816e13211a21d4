"""Tasks are sent one way: by name, through rag.jobs.queue.task_send (eager mode included)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUEUE = ROOT / "rag" / "jobs" / "queue.py"
SENDING_CALLS = {"delay", "apply_async", "send_task"}


def test_every_task_is_sent_by_name_through_task_send():
    senders = []
    for app in ("config", "rag", "chat", "licensing", "evaluation"):
        for path in sorted((ROOT / app).rglob("*.py")):
            if path == QUEUE:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in SENDING_CALLS:
                    senders.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.func.attr}()")
    assert senders == []
