"""Generated folders of product documentation, varied from the demo corpus (bench_ingest.py, faults.write_corpus).

Each generated file is one product's guide: a short introduction and 6-12 top-level
sections. A section is a demo section (its heading and body, the body cut at a
paragraph) with the product name, version numbers and some other numbers changed,
followed by a paragraph of templated sentences and a reference line unique to that
file and section. Each section is cut to fit the chunker's maximum (max_words, from
CHUNK_MAX_WORDS), so it is exactly one chunk and every chunk text of a folder is
distinct.

Files are written as Markdown, reStructuredText, AsciiDoc, plain text and HTML
(no PDF: building PDFs takes longer than parsing them), each with a date the
date resolver finds and an mtime set to that date.

A second version of a folder (`write_folder(..., edited=...)`) rewrites the
templated paragraph of the chosen units (a unit is a file's introduction or one
of its sections); the rest of every file keeps its bytes.
"""

from __future__ import annotations

import datetime as dt
import html
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

DEMO_CORPUS = Path(__file__).resolve().parent.parent / "demo" / "corpus"

# A section's demo body is cut so that heading, body, templated paragraph (either version) and
# reference line stay this many words under the chunker's maximum: parsers may split a word or two.
SAFETY_WORDS = 5
BODY_MIN_WORDS = 25

PRODUCT_PREFIXES = ["Aster", "Corvid", "Halcyon", "Nimbus", "Quill", "Sable", "Tern", "Vesper", "Wren", "Orrery",
                    "Kestrel", "Marlin", "Juniper", "Cobalt", "Ember", "Fjord", "Garnet", "Heron", "Isla", "Lumen"]
PRODUCT_NOUNS = ["Gateway", "Proxy", "Edge", "Mesh", "Router", "Relay", "Ingress", "Switchboard"]
FORMATS = [("md", 0.30), ("rst", 0.15), ("adoc", 0.20), ("txt", 0.15), ("html", 0.20)]
TOPICS = ["operations", "configuration", "user guide", "troubleshooting", "upgrade notes", "API reference",
          "architecture", "security hardening", "release notes", "runbook"]

TEMPLATES = [
    "{product} terminates TLS on port {port} and forwards plain HTTP to the upstream pool.",
    "Each consumer key of {product} is limited to {n} requests per minute, with bursts of {m} absorbed by the bucket.",
    "When a limit is exceeded {product} answers 429 with a Retry-After header of {s} seconds.",
    "Keys rotated in the {short} console stay valid for {h} hours after the rotation.",
    "Upstream connections time out after {s} seconds by default, and a route may raise this to {m} seconds.",
    "Health checks probe every upstream every {s} seconds and remove a node after {n} failures in a row.",
    "Request bodies over {n} kilobytes are rejected with 413 before they reach an upstream.",
    "The admin API of {product} listens on port {port} and must not be exposed to the internet.",
    "Routing changes reach every proxy node of {product} within {s} seconds, without a restart.",
    "Version {version} added mutual TLS between {short} and its upstreams, enabled per cluster.",
    "Access logs are JSON Lines with the route id, the upstream latency and the consumer key id.",
    "With {n} workers {product} sustained {m} requests per second on a four-core machine in our tests.",
    "Signing keys of the identity provider are cached for {h} minutes to avoid a network call per request.",
    "Circuit breakers open after {n} percent of requests fail within {s} seconds and close after a cool-down.",
    "Only idempotent requests are retried, at most {h} times, with backoff starting at {m} milliseconds.",
    "The deprecated endpoints of {short} are removed on {date}; clients should migrate before then.",
    "Webhook deliveries are signed with HMAC-SHA256 and rejected when older than {s} seconds.",
    "Blue-green deployments of {short} shift traffic in steps of {n} percent of the route's weight.",
    "Canary releases send {h} percent of traffic to the new version and roll back when errors double.",
    "Response caching keeps at most {n} megabytes per route in memory and honours Cache-Control.",
    "Quota warnings are emailed when a key passes {n} percent of its monthly quota.",
    "On Kubernetes {product} runs {h} replicas behind a Service of type LoadBalancer.",
    "On SIGTERM {short} drains in-flight requests for up to {s} seconds before it exits.",
    "An error budget of {n} minutes per month is shared by the public routes of the {short} production cluster.",
    "A 502 from {short} usually means the upstream closed the connection before sending headers.",
    "Audit events for key changes are kept for {n} days and can be exported as CSV from {short}.",
    "Revoked keys are refused within {s} seconds on every node because revocations are pushed on the bus.",
    "Team {team} owns this part of {product} and answers questions within {h} hours on weekdays.",
]

_VERSION = re.compile(r"\b([23])\.([01])(\.\d+)?\b")
_NUMBER = re.compile(r"(?<![\w.])(\d{2,4})(?![\w.])")


