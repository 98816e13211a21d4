"""Synthetic technical documentation with known duplicate groups (worker tests, benchmarks/bench_merge.py).

Documents come in families of versions (1.0, 1.1, 2.0, ...). A share of each
version's sections is carried over from the previous version with one or two
facts changed (a timeout, a limit, a version, a default switched on); the
rest is written afresh. Every carried-over section belongs to a known group,
so a merge can be scored against the truth. Sentences are templated technical
prose with varied components, settings and numbers, so unrelated sections do
not look alike and versions differ in small facts only.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, UTC
from pathlib import Path

COMPONENTS = [
    "gateway", "control plane", "proxy node", "scheduler", "ingest worker", "config store", "audit log",
    "token service", "cache layer", "rate limiter", "metrics exporter", "load balancer", "webhook dispatcher",
    "search index", "backup agent", "replication stream", "session store", "upload service", "job runner",
    "certificate manager", "DNS resolver", "health checker", "license server", "message broker", "query planner",
    "billing exporter", "admin console", "SSO bridge", "policy engine", "object store", "event bus",
    "tracing collector", "secrets vault", "sidecar injector", "build cache", "artifact registry", "mail relay",
    "notification hub", "geo router", "compaction worker",
]
PARAM_HEADS = ["upstream", "pool", "retry", "cache", "session", "queue", "worker", "log", "backup", "sync", "tls",
               "dns", "health", "index", "flush", "lease", "quota", "batch", "stream", "probe"]
PARAM_TAILS = ["timeout", "size", "limit", "interval", "ttl", "depth", "window", "retention", "threshold", "budget",
               "max_age", "backoff", "concurrency", "grace_period", "buffer"]
METRICS = ["p99 latency", "error rate", "queue depth", "CPU usage", "memory usage", "open file count",
           "replication lag", "cache hit ratio", "connection count", "disk usage", "GC pause time", "request rate"]
FEATURES = ["audit logging", "request tracing", "HTTP/2 upstreams", "response compression", "strict TLS checking",
            "automatic retries", "config hot reload", "IPv6 listeners", "JSON access logs", "circuit breaking",
            "mutual TLS", "idempotency keys", "cursor pagination", "dry-run mode", "shadow traffic",
            "per-route quotas", "OCSP stapling", "zero-downtime reloads", "read replicas", "adaptive batching"]
VERBS = ["drain", "back up", "restart", "re-index", "upgrade", "snapshot", "reconfigure", "rotate the keys of",
         "pause", "scale out"]
CONSEQUENCES = ["in-flight requests fail with HTTP 502", "the migration stops half way",
                "clients see stale routes for a while", "the node rejoins with an empty cache",
                "old tokens stop working at once", "the replica falls behind and is rebuilt",
                "scheduled jobs run twice", "metrics show a gap", "the dashboard reports the node as down"]
PLACES = ["per node", "per route", "per consumer", "per API key", "per tenant", "per worker process"]

# {name} slots; a slot whose name starts with "f_" is a fact that a new version may change.
TEMPLATES = [
    "The {component} keeps at most {f_count} open connections {place}; raise {param} when the {metric} stays high.",
    "Requests through the {component} time out after {f_duration} unless {param} is set on the route.",
    "Since version {f_version}, {feature} is {f_state} by default on new installations of the {component}.",
    "Operators {f_modal} {verb} the {component} before changing {param}, otherwise {consequence}.",
    "Backups of the {component} are kept for {f_days} and taken every {f_hours}.",
    "Set {param} to {f_size} on nodes where the {component} handles large payloads.",
    "An alert fires when the {metric} of the {component} exceeds {f_percent} for {f_duration}.",
    "The {component} retries a failed call {f_retries} times with exponential backoff before it gives up.",
    "Each {component} replica needs {f_memory} of memory and {f_cpus} CPU cores under normal load.",
    "{feature} in the {component} requires {param} to be at least {f_count}.",
    "Upgrading the {component} to {f_version} rewrites {param}; {verb} it first or {consequence}.",
    "The {component} flushes its buffers every {f_duration}, so a crash loses at most that much data.",
    "When {param} is reached, the {component} sheds load and answers with HTTP {f_status}.",
    "Keep {param} below {f_count} {place}, because the {component} allocates one buffer for each.",
    "The default for {param} is {f_duration}; the {component} reads it again on every reload.",
    "Logs of the {component} rotate at {f_size} and the last {f_files} files are kept on disk.",
    "{feature} is {f_state} in the {component} when {param} is set, and the {metric} is exported.",
    "A cold start of the {component} takes about {f_duration} while it warms its caches.",
    "The {component} listens on port {f_port} and the {component2} connects to it over TLS.",
    "Clients {f_modal} send an idempotency key when the {component} retries writes {place}.",
    "The {metric} of the {component} is sampled every {f_duration} and kept for {f_days}.",
    "At most {f_count} jobs run at once in the {component}; the rest wait in a queue of {f_count2} entries.",
    "Since {f_date}, the {component} rejects clients older than version {f_version}.",
    "Scaling the {component} beyond {f_replicas} replicas gives little, because the {component2} serializes writes.",
    "The {component} caches lookups from the {component2} for {f_duration}, which bounds how stale a route can be.",
    "If the {component2} is unreachable, the {component} fails {f_openclosed} and logs the incident.",
    "{param} accepts values from {f_small} to {f_count}; the {component} rounds anything else to the nearest bound.",
    "Disk usage of the {component} grows by about {f_size} a day with {feature} turned on.",
    "The {component} sends a heartbeat to the {component2} every {f_duration} and is declared dead after "
    "{f_retries} misses.",
    "Only {f_percent} of the {component}'s traffic goes to a canary while {feature} is rolled out.",
]
HEADINGS = ["Overview", "Configuration", "Limits", "Upgrading", "Monitoring", "Troubleshooting", "Backups",
            "Scaling", "Security", "Performance", "High availability", "Maintenance"]


def _fact(kind: str, rng: random.Random) -> str:
    if kind in ("count", "count2"):
        return str(rng.choice([8, 16, 20, 25, 32, 50, 64, 100, 128, 200, 250, 256, 500, 512, 1000, 1024, 2000, 4096]))
    if kind == "small":
        return str(rng.choice([1, 2, 4, 5, 10]))
    if kind == "duration":
        minutes = rng.choice([1, 2, 5, 10, 15, 30])
        return rng.choice([f"{rng.choice([5, 10, 15, 20, 30, 45, 60, 90, 120])} seconds",
                           f"{minutes} minute{'s' if minutes > 1 else ''}", f"{rng.choice([100, 250, 500])} ms"])
    if kind == "version":
        return f"{rng.randint(1, 4)}.{rng.randint(0, 9)}"
    if kind == "state":
        return rng.choice(["enabled", "disabled"])
    if kind == "modal":
        return rng.choice(["must", "must not", "should", "should not"])
    if kind == "days":
        return f"{rng.choice([3, 7, 14, 30, 60, 90, 365])} days"
    if kind == "hours":
        return f"{rng.choice([1, 2, 4, 6, 8, 12, 24])} hours"
    if kind == "size":
        return f"{rng.choice([1, 5, 10, 25, 50, 64, 100, 256, 512])} {rng.choice(['MB', 'GB'])}"
    if kind == "percent":
        return f"{rng.choice([1, 2, 5, 10, 20, 50, 75, 80, 90, 95])}%"
    if kind == "retries":
        return str(rng.choice([2, 3, 4, 5, 6, 8, 10]))
    if kind == "memory":
        return f"{rng.choice([256, 512, 1024, 2048])} MB"
    if kind == "cpus":
        return str(rng.choice([1, 2, 4, 8]))
    if kind == "status":
        return str(rng.choice([429, 503, 507]))
    if kind == "files":
        return str(rng.choice([5, 7, 10, 14, 30]))
    if kind == "port":
        return str(rng.choice([8080, 8443, 9000, 9090, 9443, 7070, 6060]))
    if kind == "date":
        return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == "replicas":
        return str(rng.choice([3, 5, 8, 12, 16]))
    if kind == "openclosed":
        return rng.choice(["open", "closed"])
    raise ValueError(kind)


def _slot(name: str, rng: random.Random) -> str:
    if name.startswith("f_"):
        return _fact(name[2:], rng)
    if name in ("component", "component2"):
        return rng.choice(COMPONENTS)
    if name == "param":
        return f"{rng.choice(PARAM_HEADS)}_{rng.choice(PARAM_TAILS)}"
    return rng.choice({"metric": METRICS, "feature": FEATURES, "verb": VERBS, "consequence": CONSEQUENCES,
                       "place": PLACES}[name])


def _slots(template: str) -> list[str]:
    import string

    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


@dataclass
class Sentence:
    template: int
    values: dict[str, str]

    def render(self) -> str:
        text = TEMPLATES[self.template].format(**self.values)
        return text[0].upper() + text[1:]


@dataclass
class Section:
    heading: str
    sentences: list[Sentence]
    group: int | None = None  # sections of one group are versions of one another

    @property
    def text(self) -> str:
        return " ".join(sentence.render() for sentence in self.sentences)


@dataclass
class SyntheticDocument:
    path: str
    title: str
    doc_date: datetime
    sections: list[Section] = field(default_factory=list)


def _sentence(rng: random.Random) -> Sentence:
    index = rng.randrange(len(TEMPLATES))
    return Sentence(index, {name: _slot(name, rng) for name in _slots(TEMPLATES[index])})


def _section(rng: random.Random, component: str) -> Section:
    sentences = [_sentence(rng) for _ in range(rng.randint(5, 7))]
    # Sections of one product talk about its components, not one word in common with the rest.
    sentences[0].values["component"] = component
    return Section(heading=f"{rng.choice(HEADINGS)} of the {component}", sentences=sentences)


def _revise(section: Section, rng: random.Random) -> Section:
    """The next version of a section: the same prose with one or two facts changed."""
    sentences = [Sentence(s.template, dict(s.values)) for s in section.sentences]
    for _ in range(rng.choice([1, 1, 2])):
        candidates = [(s, name) for s in sentences for name in s.values if name.startswith("f_")]
        sentence, name = rng.choice(candidates)
        old = sentence.values[name]
        while (new := _fact(name[2:], rng)) == old:
            pass
        sentence.values[name] = new
    return Section(heading=section.heading, sentences=sentences, group=section.group)


def generate(*, chunks: int, duplicate_share: float = 0.2, versions: int = 3, sections_per_document: int = 10,
             seed: int = 7, prefix: str = "/bench") -> list[SyntheticDocument]:
    """Documents holding `chunks` sections, `duplicate_share` of them in groups of `versions` near-duplicates."""
    rng = random.Random(seed)
    shared_per_document = round(duplicate_share * sections_per_document)
    families = max(1, chunks // (sections_per_document * versions))
    documents: list[SyntheticDocument] = []
    group = 0
    start = datetime(2023, 1, 1, tzinfo=UTC)
    for family in range(families):
        product = f"{rng.choice(COMPONENTS).title()} {family}"
        component = rng.choice(COMPONENTS)
        shared: list[Section] = []
        for _ in range(shared_per_document):
            section = _section(rng, component)
            section.group = group
            group += 1
            shared.append(section)
        released = start + timedelta(days=rng.randrange(600))
        for version in range(versions):
            if version:
                shared = [_revise(section, rng) for section in shared]
                released += timedelta(days=rng.randint(30, 200))
            fresh = [_section(rng, component) for _ in range(sections_per_document - shared_per_document)]
            sections = shared + fresh
            rng.shuffle(sections)
            documents.append(SyntheticDocument(
                path=f"{prefix}/{family:05d}/{product.lower().replace(' ', '-')}-v{version + 1}.md",
                title=f"{product} guide, version {version + 1}", doc_date=released, sections=sections))
    return documents


def write_markdown(documents: list[SyntheticDocument], folder: Path) -> list[Path]:
    """Each document as a Markdown file whose top-level sections become one chunk each."""
    written = []
    for document in documents:
        target = folder / document.path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"# {section.heading}\n\n{section.text}" for section in document.sections)
        front = f"---\ntitle: {document.title}\ndate: {document.doc_date.date().isoformat()}\n---\n\n"
        target.write_text(f"{front}{body}\n")
        written.append(target)
    return written
