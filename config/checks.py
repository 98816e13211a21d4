"""`manage.py check` reports bad configuration by the variable's name (read by config/settings.py, which never
stops on it: importing the settings must neither fail nor write)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, register

from config.configuration import data_dir_problem


@register()
def configuration_check(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """One error per variable whose value does not fit its declaration, a SECRET_KEY that serving the network
    requires, a DATA_DIR that cannot be written (config.configuration)."""
    problems = [*settings.CONFIGURATION_PROBLEMS, *filter(None, [data_dir_problem(settings.DATA_DIR)])]
    return [Error(problem, hint="docs/configuration.md says what each variable takes", id="docent.E001")
            for problem in problems]
