"""The numbers that tune dedup merging, version lineage and search: one env var each, with its default and why.

Part of the settings (config/settings.py imports every name here), kept apart because they are what an operator
tunes against the evaluations (`make eval`, `make eval-real`), not where the services are or how processes run.
"""

from __future__ import annotations

import environ

env = environ.Env()

# --- dedup merging ------------------------------------------------------------------
# Cosine at or above which chunks of different documents are versions of one text: a changed
# number or date keeps all-MiniLM-L6-v2 above 0.95, another paragraph on the same topic does not.
MERGE_THRESHOLD = env.float("MERGE_THRESHOLD", default=0.95)
# Cosine at or above which near-duplicates are compared fact by fact: below the merge threshold,
# because a version that changed several facts drifts further from its predecessor.
CONTRADICTION_THRESHOLD = env.float("CONTRADICTION_THRESHOLD", default=0.85)
# Neighbours fetched per chunk: a text rarely has more versions and copies than this, and each more costs query time.
MERGE_NEIGHBOURS = env.int("MERGE_NEIGHBOURS", default=10)
# Smallest HNSW candidate list: near-duplicates sit next to each other in the graph, so a short list
# finds them all (24 missed none in bench_merge at 100,000 chunks, 10 missed 2%) at half the cost of 40.
MERGE_EF_SEARCH = env.int("MERGE_EF_SEARCH", default=24)
# Workspaces up to this many active chunks are searched exactly: exact answers while a scan is still cheap.
MERGE_EXACT_SCAN_MAX_CHUNKS = env.int("MERGE_EXACT_SCAN_MAX_CHUNKS", default=1000)
# Members of a large record are checked against its canonical and this many sampled members, not
# against each other: a chunk shared by thousands of documents would otherwise cost members squared.
MERGE_RECORD_SAMPLE = env.int("MERGE_RECORD_SAMPLE", default=32)
# Chunks per neighbour-search statement: one round trip per batch, not per chunk.
MERGE_QUERY_BATCH_SIZE = env.int("MERGE_QUERY_BATCH_SIZE", default=256)
# Rows per statement when records and variants are written, to bound statement size.
MERGE_WRITE_BATCH_SIZE = env.int("MERGE_WRITE_BATCH_SIZE", default=1000)
# A merge task waits this long for another merge of its workspace, then retries later instead of holding a worker.
MERGE_LOCK_TIMEOUT_SECONDS = env.int("MERGE_LOCK_TIMEOUT_SECONDS", default=30)
# Indexed documents merged together in one pass (one neighbour search, one family regroup, one lock): files that are
# versions of one another cost one regroup per batch, not one each (1,000 small versions: 0.7 files/s one by one);
# bounded so that a batch's transaction and the lock stay short while other merges wait.
MERGE_BATCH_DOCUMENTS = env.int("MERGE_BATCH_DOCUMENTS", default=50)

