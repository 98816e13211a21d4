"""The frozen questions of the sibling corpus, and the check that refuses an ambiguous one.

Three kinds, in the format of demo/ground_truth.json (kind, question, expected_path, answer_patterns, outdated or
other_versions) plus `template`, `subject` and `field`:

- "current": one sibling's value ("What monthly fee does Acme Corp pay?"), answered by the newest file of its
  version group; `outdated` lists its older versions that state another value.
- "version": one edition of a subject with true versions ("What did the 2024 edition of the Norway policy say
  about annual leave?"); `as_of` names the edition, `other_versions` the group's other editions.
- "across": over many siblings ("Which customers pay more than 3,000 EUR a month?"): `expected_subjects` and
  `expected_paths`; `may_abstain`, so the harness reports them apart.

A question is askable only when its pattern is stated by its expected file and by no file outside its version
group (another customer paying the same fee would make "the value first" unmeasurable), and when no other
sibling's value of the same field is stated in the expected file.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict

PHRASINGS: dict[tuple[str, str], list[str]] = {
    ("service_agreement", "monthly_fee"): ["What monthly fee does {s} pay?", "How much does {s} pay per month?",
                                           "What is the monthly fee in the agreement with {s}?", "{s} monthly fee",
                                           "What's the fee of {s}?"],
    ("service_agreement", "start_date"): ["When does the agreement with {s} start?",
                                          "What is the start date of the {s} service agreement?"],
    ("service_agreement", "agreement_number"): ["What is the agreement number for {s}?"],
    ("service_agreement", "payment_term"): ["What are the payment terms for {s}?",
                                            "Within how many days must {s} pay an invoice?"],
    ("service_agreement", "initial_term"): ["How long is the initial term of the agreement with {s}?"],
    ("service_agreement", "notice"): ["How much notice must be given to terminate the agreement with {s}?"],
    ("offer_letter", "salary"): ["What salary was {s} offered?", "What is {s}'s annual salary?",
                                 "how much will {s} earn", "What is the salary in the offer to {s}?"],
    ("offer_letter", "start_date"): ["When does {s} start?", "What is {s}'s first day of work?"],
    ("offer_letter", "role"): ["What role was {s} offered?"],
    ("offer_letter", "manager"): ["Who will {s} report to?"],
    ("offer_letter", "probation"): ["How long is {s}'s probation period?"],
    ("statement_of_work", "budget"): ["What is the budget of the {s} project?", "How much does the {s} project cost?",
                                      "{s} budget"],
    ("statement_of_work", "end_date"): ["When does the {s} project end?", "What is the end date of {s}?"],
    ("statement_of_work", "code"): ["What is the project code of {s}?"],
    ("statement_of_work", "client"): ["Which customer is the {s} project for?"],
    ("product_datasheet", "price"): ["What does the {s} cost?", "What is the list price of the {s}?",
                                     "{s} price"],
    ("product_datasheet", "power"): ["How much power does the {s} use?", "What is the power consumption of the {s}?"],
    ("product_datasheet", "dimensions"): ["What are the dimensions of the {s}?", "How big is the {s}?"],
    ("product_datasheet", "weight"): ["How much does the {s} weigh?"],
    ("product_datasheet", "warranty"): ["What is the warranty of the {s}?", "How long is the {s} under warranty?"],
    ("product_datasheet", "model_number"): ["What is the model number of the {s}?"],
    ("country_policy", "annual_leave"): ["How many days of annual leave do employees in {s} get?",
                                         "annual leave {s}", "What is the holiday entitlement in {s}?",
                                         "How much paid leave do we give staff in {s}?"],
    ("country_policy", "public_holidays"): ["How many public holidays does the company observe in {s}?"],
    ("country_policy", "notice"): ["How much notice do employees in {s} give when they resign?"],
    ("country_policy", "authority"): ["Which data-protection authority supervises us in {s}?",
                                      "Who is the data protection authority for {s}?"],
}
MAIN_FIELD = {"service_agreement": "monthly_fee", "offer_letter": "salary", "statement_of_work": "budget",
              "product_datasheet": "price", "country_policy": "annual_leave"}

VERSION_PHRASINGS: dict[tuple[str, str], list[str]] = {
    ("service_agreement", "monthly_fee"): ["What monthly fee did {s} pay before the amendment?",
                                           "What was {s}'s monthly fee under the {label} agreement?"],
    ("service_agreement", "initial_term"): ["How long was the term of the {s} agreement before it was amended?"],
    ("country_policy", "annual_leave"): ["What did the {label} edition of the {s} policy say about annual leave?",
                                         "How many days of annual leave did employees in {s} get under the {label} "
                                         "edition?"],
    ("country_policy", "public_holidays"): ["How many public holidays did the {label} {s} policy list?"],
    ("product_datasheet", "price"): ["What was the list price of the {s} in datasheet {label}?"],
    ("product_datasheet", "power"): ["What power consumption did {label} of the {s} datasheet give?"],
    ("product_datasheet", "warranty"): ["What warranty did the {s} have under {label}?"],
}
NEWEST_PHRASINGS: dict[tuple[str, str], str] = {
    ("country_policy", "annual_leave"): "What does the {label} edition of the {s} policy say about annual leave?",
    ("service_agreement", "monthly_fee"): "What monthly fee does {s} pay under the amended agreement?",
    ("product_datasheet", "price"): "What is the list price of the {s} in datasheet {label}?",
}
# Misspellings a hurried user types; the subject itself is misspelt in a few questions too.
QUESTION_TYPOS = {"monthly": "montly", "salary": "salery", "annual": "anual", "budget": "buget", "warranty": "waranty",
                  "agreement": "agrement", "project": "projet", "employees": "employes", "price": "prise"}


class Texts:
    """The corpus texts (path -> lower-cased, whitespace-collapsed words) and, per pattern, the files stating it:
    each pattern is searched once, however many questions ask about its value."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self._stating: dict[str, frozenset[str]] = {}

    def stating(self, pattern: str) -> frozenset[str]:
        if pattern not in self._stating:
            compiled = re.compile(pattern)
            self._stating[pattern] = frozenset(path for path, text in self.texts.items() if compiled.search(text))
        return self._stating[pattern]

    def states(self, path: str, pattern: str) -> bool:
        return path in self.stating(pattern)


