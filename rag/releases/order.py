"""Version numbers and their order: packaging reads them, never string comparison ("2.10" comes after "2.9").

A label is compared after dropping a leading "v"; `version_key` is a string that sorts like the versions do, for a
database column and ORDER BY; `within_version` and `version_in_series` say what a release line holds ("2.1.2" is
part of the 2.1 docs).
"""

from __future__ import annotations

from functools import lru_cache

from packaging.version import InvalidVersion, Version

__all__ = ["parse_version", "version_in_series", "version_key", "within_version"]


@lru_cache(maxsize=4096)  # the same few labels are parsed for every search result and every merge
def parse_version(text: str) -> Version | None:
    """"v2.1" -> Version("2.1"); anything packaging cannot read, or that does not start with
    a digit after the "v" (packaging also takes "  1.0" or "V1"), -> None."""
    candidate = text.strip()
    if candidate[:1] in ("v", "V"):
        candidate = candidate[1:]
    if not candidate[:1].isdigit():
        return None
    try:
        return Version(candidate)
    except InvalidVersion:
        return None


_KEY_DIGITS = 8  # each number zero-padded to this width; a longer one (a timestamp) gets no key
_PRE_RANK = {"a": "a", "b": "b", "rc": "c"}


def _padded(number: int) -> str:
    return str(number).zfill(_KEY_DIGITS)


@lru_cache(maxsize=4096)
def version_key(text: str) -> str | None:
    """A string that sorts like packaging.version.Version, for a database column and ORDER BY.

    Release segments are zero-padded and trailing zeros dropped ("3" == "3.0" == "3.0.0").
    After the release comes "!" (below "."), so "3.9.x" sorts before "3.10"; then a phase
    letter (a dev-only release < a/b/rc pre-release < final), then post, then dev, each
    of fixed width once its first character matches, as packaging orders them.
    Local versions ("+ubuntu1") are ignored.
    """
    version = parse_version(text)
    if version is None:
        return None
    release = list(version.release)
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    numbers = [version.epoch, *release, version.pre[1] if version.pre else 0, version.post or 0, version.dev or 0]
    if any(number >= 10**_KEY_DIGITS for number in numbers):
        return None
    if version.pre is not None:
        phase = "B" + _PRE_RANK[version.pre[0]] + _padded(version.pre[1])
    elif version.post is None and version.dev is not None:
        phase = "A"  # "3.0.dev1" comes before "3.0a1"
    else:
        phase = "F"
    post = "0" if version.post is None else "1" + _padded(version.post)
    dev = "1" if version.dev is None else "0" + _padded(version.dev)
    return f"{_padded(version.epoch)}~{'.'.join(_padded(part) for part in release)}!{phase}{post}{dev}"


def within_version(label: str, bound: str) -> bool:
    """True when `label` is at or before `bound`, counting a patch release of the bound's
    series as the bound itself: "2.1.2" is within "2.1" (a runbook at revision 2.1.2 is
    part of the 2.1 docs), "2.2" is not."""
    version, limit = parse_version(label), parse_version(bound)
    if version is None or limit is None:
        return False
    if version <= limit:
        return True
    return version_in_series(version, limit)


def version_in_series(version: Version, series: Version) -> bool:
    """"2.1.2" is in the "2.1" series; "3.1" is in "3" only when written so ("3", not "3.0")."""
    if series.pre is not None or series.post is not None or series.dev is not None:
        return False
    prefix = series.release
    return len(version.release) > len(prefix) and version.release[: len(prefix)] == prefix


def of_release(label: str, release: str) -> bool:
    """True when `label` speaks for `release` itself or one of its patch releases ("2.1.2" of "2.1", "3.0.0" of
    "3.0"): a passage of the release a question asks about. Labels that are no version compare as written."""
    version, asked = parse_version(label), parse_version(release)
    if version is None or asked is None:
        return label == release or label.startswith(release + ".")
    return version == asked or version_in_series(version, asked)
