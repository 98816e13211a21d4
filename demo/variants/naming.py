"""Names and dates of the release variants: hashed file names and per-file dates as real exports give them.

Everything here is a function of a seed and a file's (project, bundle, path), so a rebuild writes the same
bytes and an index built once is reused.
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

from packaging.version import Version

from demo.variants.series import expected_release

# When the export was written: the mtime of every file whose date is written inside it (after every release).
EXPORT_MOMENT = datetime(2025, 1, 20, 8, 0, tzinfo=UTC)
WINDOW_DAYS = (30, 180)  # a release's files were last touched this many days before it was packaged, at most
COMMIT_DAYS = (6, 16)  # on this many distinct moments (commits checked out), the packaging moment among them
BRANCH_SHARE = 0.35  # files untouched since the window opened
TEMPLATE_SHARE = 0.25  # .docx files whose `created` is an old template's date, years before `modified`

FRONTMATTER_FORMS = {
    "iso date": lambda m: m.strftime("%Y-%m-%d"),
    "iso utc": lambda m: m.strftime("%Y-%m-%dT%H:%M:%SZ"),
    "iso offset": lambda m: m.astimezone(timezone(timedelta(hours=2))).isoformat(),
    "month day, year": lambda m: f'"{m.strftime("%B")} {m.day}, {m.year}"',
    "day mon year": lambda m: f"{m.day} {m.strftime('%b %Y')}",
    "date and time": lambda m: m.strftime("%Y-%m-%d %H:%M:%S"),
    "rfc 2822": lambda m: f'"{m.strftime("%a, %d %b %Y %H:%M:%S +0000")}"',
}
REVDATE_FORMS = {
    "iso date": lambda m: m.strftime("%Y-%m-%d"),
    "month day, year": lambda m: f"{m.strftime('%B')} {m.day}, {m.year}",
    "day month year": lambda m: f"{m.day} {m.strftime('%B %Y')}",
    "iso utc": lambda m: m.strftime("%Y-%m-%dT%H:%M:%SZ"),
    "date and minutes": lambda m: m.strftime("%Y-%m-%d %H:%M"),
    "rfc 2822": lambda m: m.strftime("%a, %d %b %Y %H:%M:%S +0000"),
    "year/month/day": lambda m: m.strftime("%Y/%m/%d"),
}


@dataclass(frozen=True)
class Dating:
    """One file's date (the same in every variant) and the random choices made for it."""

    key: str  # project|bundle|path
    moment: datetime
    seed: int
    revision: int  # a .docx's save counter
    template: bool  # a .docx made from an old template: `created` years before `modified`


def _rng(seed: int, *parts: str) -> random.Random:
    return random.Random("|".join([str(seed), *parts]))


def file_moments(listing: dict[str, dict], *, seed: int, written: dict[str, datetime] | None = None
                 ) -> dict[str, Dating]:
    """name -> Dating, as the Django 5.1.4 sdist has them: per release, a window before its packaging moment and
    a few commit moments in it, the packaging moment the last; about a third of the files untouched since the
    window opened (the branch point), the rest on the commits, the last ones more often. A release-notes page
    whose release happened inside the window (`written`: name -> the date its text gives) was last touched at its
    release, on the first commit since (the notes of 4.2.17 and 5.0.10 with the 5.1.4 packaging); the release's
    own notes page (else its first page by hash) on the packaging moment, so the newest file is at the release
    date."""
    written = written or {}
    bundles: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name, entry in listing.items():
        bundles[(entry["project"], entry["version"])].append(name)
    datings: dict[str, Dating] = {}
    for (project, version), names in sorted(bundles.items()):
        released = datetime.fromisoformat(listing[names[0]]["release_date"]).astimezone(UTC)
        rng = _rng(seed, "window", project, version)
        window = rng.randint(*WINDOW_DAYS) * 86400
        commits = sorted(released - timedelta(seconds=rng.randint(3600, window))
                         for _ in range(rng.randint(*COMMIT_DAYS) - 1)) + [released]
        keys = {name: f"{project}|{version}|{listing[name]['path']}" for name in names}
        release = Version(listing[names[0]]["release"])
        own_notes = [name for name in names if (expected := expected_release(
            project=project, path=listing[name]["path"], release=listing[name]["release"])).series == "release"
            and Version(expected.release) == release]
        pinned = own_notes[0] if own_notes else min(names, key=lambda n: hashlib.sha256(keys[n].encode()).hexdigest())
        for name in names:
            file_rng = _rng(seed, "file", keys[name])
            if name == pinned:
                moment = released
            elif written.get(name) and written[name] > commits[0]:
                moment = next((commit for commit in commits if commit >= written[name]), released)
            elif file_rng.random() < BRANCH_SHARE:
                moment = commits[0]
            else:
                moment = file_rng.choice(commits[1:] + commits[-3:])
            datings[name] = Dating(keys[name], moment, seed, revision=file_rng.randint(1, 60),
                                   template=file_rng.random() < TEMPLATE_SHARE)
    return datings


def date_written(dating: Dating, kind: str) -> str:
    """The file's date as its frontmatter (`kind` "frontmatter") or `:revdate:` ("revdate") writes it: one of
    several real forms, chosen per file."""
    forms = FRONTMATTER_FORMS if kind == "frontmatter" else REVDATE_FORMS
    form = _rng(dating.seed, "form", kind, dating.key).choice(sorted(forms))
    return forms[form](dating.moment)


def date_form(dating: Dating, kind: str) -> str:
    """The name of the form `date_written` chose (for the listing and the report)."""
    forms = FRONTMATTER_FORMS if kind == "frontmatter" else REVDATE_FORMS
    return _rng(dating.seed, "form", kind, dating.key).choice(sorted(forms))


def office_created(dating: Dating) -> datetime:
    """A .docx's `created`: hours to weeks before `modified`, or an old template's date years before it."""
    rng = _rng(dating.seed, "created", dating.key)
    if dating.template:
        return dating.moment - timedelta(days=rng.randint(2 * 365, 8 * 365), seconds=rng.randint(0, 86399))
    return dating.moment - timedelta(seconds=rng.randint(3600, 30 * 86400))


def hex_prefix(key: str, *, seed: int, taken: set[str], stem: str) -> str:
    """An 8-character hex prefix for `<prefix>_<stem>`, not in `taken`: two in five digits-letter-digits
    (`40b08594`, `58c20104`: what packaging reads as 40b8594 or 58rc20104), one in ten with two letters
    (`2a61e300`), about one in seven all digits, the rest a plain hash."""
    attempt = 0
    while True:
        rng = _rng(seed, "prefix", key, str(attempt))
        shape = rng.random()
        digits = [str(rng.randint(0, 9)) for _ in range(8)]
        if shape < 0.40:
            position = rng.randint(1, 6)
            digits[position] = rng.choice("aabbccdef")
        elif shape < 0.50:
            first = rng.randint(1, 3)
            digits[first], digits[rng.randint(first + 2, 6)] = rng.choice("abcdef"), rng.choice("abcdef")
        elif shape >= 0.65:
            digits = list(hashlib.sha256(f"{seed}|{key}|{attempt}".encode()).hexdigest()[:8])
        prefix = "".join(digits)
        if f"{prefix}_{stem}" not in taken:
            return prefix
        attempt += 1
