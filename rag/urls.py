from django.urls import path

from rag import views

urlpatterns = [
    path("", views.home, name="home"),
    path("workspaces/switch/", views.workspace_switch, name="workspace-switch"),
]
