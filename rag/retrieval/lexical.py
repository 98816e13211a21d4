"""The lexical half of hybrid search: a selective full-text query built from a question.

A question is not a keyword query. ANDing all its words usually matches
nothing ("how do I rotate an api key after it leaked"), and ORing them matches
most of the table, which PostgreSQL then has to rank row by row (ts_rank_cd
reads every matching tsvector). What the lexical list adds to the semantic one
is exact words that are rare: an error code, a setting name, a product term.
So we keep the question's rarest terms, by document frequency, OR them while
the expected match count stays under LEXICAL_RANK_CAP, and AND them when even
the rarest single term is too common. The ranked set is capped as well, so a
misjudged frequency costs at most LEXICAL_RANK_CAP rankings.

Document frequencies come from the planner's statistics for the
`search_vector` column (pg_stats.most_common_elems, kept by ANALYZE and
autovacuum), read by the same statement that splits the question. A term
missing from that list is rarer than every term in it; that statement also
checks that such a term occurs at all in the workspace (one GIN lookup), so a
word that matches nothing does not take the place of one that does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from rag.index_cache import index_cached
from rag.retrieval.filters import Scope
from rag.retrieval.vectors import CHUNK, CandidateRead

TEXT_CONFIG = "english"  # must match the config of rag.models.Chunk.search_vector


@dataclass(frozen=True)
class Term:
    lexeme: str
    frequency: float  # share of chunks that contain it (estimated)
    known: bool  # frequency from the statistics; False: rarer than every listed lexeme


@dataclass(frozen=True)
class LexicalQuery:
    tsquery: str  # tsquery syntax, lexemes already stemmed
    terms: tuple[str, ...]
    operator: str  # "|" or "&"
    expected_matches: float

    def describe(self) -> dict:
        return {"terms": list(self.terms), "operator": self.operator, "expected_matches": round(self.expected_matches)}


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def question_terms(question: str, *, workspace_id: int,
                   identifiers: Sequence[str] = ()) -> tuple[list[Term], float, list[str]]:
    """The question's lexemes that occur in the workspace, their estimated frequency, the table's rows,
    and which of `identifiers` the workspace holds: one round trip, so that the identifier query runs
    only for a question that names an identifier some chunk has (one GIN probe each). Read once per change
    of the workspace and of the statistics (every scope of a question, and the question asked again)."""
    terms, table_rows, held = index_cached(
        "question terms", workspace_id=workspace_id, key=(question, tuple(identifiers)),
        compute=lambda: _question_terms(question, workspace_id=workspace_id, identifiers=identifiers))
    return list(terms), table_rows, list(held)


def _question_terms(question: str, *, workspace_id: int,
                    identifiers: Sequence[str]) -> tuple[list[Term], float, list[str]]:
    # quote_literal is a safe tsquery quote here: the parser never puts a backslash or quote in a lexeme.
    sql = f"""
        WITH q AS (
            SELECT lexeme, min(p) AS first_position
            FROM unnest(to_tsvector(%s, %s)) AS t(lexeme, positions, weights), unnest(t.positions) AS p
            GROUP BY lexeme
        ),
        stats AS (
            SELECT s.most_common_elems::text::text[] AS elems, s.most_common_elem_freqs AS freqs
            FROM pg_stats s
            WHERE s.schemaname = current_schema() AND s.tablename = %s AND s.attname = 'search_vector'
            LIMIT 1
        ),
        known AS (
            SELECT q.lexeme, q.first_position,
                   (SELECT stats.freqs[array_position(stats.elems, q.lexeme)] FROM stats) AS frequency
            FROM q
        ),
        found AS (
            SELECT known.lexeme, known.frequency, known.first_position
            FROM known
            WHERE known.frequency IS NOT NULL OR EXISTS (
                SELECT 1 FROM {CHUNK} c
                WHERE c.workspace_id = %s AND c.search_vector @@ quote_literal(known.lexeme)::tsquery
            )
        ),
        held AS (
            SELECT coalesce(array_agg(i.identifier ORDER BY i.position), '{{}}') AS identifiers
            FROM unnest(%s::varchar[]) WITH ORDINALITY AS i(identifier, position)
            WHERE EXISTS (SELECT 1 FROM {CHUNK} c
                          WHERE c.workspace_id = %s AND c.identifiers @> ARRAY[i.identifier]::varchar[])
        )
        SELECT found.lexeme, found.frequency,
               (SELECT stats.freqs[array_length(stats.elems, 1) + 1] FROM stats) AS min_listed,
               (SELECT reltuples FROM pg_class WHERE oid = %s::regclass) AS table_rows,
               held.identifiers
        FROM held LEFT JOIN found ON true
        ORDER BY found.first_position"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [TEXT_CONFIG, question, CHUNK, workspace_id, list(identifiers), workspace_id, CHUNK])
        rows = cursor.fetchall()
    held = list(rows[0][4]) if rows else []
    rows = [row for row in rows if row[0] is not None]
    if not rows:
        return [], 0.0, held
    min_listed = float(rows[0][2]) if rows[0][2] is not None else 0.0
    table_rows = max(float(rows[0][3] or 0), 0.0)
    # A lexeme missing from the statistics is rarer than the least frequent listed one: half of that is a guess.
    terms = [
        Term(lexeme, float(frequency), True) if frequency is not None else Term(lexeme, min_listed / 2, False)
        for lexeme, frequency, _, _, _ in rows
    ]
    return terms, table_rows, held


