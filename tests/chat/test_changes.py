"""chat.changes: the change line of a change answer and the pair of statements it is told from."""

from __future__ import annotations

from types import SimpleNamespace

from chat.changes import _pair_score, value_change
from chat.units import Unit

RELEASES = ("2.0", "2.1", "3.0")


def _unit(text: str, document_id: int, score: float) -> Unit:
    found = SimpleNamespace(chunk_id=document_id, document_id=document_id, heading_path="Rate limits", text=text)
    return Unit(0, found, (0,), text, "sentence", score=score, relevance=score, vector=[1.0, 0.0])


def test_a_path_written_with_its_closing_slash_leaves_no_stray_slash():
    old = "lumenctl backup create writes a dump to /var/lib/lumen/backups/ as a compressed archive."
    new = "lumenctl snapshot create writes an archive to /var/lib/lumen/snapshots/."
    assert value_change(old, new, labels=RELEASES) == ("/var/lib/lumen/backups", "/var/lib/lumen/snapshots", "")


def test_a_duration_is_said_as_the_documents_write_it():
    assert value_change("An access token is valid for 24h.", "An access token is valid for 12 hours.",
                        labels=RELEASES) == ("24h", "12 hours", "")
    assert value_change("Tokens last 24 hours.", "Tokens last 12 hours.", labels=RELEASES) == ("24", "12", "hours")


def test_a_changed_quantity_outweighs_a_renamed_setting(db):
    # Two sentences that rename the setting score a little higher than the two that state the limit.
    renamed = (_unit("A consumer can override ratelimit_default with its own value.", 1, 0.33),
               _unit("A consumer can override rate_limit with its own value.", 2, 0.33))
    limited = (_unit("Each API key is limited to 600 requests per minute by default.", 3, 0.3),
               _unit("Each API key is limited to 1200 requests per minute by default.", 4, 0.3))
    assert value_change(*(unit.text for unit in renamed), labels=RELEASES) is not None  # a change, of a name
    assert _pair_score(*limited, RELEASES) > _pair_score(*renamed, RELEASES)


def test_a_changed_path_is_a_value_not_a_name(db, settings):
    paths = (_unit("All endpoints live under the base path /api/v1.", 1, 0.3),
             _unit("All endpoints live under the base path /api/v2.", 2, 0.3))
    assert _pair_score(*paths, RELEASES) == 0.6 + settings.ANSWER_CHANGE_BONUS
