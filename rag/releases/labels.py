"""Version labels: which version a document says it is, and how two labels compare.

Pure functions of a document's path, title and metadata (no database), so the
pipeline, the family builder and the tests call them alike. Labels are compared
with packaging.version after dropping a leading "v", never as strings ("2.10"
comes after "2.9"). Finding a version in free text is mostly knowing what not to
take: dates, ADR numbers, section numbers, protocol versions ("HTTP/1.1",
"OAuth 2.0", "TLS 1.3"), API paths ("/api/v2", "Admin API v2") and the runtime a
document runs on ("Running on Python 3.11").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from packaging.version import Version

from rag.releases.order import parse_version, version_key

__all__ = [
    "VERSION_SOURCES",
    "VersionLabel",
    "extract_version_label",
    "path_version_stem",
    "strip_versions",
    "text_versions",
    "VersionMention",
    "version_stem_key",
]

# In the order extract_version_label trusts them; html_meta is a <meta name="version"> tag.
VERSION_SOURCES = (
    "frontmatter", "html_meta", "asciidoc_revnumber", "rst_version", "pdf_metadata", "office_property", "title",
    "filename", "path",
)  # fmt: skip


@dataclass(frozen=True)
class VersionLabel:
    label: str  # as shown to people, normalised by packaging: "3.0", "3.2.25", "1.4.0rc1"
    key: str  # compare two keys as plain strings to order the labels as packaging does
    source: str  # one of VERSION_SOURCES


# --- what is not a version ---------------------------------------------------------------------------

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_YEAR = r"(?:19|20)\d{2}"
_DATES = re.compile(
    "|".join(
        [
            rf"\b{_YEAR}[-/.](?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\d|3[01])(?:[T ]\d{{1,2}}:\d{{2}}(?::\d{{2}})?)?\b",
            rf"\b(?:0?[1-9]|[12]\d|3[01])[-/.](?:0?[1-9]|1[0-2])[-/.]{_YEAR}\b",
            rf"(?<![\d.]){_YEAR}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?![\d.])",
            rf"\b{_YEAR}[-/](?:0[1-9]|1[0-2])\b(?![-/.]\d)",
            rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+)?{_MONTH}\.?\s+(?:\d{{1,2}}(?:st|nd|rd|th)?,?\s+)?{_YEAR}\b",
        ]
    ),
    re.IGNORECASE,
)
_BARE_YEAR = re.compile(rf"(?<![\w.]){_YEAR}(?![\w]|\.\d)")

# Words after which a number is a protocol, standard or numbering, not a product version.
_NOT_PRODUCT = {
    "http", "https", "oauth", "oauth2", "tls", "ssl", "smtp", "imap", "pop", "ftp", "sftp", "ssh", "ip", "ipv",
    "tcp", "udp", "quic", "spdy", "saml", "openid", "oidc", "jwt", "utf", "iso", "rfc", "pep", "adr", "api", "apis",
    "sha", "md", "unicode", "ieee", "json", "yaml", "html", "css", "sql", "soap", "grpc", "graphql", "websocket",
    "mqtt", "amqp", "snmp", "ldap", "kerberos", "h", "x", "chapter", "section", "sect", "part", "step", "figure",
    "fig", "table", "appendix", "page", "no", "number", "item", "rule", "phase", "stage", "level", "tier", "class",
    "type", "top", "issue", "ticket", "bug", "q", "port", "cve", "cwe", "owasp", "pci", "dss", "soc", "gdpr", "wcag",
}  # fmt: skip
# Platforms a document may be about (then the version is theirs) or run on (then it is not).
_RUNTIMES = {
    "python", "py", "cpython", "pypy", "java", "jdk", "jre", "node", "nodejs", "npm", "ruby", "rails", "php", "perl",
    "go", "golang", "rust", "dotnet", "net", "ubuntu", "debian", "centos", "rhel", "fedora", "alpine", "windows",
    "macos", "linux", "kernel", "kubernetes", "k8s", "helm", "docker", "postgresql", "postgres", "mysql", "mariadb",
    "redis", "sqlite", "mongodb", "elasticsearch", "openssl", "nginx", "apache", "django", "flask", "celery",
    "sqlalchemy", "sphinx", "pip", "setuptools", "chrome", "firefox", "safari", "ios", "android", "terraform",
    "ansible", "gcc", "clang", "llvm", "cuda", "numpy", "pandas", "react", "angular", "vue", "typescript", "ecmascript",
    "es", "erlang", "elixir", "scala", "kotlin", "swift", "openjdk", "jvm", "glibc", "musl",
}  # fmt: skip
_RUNS_ON = {
    "on", "with", "using", "requires", "require", "requiring", "required", "under", "against", "supports", "support",
    "supported", "for", "and", "or", "via", "needs", "need", "upgrading", "drop", "dropped", "dropping", "plus",
}  # fmt: skip
_CUES_BEFORE = {"version", "versions", "ver", "release", "releases", "rel", "rev", "revision", "v"}
_LINKS_BEFORE = {"in", "for", "to", "of", "since", "from", "and", "until", "before", "after", "between", "vs"}
_CUES_AFTER = re.compile(r"\s*(?:release|docs?\b|documentation|notes|changelog|series|branch|version|lts)", re.I)
_UNITS_AFTER = re.compile(
    r"\s*(?:%|percent|x\b|ms\b|s\b|secs?\b|seconds?\b|mins?\b|minutes?\b|h\b|hours?\b|days?\b|weeks?\b|"
    r"[kmgt]i?b\b|[kmgt]\b|rps\b|qps\b|req\b|requests?\b|times\b|fold\b|px\b|em\b|pt\b|°)",
    re.I,
)

# A version number in running text. Glued to a word, a path, a URL or a currency it is not one
# ("IPv4", "/api/v2", "HTTP/1.1", "$2.50"); four dotted numbers are an IP address.
_SUFFIX = r"(?:[-.]?(?:alpha|beta|preview|pre|rc|dev|post|a|b|c)\.?\d*(?![a-z]))?"
_VERSION_IN_TEXT = re.compile(
    rf"(?<![\w./:\\#$€£+@-])(?P<prefix>v(?=\d))?(?P<number>\d+(?:\.\d+){{0,2}})(?P<suffix>{_SUFFIX})(?![\w/]|\.\d|-\d)",
    re.IGNORECASE,
)
_VERSION_IN_NAME = re.compile(
    r"(?:^|(?<=[-_ ()\[\]+,]))(?P<prefix>v)?(?P<number>\d+(?:\.\d+){0,2})"
    r"(?P<suffix>(?:[-_.]?(?:alpha|beta|preview|pre|rc|dev|post|a|b|c)\.?\d*)?)(?=$|[-_ ()\[\]+,]|\.(?!\d))",
    re.IGNORECASE,
)
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z0-9+#]*)?([^A-Za-z0-9]*)$")
_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9+#]*")


@dataclass(frozen=True)
class VersionMention:
    """Where a version is named in a text (offsets into that text) and what we know of its context."""

    start: int
    end: int
    version: Version
    cued: bool  # a "v", "version" or "release" next to it
    runtime: bool  # right after a platform name: the version may be the platform's


def _mask(text: str, pattern: re.Pattern[str]) -> str:
    """Blank out matches, keeping every other position where it was."""
    return pattern.sub(lambda match: " " * len(match.group(0)), text)


def _number_version(match: re.Match[str]) -> Version | None:
    number = match["number"]
    if len(number) > 1 and number.startswith("0") and "." not in number:
        return None  # "0007": an ADR or ticket number
    return parse_version(number + (match["suffix"] or ""))


def text_versions(text: str, *, strict: bool = True) -> list[VersionMention]:
    """Version mentions in a title, heading or sentence, in order.

    `strict` (titles, PDF metadata, questions) wants a product-ish context: a "v",
    "version"/"release" before or "release"/"docs" after, a capitalised name before
    ("Lumen Gateway 3.0"), brackets ("(2.1)"), or a linking word ("upgrade to 2.1").
    Otherwise (stripping versions off headings) any dotted number will do. Either
    way a bare integer needs a "v" or "version" ("v3", "release 5"; not "top 10").
    """
    masked = _mask(text, _DATES)
    mentions: list[VersionMention] = []
    for match in _VERSION_IN_TEXT.finditer(masked):
        version = _number_version(match)
        if version is None or _UNITS_AFTER.match(masked, match.end()):
            continue
        before = _WORD_BEFORE.search(masked[: match.start()])
        word = (before.group(1) or "") if before else ""
        gap = (before.group(2) or "") if before else ""
        lower = word.lower()
        if word and lower in _NOT_PRODUCT and "(" not in gap:
            continue
        runtime = lower in _RUNTIMES
        if runtime and _previous_word(masked, match.start() - len(gap) - len(word)) in _RUNS_ON:
            continue
        cued = bool(match["prefix"]) or (lower in _CUES_BEFORE and gap.strip() in ("", ":"))
        cued = cued or bool(_CUES_AFTER.match(masked, match.end()))
        dotted = "." in match["number"] or bool(match["suffix"])
        if not cued and not dotted:
            continue
        if strict and not cued:
            product_context = bool(word) and (word[0].isupper() or lower in _LINKS_BEFORE)
            if not (product_context or "(" in gap):
                continue
        mentions.append(VersionMention(match.start(), match.end(), version, cued, runtime))
    return mentions


def _previous_word(text: str, end: int) -> str:
    words = _WORDS.findall(text[:end])
    return words[-1].lower() if words else ""


def _main_mention(mentions: list[VersionMention], text: str) -> VersionMention | None:
    """The document's own version among the mentions: the first that is not a platform's;
    in "from 2.0 to 2.1" or "2.1 to 3.0" the target of the range."""
    if not mentions:
        return None
    chosen = next((mention for mention in mentions if not mention.runtime), mentions[0])
    for mention in mentions[mentions.index(chosen) + 1 :]:
        between = text[chosen.end : mention.start].strip().lower()
        if between not in ("to", "-", "–", "—", "->", "→", "..", "and"):
            break
        chosen = mention
    return chosen


# --- file names and folders ---------------------------------------------------------------------


def _name_mentions(name: str, word_before: str = "") -> list[tuple[int, int, Version]]:
    """Version tokens in one path segment: "api-reference-v2.1", "RELEASE_NOTES_3.0", "v2.0".

    A bare integer needs a "v" ("Architecture_v3") or a version word ("release-5"), so ADR
    numbers, dates and counters stay out; after "api" or "http" a number is not the product's,
    nor after "on-python".
    """
    masked = _mask(_mask(name, _DATES), _HASH_LIKE)
    found: list[tuple[int, int, Version]] = []
    for match in _VERSION_IN_NAME.finditer(masked):
        version = _number_version(match)
        if version is None or not _reads_as_version(match):
            continue
        tokens = [token.lower() for token in re.split(r"[-_ ()\[\]+,.]+", masked[: match.start()]) if token]
        previous = tokens[-1] if tokens else word_before
        if previous in _NOT_PRODUCT:
            continue
        if previous in _RUNTIMES and len(tokens) > 1 and tokens[-2] in _RUNS_ON:
            continue  # "running-on-python-3.11", while "celery-5.2.7-whatsnew" is Celery's own
        dotted = "." in match["number"] or bool(match["suffix"])
        if not (dotted or match["prefix"] or previous in _CUES_BEFORE):
            continue
        found.append((match.start(), match.end(), version))
    return found


# A hex hash, a commit id, a UUID or a build number in a name ("40b08594_index", "3f9c0e12ab-settings",
# "550e8400-e29b-41d4-a716-446655440000", "build-20240113.4"): digits and the letters a-f, six or more, never a version.
_HASH_LIKE = re.compile(
    r"(?<![A-Za-z0-9])(?:[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}"
    r"|\d{6,}(?:\.\d+)?)(?![A-Za-z0-9])", re.IGNORECASE)


def _reads_as_version(match: re.Match[str]) -> bool:
    """A pre-release suffix only where a person reads one: "2.0b1", "3.1rc2", "v2-beta", never "40b8594" (a hash's
    digits and a letter) nor a suffix number longer than a pre-release ever is."""
    suffix = match["suffix"] or ""
    if not suffix:
        return True
    number = re.sub(r"\D", "", suffix)
    dotted = "." in match["number"] or bool(match["prefix"])
    spelled = bool(re.search(r"alpha|beta|preview|pre|rc|dev|post", suffix, re.IGNORECASE))
    return (dotted or spelled) and len(number) <= 3 and not (len(number) > 1 and number.startswith("0"))


def _split_path(path: str) -> tuple[list[str], str, str]:
    """Folders, file stem and extension of an ingested path (always with forward slashes)."""
    pure = PurePosixPath(path.replace("\\", "/"))
    folders = [part for part in pure.parent.parts if part not in ("/", ".", "")]
    suffix = pure.suffix if re.fullmatch(r"\.[A-Za-z][A-Za-z0-9]{0,7}", pure.suffix) else ""
    stem = pure.name[: len(pure.name) - len(suffix)] if suffix else pure.name
    inner = re.search(r"\.(?:rst|md|markdown|adoc|asciidoc|html?|txt)$", stem, re.IGNORECASE)
    if inner and suffix:  # Sphinx ships its sources as "whatsnew-5.2.rst.txt"
        stem, suffix = stem[: inner.start()], inner.group(0) + suffix
    return folders, stem, suffix


def _pick_in_name(name: str, found: list[tuple[int, int, Version]]) -> Version:
    """The first version, or the one after "to" ("upgrading-from-2.0-to-2.1")."""
    for start, _end, version in found:
        if re.search(r"(?:^|[-_ ])to[-_ ]$", name[:start], re.IGNORECASE):
            return version
    return found[0][2]


def _folder_mentions(folders: list[str]) -> list[list[tuple[int, int, Version]]]:
    """Version tokens per folder, deepest folder first ("docs/3.2.25/", "v2.0/", not "api/v2/")."""
    result = []
    for index in range(len(folders) - 1, -1, -1):
        word_before = re.split(r"[-_ ()\[\]+,.]+", folders[index - 1])[-1].lower() if index else ""
        if found := _name_mentions(folders[index], word_before):
            result.append(found)
    return result


def path_version_stem(path: str) -> str | None:
    """The path with each version in it replaced by "{v}" ("docs/{v}/api/reference.md",
    "api-reference-{v}.md"), or None when the path carries no version."""
    folders, stem, suffix = _split_path(path)
    parts = [*folders, stem]
    changed = False
    for index, part in enumerate(parts):
        word_before = re.split(r"[-_ ()\[\]+,.]+", parts[index - 1])[-1].lower() if index else ""
        found = _name_mentions(part, word_before)
        for start, end, _version in reversed(found):
            part = part[:start] + "{v}" + part[end:]
        if found:
            parts[index], changed = part, True
    if not changed:
        return None
    prefix = "/" if path.replace("\\", "/").startswith("/") else ""
    return prefix + "/".join(parts) + suffix


def version_stem_key(path: str) -> str | None:
    """What two paths of one document in different versions have in common, or None.

    When the file name carries the version, only the file name counts, without its
    extension and with "_", " " and "-" alike: "api-reference-v2.1.md" and
    "api/api-reference-v3.adoc" both give "api-reference-{v}" (a document moves between
    folders and formats across releases). When only a folder carries it, the whole path
    without the extension does: "v2.0/install-guide.md" gives "{v}/install-guide".
    """
    stem = path_version_stem(path)
    if stem is None:
        return None
    folders, name, _suffix = _split_path(stem)
    if "{v}" in name:
        return _normalise_name(name)
    return "/".join(_normalise_name(part) for part in [*folders, name])


def _normalise_name(name: str) -> str:
    """Lower case, one kind of separator, and no copy marks: "Upgrading_to_{v} (export)" and
    "upgrading-to-{v}" are one name."""
    name = re.sub(r"\([^()]*\)|\[[^\[\]]*\]|\bcopy\b", " ", name.lower())
    return re.sub(r"[-_ ]+", "-", name).strip("-")


# --- stripping versions from titles -----------------------------------------------------------------


_RANGE_LINK = re.compile(r"\s*(?:to|through|thru|and|vs\.?|-|–|—|->|→)\s*", re.IGNORECASE)


@lru_cache(maxsize=65536)  # titles and headings recur in every merge of a workspace
def strip_versions(text: str) -> str:
    """Title, heading or path text without versions and dates, lower-cased, punctuation
    and extra spaces gone: equal results mean the same document (or section) in another
    version. "Lumen Gateway 3.0 Admin API Reference" and "Lumen Gateway Admin API
    Reference v2.1" both give "lumen gateway admin api reference". Protocol versions stay
    ("OAuth 2.0" is part of what a section is about)."""
    spaced = re.sub(r"[_]+", " ", text)
    masked = _mask(_mask(spaced, _DATES), _BARE_YEAR)
    mentions = text_versions(masked, strict=False)
    for index in range(len(mentions) - 1, -1, -1):
        start = mention_start = mentions[index].start
        if index and _RANGE_LINK.fullmatch(masked[mentions[index - 1].end : mention_start]):
            start = mentions[index - 1].end  # "2.0 to 2.1": the link goes with the versions
        elif cue := re.search(r"\b(?:version|ver|rev|revision)\.?\s*$", masked[:start], re.IGNORECASE):
            start = cue.start()
        masked = masked[:start] + " " + masked[mentions[index].end :]
    words = re.findall(r"[^\W_]+", masked.lower())
    return " ".join(words)


# --- the document's label ---------------------------------------------------------------------------

_FORMAT_BY_SUFFIX = {".md": "markdown", ".markdown": "markdown", ".adoc": "asciidoc", ".asciidoc": "asciidoc",
                     ".rst": "rst", ".html": "html", ".htm": "html", ".pdf": "pdf", ".docx": "docx",
                     ".pptx": "pptx", ".xlsx": "xlsx", ".odt": "odt", ".eml": "eml", ".msg": "msg"}  # fmt: skip
_METADATA_SOURCE = {"rst": "rst_version", "asciidoc": "asciidoc_revnumber", "html": "html_meta",
                    # a custom "version" property (a user-defined field in .odt); never the revision, a save counter
                    "docx": "office_property", "pptx": "office_property", "xlsx": "office_property",
                    "odt": "office_property"}


def _label(version: Version, source: str) -> VersionLabel | None:
    if source in ("title", "filename", "path") and len(version.release) == 1 and version.release[0] >= 1000:
        return None  # a hash or an id in a name ("6600693b81-guide.rst"), not a release
    key = version_key(str(version))
    return VersionLabel(label=str(version), key=key, source=source) if key else None


def _value_version(value: Any) -> Version | None:
    """A metadata value that states a version: 2.1 (a YAML number), "v2.1.0", "Release 3.0 (LTS)"."""
    if isinstance(value, bool) or value is None:
        return None
    text = str(value).strip()
    if not text or len(text) > 200:
        return None
    version = parse_version(text)
    if version is not None:
        return version
    mention = _main_mention(text_versions(text, strict=False), text)
    return mention.version if mention else None


def _get(mapping: dict[str, Any], name: str) -> Any:
    """A metadata value by case-insensitive name: PDF info says "Title", frontmatter "title"."""
    for key, value in mapping.items():
        if isinstance(key, str) and key.lower() == name:
            return value
    return None


def extract_version_label(
    *,
    path: str,
    title: str,
    metadata: dict[str, Any],
    pdf_metadata: dict[str, str] | None = None,
    doc_format: str | None = None,
) -> VersionLabel | None:
    """The version a document states, from the most explicit evidence to the least:
    frontmatter / :revnumber: / reST :Version: / PDF metadata, the title, the file name,
    the folders. None when nothing names one: its family order then decides.

    `doc_format` (the parser's `format`) names the metadata source; without it the file
    extension does. For a PDF, `metadata` itself is the PDF's info when `pdf_metadata`
    is not given.
    """
    folders, stem, suffix = _split_path(path)
    named_format = _FORMAT_BY_SUFFIX.get("." + suffix.lower().split(".")[1] if suffix else "", "text")  # .rst.txt: rst
    doc_format = doc_format or named_format
    if doc_format == "pdf" and pdf_metadata is None:
        pdf_metadata, metadata = metadata, {}
    if doc_format != "pdf":
        version = _value_version(_get(metadata, "version"))
        if version is not None:
            return _label(version, _METADATA_SOURCE.get(doc_format, "frontmatter"))
        version = _value_version(_get(metadata, "revnumber"))
        if version is not None:
            return _label(version, "asciidoc_revnumber")
    if pdf_metadata:
        version = _value_version(_get(pdf_metadata, "version"))
        for field_name in ("title", "subject"):
            if version is None and isinstance(value := _get(pdf_metadata, field_name), str):
                mention = _main_mention(text_versions(value), value)
                version = mention.version if mention else None
        if version is not None:
            return _label(version, "pdf_metadata")
    mention = _main_mention(text_versions(title), title) if title else None
    if mention is not None:
        return _label(mention.version, "title")
    found = _name_mentions(stem)
    if found:
        return _label(_pick_in_name(stem, found), "filename")
    in_folders = _folder_mentions(folders)
    return _label(in_folders[0][-1][2], "path") if in_folders else None