@dataclass
class Unit:
    """The introduction (heading "") or one section of a file: one chunk once indexed."""

    heading: str
    body: list[str]  # paragraphs from the demo corpus, already varied
    template_seed: int
    reference: str

    def paragraphs(self, product: str, short: str, version: str, *, edited: bool) -> list[str]:
        seed = self.template_seed + (7919 if edited else 0)
        return [*self.body, _templated(random.Random(seed), product, short, version), self.reference]


@dataclass
class GeneratedFile:
    relative_path: str
    title: str
    product: str
    short: str
    version: str
    doc_date: dt.date
    units: list[Unit] = field(default_factory=list)


@dataclass
class Folder:
    root: Path
    files: list[GeneratedFile]

    @property
    def unit_count(self) -> int:
        return sum(len(f.units) for f in self.files)

    def unit_keys(self) -> list[tuple[int, int]]:
        return [(file_index, unit_index) for file_index, f in enumerate(self.files) for unit_index in range(len(f.units))]


# --- material from the demo corpus --------------------------------------------------------------------


def demo_sections() -> list[tuple[str, list[str]]]:
    """(heading, paragraphs) of every top-level demo section, subsections folded into the body."""
    from rag.parsers import parse_document

    sections: list[tuple[str, list[str]]] = []
    for path in sorted(p for p in DEMO_CORPUS.rglob("*") if p.is_file()):
        parsed = parse_document(path, path.read_bytes())
        current: tuple[str, list[str]] | None = None
        for section in parsed.sections:
            if section.level == 1:
                current = (section.heading_path[-1], [])
                sections.append(current)
            elif current is None:
                continue
            elif section.level > 1:
                current[1].append(section.heading_path[-1] + ".")
            current[1].extend(_clean_paragraphs(section.text))
    return [(heading, body) for heading, body in sections if sum(len(p.split()) for p in body) >= BODY_MIN_WORDS]


def _clean_paragraphs(text: str) -> list[str]:
    """One line per paragraph, and only paragraphs that start like prose: markup characters at the
    start of a line (#, =, *, :, <, |) would turn into headings, lists or attributes in some format."""
    paragraphs = []
    for paragraph in text.split("\n\n"):
        line = " ".join(paragraph.split())
        if line and line[0].isalpha():
            paragraphs.append(line)
    return paragraphs


# --- variation ---------------------------------------------------------------------------------------


def _templated(rng: random.Random, product: str, short: str, version: str) -> str:
    sentences = []
    for template in rng.sample(TEMPLATES, rng.randint(2, 4)):
        sentences.append(template.format(
            product=product, short=short, version=version,
            port=rng.choice([443, 8443, 9443, 8001, 8444, 9000, 9100]),
            n=rng.choice([5, 10, 20, 50, 100, 250, 1000, 1200]), m=rng.choice([2, 3, 30, 60, 120, 500, 4000]),
            s=rng.choice([1, 2, 5, 10, 15, 30, 60]), h=rng.choice([2, 3, 4, 6, 12, 24, 48]),
            date=f"20{rng.randint(25, 28)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            team=rng.choice(["Platform", "Edge", "Identity", "Traffic", "SRE", "Developer Experience"]),
        ))
    return " ".join(sentences)


def _vary(text: str, rng: random.Random, product: str, short: str, version_map: dict[str, str]) -> str:
    text = text.replace("Lumen Gateway", product).replace("LUMEN GATEWAY", product.upper())
    text = text.replace("Lumen", short).replace("lumen", short.lower()).replace("LUMEN", short.upper())
    text = _VERSION.sub(lambda m: version_map.get(m.group(1) + "." + m.group(2), m.group(0)) + (m.group(3) or ""), text)
    # A quarter of the other numbers change, so the same demo sentence differs between products.
    return _NUMBER.sub(lambda m: str(int(m.group(1)) * rng.choice([2, 3, 5])) if rng.random() < 0.25 else m.group(1),
                       text)


def _body(paragraphs: list[str], budget: int) -> list[str]:
    kept, words = [], 0
    for paragraph in paragraphs:
        count = len(paragraph.split())
        if words + count > budget:
            if not kept:  # one long paragraph: keep its first `budget` words
                kept.append(" ".join(paragraph.split()[:budget]))
            break
        kept.append(paragraph)
        words += count
    return kept


