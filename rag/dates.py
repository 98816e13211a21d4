"""Date and time phrases, in one place: the month table, date filters and "as of" periods.

Query analysis below retrieval, lineage and dedup, which all import it (it imports none of them).
`parse_date_phrase` reads a date filter ("last 7 days", "this month", "since 2024") as a [start, end)
range; `phrase_period` reads the looser phrases found inside questions ("as of 1 March 2025", "last
month"); `MONTH_NAMES` is the month-name alternation for patterns that find dates in text; `parse_loose_date`
reads one date a person typed ("March 14, 2025", a YAML date, an ISO string) in UTC; `NAMED_PERIODS` names the
filters a form offers by key.

A phrase is read in the server's TIME_ZONE, so "this month" starts at local
midnight of the first; the bounds come back timezone-aware. `end` is exclusive
and None when the range is open ("since 2024" runs to the present and beyond,
so documents dated in the future are not lost).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

from django.utils import timezone


class DatePhraseError(ValueError):
    """The phrase is not one we understand; the message lists what is."""


@dataclass(frozen=True)
class DateRange:
    start: datetime | None
    end: datetime | None  # exclusive

    def as_dict(self) -> dict[str, str | None]:
        return {
            "from": self.start.isoformat() if self.start else None,
            "to": self.end.isoformat() if self.end else None,
        }


UNITS = {"day": 1, "week": 7}
MONTHS = {
    name: number
    for number, names in enumerate(
        [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
         ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
         ("dec", "december")],
        start=1,
    )
    for name in names
}
# Longest first, so that an alternation never stops at "mar" in "march".
MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
HELP = ('try "today", "yesterday", "last 7 days", "past 2 weeks", "last 3 months", "this week", "this month", '
        '"this year", "last month", "last year", "since 2024", "since March 2024", "since 2024-03-01", "in 2024", '
        '"before 2024"')

# Date filters offered by name (chat's options panel and its API): the key, and the phrase it means.
NAMED_PERIODS = {"last_7_days": "last 7 days", "this_month": "this month", "this_year": "this year"}

_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "thirty": 30}
_ROLLING = re.compile(r"^(?:last|past|previous)\s+(\d+|[a-z]+)\s+(day|week|month|year)s?$")
_PAST_ONE = re.compile(r"^past\s+(day|week|month|year)$")
_CALENDAR = re.compile(r"^(this|last|previous|current)\s+(week|month|year)$")
_ANCHORED = re.compile(r"^(since|after|from|in|during|before|until)\s+(.+)$")


def midnight(day: date) -> datetime:
    """The start of `day` in the server's TIME_ZONE, timezone-aware."""
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def add_months(day: date, months: int) -> date:
    """The first of the month `months` after (or before) `day`'s month."""
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    return date(year, month + 1, 1)


def _period(text: str) -> tuple[date, date] | None:
    """A year, a month of a year or a day, as [first day, first day after)."""
    text = text.strip()
    if re.fullmatch(r"(19|20)\d{2}", text):
        year = int(text)
        return date(year, 1, 1), date(year + 1, 1, 1)
    match = re.fullmatch(r"((?:19|20)\d{2})-(\d{1,2})", text)
    if match:
        first = date(int(match[1]), int(match[2]), 1)
        return first, add_months(first, 1)
    match = re.fullmatch(r"([a-z]+)\.?\s+((?:19|20)\d{2})", text)
    if match and match[1] in MONTHS:
        first = date(int(match[2]), MONTHS[match[1]], 1)
        return first, add_months(first, 1)
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return None
    return day, day + timedelta(days=1)


def parse_date_phrase(phrase: str, *, now: datetime | None = None) -> DateRange:
    """The range a phrase names; raises DatePhraseError for anything else."""
    text = " ".join(phrase.lower().replace(",", " ").split())
    now = timezone.localtime(now or timezone.now())
    today = now.date()
    if text in ("", "any", "any time", "anytime", "all time"):
        return DateRange(None, None)
    if text == "today":
        return DateRange(midnight(today), None)
    if text == "yesterday":
        return DateRange(midnight(today - timedelta(days=1)), midnight(today))

    match = _ROLLING.match(text) or _PAST_ONE.match(text)
    if match:
        raw, unit = match.groups() if match.re is _ROLLING else ("1", match[1])
        count = int(raw) if raw.isdigit() else _NUMBER_WORDS.get(raw)
        if not count or count > 100_000:
            raise DatePhraseError(f"cannot read the number in {phrase!r}; {HELP}")
        if unit in UNITS:
            # "last 7 days" is today and the six days before it, whole days.
            start = today - timedelta(days=count * UNITS[unit] - 1)
        elif unit == "month":
            start = today - timedelta(days=30 * count - 1)
        else:
            start = today - timedelta(days=365 * count - 1)
        return DateRange(midnight(start), None)

    match = _CALENDAR.match(text)
    if match:
        which, unit = match.groups()
        if unit == "week":
            first = today - timedelta(days=today.weekday())
            after = first + timedelta(days=7)
            step = timedelta(days=7)
            if which in ("last", "previous"):
                first, after = first - step, first
        elif unit == "month":
            first = today.replace(day=1)
            after = add_months(first, 1)
            if which in ("last", "previous"):
                first, after = add_months(first, -1), first
        else:
            first = date(today.year, 1, 1)
            after = date(today.year + 1, 1, 1)
            if which in ("last", "previous"):
                first, after = date(today.year - 1, 1, 1), first
        # "this month" is open-ended: a document dated later today must not fall out.
        end = None if which in ("this", "current") else midnight(after)
        return DateRange(midnight(first), end)

    match = _ANCHORED.match(text)
    if match:
        word, rest = match.groups()
        period = _period(rest)
        if period is None:
            raise DatePhraseError(f"cannot read the date in {phrase!r}; {HELP}")
        first, after = period
        if word in ("since", "from"):
            return DateRange(midnight(first), None)
        if word == "after":
            return DateRange(midnight(after), None)
        if word in ("before", "until"):
            return DateRange(None, midnight(first))
        return DateRange(midnight(first), midnight(after))

    period = _period(text)
    if period is not None:
        return DateRange(midnight(period[0]), midnight(period[1]))
    raise DatePhraseError(f"unknown date phrase {phrase!r}; {HELP}")


