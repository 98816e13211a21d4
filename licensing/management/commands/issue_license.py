"""Vendor side: sign a license key for a customer's workspace."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from licensing.keys import LicenseKeyError, LicensePayload, load_private_key, sign_license
from licensing.models import LicenseTier


def _moment(text: str) -> datetime:
    """ISO date or datetime; a bare date is its midnight UTC, a naive datetime is UTC."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(f"not an ISO date or datetime: {text!r}") from None
    return moment if timezone.is_aware(moment) else moment.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = "Sign a license key with the vendor's private key and print it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--private-key", required=True, type=Path, help="PEM file from generate_license_keypair.")
        parser.add_argument("--workspace", required=True, help="Slug of the customer's workspace.")
        parser.add_argument(
            "--installation", required=True, type=uuid.UUID,
            help="The customer's installation ID (shown in their admin under Licenses); the key works there only.",
        )
        parser.add_argument("--tier", required=True, help="Tier slug, e.g. writer-pro or enterprise.")
        parser.add_argument("--valid-from", help="ISO date or datetime (UTC if no zone); default now.")
        end = parser.add_mutually_exclusive_group()
        end.add_argument(
            "--valid-until", help="ISO date or datetime the license stops at (a date means its midnight UTC)."
        )
        end.add_argument("--days", type=int, help="Length of the license in days from --valid-from.")
        parser.add_argument("--issued-to", default="", help="Customer name shown in the admin.")
        parser.add_argument("--license-id", type=uuid.UUID, help="Reissue an existing license id (default: a new one).")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            private_key = load_private_key(options["private_key"].read_bytes())
        except OSError as exc:
            raise CommandError(f"cannot read {options['private_key']}: {exc.strerror}") from None
        except LicenseKeyError as exc:
            raise CommandError(str(exc)) from None
        if not LicenseTier.objects.filter(slug=options["tier"]).exists():
            known = ", ".join(LicenseTier.objects.values_list("slug", flat=True))
            raise CommandError(f"unknown tier {options['tier']!r} (known: {known})")

        valid_from = _moment(options["valid_from"]) if options["valid_from"] else timezone.now().replace(microsecond=0)
        valid_until = None
        if options["valid_until"]:
            valid_until = _moment(options["valid_until"])
        elif options["days"] is not None:
            valid_until = valid_from + timedelta(days=options["days"])
        if valid_until is not None and valid_until <= valid_from:
            raise CommandError("the license must end after it starts")

        payload = LicensePayload(
            license_id=options["license_id"] or uuid.uuid4(),
            installation=str(options["installation"]),
            workspace=options["workspace"],
            tier=options["tier"],
            valid_from=valid_from,
            valid_until=valid_until,
            issued_to=options["issued_to"],
        )
        self.stdout.write(sign_license(payload, private_key))
