"""Siblings are not versions (issue 42): families, answers and contradictions on the template-pile corpus.

    python benchmarks/eval_siblings.py [--encoder hashing|minilm] [--fresh] [--json OUT] [--details]

Indexes demo/siblings/corpus (demo/siblings/make_corpus.py: five templates, 20-40 siblings each, true versions of
a few) into a workspace of its own DATA_DIR (var/bench/siblings, BENCH_SIBLINGS_DATA_DIR moves it; one workspace
per encoder, `siblings-hashing` / `siblings-minilm`) in-process, as `manage.py ingest --sync` does; a rerun skips
unchanged files and reuses the index (`--fresh` empties the workspace first: do so after the product's family
logic changed, since unchanged files are not merged again). Then prints, against demo/siblings/files.json and
demo/siblings/questions.json:

- families: purity and recall as benchmarks/eval_families.py defines them (a page there is a version group here:
  purity over members of families of 2+, a member pure when its version group is its family's commonest; recall,
  the version groups of 2+ files all in one family), beside the stricter share of documents whose family holds
  only their version group; the largest family; siblings superseded by another sibling (a document not latest,
  a copy, or with superseded or retired chunks, whose superseder is of another version group);
- sibling questions ("current"): the expected document among chat's top 3 (chat.search.search_for_chat with a new
  conversation's options), and the extractive answer (chat.answering.answer, as evaluation/answers.py runs it)
  stating the expected value before any other sibling's or older version's value of that field;
- version questions: scored as the other sets are (evaluation.retrieval.score_version on search's top 5, and
  evaluation.answers.score_answer);
- across questions ("Which customers pay more than ...?"), which may abstain: answered or abstained, and the share
  of expected subjects an answer names; no target;
- pending contradictions between siblings (two version groups of one template; target 0) and between versions;
- MET or MISSED for issue 42's targets (TARGETS), `--json OUT` for every figure and question, `--details` for each
  failing question (what came first) and the evidence of each wrongly joined pair.

The searches run licensed (Enterprise, as the demo's trial): canonical records and provenance as a customer sees
them. The hashing encoder is fast and sees words only; MiniLM (the default, like the other evals) is the product's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from _setup import ROOT, django_setup, machine_load, target
from eval_families import family_scores, unindexed_files, workspace_memberships
from eval_lineage_scale import miss_reasons

sys.path.insert(0, str(ROOT))
from demo.siblings.make_corpus import CORPUS, FILES, QUESTIONS, mtimes_apply  # noqa: E402

DATA_DIR = Path(os.environ.get("BENCH_SIBLINGS_DATA_DIR", ROOT / "var" / "bench" / "siblings")).resolve()
ISSUE = "42"
# Issue 42's targets, stated once: (figure key, comparison, bound).
TARGETS = {
    "family purity": ("purity", ">=", 0.98),
    "recall of true versions": ("recall", ">=", 0.95),
    "siblings superseded by another sibling": ("siblings_superseded", "<=", 0),
    "sibling questions: expected document in the top 3": ("sibling_top3", ">=", 0.95),
    "sibling questions: answer states the value first": ("sibling_value_first", ">=", 0.90),
    "pending contradictions between siblings": ("sibling_contradictions", "<=", 0),
}
TOP = 3


def ground_truth() -> tuple[dict[str, dict], list[dict]]:
    """files.json keyed by base name (unique in the corpus, as the family figures match documents) and questions."""
    listing = json.loads(FILES.read_text(encoding="utf-8"))
    return {Path(path).name: {**entry, "path": path} for path, entry in listing.items()}, \
        json.loads(QUESTIONS.read_text(encoding="utf-8"))


def ingest(*, slug: str, fresh: bool) -> tuple[int, dict[str, int], float]:
    """Index the corpus as `ingest --sync` does (merges inline, files in folder order); unchanged files are skipped."""
    from rag.jobs.run import job_item_run
    from rag.models import IndexingJob, IndexingJobItem, Workspace
    from rag.uploads import indexing_job_create

    if fresh:
        Workspace.objects.filter(slug=slug).delete()
    workspace, _ = Workspace.objects.get_or_create(slug=slug, defaults={"name": "Template pile (issue 42)"})
    mtimes_apply(CORPUS, json.loads(FILES.read_text(encoding="utf-8")))
    started = time.perf_counter()
    job = indexing_job_create(workspace=workspace, paths=[CORPUS], source=IndexingJob.Source.CLI, enqueue=False)
    for item_id in job.items.filter(status=IndexingJobItem.Status.QUEUED).order_by("pk").values_list("pk", flat=True):
        job_item_run(item_id=item_id, merge_inline=True)
    statuses = Counter(job.items.values_list("status", flat=True))
    return workspace.pk, dict(sorted(statuses.items())), time.perf_counter() - started


# --- families ---------------------------------------------------------------------------------------


def family_listing(listing: dict[str, dict]) -> dict[str, dict]:
    """The ground truth in eval_families' terms: a version group is a page, its template a project."""
    return {name: {"project": entry["template"], "path": entry["version_group"], "version": entry["edition_label"]
                   or str(entry["edition"]), "date": entry["date"]} for name, entry in listing.items()}


