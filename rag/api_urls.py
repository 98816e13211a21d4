from django.urls import path

from rag import api

urlpatterns = [
    path("search", api.search_view, name="api-search"),
]
