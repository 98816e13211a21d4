from __future__ import annotations

import re

from django import template
from django.template.defaultfilters import pluralize
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from rag.models import shown_path as _shown_path
from rag.source_labels import page_label as _page_label

register = template.Library()
_MARKER = re.compile(r"\[(\d{1,2})\]")


@register.filter
def cite_links(message) -> SafeString:
    """Escape the answer (document text is untrusted), then turn known [N] markers into links.

    A generated answer's sentences without a valid marker are marked "uncited" (shown subtly),
    and a marker that names no source is flagged rather than linked.
    """
    known = {c.get("n") for c in message.citations}
    generated = (message.metadata or {}).get("mode") == "llm"

    def link(match: re.Match) -> str:
        n = int(match.group(1))
        if n not in known:
            if generated:
                return format_html('<span class="cite-invalid" title="No source {} was given">[{}]?</span>', n, n)
            return match.group(0)
        return format_html('<a class="cite" href="#m{}-src-{}" aria-label="Source {}">[{}]</a>', message.pk, n, n, n)

    def render(text: str) -> str:
        return _MARKER.sub(link, str(escape(text)))

    content = message.content
    uncited = ((message.metadata or {}).get("compliance") or {}).get("uncited_spans") or [] if generated else []
    pieces, cursor = [], 0
    for start, end in sorted(uncited):
        if start < cursor or end > len(content):
            continue
        pieces.append(render(content[cursor:start]))
        pieces.append(format_html('<span class="uncited" title="No source cited for this sentence">{}</span>',
                                  mark_safe(render(content[start:end]))))
        cursor = end
    pieces.append(render(content[cursor:]))
    return mark_safe("".join(pieces))


@register.filter
def duplicates_hidden(message) -> str:
    """What "Hide duplicate passages" hid from this answer's search, counted ("3 duplicate passages hidden"),
    or "": the line is shown only when something was hidden."""
    search = (message.metadata or {}).get("search") or {}
    if not (search.get("options") or {}).get("dedup", True):
        return ""
    stats = search.get("stats") or {}
    count = int(stats.get("variants_filtered") or 0) + int(stats.get("near_duplicates_removed") or 0)
    return f"{count} duplicate passage{pluralize(count)} hidden" if count else ""


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


@register.filter
def page_label(citation: dict) -> str:
    """"slide 1" for a presentation's source, "p. 1" for a document's; "" where the format has no pages."""
    page = citation.get("page")
    return _page_label(path=str(citation.get("path") or ""), page=page) if page else ""


@register.filter
def below_title(heading_path: str, title: str) -> str:
    """The section within its document ("Limits > Burst"), the title the line already shows left out."""
    heading_path, title = str(heading_path or ""), str(title or "")
    if heading_path == title:
        return ""
    return heading_path[len(title) + 3:] if heading_path.startswith(f"{title} > ") else heading_path


@register.filter
def provenance_none(message) -> bool:
    """Provenance was asked for and shown, yet no source has any: the page says so rather than show nothing."""
    search = (message.metadata or {}).get("search") or {}
    asked = (search.get("options") or {}).get("provenance") and (search.get("stats") or {}).get("provenance") == "applied"
    return bool(asked and message.citations and not any(c.get("provenance") for c in message.citations))
