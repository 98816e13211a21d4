"""What every template of the sibling corpus shares: a document as blocks, its facts, and how values are written.

A fact is kept exactly as the file writes it ("2,350 EUR", "1 March 2024"), so its answer pattern is that text and
nothing looser: a pattern that also matched another customer's fee would make a question ambiguous.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta

PROVIDER = "Northwind Services"

# A block: ("heading", level, text), ("para", text), ("list", [items]) or ("table", [(key, value), ...]).
Block = tuple


@dataclass(frozen=True)
class Fact:
    """One filled-in value of a template, as written in the file, with the words a question asks it by."""

    field: str
    text: str
    value: float | str = ""  # comparable value for questions across siblings (a fee in EUR, a date's ISO form)

    @property
    def pattern(self) -> str:
        return value_pattern(self.text)


@dataclass
class Doc:
    """One file of the corpus before it is rendered: its ground truth and its text as blocks."""

    template: str
    title: str
    subject: str
    version_group: str
    edition: int
    edition_label: str
    doc_date: date
    blocks: list[Block]
    facts: dict[str, Fact]
    fmt: str = "md"
    path: str = ""
    frontmatter: dict[str, str] = field(default_factory=dict)
    short_subject: str = ""  # how questions may name it ("X200" for "Nimbus X200")


def value_pattern(text: str) -> str:
    """A lower-case regex for exactly this value: not inside a longer number or word ("2,350" never in "12,350")."""
    escaped = re.escape(" ".join(text.lower().split()))
    return rf"(?<![\w.,]){escaped}(?!\w|[.,]\d)"


# How one document writes all its dates and amounts (a template pile mixes conventions); a style repeated in a
# tuple is the commoner choice.
DATE_FORMATS: dict[str, Callable[[date], str]] = {
    "long": lambda day: f"{day.day} {day:%B} {day.year}",
    "iso": lambda day: day.isoformat(),
    "us": lambda day: f"{day:%B} {day.day}, {day.year}",
    "dots": lambda day: f"{day:%d.%m.%Y}",
    "slash": lambda day: f"{day:%d/%m/%Y}",
}
DATE_STYLES = ("long", "iso", "us", "dots", "long", "slash")
MONEY_FORMATS: dict[str, Callable[[int], str]] = {
    "suffix": lambda amount: f"{amount:,} EUR",
    "prefix": lambda amount: f"EUR {amount:,}",
    "euro": lambda amount: f"€{amount:,}",
    "plain": lambda amount: f"{amount} EUR",
}
MONEY_STYLES = ("suffix", "prefix", "suffix", "euro", "suffix", "plain")


def date_text(day: date, style: str) -> str:
    return DATE_FORMATS[style](day)


def money_text(amount: int, style: str) -> str:
    return MONEY_FORMATS[style](amount)


def distinct_days(rng: random.Random, count: int, first: date, last: date) -> list[date]:
    """`count` different days between two dates, in random order."""
    span = (last - first).days
    return [first + timedelta(days=offset) for offset in rng.sample(range(span + 1), count)]


def unused_near(value: int, step: int, taken: set[int]) -> int:
    """`value`, or the next one up by `step` that no other subject has (taken from then on): a new version's value
    stays close to the old one without repeating another sibling's, which would make its question ambiguous."""
    while value in taken:
        value += step
    taken.add(value)
    return value


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower().replace("&", "and")).strip("-")


# Misspellings a pile of real documents carries; only boilerplate words, never a value or a name.
TYPOS = {
    "receive": "recieve", "separate": "seperate", "occurred": "occured", "accommodate": "accomodate",
    "until": "untill", "responsible": "responsable", "necessary": "neccessary", "immediately": "immediatly",
    "written": "writen", "beginning": "begining", "agreed": "aggreed", "commitment": "committment",
}


def with_typos(blocks: list[Block], rng: random.Random, count: int) -> list[Block]:
    """The blocks with up to `count` boilerplate words misspelt (their first occurrence each)."""
    words = [word for word in TYPOS if any(_has_word(block, word) for block in blocks)]
    for word in rng.sample(words, min(count, len(words))):
        for index, block in enumerate(blocks):
            if _has_word(block, word):
                blocks[index] = _replace_word(block, word, TYPOS[word])
                break
    return blocks


def _has_word(block: Block, word: str) -> bool:
    return block[0] in ("para", "list") and re.search(rf"\b{word}\b", _block_text(block)) is not None


def _block_text(block: Block) -> str:
    return block[1] if block[0] == "para" else " ".join(block[1])


def _replace_word(block: Block, word: str, typo: str) -> Block:
    pattern = re.compile(rf"\b{word}\b")
    if block[0] == "para":
        return ("para", pattern.sub(typo, block[1], count=1))
    items = list(block[1])
    for index, item in enumerate(items):
        if pattern.search(item):
            items[index] = pattern.sub(typo, item, count=1)
            break
    return ("list", items)
