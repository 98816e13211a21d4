"""The full search pipeline against plain semantic search, by question kind and stage by stage (issue 52).

    python benchmarks/bench_pipeline.py [--corpora demo,sphinx] [--rounds 5] [--askers 1]
        [--scale-data-dir DIR --scale-workspace SLUG] [--data-root var/bench] [--results-out DIR] [--profile]

Full pipeline: `rag.retrieval.search` with the options chat asks with (chat.search.chat_search_options:
default SearchOptions, ANSWER_TOP_K results, provenance, an Enterprise license). Plain semantic: the
same top_k with evaluation.retrieval.PLAIN_SEMANTIC (the kNN list alone, every stage off). Questions are
encoded beforehand (the encoder's time is the same for both), each mode runs once per question as a
warm-up, then `--rounds` times, the two modes alternating (which goes first alternates too) so that both
see the same load; `--askers N` runs N threads doing so at once (a loaded web process). Printed per
corpus and per question kind (the full pipeline's plan: present, version, change; and all together): p50/p95
of each mode and the p95 ratio (the targets: <= 1.2x for questions about the present, <= 1.5x over all
kinds), and where the time went, stage by stage, from each search's `stats["timings_ms"]` (mean and p95 ms).

Corpora, each in a child process on its own DATA_DIR under `--data-root` (indexed on the first run,
unchanged files skipped afterwards):
- demo: demo/corpus (rag.bootstrap.demo_corpus_prepare), the questions of demo/ground_truth.json;
- sphinx: the real corpus (`python demo/real/build_corpus.py --out var/real-corpus`; run_all.py builds it
  and names it in BENCH_REAL_CORPUS), the questions of its ground truth;
- scale, only when given: an already indexed instance (`--scale-data-dir`, its workspace by slug), asked
  the frozen question sets of demo/scale.

`--results-out DIR` writes each corpus's results for every question under the default SearchOptions
(top 10) and chat's options, as JSON (DIR/<corpus>.json), and `--results-compare DIR` compares them with
another run's (`--reuse-index` searches the same index from another checkout): a change to the pipeline
must leave them as they were. `--profile` adds, after the timing, per question kind, the SQL statements of the full
pipeline (count and time by statement) and cProfile's heaviest functions.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import sys
import threading
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _setup import QUICK, ROOT, SMOKE, child_run, django_setup, machine_load, percentile, target  # noqa: E402

RATIO_TARGETS = {"present": 1.2, "all": 1.5}  # issue 52: questions about the present, every kind together
KINDS = {"present": "present", "as_of": "version", "change": "change"}  # plan mode -> the kind printed
ROUNDS = 1 if SMOKE else 3 if QUICK else 5
REAL_CORPUS = Path(os.environ.get("BENCH_REAL_CORPUS") or ROOT / "var" / "real-corpus" / "corpus")
SCALE_QUESTIONS = ("demo/scale/heldout_questions.json", "demo/scale/older_release_questions.json")
RESULTS_TOP_K = 10  # the results kept for the identity check


def _questions(path: Path) -> list[str]:
    questions = [q["question"] for q in json.loads(path.read_text(encoding="utf-8"))]
    return questions[:4] if SMOKE else questions


def _prepare(corpus: str, args) -> tuple[object, list[str]]:
    """The corpus's workspace, indexed and licensed, and its questions."""
    from evaluation.retrieval import eval_license_set, eval_workspace_prepare
    from rag.bootstrap import demo_corpus_prepare
    from rag.models import Workspace

    started = time.perf_counter()
    if corpus == "scale":
        workspace = Workspace.objects.get(slug=args.scale_workspace)
        questions = [q for name in SCALE_QUESTIONS for q in _questions(ROOT / name)]
    elif args.reuse_index:  # as a previous run left it: another checkout's code measured on the same index
        workspace = Workspace.objects.get(slug=f"bench-pipeline-{corpus}")
        questions = _questions(ROOT / "demo" / ("ground_truth.json" if corpus == "demo" else "real/ground_truth.json"))
    elif corpus == "demo":
        workspace, indexed = eval_workspace_prepare(corpus=demo_corpus_prepare(), slug="bench-pipeline-demo",
                                                    name="Bench pipeline (demo)")
        questions = _questions(ROOT / "demo" / "ground_truth.json")
        print(f"demo corpus ready in {time.perf_counter() - started:.1f}s: {indexed['indexed']}")
    else:
        if not REAL_CORPUS.is_dir():
            raise SystemExit(f"no Sphinx corpus at {REAL_CORPUS}: python demo/real/build_corpus.py --out var/real-corpus")
        workspace, indexed = eval_workspace_prepare(corpus=REAL_CORPUS, slug="bench-pipeline-sphinx",
                                                    name="Bench pipeline (Sphinx)")
        questions = _questions(ROOT / "demo" / "real" / "ground_truth.json")
        print(f"Sphinx corpus ready in {time.perf_counter() - started:.1f}s: {indexed['indexed']}")
    eval_license_set(workspace=workspace, licensed=True)
    return workspace, questions


