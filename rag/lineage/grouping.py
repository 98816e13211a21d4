"""Which documents form a family, and in what order, from the stored relations between them.

Relations are taken strongest first (ties by the documents' paths, never by ids or arrival),
and two groups join only when their members line up:

- no two of them come from one release (one version label, one exact release date), unless one is
  a copy of the other: a family holds one document per release;
- each side's document of the joining relation is related to one of its nearest members of the
  other group in version order, so a document joins on evidence against the members next to it,
  never through a weak tie to a far one.

Nothing is chained through one pair, and the groups depend only on the documents and their
relations: an incremental update and a rebuild, in any order, reach the same families.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from datetime import UTC

from rag.lineage.evidence import Member, shares_release

OLDEST = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Relation:
    a: int
    b: int
    strength: float
    identical: bool


def pair_key(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


# --- version order ---------------------------------------------------------------------------------


def date_rank(member: Member) -> tuple:
    """An explicit date beats a file mtime, which beats an upload time; unknown dates are oldest."""
    return (member.date_confidence > 0, member.doc_date or OLDEST, member.indexed_at or OLDEST, member.path)


def version_order(members: dict[int, Member], copies: dict[int, int], floors: dict[int, str],
                  releases: dict[int, str] | None = None) -> list[int]:
    """Oldest first: labels decide between labelled members, and a release inferred from a member's own content
    (`releases`: id -> its version key) counts as its label, so a file's date only orders members of one release
    (an undated copy made today is not newer than the release its notes end at). The rest are ordered by date
    (then by the versions their directives name) and placed among the labelled ones by date. Copies follow their
    original."""
    releases = releases or {}
    release = {m.id: m.version_key or releases.get(m.id, "") for m in members.values()}
    originals = [m for pk, m in members.items() if pk not in copies]
    labelled = sorted((m for m in originals if release[m.id]), key=lambda m: (release[m.id], date_rank(m)))
    # A trustworthy date orders them; the newest version their directives name breaks ties and orders those
    # with no trustworthy date (a page without a directive is not older for it).
    unlabelled = sorted((m for m in originals if not release[m.id]),
                        key=lambda m: (m.date_confidence > 0, (m.doc_date or OLDEST) if m.date_confidence > 0
                                       else OLDEST, floors.get(m.id, ""), date_rank(m)))
    order: list[Member] = []
    pending = list(unlabelled)
    for member in labelled:
        # An unlabelled member older than this labelled one (by a trustworthy date) comes before it.
        while pending and pending[0].date_confidence > 0 and member.doc_date and pending[0].doc_date \
                and pending[0].doc_date < member.doc_date:
            order.append(pending.pop(0))
        order.append(member)
    order.extend(pending)
    result: list[int] = []
    for member in order:
        result.append(member.id)
        result.extend(sorted((pk for pk, original in copies.items() if original == member.id),
                             key=lambda pk: date_rank(members[pk])))
    return result


def copies_of(members: dict[int, Member], identical: set[tuple[int, int]]) -> dict[int, int]:
    """copy -> original: of identical members with the same (or no) label, the one with the most trustworthy date
    is the original (then the oldest, then by path), whichever arrived first; its date places them both."""
    copies: dict[int, int] = {}
    ranked = sorted(members, key=lambda pk: (-members[pk].date_confidence, members[pk].doc_date or OLDEST,
                                             members[pk].path))
    for index, pk in enumerate(ranked):
        for original in ranked[:index]:
            if original in copies:
                continue
            a, b = members[original], members[pk]
            if b.version_key and a.version_key and a.version_key != b.version_key:
                continue
            if pair_key(original, pk) in identical:
                copies[pk] = original
                break
    return copies


# --- grouping ------------------------------------------------------------------------------------------


class _Groups:
    def __init__(self, members: dict[int, Member], relations: dict[tuple[int, int], Relation]) -> None:
        self.members = members
        self.relations = relations
        self.group_of: dict[int, int] = {pk: pk for pk in members}
        self.groups: dict[int, set[int]] = {pk: {pk} for pk in members}
        self.fixed: set[int] = set()

    def join(self, a: int, b: int) -> int:
        ga, gb = self.group_of[a], self.group_of[b]
        keep, gone = min(ga, gb), max(ga, gb)
        for pk in self.groups[gone]:
            self.group_of[pk] = keep
        self.groups[keep] |= self.groups.pop(gone)
        if gone in self.fixed:
            self.fixed.discard(gone)
            self.fixed.add(keep)
        return keep

    def line_up(self, a: int, b: int) -> bool:
        """Whether the groups of a and b may become one family through the relation a ~ b."""
        side_a, side_b = self.groups[self.group_of[a]], self.groups[self.group_of[b]]
        for x in side_a:
            for y in side_b:
                if shares_release(self.members[x], self.members[y]) and not self._identical(x, y):
                    return False
        together = {pk: self.members[pk] for pk in side_a | side_b}
        order = version_order(together, {}, {})
        return self._next_to_related(b, side_a, order) and self._next_to_related(a, side_b, order)

    def _identical(self, x: int, y: int) -> bool:
        relation = self.relations.get(pair_key(x, y))
        return relation is not None and relation.identical

    def _next_to_related(self, pk: int, others: set[int], order: list[int]) -> bool:
        """`pk` is related to the member of `others` just before or just after it in version order."""
        position = order.index(pk)
        before = next((other for other in reversed(order[:position]) if other in others), None)
        after = next((other for other in order[position + 1:] if other in others), None)
        nearest = {other for other in (before, after) if other is not None}
        nearest |= {copy for other in nearest for copy in others if self._identical(copy, other)}  # one text
        return any(pair_key(pk, other) in self.relations for other in nearest)


def group_documents(members: dict[int, Member], relations: Iterable[Relation], *,
                    fixed: Iterable[set[int]] = ()) -> list[set[int]]:
    """Families (groups of two or more) among `members` from their relations.

    `fixed` groups were drawn by a person: they take in a document that relates to them, and are
    never joined with another group or taken apart.
    """
    usable = {pair_key(r.a, r.b): r for r in relations if r.a in members and r.b in members and r.a != r.b}
    groups = _Groups(members, usable)
    for group in fixed:
        drawn = [pk for pk in sorted(group) if pk in members]
        for pk in drawn[1:]:
            groups.join(drawn[0], pk)
        if drawn:
            groups.fixed.add(groups.group_of[drawn[0]])
    ordered = sorted(usable.values(), key=lambda r: (-r.strength, *sorted((members[r.a].path, members[r.b].path))))
    for relation in ordered:
        ga, gb = groups.group_of[relation.a], groups.group_of[relation.b]
        if ga == gb:
            continue
        fixed_a, fixed_b = ga in groups.fixed, gb in groups.fixed
        if fixed_a or fixed_b:
            other = groups.groups[gb if fixed_a else ga]
            if (fixed_a and fixed_b) or len(other) > 1:
                continue
            groups.join(relation.a, relation.b)
            continue
        if groups.line_up(relation.a, relation.b):
            groups.join(relation.a, relation.b)
    return [group for group in groups.groups.values() if len(group) > 1]
