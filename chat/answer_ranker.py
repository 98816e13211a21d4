"""Which statement leads an answer: a small learned ranker over what each unit states, read with no library.

Each answer unit gets a row of features (FEATURES): how close it is in meaning and rare terms to the
question, whether it states a value of the kind asked (a version, a duration, a default, a command ...),
how much of the question's subject and its section title it holds, its shape (definition, list item,
table row), where it stands in its passage and in the retrieval, its release against the question's
scope, and whether it is only a heading or a pointer ("see ..."). A linear model trained on generated
question / correct-statement pairs (demo/answer_training/, and the structural facts of thirteen real projects'
reference docs: benchmarks/answer_projects.py; benchmarks/train_answer_ranker.py fits it) weighs them;
the weights ship as chat/answer_ranker.json and are read here with plain Python, so answering never
needs scikit-learn.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

from chat.questions import states_asked_value, values_in

WEIGHTS_PATH = Path(__file__).with_name("answer_ranker.json")
FEATURES = (
    "cosine", "rare_terms", "power", "has_value", "asked_value", "subject_overlap", "heading_match",
    "first_in_passage", "position", "retrieval_rank", "definition", "item", "pair", "row", "length",
    "new_words", "heading_only", "pointer", "release_match", "other_release", "stale", "restates",
)
# "See the how-to on ...", "for more information, refer to ...": a statement that sends the reader elsewhere.
_POINTER = re.compile(r"^\s*(?:see|refer to|read|consult|check)\b|\b(?:see|refer to) (?:the |also |our )?"
                      r"[\w`\"' -]{0,60}(?:section|page|guide|how-?to|documentation|docs|chapter|reference)\b|"
                      r"\bfor (?:more|further|details|more information)\b|\bdescribed in\b|\bexplained in\b", re.I)
# "This reference covers the Admin API shipped with Gateway 3.0.", "Applies to 3.0.x.": what a document is for, said
# of the document itself; it answers only which release a page covers.
_SCOPE = re.compile(r"^\s*(?:(?:this|these|the present) (?:[\w-]+ ){0,2}(?:documentation|document|docs|guide|reference|page|"
                    r"manual|runbook|notes?|section|chapter|file|overview|tutorial)s? (?:covers?|describes?|documents?|"
                    r"appl(?:y|ies) to|(?:is|are) (?:for|about|written for)|explains?|summari[sz]es?|lists?)|"
                    r"appl(?:y|ies) to)\b", re.I)
_ROW = re.compile(r"^[^:]{1,60}:\s*[^:]+(?:;\s*[^:;]{1,40}:\s*[^;]+)+$")
_SENTENCE_END = re.compile(r"[.!?]\s*$")
_WORD = re.compile(r"[a-z0-9][a-z0-9._-]*")


def heading_only(text: str) -> bool:
    """A title line quoted as if a statement ("Step 3: Run the database migrations"): short, no value, no full stop."""
    words = text.split()
    return len(words) <= 9 and not _SENTENCE_END.search(text) and not values_in(text.partition(":")[2] or text)


def pointer(text: str) -> bool:
    """A statement that points elsewhere instead of saying ("See the upgrade guide")."""
    return bool(_POINTER.search(text))


def about_the_document(text: str) -> bool:
    """A statement about the document itself ("This guide covers everything an operator needs to run 3.0: ...",
    "Applies to Lumen Gateway 3.0.x."): a page's scope, never the answer to what the page says."""
    return bool(_SCOPE.search(text))


def _share(terms: set[str], words: set[str]) -> float:
    return len(terms & words) / len(terms) if terms else 0.0


def unit_features(*, text: str, unit_kind: str, heading_path: str, sentence_index: int, result_rank: int,
                  cosine: float, rare: float, power: float, terms: set[str], words: set[str], asked: str,
                  release: int, stale: bool) -> list[float]:
    """One row of FEATURES for a unit. `terms`, `words`: the question's and the unit's content words (chat.extractive
    .content_words); `asked`: chat.questions.asked_value_kind; `release`: 1 the asked release's own statement, -1
    another release's, 0 no release asked; `stale`: a superseded or retired passage's statement."""
    heading_words = {w.strip("._-") for w in _WORD.findall((heading_path or "").lower())}
    heading_words = {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in heading_words}
    new = len(words - terms)
    return [
        cosine, rare, power, float(bool(values_in(text))), float(states_asked_value(asked, text)),
        _share(terms, words), _share(terms, heading_words),
        float(sentence_index == 0), 1.0 / (1 + sentence_index), 1.0 / (1 + result_rank),
        float(unit_kind in ("definition", "field")), float(unit_kind in ("item", "steps", "example")), float(unit_kind in ("pair", "headed")),
        float(bool(_ROW.match(text))), min(1.0, len(text.split()) / 40), min(1.0, new / 10),
        float(heading_only(text)), float(pointer(text)),
        float(release > 0), float(release < 0), float(stale), float(power <= -1),
    ]


@lru_cache(maxsize=4)
def load_weights(path: Path = WEIGHTS_PATH) -> tuple[dict[str, float], float]:
    """(weight by feature, bias) of the shipped model; a feature the file does not name weighs nothing."""
    data = json.loads(path.read_text(encoding="utf-8"))
    weights = {name: float(value) for name, value in data["weights"].items()}
    return weights, float(data.get("bias", 0.0))


def ranker_score(features: list[float], *, path: Path = WEIGHTS_PATH) -> float:
    """The learned score of one unit, 0-1 (the logistic of the weighted sum): what orders an answer's units."""
    weights, bias = load_weights(path)
    total = bias + sum(weights.get(name, 0.0) * value for name, value in zip(FEATURES, features))
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, total))))
