"""Answer generation, run by a Celery worker in the `answers` queue: never in a web process.

A generated answer holds its worker for as long as the model takes (up to
LLM_ANSWER_DEADLINE_SECONDS), so it gets a queue of its own, consumed by the
worker of threads that `make run` starts for it (config.launcher): indexing and
answers never wait behind each other. A pool of threads enforces no Celery time
limit; the answer's deadline (rag.llm.stream_chat checks it on every read) and
the page's expiry of a pending answer are the bounds there.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from chat import services

# Past the deadline the generator still composes and saves the extractive fallback: the grace
# the page allows it, then the hard limit.
_SOFT_LIMIT = int(settings.LLM_ANSWER_DEADLINE_SECONDS + services.PENDING_GRACE_SECONDS)


# acks_late off: a rerun could only find the message claimed (chat.services._message_claim) or past
# its deadline; a worker lost mid-answer leaves the message to expire with a notice instead.
@shared_task(name="chat.tasks.answer_generate", acks_late=False, ignore_result=True,
             soft_time_limit=_SOFT_LIMIT, time_limit=_SOFT_LIMIT + 15)
def answer_generate(message_id: int) -> None:
    services.message_generate(message_id=message_id)
