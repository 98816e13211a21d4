"""The numbers that tune dedup merging, version lineage and search: one env var each, with its default and why.

Declared apart from config/variables.py because they are what an operator tunes against the evaluations
(`make eval`, `make eval-real`), not where the services are or how processes run. Each is a Django setting of its
own name (config/settings.py), but the fusion weights, which make up RRF_WEIGHTS.
"""

from __future__ import annotations

from typing import Literal

from pydantic_settings import BaseSettings

from config.variable import VARIABLES_CONFIG, variable

MERGING, LINEAGE, RETRIEVAL = "Dedup merging", "Version lineage", "Retrieval"


class TuningVariables(BaseSettings):
    """Dedup merging, version lineage and retrieval."""

    model_config = VARIABLES_CONFIG

    # --- dedup merging
    # A changed number or date keeps all-MiniLM-L6-v2 above 0.95, another paragraph on the same topic does not.
    MERGE_THRESHOLD: float = variable(0.95, "cosine at or above which chunks of different documents are versions of "
                                      "one text", MERGING)
    # Below the merge threshold: a version that changed several facts drifts further from its predecessor.
    CONTRADICTION_THRESHOLD: float = variable(0.85, "cosine at or above which near-duplicates are compared fact by "
                                              "fact", MERGING)
    MERGE_NEIGHBOURS: int = variable(10, "neighbours fetched per chunk when duplicates are merged: a text rarely has "
                                     "more versions and copies, and each more costs query time", MERGING)
    # 24 missed none in bench_merge at 100,000 chunks, 10 missed 2%, at half the cost of 40.
    MERGE_EF_SEARCH: int = variable(24, "smallest HNSW candidate list of the merge's neighbour search: "
                                    "near-duplicates sit next to each other in the graph", MERGING)
    MERGE_EXACT_SCAN_MAX_CHUNKS: int = variable(1000, "workspaces up to this many active chunks are searched "
                                                "exactly", MERGING)
    MERGE_RECORD_SAMPLE: int = variable(32, "members of a large record (a chunk shared by many documents) are checked "
                                        "against its canonical and this many sampled members, not each other",
                                        MERGING)
    MERGE_QUERY_BATCH_SIZE: int = variable(256, "chunks per neighbour-search statement: one round trip per batch",
                                           MERGING)
    MERGE_WRITE_BATCH_SIZE: int = variable(1000, "rows per statement when records and variants are written, to bound "
                                           "statement size", MERGING)
    MERGE_LOCK_TIMEOUT_SECONDS: int = variable(30, "a merge task waits this long for another merge of its workspace, "
                                               "then retries later instead of holding a worker", MERGING)
    # Versions of one another cost one regroup per batch, not one each (1,000 small versions: 0.7 files/s one by one);
    # bounded so that a batch's transaction and the lock stay short while other merges wait.
    MERGE_BATCH_DOCUMENTS: int = variable(50, "indexed documents merged together in one pass (one neighbour search, "
                                          "one family regroup, one hold of the lock): versions of one another cost a "
                                          "regroup per batch, not one each", MERGING)

    # --- version lineage
    # Below CONTRADICTION_THRESHOLD, since versions drift.
    FAMILY_COUNTERPART_THRESHOLD: float = variable(0.80, "cosine at or above which a chunk of one document has a "
                                                   "counterpart in another (the same passage, perhaps reworded or "
                                                   "with changed values)", LINEAGE)
    # Django's tutorial: 0.70.
    FAMILY_OPENING_COUNTERPART_THRESHOLD: float = variable(
        0.65, "the same for the text under a document's title before its first heading, matched only to such text "
        "(a release moves a sentence from one opening chunk to the next)", LINEAGE)
    FAMILY_HEADING_COUNTERPART_THRESHOLD: float = variable(0.70, "under the same heading (labels stripped) this "
                                                           "looser cosine makes a counterpart too: a section "
                                                           "rewritten for a release", LINEAGE)
    FAMILY_CONTENT_SHARE: float = variable(0.5, "share of either document's chunks with a counterpart in the other "
                                           "that makes them versions of one another", LINEAGE)
    FAMILY_NAMED_CONTENT_SHARE: float = variable(0.1, "with the same title or versioned path, this much shared "
                                                 "content suffices (generic titles alone would tie unrelated pages)",
                                                 LINEAGE)
    FAMILY_MIN_SIZE_RATIO: float = variable(0.25, "content evidence needs sizes within this ratio: a short excerpt is "
                                            "not a version of a whole manual", LINEAGE)
    # A generic title ("Introduction") shared by hundreds of pages must not make one document's indexing read them all.
    FAMILY_NAMED_CANDIDATES_MAX: int = variable(32, "documents sharing a title or path key compared with a new one, "
                                                "newest first", LINEAGE)
    # The new document's relation component is decided as a whole so that arrival order does not change the families;
    # families hold one document per release, so a component this large is a cluster of weak relations.
    LINEAGE_REGROUP_DOCUMENTS_MAX: int = variable(400, "documents one family regroup reads at most; a larger cluster "
                                                  "of weak relations is cut (logged)", LINEAGE)
    # Versions arriving one by one compare with the same family members again; reading their vectors was most of
    # lineage's time.
    LINEAGE_VECTOR_CACHE_CHUNKS: int = variable(20000, "chunk vectors lineage keeps per worker process between merges "
                                                "(~1.5 kB each)", LINEAGE)
    RELEASE_COUNTERPART_THRESHOLD: float = variable(
        0.75, "cosine at or above which a passage of one release's document and one of a newer release's say the "
        "same thing (another document, not a version of it): the newer release's passage takes the place", LINEAGE)
    OLDER_RELEASE_DEMOTION: float = variable(0.9, "score multiplier, in a question about the present, for passages "
                                             "of an older release than the newest one among the question's "
                                             "candidates", LINEAGE)
    AS_OF_VERSION_BOOST: float = variable(1.15, "score multiplier, in a question about a version, for documents of "
                                          "that very release over older ones still current then", LINEAGE)
    PAST_RELEASE_NOTES_DEMOTION: float = variable(0.5, "score multiplier for an older release's own notes in a "
                                                  "question about the present (not about what changed)", LINEAGE)
    # An unlabelled batch takes the release its own release notes, version directives or labelled files name.
    RELEASE_BATCH_MIN_SIZE: int = variable(5, "files sharing a folder and a file date to the second, at least this "
                                           "many, are one batch (an unpacked release)", LINEAGE)
    RETIRED_DEMOTION: float = variable(0.5, "score multiplier for a retired passage (gone from every newer version): "
                                       "it still answers, below current text", LINEAGE)

    # --- retrieval: the fusion's weights were tuned on `make eval` and `make eval-real` together
    # (benchmarks/eval_fusion_grid.py): score = sum of weight / (RRF_K + rank).
    RRF_K: int = variable(60, "reciprocal rank fusion constant: 60 is the published default; larger flattens rank "
                          "differences", RETRIEVAL)
    RRF_WEIGHT_SEMANTIC: float = variable(1.0, "fusion weight of the semantic (kNN) list", RETRIEVAL, setting=False)
    RRF_WEIGHT_LEXICAL: float = variable(0.25, "fusion weight of the full-text list", RETRIEVAL, setting=False)
    RRF_WEIGHT_IDENTIFIERS: float = variable(1.0, "fusion weight of the whole-token identifiers list", RETRIEVAL,
                                             setting=False)
    RRF_WEIGHT_REWRITE: float = variable(0.5, "fusion weight of the lists of an LLM's rewrite of the question",
                                         RETRIEVAL, setting=False)
    RRF_WEIGHT_SUBJECT: float = variable(1.0, "fusion weight of the list of passages from documents whose subject a "
                                         "question names (\"Acme Corp\")", RETRIEVAL, setting=False)
    SUBJECT_OTHER_DEMOTION: float = variable(0.25, "score multiplier for a passage of another subject's document "
                                             "(another customer's agreement) when the question names a subject",
                                             RETRIEVAL)
    SEARCH_IDENTIFIERS: bool = variable(True, "identifiers named in a question (`proxy.upstream_timeout`, "
                                        "`--keep-going`, `DATABASE_URL`) match whole tokens", RETRIEVAL)
    IDENTIFIER_MAX_SHARE: float = variable(0.05, "an identifier held by more than this share of the chunks in scope "
                                           "names no particular passage (`conf.py`) and is ignored", RETRIEVAL)
    IDENTIFIER_HEADING_BOOST: float = variable(1.1, "score multiplier for a chunk whose heading names one of the "
                                               "question's identifiers: reference entries do", RETRIEVAL)
    SEARCH_EXPANSION: bool = variable(True, "apply the workspace's domain dictionary (admin: query expansions) to the "
                                      "lexical side of every question", RETRIEVAL)
    SEARCH_RERANK: bool = variable(True, "rerank the head of the fused list by each chunk's best sentence", RETRIEVAL)
    # The expected passage is in the top 30 far more often than in the top 5.
    RERANK_DEPTH: int = variable(30, "fused candidates the sentence rerank scores; each costs its sentences' "
                                 "encodings (cached per process)", RETRIEVAL)
    RERANK_SENTENCE_WEIGHT: float = variable(1.0, "weight of the best sentence's evidence against the fused score "
                                             "(normalized to 1 within the head)", RETRIEVAL)
    RERANK_EVIDENCE: Literal["terms", "vectors"] = variable(
        "terms", "`terms`: the question's rare terms and identifiers in one sentence (cheap); `vectors`: the best "
        "sentence's cosine, encoded at query time (seconds per query on a small CPU)", RETRIEVAL)
    SEARCH_LLM_REWRITE: bool = variable(False, "with `LLM_BASE_URL` set, the model rewrites each question and the "
                                        "rewrite's lists join the fusion; a failure is logged and the search goes on",
                                        RETRIEVAL)
    SEARCH_LLM_REWRITE_TIMEOUT_SECONDS: float = variable(5, "past this many seconds a search goes on without the "
                                                         "rewrite", RETRIEVAL)
    # Fused scores are close (rank 1 and rank 3 differ by ~3%): 5% settles near-ties without lifting an off-topic
    # chunk over a clearly better one (1.1+ cost hit@5 on the demo corpus).
    DOC_TYPE_BOOST: float = variable(1.05, "score multiplier for chunks of the document types a question is about",
                                     RETRIEVAL)
    # On both evaluation corpora "auto" lowered MRR@10 (demo 0.839 -> 0.790) and helped nothing.
    SEARCH_RECENCY: Literal["auto", "on", "off"] = variable(
        "off", "recency decay: `auto` (questions about the latest, \"this year\"), `on` (every question), `off`",
        RETRIEVAL)
    RECENCY_HALF_LIFE_DAYS: float = variable(14, "with recency on: a page loses half its freshness every this many "
                                             "days", RETRIEVAL)
    RECENCY_WEIGHT: float = variable(0.3, "with recency on: the share of freshness in the score (relevance keeps the "
                                     "rest)", RETRIEVAL)
    SEARCH_CANDIDATE_POOL: int = variable(50, "rows taken from each of the semantic and lexical lists before fusion "
                                          "and collapsing", RETRIEVAL)
    SEARCH_DEDUP_THRESHOLD: float = variable(0.95, "cosine above which two results from different documents are one "
                                             "passage at retrieval time (the newer is kept)", RETRIEVAL)
    LEXICAL_MAX_TERMS: int = variable(4, "the rarest question terms the lexical query keeps: more only widen an OR "
                                      "that costs ranking time", RETRIEVAL)
    LEXICAL_RANK_CAP: int = variable(1000, "most chunks a lexical query ranks, so a common word cannot rank the whole "
                                     "table", RETRIEVAL)
    # HNSW filters after its scan and would return too few rows; a scan of that few rows is fast.
    EXACT_SCAN_SELECTIVITY: float = variable(0.1, "below this share of all chunks in scope, semantic search scans the "
                                             "scope exactly instead of the HNSW index", RETRIEVAL)
