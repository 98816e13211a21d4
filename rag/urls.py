from django.urls import path

from rag import views
from rag.sources import views as source_views

urlpatterns = [
    path("favicon.ico", views.favicon, name="favicon"),
    path("workspaces/switch/", views.workspace_switch, name="workspace-switch"),
    path("documents/", views.documents, name="documents"),
    path("documents/upload/", views.upload, name="upload"),
    path("documents/sources/", source_views.sources, name="sources"),
    path("documents/sources/<int:pk>/sync/", source_views.source_sync_now, name="source-sync"),
    path("documents/<int:pk>/", views.document_detail, name="document-detail"),
    path("documents/<int:pk>/compare/", views.document_compare, name="document-compare"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("account/tokens/", views.api_tokens, name="api-tokens"),
    path("account/tokens/<int:pk>/revoke/", views.api_token_revoke_view, name="api-token-revoke"),
]
