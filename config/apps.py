from django.apps import AppConfig


class DocentConfig(AppConfig):
    """The project's own app, for what belongs to the processes rather than to documents: `manage.py services`,
    and the configuration's system check (config/checks.py)."""

    name = "config"
    verbose_name = "Docent processes"

    def ready(self) -> None:
        # import here: registering the check needs Django's checks framework, ready once the apps are.
        from config import checks  # noqa: F401 - imported for its @register