# --- version lineage ----------------------------------------------------------------
# Cosine at or above which a chunk of one document has a counterpart in another (the same passage,
# perhaps reworded or with changed values): below CONTRADICTION_THRESHOLD, since versions drift.
FAMILY_COUNTERPART_THRESHOLD = env.float("FAMILY_COUNTERPART_THRESHOLD", default=0.80)
# The same for the text under a document's title, before its first heading, matched only to such text: a release
# that moves a sentence from one opening chunk to the next still says it (Django's tutorial: 0.70).
FAMILY_OPENING_COUNTERPART_THRESHOLD = env.float("FAMILY_OPENING_COUNTERPART_THRESHOLD", default=0.65)
# Under the same heading (labels stripped) a looser match is a counterpart too: a section rewritten for a release.
FAMILY_HEADING_COUNTERPART_THRESHOLD = env.float("FAMILY_HEADING_COUNTERPART_THRESHOLD", default=0.70)
# Share of either document's chunks with a counterpart in the other that makes them versions of one another.
FAMILY_CONTENT_SHARE = env.float("FAMILY_CONTENT_SHARE", default=0.5)
# With the same title or versioned path, this much shared content suffices: generic titles alone tie unrelated pages.
FAMILY_NAMED_CONTENT_SHARE = env.float("FAMILY_NAMED_CONTENT_SHARE", default=0.1)
# Content evidence needs sizes within this ratio: a short excerpt is not a version of a whole manual.
FAMILY_MIN_SIZE_RATIO = env.float("FAMILY_MIN_SIZE_RATIO", default=0.25)
# Documents sharing a title or path key compared with a new one, newest first: a generic title ("Introduction")
# shared by hundreds of pages must not make one document's indexing read them all.
FAMILY_NAMED_CANDIDATES_MAX = env.int("FAMILY_NAMED_CANDIDATES_MAX", default=32)
# Documents one family regroup reads at most: the new document's relation component (documents linked by stored
# relations), decided as a whole so that arrival order does not change the families; families hold one document
# per release, so a component this large means a cluster of weak relations, and it is cut (logged).
LINEAGE_REGROUP_DOCUMENTS_MAX = env.int("LINEAGE_REGROUP_DOCUMENTS_MAX", default=400)
# Chunk vectors lineage keeps per worker process between merges (~1.5 kB each): versions arriving one by one compare
# with the same family members again, and reading their vectors was most of lineage's time.
LINEAGE_VECTOR_CACHE_CHUNKS = env.int("LINEAGE_VECTOR_CACHE_CHUNKS", default=20000)
# Cosine at or above which a passage of one release's document and one of a newer release's say the
# same thing (another document, not a version of it): the newer release's passage takes the place.
RELEASE_COUNTERPART_THRESHOLD = env.float("RELEASE_COUNTERPART_THRESHOLD", default=0.75)
# Score multiplier, in a question about the present, for passages of an older release than the newest one among
# the question's candidates: the newest release's statement leads, an older one still answers if nothing newer does.
OLDER_RELEASE_DEMOTION = env.float("OLDER_RELEASE_DEMOTION", default=0.9)
# Score multiplier, in a question about a version, for documents of that very release over older ones still current then.
AS_OF_VERSION_BOOST = env.float("AS_OF_VERSION_BOOST", default=1.15)
# An older release's own notes, in a question about the present (not one about what changed or is new).
PAST_RELEASE_NOTES_DEMOTION = env.float("PAST_RELEASE_NOTES_DEMOTION", default=0.5)
# Files sharing a folder and a file date to the second, at least this many, are one batch (an unpacked release):
# an unlabelled batch takes the release its own release notes, version directives or labelled files name.
RELEASE_BATCH_MIN_SIZE = env.int("RELEASE_BATCH_MIN_SIZE", default=5)
# Score multiplier for a retired passage (gone from every newer version): it still answers, below current text.
RETIRED_DEMOTION = env.float("RETIRED_DEMOTION", default=0.5)

