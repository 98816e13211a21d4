"""Signed license keys: `DOCENT1.<base64url(json payload)>.<base64url(Ed25519 signature)>`.

The signature covers the text `DOCENT1.<payload part>`, so neither the version
prefix nor a byte of the payload can change without the key being refused.
The vendor signs with a private key that never leaves their machine; an
install verifies against the public keys built into licensing.trust.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

PREFIX = "DOCENT1"
# `installation` binds a key to one installation (licensing.models.Installation): the same
# workspace slug on another server is another customer's workspace.
PAYLOAD_FIELDS = ("license_id", "installation", "workspace", "tier", "valid_from", "valid_until", "issued_to")
_EARLIEST = datetime.min.replace(tzinfo=UTC)
_LATEST = datetime.max.replace(tzinfo=UTC)
# Optional: when the vendor signed it. A renewal reissues a license id; the later issue replaces the earlier.
ISSUED_AT = "issued_at"
# Optional: the gate keys the license grants. Absent (every key issued before it existed), the license grants
# its tier's features as fixed in code (licensing.features.TIER_FEATURES), never a tier's row in the database.
FEATURES = "features"


class LicenseKeyError(ValueError):
    """A key that cannot be installed; the message is meant for the person installing it."""


@dataclass(frozen=True)
class LicensePayload:
    license_id: uuid.UUID
    installation: str
    workspace: str
    tier: str
    valid_from: datetime
    valid_until: datetime | None
    issued_to: str
    issued_at: datetime | None = None
    features: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, str | list[str] | None]:
        fields = {
            "license_id": str(self.license_id),
            "installation": self.installation,
            "workspace": self.workspace,
            "tier": self.tier,
            "valid_from": self.valid_from.isoformat(),
            "valid_until": self.valid_until.isoformat() if self.valid_until else None,
            "issued_to": self.issued_to,
        }
        optional = {ISSUED_AT: self.issued_at.isoformat() if self.issued_at else None,
                    FEATURES: sorted(self.features) if self.features is not None else None}
        return {**fields, **{name: value for name, value in optional.items() if value is not None}}

    def issue_order(self) -> tuple[datetime, datetime]:
        """How two issues of one license id compare: the later signing wins, else the later end (none: last)."""
        return (self.issued_at or _EARLIEST, self.valid_until or _LATEST)


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def generate_keypair() -> tuple[bytes, str]:
    """A new vendor keypair: (private key PEM, public key as base64 of its 32 raw bytes)."""
    private_key = Ed25519PrivateKey.generate()
    private_pem = private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return private_pem, public_key_text(private_key.public_key())


def public_key_text(public_key: Ed25519PublicKey) -> str:
    """The form built-in keys and LICENSE_DEVELOPMENT_KEY take: one line, so it fits in an env var."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def load_private_key(pem: bytes) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise LicenseKeyError(f"cannot read the private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise LicenseKeyError("the private key is not an Ed25519 key")
    return key


def load_public_key(text: str) -> Ed25519PublicKey:
    """Accept PEM, or base64 of either the 32 raw bytes or the DER SubjectPublicKeyInfo."""
    text = text.strip()
    if not text:
        raise LicenseKeyError("no public key given; signed keys cannot be verified")
    try:
        if text.startswith("-----BEGIN"):
            key = serialization.load_pem_public_key(text.encode("ascii"))
        else:
            raw = base64.b64decode(text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4), validate=True)
            key = Ed25519PublicKey.from_public_bytes(raw) if len(raw) == 32 else serialization.load_der_public_key(raw)
    except (ValueError, TypeError, binascii.Error, UnicodeEncodeError):
        raise LicenseKeyError("not a readable Ed25519 public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise LicenseKeyError("not an Ed25519 public key")
    return key


def sign_license(payload: LicensePayload, private_key: Ed25519PrivateKey) -> str:
    body = _b64encode(json.dumps(payload.to_json(), sort_keys=True, separators=(",", ":")).encode("utf-8"))
    signed_part = f"{PREFIX}.{body}"
    return f"{signed_part}.{_b64encode(private_key.sign(signed_part.encode('ascii')))}"


def verify_license_key(key: str, public_key: Ed25519PublicKey) -> LicensePayload:
    """The payload of a key whose signature holds; dates and workspace are the caller's to judge."""
    parts = "".join(key.split()).split(".")  # keys pasted from e-mail often carry line breaks
    if len(parts) != 3 or parts[0] != PREFIX:
        raise LicenseKeyError(f"not a Docent license key (expected {PREFIX}.<payload>.<signature>)")
    prefix, body, signature_text = parts
    try:
        signature = _b64decode(signature_text)
        public_key.verify(signature, f"{prefix}.{body}".encode("ascii"))
    except (InvalidSignature, binascii.Error, ValueError, UnicodeEncodeError):
        raise LicenseKeyError(
            "the license key's signature is not valid: it was altered or not issued for this installation"
        ) from None
    # Past this point the vendor signed these bytes, so a parse failure is a vendor bug, still refused cleanly.
    try:
        data = json.loads(_b64decode(body))
        missing = [field for field in PAYLOAD_FIELDS if field not in data]
        if missing:
            raise LicenseKeyError(f"the license key lacks {', '.join(missing)}")
        return LicensePayload(
            license_id=uuid.UUID(data["license_id"]),
            installation=str(data["installation"]),
            workspace=str(data["workspace"]),
            tier=str(data["tier"]),
            valid_from=_aware(datetime.fromisoformat(data["valid_from"])),
            valid_until=_aware(datetime.fromisoformat(data["valid_until"])) if data["valid_until"] else None,
            issued_to=str(data["issued_to"] or ""),
            issued_at=_aware(datetime.fromisoformat(data[ISSUED_AT])) if data.get(ISSUED_AT) else None,
            features=_feature_keys(data[FEATURES]) if FEATURES in data else None,
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        if isinstance(exc, LicenseKeyError):
            raise
        raise LicenseKeyError("the license key's content is unreadable") from None


def _feature_keys(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(key, str) for key in value):
        raise ValueError("features must be a list of gate keys")
    return tuple(sorted(set(value)))


def _aware(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("license dates must carry a time zone")
    return moment