def family_figures(workspace_id: int, slug: str, listing: dict[str, dict]) -> tuple[dict, dict[str, int | None]]:
    from rag.models import Document

    memberships = workspace_memberships(slug)
    scores = family_scores(memberships, family_listing(listing))
    members: dict[int, list[str]] = defaultdict(list)
    for name, family in memberships.items():
        if family is not None and name in listing:
            members[family].append(name)
    clean = sum(1 for name, family in memberships.items() if name in listing and (
        family is None or all(listing[other]["version_group"] == listing[name]["version_group"]
                              for other in members[family])))
    largest = max(members.values(), key=len, default=[])
    documents = Document.objects.filter(workspace_id=workspace_id)
    superseded = siblings_superseded(documents, listing)
    return {
        "documents": scores["documents"], "families": scores["families"], "purity": scores["purity"],
        "recall": scores["recall"], "version_groups_of_2_plus": scores["pages_in_2_plus_releases"],
        "version_groups_together": scores["pages_together"],
        "documents_with_only_their_version_group": clean / max(1, scores["documents"]),
        "largest_family": {"size": len(largest), "version_groups": len({listing[n]["version_group"] for n in largest}),
                           "templates": sorted({listing[n]["template"] for n in largest})},
        "sizes": scores["sizes"], "siblings_superseded": len(superseded), "superseded_examples": superseded[:12],
        "versions_taken_for_copies": versions_taken_for_copies(documents, listing),
        "unindexed_files": unindexed_files(slug),
    }, memberships


def siblings_superseded(documents, listing: dict[str, dict]) -> list[dict]:
    """Documents hidden behind a document of another version group: not latest in their family, a copy, or with
    superseded or retired chunks, where what supersedes them (the chunks' counterparts' documents, the copy's
    original, the family's newer members) is not a version of them."""
    from rag.models import Chunk

    rows = {pk: (Path(path).name, family, position, latest, copy_of) for pk, path, family, position, latest, copy_of
            in documents.values_list("pk", "path", "family_id", "family_position", "is_latest_version", "copy_of_id")}
    by_family: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for pk, (_, family, position, _, _) in rows.items():
        if family is not None:
            by_family[family].append((position or 0, pk))
    chunk_superseders: dict[int, set[int]] = defaultdict(set)
    retired: set[int] = set()
    for document, lineage, superseder in Chunk.objects.filter(document__in=list(rows)).exclude(lineage="") \
            .values_list("document_id", "lineage", "superseded_by__document_id"):
        if superseder is not None:
            chunk_superseders[document].add(superseder)
        elif lineage == Chunk.Lineage.RETIRED:
            retired.add(document)
    found = []
    for pk, (name, family, position, latest, copy_of) in sorted(rows.items()):
        if name not in listing:
            continue
        superseders = set(chunk_superseders.get(pk, ()))
        if copy_of:
            superseders.add(copy_of)
        if family is not None and (not latest or pk in retired):
            superseders |= {other for other_position, other in by_family[family] if other_position > (position or 0)}
        group = listing[name]["version_group"]
        strangers = sorted(rows[other][0] for other in superseders
                           if other in rows and listing.get(rows[other][0], {}).get("version_group") != group)
        if strangers:
            found.append({"document": listing[name]["path"], "subject": listing[name]["subject"],
                          "superseded_by": [f"{listing[s]['path']} ({listing[s]['subject']})" if s in listing else s
                                            for s in strangers[:3]]})
    return found


