"""Vendor side: make the Ed25519 keypair that signs license keys."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from licensing.keys import generate_keypair


class Command(BaseCommand):
    help = "Write a new private signing key (PEM, mode 600) and print the LICENSE_PUBLIC_KEY that verifies it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", required=True, type=Path, help="Where to write the private key.")
        parser.add_argument("--force", action="store_true", help="Overwrite an existing file.")

    def handle(self, *args: Any, out: Path, force: bool, **options: Any) -> None:
        if out.exists() and not force:
            raise CommandError(f"{out} exists; pass --force to replace it (keys signed with it will stop verifying)")
        private_pem, public_text = generate_keypair()
        # Created with 0600 from the start so the key is never readable by others, even briefly.
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(private_pem)
        os.chmod(out, 0o600)
        self.stderr.write(f"Private key written to {out}. Keep it off the servers you license.")
        self.stdout.write(f"LICENSE_PUBLIC_KEY={public_text}")
