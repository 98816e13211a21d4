"""Hand edits of version lineage (the admin's split, join and reorder; hand-set labels and dates).

A family a person has arranged is marked `edited_by_hand`, so that automatic evidence at the next
merge keeps its membership and order; every edit ends with `family_refresh`, which re-derives the
latest flags, copies and chunk supersession from the new arrangement.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F

from rag.documents import documents_reindex
from rag.jobs import merge_after_commit
from rag.lineage import family_refresh
from rag.releases import version_key
from rag.models import Document, DocumentFamily, IndexingJob

SET_BY_HAND = "set_by_hand"


class LineageEditError(ValueError):
    """An edit that cannot be made; the message is shown to the staff user."""


def _renumber(document_ids: Iterable[int]) -> None:
    Document.objects.bulk_update(
        [Document(pk=pk, family_position=position) for position, pk in enumerate(document_ids)], ["family_position"])


def _ordered_ids(family_id: int) -> list[int]:
    return list(Document.objects.filter(family_id=family_id)
                .order_by(F("family_position").asc(nulls_last=True), "pk").values_list("pk", flat=True))


def family_split(*, document_ids: list[int]) -> DocumentFamily:
    """The given members leave their family for a new one; both keep their members' order."""
    with transaction.atomic():  # the two families are renumbered together or not at all
        documents = list(Document.objects.select_for_update().filter(pk__in=document_ids))
        family_ids = {document.family_id for document in documents}
        if len(documents) != len(set(document_ids)) or len(family_ids) != 1 or None in family_ids:
            raise LineageEditError("Choose members of one family to split off.")
        old = DocumentFamily.objects.select_for_update().get(pk=family_ids.pop())
        remaining = [pk for pk in _ordered_ids(old.pk) if pk not in set(document_ids)]
        if not remaining:
            raise LineageEditError("Splitting off every member would leave an empty family: keep at least one.")
        new = DocumentFamily.objects.create(workspace_id=old.workspace_id, name=old.name, edited_by_hand=True)
        moved = [pk for pk in _ordered_ids(old.pk) if pk in set(document_ids)]
        Document.objects.filter(pk__in=moved).update(family=new)
        _renumber(remaining)
        _renumber(moved)
        DocumentFamily.objects.filter(pk=old.pk).update(edited_by_hand=True)
        family_refresh(family_id=old.pk)
        family_refresh(family_id=new.pk)
    return new


def families_join(*, family_ids: list[int]) -> DocumentFamily:
    """One family (the first created) takes every member of the others; the others are deleted.

    Members are ordered by version label, then date, since two families' positions say nothing
    about each other; reorder afterwards if that is wrong.
    """
    with transaction.atomic():
        families = list(DocumentFamily.objects.select_for_update().filter(pk__in=family_ids).order_by("pk"))
        if len(families) < 2:
            raise LineageEditError("Choose at least two families to join.")
        if len({family.workspace_id for family in families}) > 1:
            raise LineageEditError("Families of different workspaces cannot be joined.")
        kept, others = families[0], families[1:]
        Document.objects.filter(family__in=others).update(family=kept)
        DocumentFamily.objects.filter(pk__in=[family.pk for family in others]).delete()
        members = Document.objects.filter(family=kept).order_by(
            "version_key", F("doc_date").asc(nulls_first=True), "pk")
        _renumber(members.values_list("pk", flat=True))
        DocumentFamily.objects.filter(pk=kept.pk).update(edited_by_hand=True)
        family_refresh(family_id=kept.pk)
    return kept


def family_reorder(*, family_id: int, document_ids: list[int]) -> None:
    """The family's members in the given order, oldest first; every member must be named once."""
    with transaction.atomic():
        family = DocumentFamily.objects.select_for_update().get(pk=family_id)
        if sorted(document_ids) != sorted(_ordered_ids(family.pk)):
            raise LineageEditError("Name every member of the family exactly once to reorder it.")
        _renumber(document_ids)
        DocumentFamily.objects.filter(pk=family.pk).update(edited_by_hand=True)
        family_refresh(family_id=family.pk)


def document_version_set(*, document_id: int, version_label: str, user: AbstractBaseUser) -> None:
    """A version label set by a person; a re-index keeps it (the pipeline sees version_set_by)."""
    label = version_label.strip()
    with transaction.atomic():
        document = Document.objects.select_for_update().get(pk=document_id)
        document.version_label = label
        document.version_key = (version_key(label) or "") if label else ""
        document.version_source = SET_BY_HAND
        document.version_set_by = user
        document.save(update_fields=["version_label", "version_key", "version_source", "version_set_by",
                                     "updated_at"])
        if document.family_id:
            family_refresh(family_id=document.family_id)
        merge_after_commit(document_id=document_id)  # which copy of a record is newest may have changed


def documents_release_set(*, document_ids: list[int], version_label: str, user: AbstractBaseUser) -> int:
    """One release label set by a person on many documents at once (a batch whose release was inferred wrong)."""
    label = version_label.strip()
    if label and version_key(label) is None:
        raise LineageEditError(f"{label!r} is not a version (write it like 3.2 or 2.1.4).")
    with transaction.atomic():
        documents = Document.objects.select_for_update().filter(pk__in=document_ids)
        family_ids = set(documents.exclude(family=None).values_list("family_id", flat=True))
        changed = documents.update(version_label=label, version_key=(version_key(label) or "") if label else "",
                                   version_source=SET_BY_HAND, version_set_by=user)
        for family_id in sorted(family_ids):
            family_refresh(family_id=family_id)
        for document_id in sorted(document_ids):
            merge_after_commit(document_id=document_id)  # which copy of a record is newest may have changed
    return changed


def document_date_set(*, document_id: int, doc_date: datetime | None, user: AbstractBaseUser) -> None:
    """A date set by a person: the most trusted source, kept by a re-index."""
    with transaction.atomic():
        document = Document.objects.select_for_update().get(pk=document_id)
        document.doc_date = doc_date
        document.date_source = SET_BY_HAND
        document.date_set_by = user
        document.save(update_fields=["doc_date", "date_source", "date_set_by", "updated_at"])
        if document.family_id:
            family_refresh(family_id=document.family_id)
        merge_after_commit(document_id=document_id)  # records' canonicals and contradictions follow dates


def document_lineage_automatic(*, document_id: int, version: bool = False, date: bool = False,
                               user: AbstractBaseUser) -> IndexingJob | None:
    """Undo a hand-set version label and/or date: the file is read again and what it says applies.

    Re-indexing is what finds them (the file's own label and date, its folder, its mtime), and the
    family and the merge follow it as after any indexing.
    """
    with transaction.atomic():
        document = Document.objects.select_for_update().get(pk=document_id)
        if version:
            document.version_set_by = None
        if date:
            document.date_set_by = None
        document.save(update_fields=["version_set_by", "date_set_by", "updated_at"])
        return documents_reindex(documents=Document.objects.filter(pk=document_id), created_by=user)
