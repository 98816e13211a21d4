from django.urls import include, path

from rag import views

urlpatterns = [
    path("favicon.ico", views.favicon, name="favicon"),
    path("workspaces/switch/", views.workspace_switch, name="workspace-switch"),
    path("documents/", views.documents, name="documents"),
    path("documents/upload/", views.upload, name="upload"),
    path("", include("rag.sources.urls")),
    path("documents/<int:pk>/", views.document_detail, name="document-detail"),
    path("documents/<int:pk>/compare/", views.document_compare, name="document-compare"),
    path("documents/<int:pk>/retry/", views.document_retry, name="document-retry"),
    path("documents/<int:pk>/remove/", views.document_remove, name="document-remove"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/retry/", views.job_retry, name="job-retry"),
    path("account/tokens/", views.api_tokens, name="api-tokens"),
    path("account/tokens/<int:pk>/revoke/", views.api_token_revoke_view, name="api-token-revoke"),
]