# --- retrieval -------------------------------------------------------------------------
# Reciprocal rank fusion constant: 60 is the published default; larger flattens rank differences.
RRF_K = env.int("RRF_K", default=60)
# Per-list weights of the fusion (semantic kNN, full-text lexical, whole-token identifiers, an LLM's
# rewrite of the question): tuned on the demo and the real-corpus eval together (`make eval`, `make eval-real`).
RRF_WEIGHTS = {
    "semantic": env.float("RRF_WEIGHT_SEMANTIC", default=1.0),
    "lexical": env.float("RRF_WEIGHT_LEXICAL", default=0.25),
    "identifiers": env.float("RRF_WEIGHT_IDENTIFIERS", default=1.0),
    "rewrite": env.float("RRF_WEIGHT_REWRITE", default=0.5),
    # the passages of the documents whose subject a question names ("Acme Corp"): rag/retrieval/subjects.py
    "subject": env.float("RRF_WEIGHT_SUBJECT", default=1.0),
}
# Score multiplier for a passage of another subject's document (another customer's agreement) when the question
# names a subject: siblings say the same things, only the document tells whose they are.
SUBJECT_OTHER_DEMOTION = env.float("SUBJECT_OTHER_DEMOTION", default=0.25)
# Identifier-aware lexical list: the question's `dotted.names`, `--options`, `snake_case` match whole tokens.
SEARCH_IDENTIFIERS = env.bool("SEARCH_IDENTIFIERS", default=True)
# An identifier held by more than this share of the chunks in scope names no particular passage (`conf.py`).
IDENTIFIER_MAX_SHARE = env.float("IDENTIFIER_MAX_SHARE", default=0.05)
# Score multiplier for a chunk whose heading names one of the question's identifiers: reference entries do.
IDENTIFIER_HEADING_BOOST = env.float("IDENTIFIER_HEADING_BOOST", default=1.1)
# The workspace's domain dictionary (admin: query expansions) applied to the lexical side of every question.
SEARCH_EXPANSION = env.bool("SEARCH_EXPANSION", default=True)
# Rerank the head of the fused list by the question's best-matching sentence in each chunk.
SEARCH_RERANK = env.bool("SEARCH_RERANK", default=True)
# How many fused candidates the sentence rerank scores: the expected passage is in the top 30 far more often
# than in the top 5, and each one costs its sentences' encodings (cached per process).
RERANK_DEPTH = env.int("RERANK_DEPTH", default=30)
# Weight of the best sentence's evidence against the fused score (normalized to 1 within the head).
RERANK_SENTENCE_WEIGHT = env.float("RERANK_SENTENCE_WEIGHT", default=1.0)
# "terms": the question's rare terms and identifiers in one sentence (cheap); "vectors": the best sentence's
# cosine, encoded at query time (seconds per uncached query on a loaded 2-core machine).
RERANK_EVIDENCE = env.str("RERANK_EVIDENCE", default="terms")
# Let an OpenAI-compatible LLM (LLM_BASE_URL) rewrite each question; the rewrite's lists join the fusion.
SEARCH_LLM_REWRITE = env.bool("SEARCH_LLM_REWRITE", default=False)
# A rewrite must not hold a search up: past this many seconds the search goes on without it.
SEARCH_LLM_REWRITE_TIMEOUT_SECONDS = env.float("SEARCH_LLM_REWRITE_TIMEOUT_SECONDS", default=5)
# Fused-score multiplier for chunks of the doc types a question is about. Fused scores are close
# (rank 1 and rank 3 differ by ~3%), so 5% moves a chunk two or three places: it settles near-ties,
# it does not lift an off-topic chunk over a clearly better one (1.1+ cost hit@5 on the demo corpus).
DOC_TYPE_BOOST = env.float("DOC_TYPE_BOOST", default=1.05)
# When recency decay applies: "auto" (trend queries: "latest", "this year"), "on" (every query), "off".
# "off": on both evaluation corpora "auto" lowered MRR@10 (demo 0.839 -> 0.790) and helped nothing.
SEARCH_RECENCY = env.str("SEARCH_RECENCY", default="off")
# Recency decay for trend queries ("latest", "this year"): a page loses half its freshness every 14 days.
RECENCY_HALF_LIFE_DAYS = env.float("RECENCY_HALF_LIFE_DAYS", default=14)
# Share of freshness in a trend query's score (relevance keeps the rest): relevance must still lead.
RECENCY_WEIGHT = env.float("RECENCY_WEIGHT", default=0.3)
# Rows taken from each of the semantic and lexical lists before fusion and collapsing: room for
# collapsed variants and boosts to reorder, while hydration stays one small query.
SEARCH_CANDIDATE_POOL = env.int("SEARCH_CANDIDATE_POOL", default=50)
# Cosine above which two results from different documents are one passage at retrieval time
# (the newer is kept); same scale as MERGE_THRESHOLD.
SEARCH_DEDUP_THRESHOLD = env.float("SEARCH_DEDUP_THRESHOLD", default=0.95)
# The rarest question terms the lexical query keeps: more words only widen an OR that costs ranking time.
LEXICAL_MAX_TERMS = env.int("LEXICAL_MAX_TERMS", default=4)
# Most chunks a lexical query ranks: ts_rank_cd reads every matching row, so a common word must not rank half the table.
LEXICAL_RANK_CAP = env.int("LEXICAL_RANK_CAP", default=1000)
# Below this share of all chunks in scope, semantic search scans the scope exactly: HNSW filters
# after its scan and would return too few rows, and a scan of that few rows is fast.
EXACT_SCAN_SELECTIVITY = env.float("EXACT_SCAN_SELECTIVITY", default=0.1)
