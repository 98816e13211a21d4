"""Personal API tokens: made and revoked by their user (or staff), checked on each JSON API request."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from rag.models import ApiToken

TOKEN_PREFIX = "docent_"


def _hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def api_token_may_issue(*, issuer: AbstractBaseUser, owner: AbstractBaseUser) -> bool:
    """A token acts as its owner, so only the owner or a superuser (who can act as anyone already) makes one:
    staff allowed to manage tokens must not gain a superuser's powers by minting one of theirs."""
    return bool(issuer.is_superuser) or issuer.pk == owner.pk


def api_token_issue(*, token: ApiToken, issued_by: AbstractBaseUser) -> str:
    """Give an unsaved token (user and name set) its secret and save it; returns the text, which is not stored."""
    if not api_token_may_issue(issuer=issued_by, owner=token.user):
        raise PermissionDenied(f"only {token.user} or a superuser can make a token for {token.user}")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token.name = token.name.strip() or "API token"
    token.prefix, token.key_hash = raw[:12], _hash(raw)
    token.save()
    return raw


def api_token_create(*, user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """A new token and its text; the text cannot be shown again."""
    token = ApiToken(user=user, name=name)
    return token, api_token_issue(token=token, issued_by=user)


def api_tokens_revoke(*, tokens: QuerySet[ApiToken]) -> int:
    """Revoke the given tokens that are not yet revoked (staff, from the admin); how many were."""
    return tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def api_token_list(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)


def api_token_revoke(*, user: AbstractBaseUser, token_id: int) -> ApiToken:
    """Revoke one of the user's tokens (404 for anyone else's); revoking twice keeps the first time."""
    token = api_token_list(user=user).filter(pk=token_id).first()
    if token is None:
        raise Http404("No such token")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def api_token_user(*, raw: str) -> AbstractBaseUser | None:
    """The active user a presented token acts for, or None (unknown, revoked, or the user is inactive)."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    token = ApiToken.objects.select_related("user").filter(key_hash=_hash(raw), revoked_at__isnull=True).first()
    if token is None or not token.user.is_active:
        return None
    # At most one write a minute per token: enough to show "last used" without a write per request.
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user
