"""The export piles' questions (issue 50): a sentence one release changed is a current fact and an older one."""

from __future__ import annotations

from demo.variants.pile_questions import changed_pair, pile_questions

OLD = "The cache keeps every response for three hours before it asks the remote site again for a fresh copy."
NEW = "The cache keeps every response for twelve hours before it asks the remote site again for a fresh copy."


def test_a_sentence_with_one_span_replaced_is_a_changed_fact():
    stem, new, old = changed_pair(NEW, OLD)
    assert (new, old) == ("for twelve hours", "for three hours")
    assert "twelve" not in stem and "three" not in stem and stem.startswith("the cache keeps every response")
    # Two changes, or a rewritten sentence, are no one fact.
    assert changed_pair(NEW.replace("remote", "origin"), OLD) is None
    assert changed_pair("Responses are kept in memory only, never on disk, whatever the settings say.", OLD) is None


def test_the_pile_asks_the_newest_value_and_the_older_release_its_own():
    pages = {("1.0", "docs/cache.rst"): ("a.rst", f"Caching\n\n{OLD}"),
             ("2.0", "docs/cache.rst"): ("b.md", f"Caching\n\n{NEW}"),
             ("2.0", "docs/other.rst"): ("c.md", "Nothing changed here at all in any release of the project.")}
    current, older = pile_questions("lumen", pages, ["1.0", "2.0"], seed=1)
    assert current["kind"] == "current" and current["expected_path"] == "b.md"
    assert current["answer_patterns"] == ["for twelve hours"]
    assert current["outdated"] == [{"path": "a.rst", "patterns": ["for three hours"]}]
    assert older["kind"] == "version" and older["as_of"] == "1.0" and older["expected_path"] == "a.rst"
    assert older["question"].startswith("In lumen 1.0, the cache keeps")
    assert older["other_versions"] == [{"path": "b.md", "patterns": ["for twelve hours"]}]
