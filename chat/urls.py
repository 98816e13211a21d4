from django.urls import path

from chat import views

urlpatterns = [
    path("", views.conversation_index, name="home"),
    path("chat/", views.conversation_index, name="chat"),
    path("chat/new/", views.conversation_new, name="conversation-new"),
    path("chat/<int:pk>/", views.conversation_detail, name="conversation-detail"),
    path("chat/<int:pk>/ask/", views.message_create, name="message-create"),
    path("chat/<int:pk>/options/", views.options_update, name="options-update"),
    path("chat/<int:pk>/options/default/", views.options_make_default, name="options-make-default"),
    path("chat/messages/<int:pk>/", views.message_detail, name="message-detail"),
    path("chat/messages/<int:pk>/stream/", views.message_stream, name="message-stream"),
]
