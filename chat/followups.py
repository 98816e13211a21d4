"""A question as the conversation means it: typos read as the workspace's words, a follow-up given its subject.

"whats the defualt upstrem timout?" is read as "whats the default upstream timeout?": a word neither
the workspace's documents nor English (symspellpy's dictionary) know is corrected to the nearest word
the documents use (rapidfuzz's optimal-string-alignment distance, so a swapped pair of letters counts
one), never a version, an identifier, a code token or a known word.

"And in 2.0?" has no subject of its own: it is asked as the conversation's previous question at the new
release or date ("What port does the admin API listen on, in 2.0?"; "Which admin port did 2.0 use?" then
"And in 3.0?" -> "Which admin port did 3.0 use?"); "and its default?" asks a new attribute of the
previous subject.

The rewriting is pure text (`question_in_context`, tested without a database); `question_in_workspace`
reads the workspace's vocabulary (cached per workspace) and release labels for it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import symspellpy
from rapidfuzz import process
from rapidfuzz.distance import OSA

from rag.releases import analyse_query, workspace_version_labels
from rag.retrieval import workspace_vocabulary

__all__ = ["InContext", "correct_typos", "question_in_context", "question_in_workspace"]


@dataclass(frozen=True)
class InContext:
    """The question searched and answered, and what a reader is told of how it was read."""

    question: str
    asked_as: str = ""  # a follow-up, with the subject it took from the conversation
    read_as: str = ""  # the question with its typos corrected


# Words a question uses that a corpus may never write: the question's own scaffolding and informal forms.
_QUESTION_WORDS = frozenset("""
whats hows wheres whens whos whys thats theres dont doesnt didnt cant wont isnt arent wasnt werent shouldnt
couldnt wouldnt ive youre theyre lets pls please thanks thank hello okay
""".split())
# Words every question uses: they say nothing of whether it is about the documents.
_FUNCTION_WORDS = frozenset("""
what which when where does with that this from have your there their about into would could should will they them
then than were been being some here also just very
""".split())
_WORD = re.compile(r"[A-Za-z][a-z]*(?:'[a-z]+)?")
# A word glued to code: "proxy.upstream_timeout", "/api/v2", "--flag", "lmn_", "`cmd`", "X-API-Key"; a full
# stop glued on both sides only ("a.b"): one that ends a sentence is followed by a space or nothing.
_CODE_NEIGHBOUR = re.compile(r"[\w/`$@#-]|[.:](?=\w)")
MAX_CORRECTIONS = 3  # more unknown words than this: another language or nonsense, not typos


def _max_distance(word: str) -> int:
    """One edit (a swapped pair counts one) up to seven letters: two would take "backend" for "backing"."""
    return 1 if len(word) <= 7 else 2


@functools.cache
def english_words() -> frozenset[str]:
    """symspellpy's English frequency dictionary (82,765 words): a real word the documents never
    use ("steep", "recent") is no typo, and "correcting" it to a workspace word would answer a question nobody
    asked. Never a source of corrections: English lacks the jargon ("backend" is not "backed")."""
    listing = Path(symspellpy.__file__).parent / "frequency_dictionary_en_82_765.txt"
    with listing.open(encoding="utf-8") as lines:
        return frozenset(line.split(" ", 1)[0] for line in lines)


def _in_workspace(lowered: str, vocabulary: Mapping[str, int]) -> bool:
    # An inflection of a known word is no typo: "timeouts", "proxies", "rotated", "rotating", "stopped".
    return lowered in vocabulary or any(stem in vocabulary for stem in _stems(lowered) if len(stem) >= 3)


def _stems(word: str) -> set[str]:
    stems = {word + "s", word + "es"}  # "backend" where the documents say "backends"
    if word.endswith("s"):
        stems |= {word[:-1], word[:-2], word[:-3] + "y"}
    if word.endswith("ed"):
        stems |= {word[:-1], word[:-2], word[:-3], word[:-3] + "y"}
    if word.endswith("ing"):
        stems |= {word[:-3], word[:-3] + "e", word[:-4]}
    return stems


def _candidate(word: str, vocabulary: Mapping[str, int], choices: Sequence[str]) -> str | None:
    """The nearest known word: fewest edits, then same first letter, then not shorter (a letter left out is
    a likelier slip than one added: "laest" is "latest" before "last"), then the most used."""
    limit = _max_distance(word)
    found = process.extract(word, choices, scorer=OSA.distance, score_cutoff=limit, limit=20)
    if not found:
        return None
    return min(found, key=lambda hit: (hit[1], hit[0][0] != word[0], len(hit[0]) < len(word),
                                       -vocabulary.get(hit[0], 0)))[0]


def _choices(vocabulary: Mapping[str, int]) -> list[str]:
    """The vocabulary and the singulars of its plurals: "upliad" is one edit from "upload" where the documents
    only say "uploads"."""
    singulars = {word[:-1] for word in vocabulary if word.endswith("s") and not word.endswith("ss")}
    return [*vocabulary, *(singulars - vocabulary.keys())]


def correct_typos(question: str, vocabulary: Mapping[str, int]) -> tuple[str, list[tuple[str, str]]]:
    """The question with each unknown plain word replaced by its nearest vocabulary word, and the replacements.

    Untouched: words of three letters or fewer, words with a capital past the first letter or a digit
    (LG1504, PostgreSQL, API), words glued to code (`proxy.upstream_timeout`, `/api/v2`, `lmn_`), words
    the vocabulary or English knows, and every word when more than MAX_CORRECTIONS, or most of them, are
    unknown, or when the question holds more English words the documents lack than words they use.
    """
    if not vocabulary:
        return question, []
    unknown: list[re.Match[str]] = []
    ours = theirs = 0  # plain words the documents use; English words they do not ("orchid")
    words = list(_WORD.finditer(question))
    for match in words:
        word, lowered = match.group(), match.group().lower().replace("'", "")
        glued_before = match.start() and _CODE_NEIGHBOUR.match(question, match.start() - 1)
        glued_after = _CODE_NEIGHBOUR.match(question, match.end())
        if len(word) <= 3 or glued_before or glued_after or any(ch.isupper() for ch in word[1:]) \
                or lowered in _QUESTION_WORDS or lowered in _FUNCTION_WORDS:
            continue
        if _in_workspace(lowered, vocabulary):
            ours += 1
        elif lowered in english_words():
            theirs += 1
        else:
            unknown.append(match)
    if not unknown or len(unknown) > MAX_CORRECTIONS or len(unknown) * 2 > len(words) + 1:
        return question, []
    if theirs > ours:  # "How do I repot an orchid?" is about something else: "repot" is no slip for "report"
        return question, []
    choices = _choices(vocabulary)
    corrections: list[tuple[str, str]] = []
    text = question
    for match in reversed(unknown):
        word = match.group()
        better = _candidate(word.lower(), vocabulary, choices)
        if better is None:
            continue
        if word[0].isupper():
            better = better[0].upper() + better[1:]
        corrections.insert(0, (word, better))
        text = text[:match.start()] + better + text[match.end():]
    return text, corrections


# What a follow-up may say besides its scope and still have no subject of its own.
_FILLERS = frozenset("""
and so then also but or what whats what's which how hows is was were are be been did does do about it its that
this those these they them their there same one ones the a an in for of on at with under please tell me again
now back then version versions release releases v case
""".split())
_PRONOUNS = frozenset("it its it's that this those these they them their same".split())
# The attributes "and its default?" asks of the previous subject.
_ATTRIBUTES = frozenset("""
default defaults maximum max minimum min limit limits value values setting settings name names port ports path
paths command commands size unit units format formats type types lifetime expiry header endpoint file location
range duration timeout interval retention key keys
""".split())
_LEAD = re.compile(r"^\s*(?:(?:and|so|then|ok|okay|also|but)\b[\s,]*)*(?:(?:what|how)\s+about\b\s*)?", re.I)
_SCOPE_LEAD = re.compile(r"^(?:(?:and|so|then|also|but|what|what's|whats|how|about|was|were|is|are|it|that|"
                         r"this|the\s+same|same)\b[\s,]*)+", re.I)
_SCOPE_CUE = re.compile(r"^(?:in|for|as\s+of|since|before|after|between|from|at|on|under|during|until|back\s+in)\b",
                        re.I)
# The scope at a follow-up's end: "in 2.0", "for version 2.1", "as of March 2025".
_SCOPE_TAIL = re.compile(r"\b(?:in|for|as\s+of|since|before|after|between|from|at|on|under|during|until)\s+"
                         r"(?:(?:the|version|release|v)\s*)*[\w.]*\d[^?!]*", re.I)
MAX_FOLLOW_UP_WORDS = 9  # a longer question carries its own subject; only short ones are checked for a scope


def _content_words(text: str) -> list[str]:
    return [word for word in re.findall(r"[a-z][a-z'-]*", text.lower()) if word not in _FILLERS]


def _bare(question: str) -> str:
    return question.strip().rstrip("?.!").strip()


def _scope_phrase(follow_up: str) -> str:
    """"And in 2.0?" -> "in 2.0"; "What about 2.1?" -> "in 2.1"; "and as of March 2025" -> "as of March 2025"."""
    phrase = _SCOPE_LEAD.sub("", _bare(follow_up)).strip(" ,")
    return phrase if _SCOPE_CUE.match(phrase) else f"in {phrase}"


def _rescoped(previous: str, follow_up: str, known_labels: Sequence[str]) -> str:
    """The previous question at the follow-up's release or date, without its final "?".

    Its one release replaced by the follow-up's where both name one ("Which admin port did 2.0 use?",
    "And in 3.0?" -> "Which admin port did 3.0 use"); else its scope removed and the follow-up's added
    ("What port does the admin API listen on, in 2.0").
    """
    before = analyse_query(previous, known_labels=known_labels)
    after = analyse_query(follow_up, known_labels=known_labels)
    if len(before.versions) == 1 and len(after.versions) == 1 and not (before.as_of_date or after.as_of_date) \
            and before.change is None:
        mentions = list(re.finditer(rf"(?<![\d.]){re.escape(before.versions[0])}(?:\.0)*(?![\d.]*\d)", previous))
        if len(mentions) == 1:
            mention = mentions[0]
            return _bare(previous[:mention.start()] + after.versions[0] + previous[mention.end():])
    return f"{_bare(before.text).lstrip(',;: ')}, {_scope_phrase(follow_up)}"


def question_in_context(question: str, previous_questions: Sequence[str], vocabulary: Mapping[str, int], *,
                        known_labels: Sequence[str] = ()) -> InContext:
    """The question as the conversation means it (see the module docstring); `previous_questions` oldest first,
    each as it was answered (a follow-up's asked-as); `known_labels`: the workspace's release labels."""
    corrected, corrections = correct_typos(question, vocabulary)
    read_as = corrected if corrections else ""
    previous = previous_questions[-1].strip() if previous_questions else ""
    if not previous or len(corrected.split()) > MAX_FOLLOW_UP_WORDS:
        return InContext(corrected, read_as=read_as)
    bare_label = _SCOPE_LEAD.sub("", _bare(corrected)).strip(" ,").lstrip("vV")
    if bare_label in known_labels:  # "What about 2.1?": a known release alone needs no cue
        corrected = f"{_bare(corrected)[:len(_bare(corrected)) - len(bare_label)].rstrip(' vV')} in {bare_label}?"
    lineage = analyse_query(corrected, known_labels=known_labels)
    known_scope = bool(lineage.versions or lineage.as_of_date)
    # A release the workspace does not have ("in 4.0") still scopes the question: search then says so.
    scoped = known_scope or bool(lineage.unknown_versions)
    rest = "" if known_scope and lineage.text == corrected.strip() else lineage.text
    content = _content_words(rest if scoped else corrected)
    if scoped and not content:
        asked = f"{_rescoped(previous, corrected, known_labels)}?"
    elif content and all(word in _ATTRIBUTES for word in content) and len(content) <= 2 and (
            set(re.findall(r"[a-z']+", corrected.lower())) & _PRONOUNS or _LEAD.match(corrected).group()):
        attribute = _SCOPE_LEAD.sub("", _bare(_LEAD.sub("", rest if scoped else corrected))).strip(" ,")
        attribute = attribute if attribute.split()[0].lower() in _PRONOUNS | {"the"} else f"the {attribute}"
        tail = _SCOPE_TAIL.search(corrected) if scoped else None
        subject = _rescoped(previous, _bare(tail.group()), known_labels) if tail else _bare(previous)
        asked = f"{subject}, and {attribute}?"
    else:
        return InContext(corrected, read_as=read_as)
    return InContext(asked, asked_as=asked, read_as=read_as)


def question_in_workspace(question: str, *, workspace_id: int, previous_questions: Sequence[str] = ()) -> InContext:
    """`question_in_context` with the workspace's vocabulary (cached until its documents change) and, for a short
    question after another that has a number in it, the workspace's release labels."""
    vocabulary = workspace_vocabulary(workspace_id=workspace_id)
    # A release is named with a number: without one no label can match, and reading them costs a few queries.
    names_release = len(question.split()) <= MAX_FOLLOW_UP_WORDS and any(ch.isdigit() for ch in question)
    labels = workspace_version_labels(workspace_id=workspace_id) if previous_questions and names_release else ()
    return question_in_context(question, previous_questions, vocabulary, known_labels=labels)