def build_lexical_query(terms: list[Term], *, table_rows: float) -> LexicalQuery | None:
    """OR of the rarest terms while the expected matches fit the cap; AND when one term alone is too common."""
    if not terms:
        return None
    cap = settings.LEXICAL_RANK_CAP
    max_terms = settings.LEXICAL_MAX_TERMS
    rarest = sorted(terms, key=lambda t: t.frequency)[:max_terms]
    rows = max(table_rows, 1.0)
    chosen = [rarest[0]]
    expected = rarest[0].frequency * rows
    if expected <= cap:
        for term in rarest[1:]:
            if expected + term.frequency * rows > cap:
                break
            chosen.append(term)
            expected += term.frequency * rows
        operator = "|"
    else:
        # Every term is common: require several, as if independent, until the set is small enough.
        operator = "&"
        for term in rarest[1:]:
            if expected <= cap:
                break
            chosen.append(term)
            expected *= term.frequency
    ordered = sorted(chosen, key=lambda t: t.lexeme)
    return LexicalQuery(
        tsquery=f" {operator} ".join(_quote(t.lexeme) for t in ordered),
        terms=tuple(t.lexeme for t in ordered),
        operator=operator,
        expected_matches=expected,
    )


def lexical_read(scope: Scope, query: LexicalQuery, limit: int) -> CandidateRead:
    """(chunk id, ts_rank_cd) of the best `limit` matches among at most LEXICAL_RANK_CAP matching chunks: the
    statement, read with the question's other lists (vectors.read_together)."""
    condition, params = scope.chunk_condition("c")
    sql = f"""
        SELECT m.id, ts_rank_cd(m.search_vector, q.query) AS rank
        FROM (
            SELECT c.id, c.search_vector FROM {CHUNK} c
            WHERE {condition} AND c.search_vector @@ %s::tsquery
            LIMIT %s
        ) m, (SELECT %s::tsquery AS query) q
        ORDER BY rank DESC, m.id
        LIMIT %s"""
    return CandidateRead(sql, [*params, query.tsquery, settings.LEXICAL_RANK_CAP, query.tsquery, limit])


def identifier_read(scope: Scope, identifiers: list[str], limit: int) -> CandidateRead:
    """(chunk id, weight) of chunks that hold the question's identifiers, rarest identifiers weighing most: the
    statement, read with the question's other lists (vectors.read_together).

    A chunk's weight is the sum of ln(1 + chunks in scope / chunks holding it) over the
    identifiers it holds. An identifier held by more than IDENTIFIER_MAX_SHARE of the scope
    (`conf.py` in a Sphinx pile) names no particular passage and is left out. At most
    LEXICAL_RANK_CAP matching rows are weighed, as on the full-text side.
    """
    condition, params = scope.chunk_condition("c")
    in_scope = max(scope.chunks_in_scope, 1)
    most = max(settings.IDENTIFIER_MAX_SHARE * in_scope, 3)
    sql = f"""
        WITH m AS (
            SELECT c.id, c.identifiers FROM {CHUNK} c
            WHERE {condition} AND c.identifiers && %s::varchar[]
            LIMIT %s
        ), held AS (
            SELECT m.id, i.identifier FROM m CROSS JOIN LATERAL unnest(m.identifiers) AS i(identifier)
            WHERE i.identifier = ANY(%s::varchar[])
        ), df AS (
            SELECT identifier, count(*) AS n FROM held GROUP BY identifier
        )
        SELECT held.id, sum(ln(1 + %s::float8 / df.n)) AS weight
        FROM held JOIN df USING (identifier)
        WHERE df.n <= %s
        GROUP BY held.id
        ORDER BY weight DESC, held.id
        LIMIT %s"""
    return CandidateRead(sql, [*params, identifiers, settings.LEXICAL_RANK_CAP, identifiers, in_scope, most, limit])
