from django.apps import AppConfig


class DocentConfig(AppConfig):
    """The project's own app, for what belongs to the processes rather than to documents: `manage.py services`,
    and the configuration's system check (config/checks.py)."""

    name = "config"
    verbose_name = "Docent processes"

    def ready(self) -> None:
        from config import checks  # noqa: F401 - registers the check; import here: it reads the settings