def versions_taken_for_copies(documents, listing: dict[str, dict]) -> list[str]:
    """True versions stored as a copy of another edition of their subject: every edition states other values (an
    amended fee, more leave days), so a copy stands for a version whose changes lineage did not see. Recall counts
    them as joined; this says how."""
    paths = dict(documents.values_list("pk", "path"))
    found = []
    for path, original in documents.exclude(copy_of=None).values_list("path", "copy_of_id"):
        entry, other = listing.get(Path(path).name), listing.get(Path(paths.get(original, "")).name)
        if entry and other and entry["version_group"] == other["version_group"]:
            found.append(f"{entry['path']} ({entry['edition_label']}) copy of {other['path']} ({other['edition_label']})")
    return sorted(found)


def wrong_joins(workspace_id: int, listing: dict[str, dict], per_family: int = 3) -> list[dict]:
    """Neighbouring members (by family position) of two version groups, the first few of each family, with the
    stored relation and the evidence lineage reads for the pair (rag.lineage.evidence): on what the product joined
    them."""
    from rag.lineage.evidence import VectorCache, load_members, pair_evidence, relation_strength
    from rag.models import Document, DocumentRelation

    members = load_members(Document.objects.filter(workspace_id=workspace_id))
    stored = {(a, b): (strength, identical) for a, b, strength, identical in DocumentRelation.objects.filter(
        workspace_id=workspace_id).values_list("document_a_id", "document_b_id", "strength", "identical")}
    families: dict[int, list] = defaultdict(list)
    for member in members.values():
        if member.family_id is not None:
            families[member.family_id].append(member)
    vectors = VectorCache()
    found = []
    for family in sorted(families, key=lambda f: (-len(families[f]), f)):
        ordered = sorted(families[family], key=lambda m: (m.family_position or 0, m.id))
        shown = 0
        for older, newer in zip(ordered, ordered[1:]):
            a, b = listing.get(Path(older.path).name), listing.get(Path(newer.path).name)
            if a is None or b is None or a["version_group"] == b["version_group"] or shown >= per_family:
                continue
            shown += 1
            evidence = pair_evidence(vectors[older.id], vectors[newer.id])
            relation = stored.get((min(older.id, newer.id), max(older.id, newer.id)))
            found.append({
                "family": family, "pair": [f"{a['path']} ({a['subject']})", f"{b['path']} ({b['subject']})"],
                "stored_strength": None if relation is None else round(relation[0], 3),
                "strength_now": relation_strength(older, newer, evidence),
                "share": [round(evidence.share_a, 2), round(evidence.share_b, 2)], "identical": evidence.identical,
                "same_title_key": bool(older.title_key and older.title_key == newer.title_key),
                "same_path_key": bool(older.path_key and older.path_key == newer.path_key),
                "titles": [older.title, newer.title], "version_labels": [older.version_label, newer.version_label],
            })
    return found


def contradiction_figures(workspace_id: int, listing: dict[str, dict]) -> dict:
    """Pending contradictions by what the two documents are: siblings (one template, two version groups), versions
    (one version group) or unrelated (two templates)."""
    from rag.models import Contradiction

    kinds: Counter[str] = Counter()
    pairs: dict[str, set] = defaultdict(set)
    examples: list[dict] = []
    for path_a, path_b, differences in Contradiction.objects.filter(
            workspace_id=workspace_id, status=Contradiction.Status.PENDING).values_list(
            "chunk_a__document__path", "chunk_b__document__path", "differences"):
        a, b = listing.get(Path(path_a).name), listing.get(Path(path_b).name)
        if a is None or b is None:
            kind = "unknown"
        elif a["version_group"] == b["version_group"]:
            kind = "versions"
        elif a["template"] == b["template"]:
            kind = "siblings"
        else:
            kind = "unrelated"
        kinds[kind] += 1
        pairs[kind].add(tuple(sorted((path_a, path_b))))
        if kind == "siblings" and len(examples) < 5:
            examples.append({"a": f"{a['path']} ({a['subject']})", "b": f"{b['path']} ({b['subject']})",
                             "differences": differences})
    return {"pending": {kind: kinds.get(kind, 0) for kind in ("siblings", "versions", "unrelated", "unknown")},
            "document_pairs": {kind: len(found) for kind, found in pairs.items()},
            "sibling_examples": examples}


