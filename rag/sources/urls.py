"""The Sources page's routes, included from rag/urls.py under the same URL names ("sources", "source-sync")."""

from django.urls import path

from rag.sources import views

urlpatterns = [
    path("documents/sources/", views.sources, name="sources"),
    path("documents/sources/<int:pk>/sync/", views.source_sync_now, name="source-sync"),
]
