"""Identifiers: the tokens of technical text that must match whole, never stemmed into English words.

`proxy.upstream_timeout`, `X-RateLimit-Remaining`, `--keep-going`, `-W`,
`DATABASE_URL`, `latex_table_style`, `MathJax`, `sphinx-build`, `LG1504`:
PostgreSQL's English configuration splits them at dots, underscores and
hyphens and stems the pieces, so "timeout" in any chunk matches as well as
the setting that defines it. A question that names an identifier is looking
for the passage that names it too.

Chunks keep their identifiers (text and heading) in `Chunk.identifiers`, a
text[] with a GIN index, filled at index time by `chunk_identifiers`. A
tsvector cannot be used for this: every text search parser splits
`snake_case` and `dotted.names` before any dictionary sees them.

Normal form: lower case (identifiers are matched case-blind, as people type
them), except single-letter options (`-W` and `-w` are different options);
a trailing `()` is dropped; a dotted name also yields its parts that are
identifiers themselves (`proxy.upstream_timeout` -> `upstream_timeout`).
"""

from __future__ import annotations

import re

MAX_LENGTH = 100  # longer runs are data (hashes, base64), not names
MAX_PER_CHUNK = 200  # a chunk of generated reference text must not grow an enormous array

# Candidate tokens: word characters joined by . - / :, optionally a trailing "()".
_TOKEN = re.compile(r"(?<![\w./-])-{0,2}[A-Za-z_][\w]*(?:[.\-/:][\w]+)*(?:\(\))?")
_SHORT_OPTION = re.compile(r"-[A-Za-z]")
_LONG_OPTION = re.compile(r"--[a-z0-9][a-z0-9-]+", re.IGNORECASE)
_SNAKE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|_[A-Za-z0-9_]+")
_DOTTED = re.compile(r"[A-Za-z_]\w+(?:\.[A-Za-z_]\w*)+")
_CAMEL = re.compile(r"[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z]+[A-Za-z0-9]*")
_HYPHENATED = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+")
_CODE = re.compile(r"[A-Za-z]{2,}\d{2,}[A-Za-z0-9]*")  # error codes: LG1504, E0602
# Hyphenated English that is not a name: "built-in", "read-only". A compound counts as an
# identifier when it has a capital (a header name) or is a command-like word ("sphinx-build").
_PLAIN_COMPOUNDS = frozenset({
    "built-in", "read-only", "up-to-date", "out-of-the-box", "so-called", "well-known", "third-party",
    "non-zero", "e-mail", "opt-in", "opt-out", "real-time", "long-term", "short-term", "high-level",
    "low-level", "per-user", "end-user", "step-by-step", "time-out", "follow-up", "set-up", "sign-in",
})


def _normal(token: str) -> str:
    if token.endswith("()"):
        token = token[:-2]
    return token if _SHORT_OPTION.fullmatch(token) else token.lower()


def _kind(token: str) -> bool:
    """Whether a candidate token is an identifier."""
    bare = token[:-2] if token.endswith("()") else token
    if bare.startswith("--"):
        return bool(_LONG_OPTION.fullmatch(bare))
    if bare.startswith("-"):
        return bool(_SHORT_OPTION.fullmatch(bare))
    if "/" in bare or ":" in bare:
        return False  # paths and URLs are matched by the full-text side
    if _SNAKE.fullmatch(bare) or _DOTTED.fullmatch(bare) or _CODE.fullmatch(bare):
        return True
    if _HYPHENATED.fullmatch(bare):
        return bare.lower() not in _PLAIN_COMPOUNDS and not any(part.isdigit() for part in bare.split("-"))
    return bool(_CAMEL.fullmatch(bare)) or token.endswith("()")


def identifiers_in(text: str) -> list[str]:
    """The identifiers of `text` in normal form, in order of first appearance, each once."""
    found: dict[str, None] = {}
    for match in _TOKEN.finditer(text or ""):
        token = match.group(0).rstrip(".:-")
        if not 2 <= len(token) <= MAX_LENGTH or not _kind(token):
            continue
        normal = _normal(token)
        found.setdefault(normal, None)
        if "." in normal:
            for part in normal.split("."):
                if _kind(part) and len(part) >= 3:
                    found.setdefault(part, None)
    return list(found)


def chunk_identifiers(*, text: str, heading_path: str) -> list[str]:
    """What `Chunk.identifiers` holds: the heading's identifiers, then the text's, at most MAX_PER_CHUNK."""
    merged = dict.fromkeys(identifiers_in(heading_path))
    merged.update(dict.fromkeys(identifiers_in(text)))
    return list(merged)[:MAX_PER_CHUNK]