# --- questions --------------------------------------------------------------------------------------


def other_siblings_values(question: dict, by_path: dict[str, dict]) -> list[dict]:
    """Every other sibling's value of the asked field (each file of another version group of the template), in the
    ground truth's `outdated` form: a statement of one of them before the expected value is a wrong answer."""
    group = by_path[question["expected_path"]]["version_group"]
    return [{"path": path, "version": entry["edition_label"], "patterns": [entry["facts"][question["field"]]["pattern"]]}
            for path, entry in by_path.items()
            if entry["template"] == question["template"] and entry["version_group"] != group
            and question["field"] in entry["facts"]]


def _named(path: str, listing: dict[str, dict]) -> str:
    entry = listing.get(Path(path).name)
    return f"{entry['path']} ({entry['subject']})" if entry else path


def _first_said(result, listing: dict[str, dict]) -> dict:
    """What an answer put first: its first sentence and the document its first citation comes from."""
    cited = next((c for c in result.citations if c.get("role", "answer") == "answer"), None)
    return {"abstained": bool(result.abstained), "text": " ".join(result.text.split())[:220],
            "first_cited": _named(cited["path"], listing) if cited else None}


def ask(workspace, questions: list[dict], listing: dict[str, dict], *, progress: bool = True) -> list[dict]:
    """Each question searched and answered as chat does; one record per question with its scores."""
    from django.conf import settings

    from chat.answering import answer
    from chat.models import default_search_options
    from chat.search import search_for_chat
    from evaluation.answers import score_answer
    from evaluation.retrieval import RANKED, path_matches, score_version
    from rag.retrieval import SearchOptions, search

    by_path = {entry["path"]: entry for entry in listing.values()}
    records = []
    for index, question in enumerate(questions, start=1):
        kind = question["kind"]
        record = {"id": question["id"], "kind": kind, "template": question["template"],
                  "subject": question.get("subject"), "question": question["question"]}
        result = answer(question["question"], workspace=workspace, options=default_search_options())
        record["answer"] = _first_said(result, listing)
        if kind == "current":
            results, _ = search_for_chat(question["question"], workspace=workspace,
                                         options={**default_search_options(), "provenance": True},
                                         top_k=settings.ANSWER_TOP_K)
            top = [result_.path for result_ in list(results)[:TOP]]
            judged = {**question, "outdated": question["outdated"] + other_siblings_values(question, by_path)}
            record.update({"expected": _named(question["expected_path"], listing), "value": question["answer"],
                           "top3": float(any(path_matches(path, question["expected_path"]) for path in top)),
                           "value_first": score_answer(judged, result)["accurate"],
                           "top": [_named(path, listing) for path in top]})
        elif kind == "version":
            results = list(search(question["question"], SearchOptions(workspace=workspace, top_k=RANKED)))
            record.update({"expected": _named(question["expected_path"], listing), "value": question["answer"],
                           **score_version(question, results), "answer_accurate": score_answer(question, result)[
                               "accurate"], "top": [_named(result_.path, listing) for result_ in results[:TOP]]})
        else:
            text = result.text.lower()
            named = [subject for subject in question["expected_subjects"] if subject.lower() in text]
            record.update({"abstained": bool(result.abstained), "expected_subjects": len(question["expected_subjects"]),
                           "subjects_named": len(named)})
        records.append(record)
        if progress and index % 25 == 0:
            print(f"  {index} of {len(questions)} questions asked", flush=True)
    return records


