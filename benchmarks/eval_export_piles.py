"""Is every export of a pile placed by its own content, and is every release dated by its own notes? (issue 50)

    python benchmarks/eval_export_piles.py --piles var/exports [--project pytest ...] [--json OUT.json]

Reads the piles demo/variants/exports.py writes. Each file goes through Docent's own parser, date resolution and
series reading (as ingest does), then the release inference's export placement and the calendar's rules run on
them in memory (no index, no search: the question figures need `eval_release_variants.py`). Per project and per
export form:

- placed: the share of an export's pages placed at the release the export is of (exact, or its line);
- calendar dates: of the project's releases the pile's notes date (a file's date standing in is not judged, nor a
  release of another series the pile names, such as a bundled package's history), the share within 7 days of
  PyPI's first upload;
- future entries: calendar releases newer than the pile's newest release (a future or deprecation mention).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter, defaultdict
from datetime import UTC, date, datetime, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from rag.parsers import parse_document  # noqa: E402
from rag.ingest.dates import resolve_doc_date  # noqa: E402
from rag.releases.calendar import FILE_DATE, CalendarEntry, page_dates, series_label  # noqa: E402
from rag.releases.inference import _attribute, _Row, export_key, export_release  # noqa: E402
from rag.releases.order import parse_version  # noqa: E402
from rag.releases.series_pages import series_metadata  # noqa: E402

DATE_SLACK_DAYS = 7


def pile_rows(folder: Path) -> tuple[list[_Row], dict[int, dict]]:
    listing = json.loads((folder / "files.json").read_text())
    rows, truth = [], {}
    for pk, name in enumerate(sorted(listing), start=1):
        path = folder / "corpus" / name
        try:
            parsed = parse_document(path, path.read_bytes())
        except Exception:  # noqa: BLE001 - a file Docent fails is not placed at all
            continue
        dated = resolve_doc_date(parsed, path.stat().st_mtime)
        stored = series_metadata(parsed)
        directives = [entry.get("version", "") for entry in parsed.metadata.get("version_directives", []) or []
                      if isinstance(entry, dict)]
        rows.append(_Row(pk, f"/pile/{name}", parsed.format, "", dated.value, dated.source, None, None,
                         stored.get("release_entries", []), [*stored.get("releases_mentioned", []), *directives],
                         stored.get("names", {}), None))
        truth[pk] = listing[name]
    return rows, truth


def calendar_of(rows: list[_Row]) -> list[CalendarEntry]:
    """The calendar's rule (rag.releases.calendar.page_dates), a notes page that states no date dated by its file."""
    found, names = [], {}
    for row in rows:
        for entry in row.entries:
            version = parse_version(str(entry.get("version", "")))
            day = date.fromisoformat(entry["date"]) if entry.get("date") else None
            how = entry.get("how", "")
            if day is None and how == "title" and row.doc_date:
                day, how = row.doc_date.date(), FILE_DATE
            if version is not None and day is not None:
                found.append((str(entry.get("series", "")), str(version), day, how))
                names[str(entry.get("series", "")).casefold()] = str(entry.get("series", ""))
    return sorted((CalendarEntry(names[series], parse_version(version), datetime.combine(day, time.min, tzinfo=UTC),
                                 "page" if not file_dated else FILE_DATE)
                   for (series, version), (file_dated, day) in page_dates(found).items()),
                  key=lambda e: (e.date, e.version))


def measure(folder: Path) -> dict:
    rows, truth = pile_rows(folder)
    calendar = calendar_of(rows)
    _attribute(rows, calendar)
    exports: dict[tuple, list[_Row]] = defaultdict(list)
    for row in rows:
        exports[export_key(row)].append(row)
    placed: dict[int, str] = {}
    for key, members in exports.items():
        guess = export_release(members, calendar, key[0])
        placed.update({row.pk: guess.label if guess else "" for row in members})
    by_form: dict[str, Counter] = defaultdict(Counter)
    for row in rows:
        expected = truth[row.pk]["release"]
        form = f"{truth[row.pk]['form']} ({expected})"
        label = placed.get(row.pk, "")
        by_form[form]["pages"] += 1
        by_form[form]["exact"] += bool(label) and parse_version(label) == parse_version(expected)
        by_form[form]["line"] += bool(label) and series_label(label) == series_label(expected)
        by_form[form][f"placed {label or 'nowhere'}"] += 1
    dates = json.loads((folder / "release_dates.json").read_text())
    newest = max(parse_version(truth[pk]["release"]) for pk in truth)
    # Dates from notes only: a page's file date standing in for one is the export's, not the release's. PyPI's
    # dates are the project's: a release of another series (a bundled package's history) is not judged by them.
    ours = [entry for entry in calendar if entry.series.casefold() in (folder.name.casefold(), "")]
    dated = [(entry, dates.get(str(entry.version)) or dates.get(f"{entry.version}.0")) for entry in ours
             if entry.source != FILE_DATE]
    judged = [(entry, day) for entry, day in dated if day]
    right = sum(abs((entry.date.date() - date.fromisoformat(day)).days) <= DATE_SLACK_DAYS for entry, day in judged)
    future = sorted({str(entry.version) for entry in calendar if entry.version > newest})
    forms = {form: {"pages": c["pages"], "exact": round(c["exact"] / c["pages"], 3),
                    "line": round(c["line"] / c["pages"], 3),
                    "placed": {k[7:]: v for k, v in c.items() if k.startswith("placed ")}}
             for form, c in sorted(by_form.items())}
    others = sorted({entry.series for entry in calendar if entry not in ours})
    return {"forms": forms, "calendar releases": len(calendar), "other series": others, "calendar judged": len(judged),
            "calendar file-dated": sum(entry.source == FILE_DATE for entry in calendar),
            "calendar dates correct": round(right / len(judged), 3) if judged else None, "future entries": future,
            "wrong dates": [f"{e.version}: {e.date.date()} (PyPI {d})" for e, d in judged
                            if abs((e.date.date() - date.fromisoformat(d)).days) > DATE_SLACK_DAYS][:8]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--piles", type=Path, default=ROOT / "var" / "exports")
    parser.add_argument("--project", action="append")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    projects = args.project or sorted(p.name for p in args.piles.iterdir() if (p / "files.json").exists())
    results = {}
    for project in projects:
        results[project] = found = measure(args.piles / project)
        print(f"{project}: calendar {found['calendar releases']} releases, dates correct "
              f"{found['calendar dates correct']} of {found['calendar judged']} judged "
              f"(other series, not judged: {', '.join(found['other series']) or 'none'}; "
              f"{found['calendar file-dated']} dated by a file only); future entries "
              f"{found['future entries'] or 'none'}")
        for form, figures in found["forms"].items():
            print(f"  {form:20} pages {figures['pages']:4}  exact {figures['exact']:.3f}  line {figures['line']:.3f}"
                  f"  {figures['placed']}")
        if found["wrong dates"]:
            print("  wrong dates: " + "; ".join(found["wrong dates"]))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
