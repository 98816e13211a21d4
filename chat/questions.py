"""What a question asks for, and how much of it a statement carries: the answerer's sense of "answering power".

Retrieval finds passages about the subject; an answer has to *state* what was asked. A value
question ("what is the default timeout?") is answered by a statement holding the subject and a
value, steps ("how do I rotate a key?") by the list of steps, a definition by "X is ...", a
change by each version's statement with its value. A statement that only restates the question
or names the subject ("The rate limit can be changed per consumer") never leads.

Pure text: no database, no encoder; chat.extractive scores with it and chat.prompts tells the
generated path the same kinds.
"""

from __future__ import annotations

import re

from rag.facts import extract_facts
from rag.releases import answer_states_a_change

KINDS = ("value", "definition", "steps", "yesno", "change", "list")

_STEPS = re.compile(r"^\s*(?:how (?:do|can|should|would) (?:i|we|you|one)\b|how to\b|what (?:are the )?steps\b|"
                    r"what (?:is the )?(?:procedure|process)\b)", re.I)
_YESNO = re.compile(r"^\s*(?:is|are|does|do|can|could|should|will|would|has|have|was|were|did|must|may)\b", re.I)
_LIST = re.compile(r"^\s*(?:list|name)\b|\b(?:which|what)\b(?: [\w-]+){0,4} (?:are|does [\w ]+ support)\b"
                   r"|\b(?:which|what)\b.*\b(?:supported|available|options|kinds|types|formats|modes|methods)\b", re.I)
_VALUE = re.compile(
    r"\b(?:default|defaults|limit|limits|maximum|max|minimum|min|how (?:many|much|long|often|big|large|old)|"
    r"which (?:port|version|path|command|endpoint|header|value|status|code|file|setting|option|directory|url|flag)|"
    r"what (?:port|version|path|command|endpoint|header|value|status|code|file|setting|option|directory|url|flag)|"
    r"timeout|size|port|lifetime|ttl|expiry|expire|interval|retention|threshold|number of|name of|called|"
    r"base path|endpoint|command|setting|option|header|status code|error code|when (?:does|do|is|are|will))\b", re.I)
# "What is a consumer?", also after a clause that sets where ("In Lumen terminology, what is a consumer?").
_DEFINITION = re.compile(r"^\s*(?:[^,?]{1,40},\s*)?(?:what (?:is|are|does) (?:an? |the )?[\w.`'-]+(?: [\w.`'-]+){0,3}\s*(?:mean)?\??\s*$|"
                         r"what does .* mean|define\b|explain\b)", re.I)

# A value a reader can act on that facts.py does not name: a path, a port, a setting or a command.
_TOKEN_VALUE = re.compile(r"(?<!\w)(?:/[\w-]+(?:[./][\w{}-]+)*|:\d{2,5}\b|`[^`]+`|\b\w+(?:[._]\w+)+\b|"
                          r"\b[A-Z]{2,}\d+\b|\b\d{2,}\b)")


def question_kind(question: str, *, change: bool = False) -> str:
    """One of KINDS: what the answer has to state. `change`: retrieval already planned a change question."""
    if change or answer_states_a_change(question):
        return "change"
    if _STEPS.search(question):
        return "steps"
    if _LIST.search(question):
        return "list"
    if _VALUE.search(question):
        return "value"
    if _YESNO.search(question):
        return "yesno"
    if _DEFINITION.search(question):
        return "definition"
    return "value"


def values_in(text: str) -> list[str]:
    """The values a statement states, as written: numbers with units, versions, durations, paths, settings."""
    facts = [fact.text for fact in extract_facts(text) if fact.kind != "obligation"]
    return facts or _TOKEN_VALUE.findall(text)


