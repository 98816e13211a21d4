from __future__ import annotations

import re

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from rag.models import shown_path as _shown_path

register = template.Library()
_MARKER = re.compile(r"\[(\d{1,2})\]")


@register.filter
def cite_links(message) -> SafeString:
    """Escape the answer (document text is untrusted), then turn known [N] markers into links."""
    known = {c.get("n") for c in message.citations}

    def link(match: re.Match) -> str:
        n = int(match.group(1))
        if n not in known:
            return match.group(0)
        return format_html('<a class="cite" href="#m{}-src-{}" aria-label="Source {}">[{}]</a>', message.pk, n, n, n)

    return mark_safe(_MARKER.sub(link, str(escape(message.content))))


@register.filter
def percent(value) -> str:
    try:
        return f"{round(float(value) * 100)}%"
    except (TypeError, ValueError):
        return "—"


@register.filter
def iso_date(value) -> str:
    return str(value)[:10] if value else "undated"


@register.filter
def shown_path(path: str) -> str:
    """A source path as a reader may see it: never the server's folders."""
    return _shown_path(str(path or ""))
