"""Documents, their chunks and families, and the canonical records and contradictions found among them."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Case, F, Func, Q, Value, When
from django.db.models.functions import Substr
from pgvector.django import HnswIndex, VectorField

from rag.embedding_dim import EMBEDDING_DIM
from rag.models.workspaces import Workspace
from rag.source_labels import DATE_SOURCE_LABELS, RELEASE_SOURCE_LABELS, VERSION_SOURCE_LABELS


UPLOAD_PREFIX = "uploads/"


def shown_path(path: str) -> str:
    """A path as pages show it when nothing better was recorded: an upload by its uploaded name,
    a server path by its file name (the server's folders are staff business, seen in the admin)."""
    if path.startswith(UPLOAD_PREFIX):
        return path[len(UPLOAD_PREFIX):]
    if path.startswith("/") or (len(path) > 2 and path[1] == ":" and path[2] in "\\/"):
        return path.replace("\\", "/").rsplit("/", 1)[-1]
    return path


def shown_path_sql() -> Case:
    """`Document.shown_path` as SQL, so that a member's search of the list matches what they read, never the
    server's folders."""
    return Case(
        When(~Q(display_path=""), then=F("display_path")),
        When(path__startswith=UPLOAD_PREFIX, then=Substr("path", len(UPLOAD_PREFIX) + 1)),
        When(path__regex=r"^(/|.:[\\/])",
             then=Func(F("path"), Value(r"^.*[\\/]"), Value(""), function="regexp_replace")),
        default=F("path"), output_field=models.CharField(),
    )


class DocumentFamily(models.Model):
    """Documents that are versions of one another; members are ordered oldest to newest.

    Kept by rag.lineage.families after every merge; a staff user may split, join or
    reorder a family in the admin, and `edited_by_hand` then keeps automatic evidence
    from undoing that.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="families")
    name = models.CharField(max_length=500, help_text="The newest member's title.")
    edited_by_hand = models.BooleanField(default=False, help_text="Membership or order set by a person.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "document families"

    def __str__(self) -> str:
        return self.name


class DocumentQuerySet(models.QuerySet["Document"]):
    def active(self) -> DocumentQuerySet:
        return self.filter(archived=False)


class Document(models.Model):
    """One source file in a workspace; its chunks are replaced whole when its content changes."""

    class Status(models.TextChoices):
        INDEXED = "indexed", "Indexed"
        FAILED = "failed", "Failed"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="documents")
    path = models.CharField(max_length=1024, help_text="The source path as ingested.")
    display_path = models.CharField(max_length=1024, blank=True, db_default="",
                                    help_text="The path pages show: relative to the folder it was ingested from.")
    title = models.CharField(max_length=500)
    format = models.CharField(max_length=20)
    content_hash = models.CharField(max_length=64, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    file_stat = models.CharField(max_length=100, blank=True, db_default="", default="",
                                 help_text="The local file's size, mtime, ctime and inode when content_hash was read "
                                           "(rag.storage.file_stat_key): a sync that finds them again reads nothing.")
    doc_date = models.DateTimeField(null=True, blank=True, help_text="Unknown dates sort as oldest.")
    date_source = models.CharField(max_length=30, blank=True)
    doc_type = models.CharField(max_length=50, blank=True, db_index=True)
    source_type = models.CharField(max_length=100, blank=True)
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    entities = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.INDEXED, db_index=True)
    error = models.TextField(blank=True, help_text="Why the last indexing of this file failed.")
    archived = models.BooleanField(default=False,
                                   help_text="Missing from its folder at the last ingest; not searched.")
    chunk_count = models.PositiveIntegerField(default=0)
    # Two 384-dimension models mix without an error and compare meaningless vectors: searches check this.
    embedding_model = models.CharField(max_length=100, blank=True, default="", db_default="", editable=False,
                                       help_text="The model whose vectors this document's chunks hold; empty when "
                                                 "indexed before it was recorded.")
    date_set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+", help_text="Who set the date by hand; a re-index keeps it.")
    version_label = models.CharField(max_length=50, blank=True, db_default="",
                                     help_text='As shown: "3.0", "2.1.4".')
    version_key = models.CharField(max_length=100, blank=True, db_default="", db_index=True,
                                   help_text="version_label in a form that sorts as versions do.")
    version_source = models.CharField(max_length=30, blank=True, db_default="")
    version_set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+", help_text="Who set the version by hand; a re-index keeps it.")
    family = models.ForeignKey(DocumentFamily, null=True, blank=True, on_delete=models.SET_NULL, related_name="members")
    family_position = models.PositiveIntegerField(null=True, blank=True, help_text="0 is the oldest member.")
    is_latest_version = models.BooleanField(default=True, db_default=True,
                                            help_text="No newer member in its family.")
    copy_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="copies",
                                help_text="A member whose content this document repeats; it takes that place.")
    # Lineage's lookup keys, so that indexing one document finds its named candidates through an index instead of
    # reading every document of the workspace.
    title_key = models.CharField(max_length=500, blank=True, db_default="",
                                 help_text="The title without versions and dates (lineage).")
    path_key = models.CharField(max_length=1024, blank=True, db_default="",
                                help_text="The path with its version segment replaced (lineage), or empty.")
    lineage_note = models.CharField(max_length=300, blank=True, db_default="",
                                    help_text="Where the version label and the date disagree on the order.")
    subject = models.CharField(max_length=300, blank=True, db_default="",
                               help_text="Whom its template was filled in for (a customer, a hire, a product, a "
                                         "country), where lineage found siblings of it (rag.lineage.subjects).")
    # The release inference placed an unlabelled document in (rag.releases.inference): columns, so search and scope
    # read it as they read version_label. An empty inferred_source: none inferred.
    inferred_label = models.CharField(max_length=100, blank=True, db_default="",
                                      help_text='The release inferred for it ("2.2.28", or a line "3.2"); empty where '
                                                "it is only known to be newer than inferred_after.")
    inferred_after = models.CharField(max_length=100, blank=True, db_default="",
                                      help_text="The release it is known to be newer than, where none is named.")
    inferred_line = models.CharField(max_length=100, blank=True, db_default="",
                                     help_text="The inferred release's line (3.2 for 3.2.1).")
    inferred_series = models.CharField(max_length=200, blank=True, db_default="",
                                       help_text="The series (project) it documents, where known.")
    inferred_source = models.CharField(max_length=30, blank=True, db_default="",
                                       help_text="How its release was inferred; empty: not inferred.")
    inferred_confidence = models.FloatField(null=True, blank=True, help_text="How far to trust the inferred release, "
                                                                               "0 to 1.")
    inferred_evidence = models.TextField(blank=True, db_default="", help_text="What its release was inferred from.")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="attachments",
                               help_text="The mail message this document was attached to.")
    indexed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = DocumentQuerySet.as_manager()

    DATE_SOURCE_LABELS = DATE_SOURCE_LABELS
    VERSION_SOURCE_LABELS = VERSION_SOURCE_LABELS
    # How far a date can be trusted: an explicit date in the file beats the file system, which beats the upload.
    WEAK_DATE_SOURCES = {"mtime": 1, "upload_time": 0, "unknown": 0, "": 0}

    @property
    def date_confidence(self) -> int:
        """2 in-file or by hand, 1 file mtime, 0 upload time or none."""
        return self.WEAK_DATE_SOURCES.get(self.date_source, 2)

    @property
    def shown_path(self) -> str:
        return self.display_path or shown_path(self.path)

    @property
    def version_source_label(self) -> str:
        return self.VERSION_SOURCE_LABELS.get(self.version_source, self.version_source or "—")

    @property
    def inferred_release(self) -> dict:
        """The release an unlabelled document was found to belong to (rag.releases.inference), or {}."""
        if self.version_label or not (self.inferred_label or self.inferred_after):
            return {}
        release = {"label": self.inferred_label or f"newer than {self.inferred_after}", "line": self.inferred_line,
                   "series": self.inferred_series, "source": self.inferred_source,
                   "confidence": self.inferred_confidence, "evidence": self.inferred_evidence,
                   "source_label": RELEASE_SOURCE_LABELS.get(self.inferred_source, self.inferred_source)}
        return {**release, "after": self.inferred_after} if self.inferred_after else release

    def inferred_release_forget(self) -> None:
        """No inferred release until inference runs again (a re-index reads the file anew, as if new)."""
        self.inferred_label = self.inferred_after = self.inferred_line = self.inferred_series = ""
        self.inferred_source = self.inferred_evidence = ""
        self.inferred_confidence = None

    @property
    def inferred_release_label(self) -> str:
        return self.inferred_release.get("label", "")

    @property
    def date_source_label(self) -> str:
        return self.DATE_SOURCE_LABELS.get(self.date_source, self.date_source or "—")

    class Meta:
        ordering = ["-doc_date", "path"]
        constraints = [models.UniqueConstraint(fields=["workspace", "path"], name="document_unique_path")]
        indexes = [
            models.Index(fields=["workspace", "archived", "doc_date"]),
            models.Index(fields=["workspace", "title_key"], name="document_title_key"),
            models.Index(fields=["workspace", "path_key"], name="document_path_key"),
            models.Index(fields=["workspace", "inferred_label"], name="document_inferred_label"),
            GinIndex(fields=["tags"], name="document_tags_gin"),
            GinIndex(fields=["entities"], name="document_entities_gin"),
        ]

    def __str__(self) -> str:
        return self.title or self.path


class DocumentRelation(models.Model):
    """Evidence that two documents are versions (or copies) of one another, computed once when the later of the two
    is merged: a family is regrouped and refreshed from these rows, never by comparing every pair of members again.
    Only related pairs are kept; the smaller document id is `document_a`."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    document_a = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    document_b = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    strength = models.FloatField(help_text="How much of the content corresponds; identical pairs are strongest.")
    identical = models.BooleanField(default=False,
                                    help_text="Every chunk of each has a near-identical counterpart.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["document_a", "document_b"], name="document_relation_unique_pair"),
            models.CheckConstraint(condition=models.Q(document_a__lt=models.F("document_b")),
                                   name="document_relation_ordered_pair"),
        ]
        indexes = [models.Index(fields=["document_b"], name="document_relation_b")]

    def __str__(self) -> str:
        return f"{self.document_a_id} ~ {self.document_b_id}"


class DocumentSibling(models.Model):
    """Two documents made from one template for different subjects (one customer's agreement and another's):
    never versions of one another, never in contradiction, compared side by side. Found, like a relation, when the
    later of the two is merged; the smaller document id is `document_a`."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    document_a = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    document_b = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    subject_a = models.CharField(max_length=300, help_text="The name document_a fills the template with.")
    subject_b = models.CharField(max_length=300, help_text="The name document_b fills the template with.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["document_a", "document_b"], name="document_sibling_unique_pair"),
            models.CheckConstraint(condition=models.Q(document_a__lt=models.F("document_b")),
                                   name="document_sibling_ordered_pair"),
        ]
        indexes = [models.Index(fields=["document_b"], name="document_sibling_b")]

    def __str__(self) -> str:
        return f"{self.subject_a} / {self.subject_b}"


class Chunk(models.Model):
    """A heading-aware slice of a document, embedded and full-text indexed."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    text = models.TextField()
    text_hash = models.CharField(max_length=64)
    heading_path = models.CharField(max_length=1000, blank=True)
    chunk_index = models.PositiveIntegerField()
    total_chunks = models.PositiveIntegerField()
    chunk_position = models.CharField(max_length=10)
    page = models.PositiveIntegerField(null=True, blank=True,
                                       help_text="1-based page or slide the chunk starts on.")
    embedding = VectorField(dimensions=EMBEDDING_DIM)

    class Lineage(models.TextChoices):
        CURRENT = "", "Current"
        SUPERSEDED = "superseded", "Superseded"  # a newer family member says this in its own words
        RETIRED = "retired", "Retired"  # gone from every newer family member

    # db_default: rows written by raw SQL (bulk loads, benchmarks) start current too.
    lineage = models.CharField(max_length=12, choices=Lineage.choices, blank=True, default="", db_default="")
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                      help_text="Its counterpart in the newest member that has one.")
    # Kept by PostgreSQL itself, so it can never drift from the text.
    search_vector = models.GeneratedField(
        expression=SearchVector("heading_path", weight="A", config="english")
        + SearchVector("text", weight="B", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # Whole-token identifiers of the heading and text (rag.retrieval.identifiers), filled at index time:
    # `proxy.upstream_timeout` matches itself, not every chunk that says "timeout".
    identifiers = ArrayField(models.CharField(max_length=100), default=list, blank=True, db_default=Value([]))
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["document_id", "chunk_index"]
        indexes = [
            HnswIndex(name="chunk_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64,
                      opclasses=["vector_cosine_ops"]),
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
            GinIndex(fields=["identifiers"], name="chunk_identifiers_gin"),
            models.Index(fields=["workspace", "text_hash"]),
        ]

    def __str__(self) -> str:
        return f"{self.document} #{self.chunk_index}"


class EmbeddingCache(models.Model):
    """Embeddings by (model, text hash): the same text is never encoded twice."""

    model_name = models.CharField(max_length=100)
    text_hash = models.CharField(max_length=64)
    embedding = VectorField(dimensions=EMBEDDING_DIM)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model_name", "text_hash"], name="embedding_cache_unique")]


class CanonicalRecord(models.Model):
    """Near-duplicate chunks merged into one: the newest version is canonical, the rest are variants."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="canonical_records")
    # SET_NULL, not CASCADE: a record outlives its canonical long enough to promote a variant.
    canonical_chunk = models.OneToOneField(
        Chunk, null=True, on_delete=models.SET_NULL, related_name="canonical_of"
    )
    merge_count = models.PositiveIntegerField(default=0,
                                              help_text="How many variants were merged into this record.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return f"Record {self.pk}"


class ChunkVariant(models.Model):
    record = models.ForeignKey(CanonicalRecord, on_delete=models.CASCADE, related_name="variants")
    chunk = models.OneToOneField(Chunk, on_delete=models.CASCADE, related_name="variant_of")
    similarity = models.FloatField(help_text="Cosine similarity to the canonical chunk.")
    merged_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-similarity"]

    def __str__(self) -> str:
        return f"Chunk {self.chunk_id} in record {self.record_id} ({self.similarity:.3f})"


class Contradiction(models.Model):
    """Two near-duplicate chunks that disagree on a fact, for a person to review."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RESOLVED = "resolved", "Resolved"
        DISMISSED = "dismissed", "Dismissed"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="contradictions")
    chunk_a = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="+")
    chunk_b = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="+")
    similarity = models.FloatField()
    differences = models.JSONField(default=list, help_text='[{"kind": "number", "a": "600", "b": "1000"}, ...]')
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING, db_index=True)
    resolution = models.CharField(max_length=20, blank=True, help_text="kept_a, kept_b or dismissed")
    reviewed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One row per pair, stored with the smaller chunk id first.
            models.UniqueConstraint(fields=["chunk_a", "chunk_b"], name="contradiction_unique_pair"),
            models.CheckConstraint(condition=models.Q(chunk_a__lt=models.F("chunk_b")), name="contradiction_ordered_pair"),
        ]

    def __str__(self) -> str:
        return f"Contradiction {self.pk} ({self.status})"
