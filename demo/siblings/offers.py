"""Offer letters: one per hire from one template. The hire is named in the address and the greeting; the salary,
start date and probation paragraphs say "you"."""

from __future__ import annotations

import random
from datetime import date, timedelta

from demo.siblings.common import (
    DATE_STYLES, MONEY_STYLES, PROVIDER, Block, Doc, Fact, date_text, distinct_days, money_text, slug, with_typos,
)

TEMPLATE = "offer_letter"
TITLE = "Offer Letter"

HIRES = [
    "Maria Lopez", "Jonas Berg", "Aisha Khan", "Tomasz Nowak", "Li Wei", "Fatima Haddad", "Lars Eriksen",
    "Chiara Romano", "Kwame Mensah", "Sofia Petrova", "Daniel Okafor", "Emma Schulz", "Hiroshi Tanaka",
    "Ingrid Solberg", "Mateo Garcia", "Olga Ivanova", "Patrick Byrne", "Yasmin El-Amin", "Noah Fischer",
    "Leila Rahimi", "Samuel Adeyemi", "Hanna Mikkelsen", "Arjun Mehta", "Clara Vogel", "Mikael Nieminen",
    "Rosa Martins", "Felix Wagner", "Zainab Yusuf", "Erik Dahl", "Lucia Bianchi", "Omar Saleh", "Freya Lund",
]
ROLES = ["Backend Engineer", "Data Analyst", "Account Manager", "Support Specialist", "Product Designer",
         "Site Reliability Engineer", "Technical Writer", "Sales Executive", "Network Engineer", "Project Manager",
         "Security Analyst", "Finance Controller", "HR Generalist", "Frontend Engineer", "Cloud Architect",
         "Service Desk Lead", "QA Engineer", "Marketing Coordinator"]
MANAGERS = ["Kari Nordmann", "Jens Holm", "Sarah Whitfield", "Marco Bellini", "Aino Korhonen", "David Levy",
            "Petra Horvat", "Ruth Okonkwo"]
PLACES = ["our Oslo office", "our Bergen office", "our Hamburg office", "a hybrid arrangement from our Oslo office",
          "home, fully remote within Norway"]
HR_SIGNERS = ["Marte Solheim, HR Business Partner", "Jon Aasen, Head of People", "Liv Brekke, Talent Acquisition"]


def build(rng: random.Random) -> list[Doc]:
    salaries = rng.sample(range(48000, 112001, 500), len(HIRES))
    starts = distinct_days(rng, len(HIRES), date(2024, 1, 8), date(2025, 3, 31))
    docs = []
    for index, hire in enumerate(HIRES):
        start = starts[index]
        spec = {
            "hire": hire, "salary": salaries[index], "start": start,
            "sent": start - timedelta(days=rng.randint(21, 70)), "role": rng.choice(ROLES),
            "manager": rng.choice(MANAGERS), "probation": rng.choice([3, 6, 6, 0]),
            "place": rng.choice(PLACES), "pension": rng.choice(["5", "6", "7"]), "hours": rng.choice(["37.5", "40"]),
            "signer": rng.choice(HR_SIGNERS), "dates": rng.choice(DATE_STYLES), "money": rng.choice(MONEY_STYLES),
            "bonus": rng.random() < 0.35, "equipment": rng.random() < 0.5, "relocation": rng.random() < 0.2,
            "headings": rng.random() < 0.6, "title_names_subject": rng.random() < 0.1,
        }
        docs.append(_offer(spec, rng))
    return docs


def _offer(spec: dict, rng: random.Random) -> Doc:
    hire, dates = spec["hire"], spec["dates"]
    start_text = date_text(spec["start"], dates)
    salary_text = money_text(spec["salary"], spec["money"])
    first = hire.split()[0]
    sections: list[tuple[str, str]] = [
        ("Position", f"We are pleased to offer you the position of {spec['role']} at {PROVIDER}, reporting to "
                     f"{spec['manager']}. Your place of work is {spec['place']}."),
        ("Start date", f"Your employment begins on {start_text}. On your first day, please come to reception at "
                       "9:00; your manager will meet you there."),
        ("Salary", f"Your annual gross salary is {salary_text}, paid monthly in arrears on the 25th. Salaries are "
                   "reviewed every April."),
        ("Working hours", f"Normal working hours are {spec['hours']} hours a week, Monday to Friday, with flexible "
                          "start and finish times agreed with your manager."),
        ("Pension and benefits", f"You will be enrolled in the company pension scheme, to which {PROVIDER} "
                                 f"contributes {spec['pension']}% of your salary, and in the group health insurance."),
    ]
    if spec["probation"]:
        sections.insert(3, ("Probation", f"The first {spec['probation']} months of your employment are a "
                                         "probationary period, during which either party may end the employment "
                                         "with 14 days' notice."))
    if spec["bonus"]:
        sections.append(("Bonus", "You are eligible for the annual performance bonus, paid in March for the year "
                                  "before, subject to the rules of the scheme."))
    if spec["equipment"]:
        sections.append(("Equipment", "You will receive a laptop and a phone, which remain the property of "
                                      f"{PROVIDER} and are returned when the employment ends."))
    if spec["relocation"]:
        sections.append(("Relocation", "We will reimburse reasonable relocation costs up to the amount in the "
                                       "relocation policy, against receipts."))
    title = f"{TITLE} - {hire}" if spec["title_names_subject"] else TITLE
    blocks: list[Block] = [("heading", 1, title),
                           ("para", f"{hire}, by e-mail. Sent on {date_text(spec['sent'], dates)}."),
                           ("para", f"Dear {first},")]
    for heading, text in sections:
        if spec["headings"]:
            blocks.append(("heading", 2, heading))
        blocks.append(("para", text))
    reply_by = spec["sent"] + timedelta(days=10)
    blocks += [("para", "This offer is subject to satisfactory references and the right to work in Norway. Please "
                        f"sign and return a copy of this letter by {date_text(reply_by, dates)} to confirm that you "
                        "accept it; we will send the written contract immediately after."),
               ("para", f"Kind regards, {spec['signer']}, {PROVIDER}.")]
    blocks = with_typos(blocks, rng, rng.choice([0, 0, 1, 1, 2]))
    facts = {
        "salary": Fact("salary", salary_text, spec["salary"]),
        "start_date": Fact("start_date", start_text, spec["start"].isoformat()),
        "role": Fact("role", spec["role"]),
        "manager": Fact("manager", spec["manager"]),
    }
    if spec["probation"]:
        facts["probation"] = Fact("probation", f"first {spec['probation']} months")
    return Doc(template=TEMPLATE, title=title, subject=hire, version_group=f"{TEMPLATE}/{slug(hire)}", edition=1,
               edition_label="", doc_date=spec["sent"], blocks=blocks, facts=facts)
