"""Customer side: verify a signed license key and grant its tier to a workspace."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from licensing.keys import LicenseKeyError
from licensing.services import license_install


class Command(BaseCommand):
    help = ("Install a signed license key for a workspace of this installation. A bad key, or one issued for "
            "another installation, is refused and changes nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", help="The key as received (DOCENT1....).")
        parser.add_argument("--workspace", required=True, help="Slug of the workspace the key is for.")

    def handle(self, *args: Any, key: str, workspace: str, **options: Any) -> None:
        try:
            result = license_install(key=key, workspace_slug=workspace, actor_label="manage.py install_license")
        except LicenseKeyError as exc:
            raise CommandError(f"license key refused: {exc}") from None
        license = result.license
        until = f"until {license.valid_until:%Y-%m-%d %H:%M} UTC" if license.valid_until else "with no end date"
        notice = f" ({result.development_notice})" if result.development else ""
        if result.created:
            self.stdout.write(f"Installed {license.tier.name} for workspace {workspace}, {until} "
                              f"(license {license.license_id}){notice}.")
        elif result.renewed:
            self.stdout.write(f"Renewed license {license.license_id}: {license.tier.name} for workspace {workspace}, "
                              f"{until}{notice}.")
        else:
            self.stdout.write(f"License {license.license_id} was already installed{notice}; nothing changed.")