def question_figures(records: list[dict]) -> dict:
    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    current = [r for r in records if r["kind"] == "current"]
    version = [r for r in records if r["kind"] == "version"]
    across = [r for r in records if r["kind"] == "across"]
    answered = [r for r in across if not r["abstained"]]
    per_template = {}
    for template in sorted({r["template"] for r in current}):
        mine = [r for r in current if r["template"] == template]
        per_template[template] = {"questions": len(mine), "top3": mean([r["top3"] for r in mine]),
                                  "value_first": mean([r["value_first"] for r in mine])}
    return {
        "sibling_questions": len(current), "sibling_top3": mean([r["top3"] for r in current]),
        "sibling_value_first": mean([r["value_first"] for r in current]),
        "sibling_abstained": sum(r["answer"]["abstained"] for r in current), "per_template": per_template,
        "version_questions": len(version), "version_accuracy": mean([r["accurate"] for r in version]),
        "version_found@5": mean([r["found@5"] for r in version]),
        "version_answer_accuracy": mean([r["answer_accurate"] for r in version]),
        "across_questions": len(across), "across_answered": len(answered), "across_abstained": len(across) - len(answered),
        "across_subjects_named": mean([r["subjects_named"] / r["expected_subjects"] for r in answered]),
    }


# --- report -----------------------------------------------------------------------------------------


def _met(figure: float | int | None, comparison: str, bound: float) -> bool:
    if figure is None:
        return False
    return figure >= bound if comparison == ">=" else figure <= bound


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def report(figures: dict, records: list[dict], *, details: bool, joins: list[dict], misses: list[dict]) -> None:
    families, asked, contradictions = figures["families"], figures["questions"], figures["contradictions"]
    largest = families["largest_family"]
    print(f"families: {families['families']} of {families['documents']} documents; purity {_fmt(families['purity'])}, "
          f"recall {_fmt(families['recall'])} ({families['version_groups_together']} of "
          f"{families['version_groups_of_2_plus']} version groups of 2+ in one family); documents whose family holds "
          f"only their version group {_fmt(families['documents_with_only_their_version_group'])}; largest family "
          f"{largest['size']} ({largest['version_groups']} version groups, {', '.join(largest['templates'])}); "
          f"sizes {families['sizes']}; files not indexed {families['unindexed_files']}")
    print(f"siblings superseded by another sibling: {families['siblings_superseded']}; true versions taken for a "
          f"copy of another edition: {len(families['versions_taken_for_copies'])} (no target)")
    for example in families["superseded_examples"][:6]:
        print(f"  {example['document']} ({example['subject']}) <- {'; '.join(example['superseded_by'])}")
    for copy in families["versions_taken_for_copies"][:6]:
        print(f"  {copy}")
    print(f"sibling questions ({asked['sibling_questions']}): expected document in the top {TOP} "
          f"{_fmt(asked['sibling_top3'])}, value first {_fmt(asked['sibling_value_first'])}, "
          f"abstained {asked['sibling_abstained']}")
    for template, values in asked["per_template"].items():
        print(f"  {template:<20} {values['questions']:>4} questions  top {TOP} {_fmt(values['top3'])}  "
              f"value first {_fmt(values['value_first'])}")
    print(f"version questions ({asked['version_questions']}): accuracy {_fmt(asked['version_accuracy'])}, found@5 "
          f"{_fmt(asked['version_found@5'])}, answer accuracy {_fmt(asked['version_answer_accuracy'])}")
    print(f"across questions ({asked['across_questions']}, may abstain; no target): answered {asked['across_answered']}, "
          f"abstained {asked['across_abstained']}, expected subjects named by the answered "
          f"{_fmt(asked['across_subjects_named'])}")
    pending = contradictions["pending"]
    print(f"pending contradictions: between siblings {pending['siblings']} "
          f"({contradictions['document_pairs'].get('siblings', 0)} document pairs), between versions "
          f"{pending['versions']}, between templates {pending['unrelated']}")
    if details:
        _details(records, joins, misses, contradictions)
    for name, (key, comparison, bound) in TARGETS.items():
        figure = figures["targets_input"][key]
        target(ISSUE, name, f"{_fmt(figure)} (target {comparison} {bound})", _met(figure, comparison, bound))


