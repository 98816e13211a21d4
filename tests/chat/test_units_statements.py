"""Statements from structure, clean (issue 51): what real documentation's units look like to a reader.

Realistic reST and Markdown snippets (a library's API guide, a settings reference), parsed by the format's own
reader and cut into answer units: no markup reaches the reader, no statement begins mid-sentence, and a
reference entry's field is a record of name, field and value.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from chat.units import answer_units
from evaluation.answers import raw_markup
from rag.chunking import chunk_document
from rag.parsers import parse_document

API_GUIDE = """\
Connection Pooling
==================

The :func:`_sa.create_engine` function returns an :class:`_engine.Engine` that holds a pool of connections.
The default pool implementation of :func:`.create_engine` is :class:`.QueuePool`, except for SQLite.
Passing a bad URL raises :exc:`~sqlalchemy.exc.ArgumentError`; see :ref:`pooling_toplevel` for tuning.
Use the ``pool_size`` argument and :meth:`.Pool.dispose` to reset it, as the `pool guide <https://example.org/>`_ shows.

.. method:: Pool.connect(*args, **kwargs)

   Returns a connection from the pool, opening one if none is idle.
"""

SETTINGS_REFERENCE = """\
Settings
========

.. setting:: CONN_HEALTH_CHECKS

CONN_HEALTH_CHECKS
------------------

Default: ``False``

Whether persistent connections are checked before they are reused in a request.