def _options(workspace, vector: tuple[float, ...]):
    """(full pipeline, plain semantic) options for one question, as chat asks and as the plain baseline."""
    from django.conf import settings

    from chat.search import chat_search_options
    from evaluation.retrieval import PLAIN_SEMANTIC
    from rag.retrieval import SearchOptions

    full = chat_search_options(workspace=workspace, options={"provenance": True}, top_k=settings.ANSWER_TOP_K,
                               query_embedding=vector)
    plain = replace(SearchOptions(workspace=workspace, top_k=settings.ANSWER_TOP_K, query_embedding=vector),
                    **PLAIN_SEMANTIC)
    return full, plain


def _timed_runs(workspace, questions: list[str], vectors: dict, *, rounds: int,
                askers: int) -> tuple[dict[str, list], dict[str, str]]:
    """({"full": [(seconds, timings_ms, question)], "plain": [...]} over every round of every asker,
    {question: its kind, as the full pipeline planned it})."""
    from django.db import connection

    from rag.retrieval import search

    runs: dict[str, list] = {"full": [], "plain": []}
    kinds: dict[str, str] = {}
    lock = threading.Lock()

    def ask(offset: int, passes: int, keep: bool) -> None:
        try:
            for number in range(passes * len(questions)):
                question = questions[(number + offset) % len(questions)]
                full, plain = _options(workspace, vectors[question])
                pair = [("full", full), ("plain", plain)]
                for mode, options in (pair if (number // len(questions) + number + offset) % 2 else pair[::-1]):
                    started = time.perf_counter()
                    result_set = search(question, options)
                    elapsed = time.perf_counter() - started
                    with lock:
                        if mode == "full":
                            kinds[question] = KINDS[result_set.plan.mode]
                        if keep:
                            runs[mode].append((elapsed, result_set.stats.get("timings_ms", {}), question))
        finally:
            connection.close()

    ask(0, 1, keep=False)  # warm-up: each question in each mode once, caches as a running server has them
    threads = [threading.Thread(target=ask, args=(index * len(questions) // askers, rounds, True))
               for index in range(askers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return runs, kinds


def _stages(runs: list) -> dict[str, tuple[float, float]]:
    """{stage: (mean, p95 ms)} over every search, a stage a search did not run counting 0: the means add up."""
    names = {name for _elapsed, timings, _question in runs for name in timings}
    laps = {name: [float(timings.get(name, 0.0)) for _elapsed, timings, _question in runs] for name in names}
    laps["(total)"] = [elapsed * 1000 for elapsed, _timings, _question in runs]
    return {name: (sum(values) / len(values), percentile(values, 95)) for name, values in laps.items()}


def _report(corpus: str, runs: dict[str, list], kinds: dict[str, str], *, askers: int, rounds: int,
            questions: int) -> dict[str, float]:
    """The figures per question kind and over all, where the time went per kind; {kind: p95 ratio}."""
    from django.conf import settings

    print(f"{corpus}: {questions} questions x {rounds} rounds, {askers} asker(s), top_k {settings.ANSWER_TOP_K}, "
          f"licensed, questions encoded beforehand; {machine_load()}")
    ratios = {}
    for kind in [*(k for k in KINDS.values() if k in kinds.values()), "all"]:
        runs_of = {mode: [run for run in values if kind == "all" or kinds[run[2]] == kind]
                   for mode, values in runs.items()}
        ratios[kind] = _report_kind(kind, runs_of, asked=sum(kind in ("all", k) for k in kinds.values()))
    for kind, limit in RATIO_TARGETS.items():
        if kind in ratios:
            target("52", f"full pipeline p95 <= {limit}x plain semantic, {kind} questions ({corpus})",
                   f"{ratios[kind]:.2f}x ({askers} asker(s))", ratios[kind] <= limit)
    return ratios


def _report_kind(kind: str, runs: dict[str, list], *, asked: int) -> float:
    """One kind's p50/p95 of each mode, their ratio, and its stages; returns the p95 ratio."""
    ms = {mode: [elapsed * 1000 for elapsed, _timings, _question in values] for mode, values in runs.items()}
    ratio = percentile(ms["full"], 95) / percentile(ms["plain"], 95)
    print(f"  [{kind}: {asked} questions]")
    for mode, label in (("full", "full pipeline"), ("plain", "plain semantic")):
        print(f"  {label:<15} p50 {percentile(ms[mode], 50):7.1f} ms  p95 {percentile(ms[mode], 95):7.1f} ms  "
              f"({len(ms[mode])} searches)")
    print(f"  ratio           p50 {percentile(ms['full'], 50) / percentile(ms['plain'], 50):.2f}x  p95 {ratio:.2f}x")
    full, plain = _stages(runs["full"]), _stages(runs["plain"])
    print(f"  {'stage (ms)':<22} {'full mean':>10} {'full p95':>9} {'plain mean':>11} {'plain p95':>10}")
    for name in sorted(full, key=lambda n: (n == "(total)", -full[n][0])):
        plain_mean, plain_high = plain.get(name, (0.0, 0.0))
        print(f"  {name:<22} {full[name][0]:10.2f} {full[name][1]:9.2f} {plain_mean:11.2f} {plain_high:10.2f}")
    return ratio


def _results_write(path: Path, workspace, questions: list[str], vectors: dict) -> dict:
    """Every question's results under the default options (top 10) and chat's, scores and all but the text."""
    from rag.retrieval import SearchOptions, search

    def shown(result_set) -> list[dict]:
        return [{k: v for k, v in r.to_dict().items() if k not in ("text", "url")} for r in result_set]

    out = {}
    for question in questions:
        default = SearchOptions(workspace=workspace, top_k=RESULTS_TOP_K, query_embedding=vectors[question])
        full, _plain = _options(workspace, vectors[question])
        out[question] = {"default": shown(search(question, default)), "chat": shown(search(question, full))}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, sort_keys=True, default=str))
    print(f"results of {len(questions)} questions written to {path}")
    return out


def _results_compare(out: dict, path: Path) -> None:
    """Which questions' results differ from those a run wrote to `path` (another checkout, the same index)."""
    before = json.loads(path.read_text())
    same_ids = same_all = 0
    for question, modes in out.items():
        for mode, results in modes.items():
            old = before.get(question, {}).get(mode)
            now = json.loads(json.dumps(results, sort_keys=True, default=str))
            if old is not None and [r["chunk_id"] for r in old] == [r["chunk_id"] for r in now]:
                same_ids += 1
                if old == now:
                    same_all += 1
                    continue
            fields = sorted({key for a, b in zip(old or [], now) for key in a if a.get(key) != b.get(key)})
            print(f"  differs ({mode}): {question!r}: ids {[r['chunk_id'] for r in old or []]} -> "
                  f"{[r['chunk_id'] for r in now]}; fields {fields}")
    total = sum(len(modes) for modes in out.values())
    print(f"results against {path}: {same_ids} of {total} result lists in the same order, "
          f"{same_all} identical in every field")


def _profile(workspace, questions: list[str], vectors: dict, kinds: dict[str, str]) -> None:
    """Per question kind, the full pipeline's SQL statements (count, total and mean ms) and cProfile's heaviest
    functions."""
    for kind in dict.fromkeys(kinds[question] for question in questions):
        asked = [question for question in questions if kinds[question] == kind]
        print(f"  --- profile of {kind} questions ({len(asked)}) ---")
        _profile_questions(workspace, asked, vectors)


def _profile_questions(workspace, questions: list[str], vectors: dict) -> None:
    from django.db import connection

    from rag.retrieval import search

    statements: dict[str, list[float]] = defaultdict(list)

    def timed(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            statements[re.sub(r"\s+", " ", sql).strip()[:110]].append((time.perf_counter() - started) * 1000)

    with connection.execute_wrapper(timed):
        for question in questions:
            search(question, _options(workspace, vectors[question])[0])
    print(f"  SQL of the full pipeline over {len(questions)} questions: "
          f"{sum(len(v) for v in statements.values()) / len(questions):.1f} statements per search")
    for sql, times in sorted(statements.items(), key=lambda item: -sum(item[1]))[:15]:
        print(f"    {len(times) / len(questions):5.2f}/search {sum(times) / len(questions):7.2f} ms/search  {sql}")
    profile = cProfile.Profile()
    profile.enable()
    for question in questions:
        search(question, _options(workspace, vectors[question])[0])
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(r"rag/|chat/|licensing/", 30)
    print("\n".join("    " + line for line in text.getvalue().splitlines() if line.strip()))


def child(corpus: str, args) -> int:
    from rag import embeddings
    from rag.embeddings import query_encoder_prepare

    workspace, questions = _prepare(corpus, args)
    query_encoder_prepare()
    vectors = {question: tuple(embeddings.encode_query(question)) for question in questions}
    if args.results_out:
        out = _results_write(args.results_out / f"{corpus}.json", workspace, questions, vectors)
        if args.results_compare:
            _results_compare(out, args.results_compare / f"{corpus}.json")
    runs, kinds = _timed_runs(workspace, questions, vectors, rounds=args.rounds, askers=args.askers)
    _report(corpus, runs, kinds, askers=args.askers, rounds=args.rounds, questions=len(questions))
    if args.profile:
        _profile(workspace, questions, vectors, kinds)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", default="demo,sphinx", help="comma-separated: demo, sphinx")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--askers", type=int, default=1, help="threads searching at once")
    parser.add_argument("--scale-data-dir", type=Path, help="an instance where the scale corpus is indexed")
    parser.add_argument("--scale-workspace", default="eval-scale", help="its workspace's slug")
    parser.add_argument("--data-root", type=Path, default=ROOT / "var" / "bench",
                        help="each corpus's DATA_DIR is pipeline-<corpus> below it")
    parser.add_argument("--reuse-index", action="store_true",
                        help="search the workspaces a previous run indexed, as they are (no indexing)")
    parser.add_argument("--results-out", type=Path, help="write each corpus's results here (<corpus>.json)")
    parser.add_argument("--results-compare", type=Path,
                        help="with --results-out: compare with the results another run wrote here")
    parser.add_argument("--profile", action="store_true", help="SQL statements and cProfile of the full pipeline")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        data_dir = args.scale_data_dir if args.child == "scale" else args.data_root / f"pipeline-{args.child}"
        django_setup(data_dir=data_dir.resolve())
        return child(args.child, args)
    corpora = [name for name in args.corpora.split(",") if name] + (["scale"] if args.scale_data_dir else [])
    failed = []
    for corpus in corpora:
        print(f"--- {corpus} ---", flush=True)
        command = [sys.executable, __file__, "--child", corpus, *sys.argv[1:]]
        if child_run(command):
            failed.append(corpus)
            for kind, limit in RATIO_TARGETS.items():
                target("52", f"full pipeline p95 <= {limit}x plain semantic, {kind} questions ({corpus})",
                       "the run failed", False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
