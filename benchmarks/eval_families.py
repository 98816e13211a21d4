"""How well a workspace's version families match a real corpus' release structure (issue 21).

    python benchmarks/eval_families.py --workspace SLUG [--files var/scale-corpus/files.json] [--json]

The ground truth is the corpus builder's files.json (demo/scale/build_corpus.py, demo/real/build_corpus.py):
per flattened file name its project (Sphinx's listing has none: one project), release and relative path.
The same (project, path) in several releases is one document, so its copies belong in one family.
Documents are matched to the listing by file name; the instance is the one DATA_DIR selects (set it to
the DATA_DIR the corpus was ingested into). Figures:

- purity: micro-averaged over the members of families with two or more members; a member is pure when
  its (project, path) is its family's commonest (target >= 0.97);
- recall: of the pages present in two or more releases (among the ingested documents), the share whose
  copies all sit in one family (target >= 0.90);
- the largest family against the number of releases of its commonest page's project (target: no larger);
- the families' sizes (size -> how many families), and documents the listing does not know.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from _setup import ROOT, django_setup

Page = tuple[str, str]  # (project, relative path): one document across releases


def page_of(entry: Mapping[str, str]) -> Page:
    return (entry.get("project", ""), entry["path"])


def family_scores(memberships: Mapping[str, int | None], listing: Mapping[str, Mapping[str, str]]) -> dict:
    """The figures for documents named by file name -> family id (None: in no family), against the listing."""
    known = {name: family for name, family in memberships.items() if name in listing}
    members: dict[int, list[Page]] = {}
    for name, family in sorted(known.items()):
        if family is not None:
            members.setdefault(family, []).append(page_of(listing[name]))

    in_families = pure = 0
    for pages in members.values():
        if len(pages) >= 2:
            in_families += len(pages)
            pure += Counter(pages).most_common(1)[0][1]

    copies: dict[Page, list[int | None]] = {}
    for name, family in known.items():
        copies.setdefault(page_of(listing[name]), []).append(family)
    repeated = {page: families for page, families in copies.items() if len(families) >= 2}
    together = sum(1 for families in repeated.values() if None not in families and len(set(families)) == 1)

    releases: dict[str, set[str]] = {}
    for entry in listing.values():
        releases.setdefault(entry.get("project", ""), set()).add(str(entry["version"]))
    largest: dict = {"size": 0}
    if members:
        # The largest family; among equals the one whose commonest page sorts first, so reruns print the same.
        family, pages = min(members.items(), key=lambda item: (-len(item[1]), Counter(item[1]).most_common(1)[0][0]))
        page = Counter(pages).most_common(1)[0][0]
        largest = {"size": len(pages), "family_id": family, "commonest_page": list(page),
                   "project_releases": len(releases.get(page[0], ())), "pages": len(set(pages))}
    sizes = Counter(len(pages) for pages in members.values())
    singletons = sum(1 for family in known.values() if family is None)
    return {
        "documents": len(known),
        "unknown_documents": len(memberships) - len(known),
        "families": len(members),
        "purity": pure / in_families if in_families else None,
        "members_in_families_of_2_plus": in_families,
        "recall": together / len(repeated) if repeated else None,
        "pages_in_2_plus_releases": len(repeated),
        "pages_together": together,
        "largest": largest,
        "largest_within_releases": largest["size"] <= largest.get("project_releases", 0),
        "sizes": {str(size): count for size, count in sorted(sizes.items())},
        "documents_in_no_family": singletons,
    }


def workspace_memberships(slug: str) -> dict[str, int | None]:
    """File name -> family id of every live, indexed document of the workspace (a name held twice: the newest row).

    A file that was not indexed (no text to index: Celery's autodoc stubs are a title and directives only) is no
    document, so it cannot sit in a family; `unindexed_files` counts those."""
    from rag.models import Document  # Django is set up in main(): benchmarks configure it first

    rows = (Document.objects.filter(workspace__slug=slug, archived=False, status=Document.Status.INDEXED)
            .order_by("pk").values_list("path", "family_id"))
    return {Path(path).name: family for path, family in rows}


def unindexed_files(slug: str) -> int:
    """Live documents of the workspace that failed or were skipped (not in the figures)."""
    from rag.models import Document  # Django is set up in main()

    return (Document.objects.filter(workspace__slug=slug, archived=False)
            .exclude(status=Document.Status.INDEXED).count())


def format_report(slug: str, scores: dict) -> str:
    largest = scores["largest"]
    lines = [
        f"families of workspace {slug}: {scores['documents']} documents ({scores['unknown_documents']} not in the "
        f"listing), {scores['families']} families, {scores['documents_in_no_family']} documents in none; "
        f"{scores.get('unindexed_files', 0)} files not indexed (not counted)",
        f"purity  {scores['purity'] if scores['purity'] is None else format(scores['purity'], '.3f')}"
        f"  (members of families of 2+: {scores['members_in_families_of_2_plus']}; target >= 0.97)",
        f"recall  {scores['recall'] if scores['recall'] is None else format(scores['recall'], '.3f')}"
        f"  ({scores['pages_together']} of {scores['pages_in_2_plus_releases']} pages in 2+ releases in one "
        f"family; target >= 0.90)",
    ]
    if largest["size"]:
        lines.append(f"largest family {largest['size']} members ({largest['pages']} distinct pages, commonest "
                     f"{'/'.join(largest['commonest_page'])}) against {largest['project_releases']} releases: "
                     f"{'within' if scores['largest_within_releases'] else 'LARGER'}")
    lines.append("sizes   " + ", ".join(f"{size}: {count}" for size, count in scores["sizes"].items()))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", required=True, help="workspace slug")
    parser.add_argument("--files", type=Path, default=ROOT / "var" / "scale-corpus" / "files.json",
                        help="the corpus builder's listing")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    if not args.files.exists():
        sys.exit(f"error: no listing at {args.files}; build the corpus first")
    listing = json.loads(args.files.read_text(encoding="utf-8"))
    if "DATA_DIR" not in os.environ:
        sys.exit("error: set DATA_DIR to the instance the corpus was ingested into")
    django_setup()
    scores = {**family_scores(workspace_memberships(args.workspace), listing),
              "unindexed_files": unindexed_files(args.workspace)}
    print(json.dumps({"workspace": args.workspace, **scores}, indent=2) if args.json
          else format_report(args.workspace, scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