.. versionadded:: 4.1
"""


def _units(text: str, name: str = "guide.rst") -> list:
    parsed = parse_document(Path(name), text.encode())
    results = [SimpleNamespace(chunk_id=n, document_id=1, heading_path=draft.heading_path, text=draft.text)
               for n, draft in enumerate(chunk_document(parsed))]
    return answer_units(results)


def _answer(text: str) -> SimpleNamespace:
    return SimpleNamespace(text=text, abstained=False)


def test_sphinx_roles_read_as_the_built_page_shows_them(db):
    texts = [unit.text for unit in _units(API_GUIDE)]
    joined = " ".join(texts)
    assert "The create_engine function returns an Engine that holds a pool of connections." in texts
    assert "The default pool implementation of create_engine is QueuePool, except for SQLite." in texts
    assert "raises ArgumentError" in joined
    assert "Pool.dispose" in joined and "pool guide" in joined
    assert "Pool.connect(*args, **kwargs): Returns a connection from the pool, opening one if none is idle." in texts
    for text in texts:
        assert not raw_markup(_answer(text)), text


def test_a_reference_entry_field_is_a_record_of_name_field_and_value(db):
    units = {unit.text: unit.kind for unit in _units(SETTINGS_REFERENCE)}
    assert units["CONN_HEALTH_CHECKS: Default: False"] == "field"
    assert units["CONN_HEALTH_CHECKS: New in version 4.1."] == "field"


def test_a_statement_cut_at_a_chunk_edge_is_never_a_unit(db):
    chunk = SimpleNamespace(chunk_id=1, document_id=1, heading_path="Relationship loading",
                            text="Relationship loading\nrelated object in the SELECT statement. It loads every row "
                                 "of the collection at once.\nJoined eager loading adds a LEFT OUTER JOIN to the query.")
    texts = [unit.text for unit in answer_units([chunk])]
    assert not any(text.startswith("related object") for text in texts)
    assert "It loads every row of the collection at once." in texts  # never leaning on the cut-off tail
    assert "Joined eager loading adds a LEFT OUTER JOIN to the query." in texts


def test_a_sentence_opened_by_a_command_is_a_statement_not_a_cut_tail(db):
    # "`lumenctl backup create` writes ...": the parser unwraps the code span, leaving a lower-case first word.
    chunk = SimpleNamespace(chunk_id=1, document_id=1, heading_path="Backup and restore",
                            text="Backup and restore\nlumenctl backup create writes a dump of the configuration tables. "
                                 "It runs daily at 02:15. Backups are kept for 7 days; lumenctl backup prune deletes "
                                 "older ones.")
    units = {unit.text: unit.kind for unit in answer_units([chunk])}
    assert units["lumenctl backup create writes a dump of the configuration tables. It runs daily at 02:15."] == "pair"


def test_the_markup_check_flags_what_a_reader_should_never_see():
    for text in ("Raises :exc:`ValueError` [1]", "Set ``pool_size`` to 5. [1]", ".. method:: run(*args) [1]",
                 "the _engine.Engine holds the pool [1]", "the default pool implementation of . [1]",
                 "related object in the SELECT statement. [1]", "See [the guide](https://example.org/x). [1]"):
        assert raw_markup(_answer(text)), text
    assert not raw_markup(_answer("The default of CONN_MAX_AGE is 0 (seconds). [1]"))


def test_two_sentences_of_one_page_are_no_change(db):
    from chat.changes import summary_line
    from chat.units import Unit

    def unit(text: str, document_id: int) -> Unit:
        found = SimpleNamespace(chunk_id=document_id, document_id=document_id, heading_path="napoleon", text=text)
        return Unit(0, found, (0,), text, "sentence", vector=[1.0, 0.0])

    true, false = (unit("napoleon_use_rtype: True to use the :rtype: role for the return type.", 7),
                   unit("False to output the return type inline with the description.", 7))
    assert summary_line(true, false, "5.2.18", "5.2.19") == ""  # one page's two sentences
    old, new = (unit("html_codeblock_linenos_style: Default: 'inline'.", 1),
                unit("html_codeblock_linenos_style: Default: 'table'.", 2))
    assert summary_line(old, new, "4.0", "5.0") == "'inline' -> 'table' (4.0 -> 5.0)."


def test_an_older_release_s_notes_never_answer_the_present_or_a_later_release(db):
    from chat.extractive import _older_notes

    def found(chunk_id: int, heading_path: str, label: str = "8.1") -> SimpleNamespace:
        return SimpleNamespace(chunk_id=chunk_id, heading_path=heading_path, version_label=label)

    changelog = [found(1, "Changelog > Release 8.1.3 (released Oct 13, 2024) > Bugs fixed"),
                 found(2, "Changelog > Release 5.3.0 (released Oct 16, 2022) > Features added"),
                 found(3, "Configuration > html_theme")]
    assert _older_notes(changelog, "") == {2}  # the present: 8.1's notes only
    assert _older_notes(changelog, "5.3") == {1}  # asked 5.3: never 8.1's notes
    assert _older_notes([found(3, "Configuration > html_theme")], "") == set()


def test_a_how_do_i_question_may_lead_with_a_short_code_example_and_its_lead_in(db):
    guide = SimpleNamespace(chunk_id=1, document_id=1, heading_path="Extensions", text=(
        "Extensions\nTo enable autodoc, add it to the extensions list in conf.py:\n"
        "```\nextensions = ['sphinx.ext.autodoc']\n```\nThen run the build again."))
    texts = {unit.text: unit.kind for unit in answer_units([guide], examples=True)}
    assert texts["To enable autodoc, add it to the extensions list in conf.py: "
                 "`extensions = ['sphinx.ext.autodoc']`"] == "example"
    assert not any(kind == "example" for kind in (unit.kind for unit in answer_units([guide])))


def test_a_dot_after_a_space_or_inside_code_ends_no_sentence():
    from rag.sentences import split_sentences

    assert split_sentences("Sphinx writes a collection of .pot files into the build directory. Translators "
                           "use the .. admonition:: directive for notes. Set `conf.py. extensions` next.") == [
        "Sphinx writes a collection of .pot files into the build directory.",
        "Translators use the .. admonition:: directive for notes.", "Set `conf.py. extensions` next."]


def test_a_code_block_never_heads_the_sentence_under_it(db):
    guide = SimpleNamespace(chunk_id=1, document_id=1, heading_path="Backups", text=(
        "Backups\n```\nlumenctl backup list\nlumenctl backup restore /var/lib/lumen/backups/a.tar\n```\n"
        "A restore replaces the whole configuration of the gateway."))
    texts = [unit.text for unit in answer_units([guide])]
    assert texts == ["A restore replaces the whole configuration of the gateway."]


def test_an_entry_with_two_names_keeps_its_options_as_fields_not_text(db):
    entry = ("Project information\n===================\n\n.. confval:: copyright\n             project_copyright\n"
             "   :type: :code-py:`str | Sequence[str]`\n   :default: ``''``\n\n"
             "   A copyright statement in the style ``'2008, Author Name'``.\n")
    texts = [unit.text for unit in _units(entry)]
    assert texts[0].startswith("copyright, project_copyright: Default: ''; Type: str | Sequence[str].")
    assert not any(raw_markup(_answer(text)) for text in texts)


def test_a_body_field_list_and_a_table_row_are_records_with_their_names(db):
    # An API page's field list (autodoc's `:param x:`) and a settings table: each value read with what it is of.
    reference = ("Broker connections\n==================\n\nConnect to the broker and return the connection.\n\n"
                 ":param connect_timeout: Seconds to wait for the broker.\n    Default: 4.\n"
                 ":param max_retries: How many times to reconnect. Default: 100.\n:returns: The open connection.\n\n"
                 "=====================  ========  ==========================\n"
                 "Setting                Default   Meaning\n"
                 "=====================  ========  ==========================\n"
                 "``worker_prefetch``    ``4``     Tasks reserved per process.\n"
                 "``result_expires``     ``1d``    How long results are kept.\n"
                 "=====================  ========  ==========================\n")
    texts = [unit.text for unit in _units(reference)]
    assert "connect_timeout: Seconds to wait for the broker. Default: 4." in texts
    assert "max_retries: How many times to reconnect. Default: 100." in texts
    assert "result_expires: Default: 1d; Meaning: How long results are kept." in texts
    assert not any(raw_markup(_answer(text)) for text in texts)


def _scored(text: str, n: int, score: float, terms: dict[str, float], *, evasive: bool = False):
    from chat.units import Unit

    found = SimpleNamespace(chunk_id=n, document_id=n, heading_path="Deployment", text=text)
    return Unit(n, found, (0,), text, "sentence", score=score, relevance=0.6, power=1.0, evasive=evasive,
                asked_terms=terms)


def test_a_further_statement_is_about_what_the_lead_answers_and_never_a_page_s_scope(db):
    from chat.answer_ranker import about_the_document
    from chat.extractive import _pick

    # "What path should the Kubernetes liveness probe call?"
    lead = _scored("Point the liveness probe at /healthz on the admin port.", 1, 0.95, {"liveness": 2.0, "probe": 1.5})
    same = _scored("The readiness probe calls /readyz; /healthz only says the process runs.", 2, 0.9, {"probe": 1.5})
    other = _scored("The Helm chart requires Kubernetes 1.28 or newer.", 3, 0.9, {"kubernetes": 1.0})
    scope = _scored("This guide covers running the gateway 4.2 on Kubernetes: probes, storage and upgrades.", 4, 0.93,
                    {"kubernetes": 1.0, "probe": 1.5}, evasive=True)
    assert [unit.text for unit in _pick([other, scope, same, lead], limit=3)] == [lead.text, same.text]
    assert about_the_document("This documentation covers version 1.3.")
    assert about_the_document("Applies to Lumen Gateway 3.0.x and replaces the 2.0 overview.")
    assert not about_the_document("This setting covers every route of the proxy.")


def test_a_change_is_one_entry_in_two_releases_never_two_different_statements(db, settings):
    from chat.changes import _pair_score, both_releases_row
    from chat.releases import row_for_release
    from chat.units import Unit

    def unit(text: str, document_id: int, relevance: float = 0.6) -> Unit:
        found = SimpleNamespace(chunk_id=document_id, document_id=document_id, heading_path="Settings", text=text)
        return Unit(0, found, (0,), text, "sentence", score=0.5, relevance=relevance, vector=[1.0, 0.0])

    # Celery's docs in two releases: the same entry with another value is a change; a different sentence is not.
    old = unit("worker_prefetch_multiplier: Default: 4. How many messages to prefetch at a time.", 1)
    new = unit("worker_prefetch_multiplier: Default: 1. How many messages to prefetch at a time.", 2)
    other = unit("Set broker_pool_limit to 10 connections when running more than 4 workers.", 3)
    assert _pair_score(old, new) == 1.0 + settings.ANSWER_CHANGE_BONUS
    assert _pair_score(other, new) == 1.0
    # An upgrade guide's row giving both releases their value answers both sides of the change at once.
    row = unit("CONN_MAX_AGE: 4.2 default: 0; 5.0 default: 60.", 4)
    same = unit("DEBUG: 4.2 default: False; 5.0 default: False.", 5)
    assert both_releases_row([old, same, row], "4.2", "5.0") is row
    assert both_releases_row([same], "4.2", "5.0") is None  # the same value in both: no change
    assert row_for_release(row.text, "4.2") == "CONN_MAX_AGE: default 0."


def test_what_s_new_is_answered_by_the_asked_release_s_own_highlights(db):
    from chat.extractive import _highlights

    def notes(chunk_id: int, heading_path: str, text: str, label: str) -> list:
        found = SimpleNamespace(chunk_id=chunk_id, document_id=chunk_id, heading_path=heading_path, text=text,
                                version_label=label)
        return answer_units([found])

    units = [*notes(1, "Django 4.2 release notes > What's new in Django 4.2",
                    "What's new in Django 4.2\nPsycopg 3 support: Django now supports psycopg version 3.1.8 or higher.\n\n"
                    "Comments on columns and tables: The new Field.db_comment option sets a comment on a column.", "4.2"),
             *notes(2, "Django 5.0 release notes > What's new in Django 5.0",
                    "What's new in Django 5.0\nFacet filters in the admin: Facet counts are now shown for applied "
                    "filters in the admin changelist.\n\nSimplified templates for form field rendering: Form fields "
                    "can now be rendered as a whole with as_field_group().", "5.0"),
             *notes(3, "Django 5.0 release notes > Backwards incompatible changes in 5.0",
                    "Backwards incompatible changes in 5.0\nSupport for MySQL 8.0.11 is removed.", "5.0")]
    newest = _highlights("What's new in the latest Django release?", units, "")
    assert newest is not None and newest.text.startswith("Facet filters in the admin: Facet counts are now shown")
    assert "as_field_group()" in newest.text and "MySQL" not in newest.text and "psycopg" not in newest.text
    asked = _highlights("What's new in Django 4.2?", units, "4.2")
    assert asked is not None and asked.text.startswith("Psycopg 3 support:")
    assert _highlights("How do I render a form field group?", units, "") is None


def test_each_side_of_a_change_states_a_value_of_its_own(db):
    from chat.changes import _pair_score, states_a_value
    from chat.units import Unit

    def unit(text: str, document_id: int) -> Unit:
        found = SimpleNamespace(chunk_id=document_id, document_id=document_id, heading_path="Pagination", text=text)
        return Unit(0, found, (0,), text, "sentence", score=0.5, relevance=0.6, vector=[1.0, 0.0])

    releases = ("2.0", "2.1", "3.0")
    naming = unit("List endpoints are paginated with page numbers.", 1)
    stating = unit("Use the query parameters page and per_page (default 20, maximum 100).", 2)
    summary = unit("Compared with 2.x, the main changes are higher minimum versions for PostgreSQL and Redis.", 3)
    new = unit("Pass limit (default 50, maximum 200) and the cursor of the previous response.", 4)
    assert not states_a_value(naming.text, releases) and states_a_value(stating.text, releases)
    assert not states_a_value(summary.text, releases)  # a release line it names is no value of its own
    # Of two statements about the subject, the side that gives a value a reader can compare is chosen.
    assert _pair_score(stating, new, releases) > _pair_score(naming, new, releases)
    assert _pair_score(stating, new, releases) > _pair_score(stating, summary, releases)
