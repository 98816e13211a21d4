from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from config.api import api_urls
from config.health import healthz
from config.mcp import mcp_view
from rag.metrics import metrics_view

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="metrics"),
    path("api/v1/", api_urls()),
    path("mcp", mcp_view, name="mcp"),
    path("", include("rag.urls")),
    path("", include("chat.urls")),
]