def generate(count: int, *, seed: int, root: Path, max_words: int, prefix: str = "") -> Folder:
    """`count` files of 6-12 sections and an introduction each, deterministic for a seed; no section
    passes `max_words` words in either version, so each is one chunk."""
    rng = random.Random(seed)
    material = demo_sections()
    files = []
    kinds, weights = zip(*FORMATS)
    for index in range(count):
        short = rng.choice(PRODUCT_PREFIXES)
        product = f"{short} {rng.choice(PRODUCT_NOUNS)}"
        major = rng.randint(1, 9)
        version_map = {old: f"{major + offset}.{rng.randint(0, 9)}" for offset, old in enumerate(["2.0", "2.1", "3.0"])}
        version = version_map["3.0"]
        topic = rng.choice(TOPICS)
        title = f"{product} {version} {topic.title() if topic != 'API reference' else 'API Reference'}"
        doc_date = dt.date(2023, 1, 1) + dt.timedelta(days=rng.randint(0, 1000))
        kind = rng.choices(kinds, weights)[0]
        slug = f"{short.lower()}-{topic.replace(' ', '-').lower()}-{version}-{index:05d}"
        folder = f"{short.lower()}/{topic.split()[0].lower()}"
        generated = GeneratedFile(f"{prefix}{folder}/{slug}.{kind}", title, product, short, version, doc_date)
        intro = (f"This {topic} covers {product} {version} for the people who run and use it. "
                 f"It was written by the {rng.choice(['platform', 'SRE', 'docs', 'support'])} team in "
                 f"{doc_date:%B %Y} and replaces the guides of earlier versions.")
        generated.units.append(Unit("", [intro], rng.randrange(2**31), f"Document reference {short[:3].upper()}-{index:05d}-00."))
        used_headings: set[str] = set()
        for heading, paragraphs in rng.sample(material, rng.randint(6, 12)):
            varied_heading = _vary(heading, rng, product, short, version_map)
            if varied_heading in used_headings:
                continue
            used_headings.add(varied_heading)
            reference = f"Section reference {short[:3].upper()}-{index:05d}-{len(generated.units):02d}."
            unit = Unit(varied_heading, [], rng.randrange(2**31), reference)
            extra = max(len(" ".join(unit.paragraphs(product, short, version, edited=edited)).split())
                        for edited in (False, True))
            budget = max_words - SAFETY_WORDS - len(varied_heading.split()) - extra
            if budget < BODY_MIN_WORDS:
                continue
            unit.body = [_vary(p, rng, product, short, version_map) for p in _body(paragraphs, budget)]
            generated.units.append(unit)
        files.append(generated)
    return Folder(root=root, files=files)


def choose_edits(folder: Folder, *, share: float, seed: int) -> set[tuple[int, int]]:
    """`share` of all units, chosen across the folder, as (file index, unit index)."""
    keys = folder.unit_keys()
    return set(random.Random(seed).sample(keys, int(len(keys) * share)))


# --- writing ------------------------------------------------------------------------------------------


def write_folder(folder: Folder, *, edited: set[tuple[int, int]] = frozenset()) -> list[Path]:
    """Write every file (only files whose bytes change are touched); returns the files written."""
    written = []
    for file_index, generated in enumerate(folder.files):
        path = folder.root / generated.relative_path
        units = [(u.heading, u.paragraphs(generated.product, generated.short, generated.version,
                                          edited=(file_index, unit_index) in edited))
                 for unit_index, u in enumerate(generated.units)]
        data = _render(path.suffix[1:], generated, units).encode("utf-8")
        if path.exists() and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        stamp = dt.datetime.combine(generated.doc_date, dt.time(12), tzinfo=dt.UTC).timestamp()
        os.utime(path, (stamp, stamp))
        written.append(path)
    return written


def _render(kind: str, generated: GeneratedFile, units: list[tuple[str, list[str]]]) -> str:
    title, date = generated.title, generated.doc_date.isoformat()
    out: list[str] = []
    if kind == "md":
        out += ["---", f"title: {title}", f"date: {date}", "---", "", f"# {title}", ""]
        for heading, paragraphs in units:
            out += ([f"## {heading}", ""] if heading else []) + [line for p in paragraphs for line in (p, "")]
    elif kind == "rst":
        bar = "=" * len(title)
        out += [bar, title, bar, "", f":Date: {date}", ""]
        for heading, paragraphs in units:
            out += ([heading, "-" * len(heading), ""] if heading else []) + [line for p in paragraphs for line in (p, "")]
    elif kind == "adoc":
        out += [f"= {title}", f":revdate: {date}", ""]
        for heading, paragraphs in units:
            out += ([f"== {heading}", ""] if heading else []) + [line for p in paragraphs for line in (p, "")]
    elif kind == "txt":
        out += [title, ""]
        for heading, paragraphs in units:
            out += ([heading, "=" * len(heading), ""] if heading else []) + [line for p in paragraphs for line in (p, "")]
    elif kind == "html":
        out += ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
                f"<meta name=\"date\" content=\"{date}\">", f"<title>{html.escape(title)}</title></head>",
                "<body><main>", f"<h1>{html.escape(title)}</h1>"]
        for heading, paragraphs in units:
            out += ([f"<h2>{html.escape(heading)}</h2>"] if heading else []) + [f"<p>{html.escape(p)}</p>" for p in paragraphs]
        out += ["</main></body></html>"]
    else:
        raise ValueError(kind)
    return "\n".join(out) + "\n"
