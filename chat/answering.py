"""Answers with citations: extractive by default, an LLM when one is configured.

Extractive answers (chat.extractive) quote whole statements of the top results,
best first, number each source once ([N]) and, where versions disagree, state
the current one and name the older; when nothing answers well enough they
abstain. A generated answer's citation compliance is measured (chat.citations).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings

from chat.citations import MARKER, citation_compliance, citation_for, contradictions_mark
from chat.changes import compose_change
from chat.extractive import Extract, compose_extractive, question_vector
from chat.followups import InContext, question_in_workspace
from chat.prompts import llm_messages
from rag.llm import LLMError, stream_chat
from rag.releases import release_calendar_entries, release_label, release_labels, release_line_said
from rag.retrieval import SearchResultSet
from rag.selectors import paths_as_seen, workspace_release_labels
from chat.search import search_for_chat

__all__ = ["Answer", "answer", "answer_stream", "citation_for", "compose_extractive", "llm_citations", "llm_messages"]


@dataclass
class Answer:
    text: str
    citations: list[dict[str, Any]]
    mode: str  # "extractive" | "llm"
    notice: str = ""
    search: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    abstained: bool = False
    closest: list[dict[str, Any]] = field(default_factory=list)  # an abstention's nearest sources, not citations
    compliance: dict[str, Any] | None = None  # an LLM answer's citation compliance (chat.citations)
    evidence: float | None = None  # an extractive answer's best statement score (the relevance floor's scale)
    asked_as: str = ""  # a follow-up as answered, its subject taken from the conversation (chat.followups)
    read_as: str = ""  # the question with its typos corrected

    def metadata(self) -> dict[str, Any]:
        """What the message keeps, its sources' paths as a member reads them: never the server's folders, which
        chat.api gives staff again by document id (issue 49)."""
        sources = paths_as_seen(copy.deepcopy([self.citations, self.closest]), full=False)
        data = {"citations": sources[0], "search": self.search, "timings": self.timings, "mode": self.mode,
                "notice": self.notice, "abstained": self.abstained, "closest": sources[1], "evidence": self.evidence,
                "asked_as": self.asked_as, "read_as": self.read_as}
        if self.compliance is not None:
            data["compliance"] = self.compliance
        return data


def cited_numbers(text: str) -> list[int]:
    """The [N] markers of a reply, in first-use order."""
    seen: list[int] = []
    for match in MARKER.finditer(text):
        n = int(match.group(1))
        if n not in seen:
            seen.append(n)
    return seen


def llm_citations(reply: str, results: Sequence[Any]) -> list[dict]:
    """Citations for the sources the reply actually cites, numbered as in the prompt."""
    citations = []
    for n in cited_numbers(reply):
        if 1 <= n <= len(results):
            result = results[n - 1]
            citations.append(citation_for(result, n=n, position=n, relevance=float(result.score), sentence_ids=[]))
    return citations


def llm_configured() -> bool:
    return bool(settings.LLM_BASE_URL and settings.LLM_MODEL)


class Timer:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._start = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round((now - self._start) * 1000, 1)
        self._start = now


def _search(question: str, *, workspace, options: dict) -> tuple[SearchResultSet, dict[str, Any]]:
    """Run retrieval with a conversation's options; returns results and what was used."""
    # Provenance is always fetched (where licensed); the option only decides whether it starts expanded.
    results, used = search_for_chat(question, workspace=workspace, options={**options, "provenance": True},
                                    top_k=settings.ANSWER_TOP_K, query_embedding=question_vector(question))
    used = {**used, "options": dict(options)}
    return results, used


def _compose(question: str, results: SearchResultSet, workspace) -> Extract:
    """A change question states each version's side; any other question, the best statements."""
    plan = results.plan
    if plan is not None and plan.mode == "change" and results.change_sides:
        return compose_change(plan.topic or question, results, results.change_sides,
                              releases=workspace_release_labels(workspace_id=workspace.pk))
    if plan is not None and plan.mode == "as_of":
        # Asked about one release or date: its statements answer, none replaced by a newer one.
        as_of = plan.as_of_version or (plan.as_of_date.isoformat() if plan.as_of_date else "") or "as of"
        said = release_line_said(workspace_id=workspace.pk, label=as_of) if plan.as_of_version else ""
        extract = compose_extractive(plan.query or question, results, as_of=as_of, as_of_said=said)
        if extract.abstained and plan.as_of_date is not None:
            extract.text = " ".join(filter(None, [extract.text, _before_first_release(plan.as_of_date, workspace)]))
        return extract
    return compose_extractive(question, results)