def answering_power(kind: str, text: str, unit_kind: str, *, new_words: int, subject: float) -> float:
    """How much of what the question asks for this statement carries, from -1 (nothing) to 1.

    `new_words`: content words the statement adds to the question (at most one and no value: it restates the
    question, names the subject and says nothing of it); `subject`: the share of the question's rare terms it
    holds (0-1). A value without the subject answers nothing either.
    """
    has_value = bool(values_in(text))
    if new_words <= 1 and not has_value:
        return -1.0  # "PostgreSQL 16 is recommended ..." adds one word, the value: that answers
    if kind == "value":
        if has_value and subject > 0:
            return 1.0 if subject >= 0.34 else 0.5
        return 0.0  # a name ("the SOAP-to-REST transformer plugin") is a value no pattern knows
    if kind == "steps":
        if unit_kind in ("item", "example"):  # a step, or the code example a guide gives for it
            return 0.6
        return 0.3 if re.search(r"\b(?:run|use|set|call|add|open|click|create|enable|restart)\b", text, re.I) else 0.0
    if kind == "definition":
        return 0.6 if re.search(r"\b(?:is|are|means|refers to|lets|allows)\b", text, re.I) or unit_kind == "definition" \
            else 0.0
    if kind == "list":
        return 0.5 if unit_kind == "item" or text.count(",") >= 2 else 0.0
    if kind == "yesno":
        return 0.5 if re.search(r"\b(?:not|never|only|must|can|cannot|supported|required|yes|no)\b", text, re.I) else 0.2
    return 0.5 if has_value else 0.0


# What a value question asks for, finer than "value": a statement states that kind or it does not answer.
_ASKED = (
    ("version", re.compile(r"\bversions?\b|\breleases?\b|\b(?:oldest|newest|latest|minimum|supported) \w+\b.*\b(?:use|need|run)"
                           r"|\bwhich (?:python|postgres\w*|django|sphinx|node|java)\b", re.I)),
    ("duration", re.compile(r"\bhow long\b|\bhow often\b|\b(?:timeout|ttl|lifetime|expir\w*|interval|retention|period|"
                            r"delay|wait)\b", re.I)),
    ("default", re.compile(r"\bdefaults?\b|\bby default\b|\bout of the box\b", re.I)),
    ("command", re.compile(r"\bcommands?\b|\bwhat (?:do|should) i (?:run|type)\b|\bhow do i run\b", re.I)),
    ("name", re.compile(r"\b(?:setting|option|variable|flag|header|endpoint|path|url|directory|file|port|"
                        r"called|name of|key)\b", re.I)),
    ("amount", re.compile(r"\bhow (?:many|much|big|large)\b|\b(?:limit|maximum|max|minimum|min|size|number of|"
                          r"count|price|cost|fee|rate)\b", re.I)),
)
_COMMAND_VALUE = re.compile(r"`[^`]*`|^\s*\$ |\b(?:manage\.py|make|pip|python|docker|kubectl|lumenctl|sphinx-\w+)\b"
                            r"|\b[a-z][\w-]+ (?:--?[\w-]+|[a-z_]+)\b(?=[^.]*`)")
_VERSION_VALUE = re.compile(r"\b[A-Z][\w-]+ v?\d+(?:\.\d+)*\+?(?![\w%]| ?(?:ms|s|[mhd]|sec\w*|min\w*|hours?|days?|"
                            r"weeks?|months?|years?|[kmg]i?b|bytes?|requests?|units?|per)\b)|(?<![\w.])v?\d+\.\d+(?:\.\d+)*\b")
_NAME_VALUE = re.compile(r"\b\w+(?:[._]\w+)+\b|(?<!\w)/[\w-]+|`[^`]+`|\b[A-Z][A-Z0-9_]{2,}\b|:\d{2,5}\b")


def asked_value_kind(question: str) -> str:
    """What a value question asks for: version, duration, default, command, name, amount, or "" (no value asked)."""
    if question_kind(question) not in ("value", "yesno", "definition"):
        return ""
    return next((kind for kind, pattern in _ASKED if pattern.search(question)), "")


def states_asked_value(asked: str, text: str) -> bool:
    """Whether a statement states a value of the asked kind ("" asked: any value)."""
    if not asked:
        return bool(values_in(text))
    kinds = {fact.kind for fact in extract_facts(text)}
    if asked == "version":  # "PostgreSQL 15", "3.0", "Python 3.8+": a product's number is its version
        return "version" in kinds or bool(_VERSION_VALUE.search(text))
    if asked == "duration":
        return "duration" in kinds
    if asked == "amount":
        return bool(kinds & {"number", "size", "percent", "duration"})
    if asked == "default":
        return bool(re.search(r"\bdefault", text, re.I)) and bool(values_in(text))
    if asked == "command":
        return bool(_COMMAND_VALUE.search(text))
    return bool(_NAME_VALUE.search(text))