def _typo_in(word: str) -> str:
    """Two neighbouring letters swapped in the middle of a word ("Fjrod" for "Fjord")."""
    if len(word) < 4:
        return word
    middle = len(word) // 2
    return word[:middle - 1] + word[middle] + word[middle - 1] + word[middle + 1:]


def phrase(template: str, subject: str, rng: random.Random) -> str:
    """A question as users type it: mostly as written, some lower-case, some with a typo in a word or the name."""
    roll = rng.random()
    if roll < 0.04:
        words = subject.split()
        longest = max(range(len(words)), key=lambda index: len(words[index]))
        words[longest] = _typo_in(words[longest])
        subject = " ".join(words)
    question = template.format(s=subject)
    if 0.04 <= roll < 0.10:
        typo = next((word for word in QUESTION_TYPOS if word in question), None)
        if typo:
            question = question.replace(typo, QUESTION_TYPOS[typo], 1)
    if 0.10 <= roll < 0.20:
        question = question.lower()
    return question


def _groups(listing: dict[str, dict]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for path in sorted(listing, key=lambda name: (listing[name]["version_group"], listing[name]["edition"])):
        grouped[listing[path]["version_group"]].append(path)
    return dict(grouped)


def _entry(path: str, entry: dict, field: str) -> dict:
    return {"path": path, "version": entry["edition_label"], "patterns": [entry["facts"][field]["pattern"]]}


def candidates(listing: dict[str, dict], rng: random.Random) -> list[dict]:
    """Every question the generator would ask, before the check refuses the ambiguous ones."""
    found: list[dict] = []
    for paths in _groups(listing).values():
        newest = listing[paths[-1]]
        template, subject = newest["template"], newest["subject"]
        named = newest.get("short_subject") or subject
        for field in newest["facts"]:
            for index, wording in enumerate(PHRASINGS.get((template, field), [])):
                older = [_entry(path, listing[path], field) for path in paths[:-1]
                         if field in listing[path]["facts"]
                         and listing[path]["facts"][field]["text"] != newest["facts"][field]["text"]]
                found.append({"kind": "current", "template": template, "subject": subject, "field": field,
                              "phrasing": index, "question": phrase(wording, named, rng),
                              "answer": newest["facts"][field]["text"], "expected_path": paths[-1],
                              "version": newest["edition_label"],
                              "answer_patterns": [newest["facts"][field]["pattern"]], "outdated": older})
        if len(paths) < 2:
            continue
        for position, path in enumerate(paths):
            entry = listing[path]
            others = [other for other in paths if other != path]
            for field, fact in entry["facts"].items():
                differing = [other for other in others if listing[other]["facts"].get(field, {}).get("text")
                             != fact["text"]]
                if not differing:
                    continue
                wordings = VERSION_PHRASINGS.get((template, field), []) if position < len(paths) - 1 \
                    else [NEWEST_PHRASINGS[(template, field)]] if (template, field) in NEWEST_PHRASINGS else []
                for index, wording in enumerate(wordings):
                    question = wording.format(s=named, label=entry["edition_label"])
                    found.append({"kind": "version", "template": template, "subject": subject, "field": field,
                                  "phrasing": index, "question": question, "as_of": entry["edition_label"],
                                  "answer": fact["text"], "expected_path": path, "version": entry["edition_label"],
                                  "answer_patterns": [fact["pattern"]],
                                  "other_versions": [_entry(other, listing[other], field) for other in differing]})
    return found


def questions_check(questions: list[dict], texts: Texts | dict[str, str], listing: dict[str, dict]) -> list[str]:
    """Every problem of the questions against the corpus texts (path -> lower-cased, whitespace-collapsed words)."""
    texts = texts if isinstance(texts, Texts) else Texts(texts)
    problems: list[str] = []
    seen: set[str] = set()
    for question in questions:
        qid = question.get("id", "?")
        if qid in seen:
            problems.append(f"{qid}: duplicate id")
        seen.add(qid)
        problems += _question_problems(question, texts, listing)
    return problems


def _question_problems(question: dict, texts: Texts, listing: dict[str, dict]) -> list[str]:
    qid, kind = question.get("id", "?"), question["kind"]
    if kind == "across":
        missing = [path for path in question["expected_paths"] if path not in listing]
        return ([f"{qid}: no expected subjects"] if not question["expected_subjects"] else []) + \
            [f"{qid}: no file {path}" for path in missing]
    path = question["expected_path"]
    if path not in listing:
        return [f"{qid}: no file {path}"]
    problems = []
    group = listing[path]["version_group"]
    for pattern in question["answer_patterns"]:
        if pattern != pattern.lower():
            problems.append(f"{qid}: pattern {pattern!r} is not lower-case")
        if not texts.states(path, pattern):
            problems.append(f"{qid}: {path} does not state {pattern!r}")
        for other in sorted(texts.stating(pattern)):
            if listing[other]["version_group"] != group:
                problems.append(f"{qid}: ambiguous, {other} ({listing[other]['subject']}) states {pattern!r} too")
    field = question["field"]
    for entry in listing.values():
        if entry["template"] == listing[path]["template"] and entry["version_group"] != group \
                and field in entry["facts"] and texts.states(path, entry["facts"][field]["pattern"]):
            problems.append(f"{qid}: ambiguous, {path} states {entry['subject']}'s {field} too")
    for version in question.get("outdated" if kind == "current" else "other_versions", []):
        if listing.get(version["path"], {}).get("version_group") != group:
            problems.append(f"{qid}: {version['path']} is not a version of {path}")
            continue
        if kind == "current" and listing[version["path"]]["edition"] >= listing[path]["edition"]:
            problems.append(f"{qid}: outdated {version['path']} is not older than {path}")
        if not all(texts.states(version["path"], pattern) for pattern in version["patterns"]):
            problems.append(f"{qid}: {version['path']} does not state {version['patterns']}")
        if any(texts.states(version["path"], pattern) for pattern in question["answer_patterns"]):
            problems.append(f"{qid}: {version['path']} states the answer too")
        if any(texts.states(path, pattern) for pattern in version["patterns"]):
            problems.append(f"{qid}: {path} states {version['path']}'s value too")
    return problems


def across(listing: dict[str, dict]) -> list[dict]:
    """Questions over many siblings, from the newest file of each version group."""
    newest: dict[str, tuple[str, dict]] = {}
    for group, paths in _groups(listing).items():
        newest[group] = (paths[-1], listing[paths[-1]])

    def where(template: str, keep) -> tuple[list[str], list[str]]:
        chosen = sorted((entry["subject"], path) for path, entry in newest.values()
                        if entry["template"] == template and keep(entry))
        return [subject for subject, _ in chosen], [path for _, path in chosen]

    def value(entry: dict, field: str):
        return entry["facts"][field]["value"]

    starts = defaultdict(int)
    for _, entry in newest.values():
        if entry["template"] == "offer_letter":
            starts[value(entry, "start_date")[:7]] += 1
    busiest = max(sorted(starts), key=lambda month: starts[month])
    month_name = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                  "November", "December"][int(busiest[5:7]) - 1]
    asked = [
        ("Which customers pay more than 3,000 EUR a month?", "service_agreement", "monthly_fee",
         lambda e: value(e, "monthly_fee") > 3000),
        ("Which customers pay less than 1,500 EUR per month?", "service_agreement", "monthly_fee",
         lambda e: value(e, "monthly_fee") < 1500),
        ("Which customers' agreements were amended and restated?", "service_agreement", "monthly_fee",
         lambda e: e["edition"] > 1),
        (f"Who starts in {month_name} {busiest[:4]}?", "offer_letter", "start_date",
         lambda e: value(e, "start_date")[:7] == busiest),
        ("Which new hires earn more than 100,000 EUR a year?", "offer_letter", "salary",
         lambda e: value(e, "salary") > 100000),
        ("Which projects have a budget above 150,000 EUR?", "statement_of_work", "budget",
         lambda e: value(e, "budget") > 150000),
        ("Which projects end in 2025?", "statement_of_work", "end_date",
         lambda e: value(e, "end_date").startswith("2025")),
        ("Which products cost less than 300 EUR?", "product_datasheet", "price", lambda e: value(e, "price") < 300),
        ("Which products come with a 3-year warranty?", "product_datasheet", "warranty",
         lambda e: e["facts"]["warranty"]["text"].startswith("3 years")),
        ("In which countries do employees get more than 35 days of annual leave?", "country_policy",
         "annual_leave", lambda e: value(e, "annual_leave") > 35),
        ("Which countries have a 2025 edition of the employment policy?", "country_policy", "annual_leave",
         lambda e: e["edition"] > 1),
    ]
    questions = []
    for text, template, field, keep in asked:
        subjects, paths = where(template, keep)
        questions.append({"kind": "across", "template": template, "field": field, "question": text,
                          "may_abstain": True, "expected_subjects": subjects, "expected_paths": paths})
    return questions


def select(askable: list[dict], rng: random.Random) -> list[dict]:
    """Of the askable current questions, per subject: its main field, a second phrasing of it for some, and one
    other field; version questions all. Keeps the set about one and a half questions per sibling."""
    by_subject: dict[tuple[str, str], list[dict]] = defaultdict(list)
    chosen: list[dict] = []
    for question in askable:
        if question["kind"] == "current":
            by_subject[(question["template"], question["subject"])].append(question)
        else:
            chosen.append(question)
    picked: list[dict] = []
    for (template, _), questions in by_subject.items():
        main = [q for q in questions if q["field"] == MAIN_FIELD[template]]
        if main:
            first = rng.choice(main)
            picked.append(first)
            rest = [q for q in main if q is not first]
            if rest and rng.random() < 0.3:
                picked.append(rng.choice(rest))
        other_fields = sorted({q["field"] for q in questions if q["field"] != MAIN_FIELD[template]})
        if other_fields:
            field = rng.choice(other_fields)
            picked.append(rng.choice([q for q in questions if q["field"] == field]))
    return picked + chosen