def _before_first_release(as_of_date: datetime, workspace) -> str:
    """Why nothing answers as of a date before every release: where the workspace's releases begin (issue 54)."""
    entries = release_calendar_entries(workspace_id=workspace.pk)  # oldest first
    if not entries or as_of_date > entries[0].date:  # as_of_date is an exclusive bound
        return ""
    first = entries[0]
    label = release_label(str(first.version), release_labels(workspace_id=workspace.pk, labels=[str(first.version)]))
    return f"The earliest release in this workspace is {label}, of {first.date:%B %Y}."


def _extractive(question: str, results: SearchResultSet, used: dict[str, Any], timer: Timer, workspace,
                notice: str = "") -> Answer:
    extract = _compose(question, results, workspace)
    timer.lap("compose_ms")
    return Answer(extract.text, contradictions_mark(extract.citations), "extractive", notice=notice, search=used, timings=timer.timings,
                  abstained=extract.abstained, closest=extract.closest, evidence=extract.evidence)


def _generated(reply: str, results: Sequence[Any], used: dict[str, Any], timer: Timer) -> Answer:
    """A finished LLM reply, with its citations and how well it keeps to them."""
    return Answer(reply, contradictions_mark(llm_citations(reply, results)), "llm", search=used, timings=timer.timings,
                  compliance=citation_compliance(reply, sources=len(results)))


def _in_context(question: str, workspace, previous: Sequence[str], timer: Timer) -> InContext:
    """The question as meant: typos corrected, a follow-up given the previous question's subject."""
    asked = question_in_workspace(question, workspace_id=workspace.pk, previous_questions=previous)
    timer.lap("context_ms")
    return asked


def _noted(result: Answer, asked: InContext) -> Answer:
    result.asked_as, result.read_as = asked.asked_as, asked.read_as
    return result


def answer(question: str, *, workspace, options: dict, previous: Sequence[str] = ()) -> Answer:
    """The extractive answer, or the LLM's when one is configured (falling back on failure).

    `previous`: the conversation's earlier questions as answered, oldest first (a follow-up takes its subject).
    """
    timer = Timer()
    asked = _in_context(question, workspace, previous, timer)
    return _noted(_answer(asked.question, workspace=workspace, options=options, timer=timer), asked)


def _answer(question: str, *, workspace, options: dict, timer: Timer) -> Answer:
    results, used = _search(question, workspace=workspace, options=options)
    timer.lap("search_ms")
    notice = ""
    if llm_configured() and results:
        try:
            reply = "".join(stream_chat(llm_messages(question, results)))
            timer.lap("llm_ms")
            return _generated(reply, results, used, timer)
        except LLMError as exc:
            notice = f"The language model did not answer ({exc}); this is the extractive answer instead."
    return _extractive(question, results, used, timer, workspace, notice)


def answer_stream(question: str, *, workspace, options: dict, deadline: float | None = None,
                  previous: Sequence[str] = ()) -> Iterator[str | Answer]:
    """Yield reply pieces as the LLM writes them, then the finished Answer (extractive on failure).

    `deadline`: the time.monotonic() instant the reply must be in by (rag.llm.stream_chat's default if None);
    `previous`: as for `answer`.
    """
    timer = Timer()
    asked = _in_context(question, workspace, previous, timer)
    for piece in _answer_stream(asked.question, workspace=workspace, options=options, deadline=deadline, timer=timer):
        yield _noted(piece, asked) if isinstance(piece, Answer) else piece


def _answer_stream(question: str, *, workspace, options: dict, deadline: float | None,
                   timer: Timer) -> Iterator[str | Answer]:
    results, used = _search(question, workspace=workspace, options=options)
    timer.lap("search_ms")
    if not results or not llm_configured():
        yield _extractive(question, results, used, timer, workspace)
        return
    pieces: list[str] = []
    try:
        for piece in stream_chat(llm_messages(question, results), deadline=deadline):
            pieces.append(piece)
            yield piece
    except LLMError as exc:
        notice = f"The language model did not answer ({exc}); this is the extractive answer instead."
        yield _extractive(question, results, used, timer, workspace, notice)
        return
    reply = "".join(pieces)
    timer.lap("llm_ms")
    yield _generated(reply, results, used, timer)