def _details(records: list[dict], joins: list[dict], misses: list[dict], contradictions: dict) -> None:
    print("\nfailing questions (what came first):")
    for record in records:
        failed = (record["kind"] == "current" and not (record["top3"] and record["value_first"])) or \
            (record["kind"] == "version" and not (record["accurate"] and record["answer_accurate"]))
        if not failed:
            continue
        scores = f"top3 {record['top3']:.0f} value-first {record['value_first']:.0f}" if record["kind"] == "current" \
            else f"accurate {record['accurate']:.0f} answer {record['answer_accurate']:.0f}"
        print(f"  {record['id']} [{scores}] {record['question']!r} expects {record['value']!r} from {record['expected']}")
        print(f"      top: {' | '.join(record['top'])}")
        said = record["answer"]
        print(f"      answer{' (abstained)' if said['abstained'] else ''}: {said['text']!r} first cited "
              f"{said['first_cited']}")
    print("\nwrongly joined neighbours (stored relation, the evidence judged now):")
    for join in joins:
        print(f"  family {join['family']}: {join['pair'][0]} -> {join['pair'][1]}: stored {join['stored_strength']}, "
              f"now {join['strength_now']}, share {join['share']}, identical {join['identical']}, same title key "
              f"{join['same_title_key']}, same path key {join['same_path_key']}, labels {join['version_labels']}")
    print("\ntrue versions not in one family:")
    for miss in misses:
        for pair in miss["pairs"]:
            print(f"  {miss['page']}: {' -> '.join(pair['pair'])} {pair.get('families', '')}: {pair['why']}")
    for example in contradictions["sibling_examples"]:
        print(f"  sibling contradiction: {example['a']} vs {example['b']}: {example['differences']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default="minilm", choices=["hashing", "minilm"])
    parser.add_argument("--workspace", help="workspace slug (default siblings-<encoder>)")
    parser.add_argument("--fresh", action="store_true", help="empty the workspace first and index every file again")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write every figure and question record here")
    parser.add_argument("--details", action="store_true", help="each failing question, wrong joins, missed versions")
    args = parser.parse_args()
    slug = args.workspace or f"siblings-{args.encoder}"
    os.environ["DATA_DIR"] = str(DATA_DIR)
    os.environ["EMBEDDING_ENCODER"] = args.encoder  # --encoder wins over the environment: the slug names it
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    django_setup(encoder=args.encoder)
    from django.conf import settings
    from django.db import connection

    from config.embedded import stop_embedded
    from evaluation.retrieval import eval_license_set
    from rag.models import Workspace

    listing, questions = ground_truth()
    try:
        workspace_id, statuses, seconds = ingest(slug=slug, fresh=args.fresh)
        print(f"template pile: {len(listing)} files ({args.encoder}, in-process as ingest --sync: {statuses} in "
              f"{seconds:.0f}s; DATA_DIR {DATA_DIR}, workspace {slug}), {machine_load()}", flush=True)
        if not statuses.get("indexed"):
            print("  the index was reused: families are those the code that built it made (--fresh rebuilds)")
        families, memberships = family_figures(workspace_id, slug, listing)
        contradictions = contradiction_figures(workspace_id, listing)
        joins = wrong_joins(workspace_id, listing)
        misses = miss_reasons(workspace_id, family_listing(listing), memberships)
        workspace = Workspace.objects.get(pk=workspace_id)
        eval_license_set(workspace=workspace, licensed=True)
        started = time.perf_counter()
        records = ask(workspace, questions, listing)
        asked = question_figures(records)
        print(f"{len(questions)} questions asked in {time.perf_counter() - started:.0f}s", flush=True)
    finally:
        connection.close()
        stop_embedded(Path(settings.DATA_DIR))
    figures = {"encoder": args.encoder, "workspace": slug, "ingest": statuses, "families": families,
               "questions": asked, "contradictions": contradictions, "load": machine_load()}
    figures["targets_input"] = {**{key: families[key] for key in ("purity", "recall", "siblings_superseded")},
                                "sibling_top3": asked["sibling_top3"], "sibling_value_first": asked["sibling_value_first"],
                                "sibling_contradictions": contradictions["pending"]["siblings"]}
    report(figures, records, details=args.details, joins=joins, misses=misses)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        targets = [{"target": name, "figure": figures["targets_input"][key], "bound": f"{comparison} {bound}",
                    "met": _met(figures["targets_input"][key], comparison, bound)}
                   for name, (key, comparison, bound) in TARGETS.items()]
        args.json.write_text(json.dumps({**figures, "targets": targets, "records": records, "wrong_joins": joins,
                                         "recall_misses": misses}, indent=1, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
