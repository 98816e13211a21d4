"""Vendor tooling, not part of the product: make a signing keypair and sign license keys.

    python tools/license_vendor.py keypair --out FILE
    python tools/license_vendor.py issue --private-key FILE --installation ID --workspace SLUG --tier SLUG
        [--valid-from DATE] [--valid-until DATE | --days N] [--issued-to NAME] [--license-id UUID]
        [--features KEY,KEY]

It lives outside the installed packages (pyproject's package list does not
include tools/), so a server runs no code that signs. A key signed here grants a
tier only where its public half is trusted: the vendor's, built into
licensing/trust.py, or a developer's own, set as LICENSE_DEVELOPMENT_KEY (honoured
on an instance that serves this machine alone, and shown as not genuine).
Reissuing a license id (`--license-id`) renews it: installs apply the later issue.
`--features` signs the gate keys the license grants into it; without it the key grants its
tier's features as the installed version's code fixes them (licensing/features.py).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

# Run as a script from a checkout: the format lives in the product's licensing.keys.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from licensing.keys import (  # noqa: E402
    LicenseKeyError,
    LicensePayload,
    generate_keypair,
    load_private_key,
    sign_license,
)

TIER_SLUG = re.compile(r"[a-z0-9][a-z0-9-]*")
GATE_KEY = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)+")  # e.g. rag.dedup.provenance


class ToolError(Exception):
    """A refusal meant for the person running the tool: one line, exit status 2."""


def _moment(text: str) -> datetime:
    """ISO date or datetime; a bare date is its midnight UTC, a naive datetime is UTC."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ToolError(f"not an ISO date or datetime: {text!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def keypair_write(*, out: Path, force: bool) -> str:
    """Write a new private key (PEM, mode 0600 from its creation) and return its public half."""
    private_pem, public_text = generate_keypair()
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        fd = os.open(out, flags, 0o600)
    except FileExistsError:
        raise ToolError(f"{out} exists; pass --force to replace it (keys signed with it will stop verifying)") from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(private_pem)
    os.chmod(out, 0o600)  # --force on an older file keeps its mode otherwise
    return public_text


def license_issue(arguments: argparse.Namespace) -> str:
    """The signed key for the arguments of `issue`."""
    try:
        private_key = load_private_key(Path(arguments.private_key).read_bytes())
    except OSError as exc:
        raise ToolError(f"cannot read {arguments.private_key}: {exc.strerror}") from None
    except LicenseKeyError as exc:
        raise ToolError(str(exc)) from None
    if not TIER_SLUG.fullmatch(arguments.tier):
        raise ToolError(f"not a tier slug: {arguments.tier!r} (e.g. writer-pro, enterprise)")
    now = datetime.now(UTC).replace(microsecond=0)
    valid_from = _moment(arguments.valid_from) if arguments.valid_from else now
    valid_until = None
    if arguments.valid_until:
        valid_until = _moment(arguments.valid_until)
    elif arguments.days is not None:
        valid_until = valid_from + timedelta(days=arguments.days)
    if valid_until is not None and valid_until <= valid_from:
        raise ToolError("the license must end after it starts")
    features = None
    if arguments.features is not None:
        features = tuple(sorted({key.strip() for key in arguments.features.split(",") if key.strip()}))
        if bad := [key for key in features if not GATE_KEY.fullmatch(key)]:
            raise ToolError(f"not a gate key: {bad[0]!r} (e.g. rag.dedup.provenance)")
    payload = LicensePayload(
        license_id=arguments.license_id or uuid.uuid4(), installation=str(arguments.installation),
        workspace=arguments.workspace, tier=arguments.tier, valid_from=valid_from, valid_until=valid_until,
        issued_to=arguments.issued_to, issued_at=now, features=features,
    )
    return sign_license(payload, private_key)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="license_vendor", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    keypair = commands.add_parser("keypair", help="Write a new private signing key and print its public key.")
    keypair.add_argument("--out", required=True, type=Path, help="Where to write the private key (mode 0600).")
    keypair.add_argument("--force", action="store_true", help="Overwrite an existing file.")

    issue = commands.add_parser("issue", help="Sign a license key and print it.")
    issue.add_argument("--private-key", required=True, help="PEM file written by `keypair`.")
    issue.add_argument("--installation", required=True, type=uuid.UUID,
                       help="The customer's installation ID (`manage.py installation_id`); the key works there only.")
    issue.add_argument("--workspace", required=True, help="Slug of the customer's workspace.")
    issue.add_argument("--tier", required=True, help="Tier slug, e.g. writer-pro or enterprise.")
    issue.add_argument("--valid-from", help="ISO date or datetime (UTC if no zone); default now.")
    end = issue.add_mutually_exclusive_group()
    end.add_argument("--valid-until", help="ISO date or datetime the license stops at (a date: its midnight UTC).")
    end.add_argument("--days", type=int, help="Length of the license in days from --valid-from.")
    issue.add_argument("--issued-to", default="", help="Customer name shown in the admin.")
    issue.add_argument("--license-id", type=uuid.UUID, help="Reissue (renew) an existing license id.")
    issue.add_argument("--features", help="Comma-separated gate keys the key grants (empty: none); "
                                          "default: the tier's features as the product's code fixes them.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    try:
        if arguments.command == "keypair":
            public_text = keypair_write(out=arguments.out, force=arguments.force)
            sys.stderr.write(f"Private key written to {arguments.out}. Keep it off the servers you license.\n"
                             "Vendor key: add the public key to licensing/trust.py VENDOR_PUBLIC_KEYS; "
                             "development key: set the line below in the instance's environment.\n")
            print(f"LICENSE_DEVELOPMENT_KEY={public_text}")
        else:
            print(license_issue(arguments))
    except ToolError as exc:
        sys.stderr.write(f"license_vendor: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
