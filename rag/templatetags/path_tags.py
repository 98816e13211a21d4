"""`{{ path|path_breaks }}`: a path that wraps at its separators on a narrow screen, never one letter a line."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# Where a reader expects a path to break: after a separator or an ellipsis ("…/docs/guide/", "C:\docs\").
_BREAK_AFTER = re.compile(r"(/|\\|…)")


@register.filter
def path_breaks(path: str) -> SafeString:
    """The path escaped, with a line-break opportunity (<wbr>) after each separator: CSS that may break anywhere
    (word-break: break-all) lets a table squeeze the column to one character."""
    return mark_safe(_BREAK_AFTER.sub(r"\1<wbr>", str(escape(path or ""))))  # noqa: S308 - escaped just above
