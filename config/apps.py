from django.apps import AppConfig


class DocentConfig(AppConfig):
    """The project's own app, for what belongs to the processes rather than to documents: `manage.py services`."""

    name = "config"
    verbose_name = "Docent processes"