def phrase_period(phrase: str, today: date) -> tuple[date, date] | None:
    """The days a phrase in a question names, as [first, first after): a year, a month, a day, "last month".

    Looser than a date filter: words in any order ("1 March 2025", "March 1, 2025").
    """
    words = re.findall(r"[a-z]+|\d+", phrase.lower())
    numbers = [int(word) for word in words if word.isdigit()]
    month = next((MONTHS[word] for word in words if word in MONTHS), None)
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", phrase):
            first = date.fromisoformat(phrase)
            return first, first + timedelta(days=1)
        if re.fullmatch(r"\d{4}-\d{2}", phrase):
            first = date(numbers[0], numbers[1], 1)
            return first, add_months(first, 1)
        if month is not None and len(numbers) == 2:
            day, year = sorted(numbers)
            first = date(year, month, day)
            return first, first + timedelta(days=1)
        if month is not None and len(numbers) == 1:
            first = date(numbers[0], month, 1)
            return first, add_months(first, 1)
    except ValueError:
        return None
    if len(numbers) == 1 and not words[1:]:
        return date(numbers[0], 1, 1), date(numbers[0] + 1, 1, 1)
    if words == ["yesterday"]:
        return today - timedelta(days=1), today
    if len(words) == 2 and words[0] in ("this", "last"):
        unit = words[1]
        if unit == "week":
            first = today - timedelta(days=today.weekday())
            return (first, first + timedelta(days=7)) if words[0] == "this" else (first - timedelta(days=7), first)
        if unit == "month":
            first = today.replace(day=1)
            return (first, add_months(first, 1)) if words[0] == "this" else (add_months(first, -1), first)
        first = date(today.year, 1, 1)
        return (first, date(today.year + 1, 1, 1)) if words[0] == "this" else (date(today.year - 1, 1, 1), first)
    return None


# Written-out dates people put in frontmatter and AsciiDoc headers. Slash dates other than
# year-first are left out on purpose: 03/04/2025 means different days on either side of
# the Atlantic, and a wrong date is worse than falling back to the next source.
_DATE_FORMATS = (
    "%Y/%m/%d",
    "%Y.%m.%d",
    "%d.%m.%Y",
    "%B %d, %Y",
    "%b %d, %Y",
    "%B %d %Y",
    "%b %d %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%d %B, %Y",
    "%d %b, %Y",
    "%B %Y",
    "%b %Y",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%d %H:%M:%S",
)
_ORDINAL_SUFFIX = re.compile(r"(?<=\d)(?:st|nd|rd|th)\b", re.IGNORECASE)
_WEEKDAY_PREFIX = re.compile(r"^(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+", re.IGNORECASE)


def parse_loose_date(value: Any) -> datetime | None:
    """A date typed by a person (YAML date, ISO string, "March 14, 2025", ...) in UTC, or None.

    A date without a time is midnight UTC; a time without an offset is taken as UTC.
    """
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if not isinstance(value, str) or not value.strip():
        return None
    text = " ".join(value.split())
    try:
        return as_utc(datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text))
    except ValueError:
        pass
    cleaned = _ORDINAL_SUFFIX.sub("", _WEEKDAY_PREFIX.sub("", text))
    for date_format in _DATE_FORMATS:
        try:
            return as_utc(datetime.strptime(cleaned, date_format))
        except ValueError:
            continue
    try:  # RFC 2822, as mail and feed tools write it: "Fri, 14 Mar 2025 09:30:00 +0200"
        return as_utc(parsedate_to_datetime(text))
    except (TypeError, ValueError, IndexError):
        return None


def as_utc(value: datetime) -> datetime:
    """`value` in UTC; a time without an offset is taken as UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
