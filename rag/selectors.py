"""Reads scoped by workspace membership, so that no view can forget the scope."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import F, Q, QuerySet
from django.http import Http404

from rag.models import Document, IndexingJob, Workspace


def workspace_list(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Workspace]:
    if not user.is_authenticated:
        return Workspace.objects.none()
    return Workspace.objects.filter(members=user)


def workspace_get(*, user: AbstractBaseUser | AnonymousUser, slug: str) -> Workspace:
    """404 (not 403) for a workspace the user is not in: existence is not leaked."""
    try:
        return workspace_list(user=user).get(slug=slug)
    except Workspace.DoesNotExist:
        raise Http404("No such workspace") from None


def document_list(
    *,
    workspace: Workspace,
    doc_type: str = "",
    status: str = "",
    query: str = "",
    date_from=None,
    date_to=None,
    include_archived: bool = False,
) -> QuerySet[Document]:
    documents = Document.objects.filter(workspace=workspace)
    if not include_archived:
        documents = documents.filter(archived=False)
    if doc_type:
        documents = documents.filter(doc_type=doc_type)
    if status == "archived":
        documents = Document.objects.filter(workspace=workspace, archived=True)
    elif status:
        documents = documents.filter(status=status)
    if query:
        documents = documents.filter(Q(title__icontains=query) | Q(path__icontains=query))
    if date_from:
        documents = documents.filter(doc_date__date__gte=date_from)
    if date_to:
        documents = documents.filter(doc_date__date__lte=date_to)
    return documents.order_by(F("doc_date").desc(nulls_last=True), "path")


def document_get(*, user, pk: int) -> Document:
    """A document of one of the user's workspaces, else 404."""
    try:
        return Document.objects.select_related("workspace").get(pk=pk, workspace__members=user)
    except Document.DoesNotExist:
        raise Http404("No such document") from None


def job_get(*, user, pk: int) -> IndexingJob:
    try:
        return IndexingJob.objects.select_related("workspace").get(pk=pk, workspace__members=user)
    except IndexingJob.DoesNotExist:
        raise Http404("No such job") from None


def job_list(*, workspace: Workspace) -> QuerySet[IndexingJob]:
    return IndexingJob.objects.filter(workspace=workspace).order_by("-created_at")
