"""Statements of work: one per project from one template. The project is named with its code in the opening; the
budget, milestones and dates say "the Project"."""

from __future__ import annotations

import random
from datetime import date, timedelta

from demo.siblings.agreements import CUSTOMERS
from demo.siblings.common import (
    DATE_STYLES, MONEY_STYLES, PROVIDER, Block, Doc, Fact, date_text, distinct_days, money_text, slug, with_typos,
)

TEMPLATE = "statement_of_work"
TITLE = "Statement of Work"

PROJECTS = [
    "Atlas Migration", "Beacon Portal", "Cedar Data Platform", "Delta Network Refresh", "Echo Service Desk",
    "Falcon Identity", "Garnet Backup Renewal", "Horizon Analytics", "Ivy Intranet", "Jade Payments Upgrade",
    "Keystone ERP Rollout", "Lumen Monitoring", "Mosaic CRM", "Nova Cloud Landing Zone", "Onyx Security Review",
    "Prism Reporting", "Quartz Archive", "Raven Mobile App", "Summit Office Move", "Trident Disaster Recovery",
    "Unity Collaboration Suite", "Vega Warehouse System", "Willow Website Relaunch", "Zenith Data Warehouse",
]
DELIVERABLES = ["a current-state assessment report", "a target architecture document", "a migration runbook",
                "configured production environment", "test plan and test report", "user training for key users",
                "operational handover documentation", "a security hardening checklist", "data migration scripts",
                "a project closure report", "dashboards for the operations team", "an integration with the ERP"]
MILESTONES = ["Kick-off", "Design approved", "Build complete", "User acceptance", "Go-live", "Hypercare ends"]


def build(rng: random.Random) -> list[Doc]:
    budgets = rng.sample(range(18000, 240001, 500), len(PROJECTS))
    codes = rng.sample(range(2001, 2999), len(PROJECTS))
    starts = distinct_days(rng, len(PROJECTS), date(2023, 9, 1), date(2025, 2, 28))
    docs = []
    for index, project in enumerate(PROJECTS):
        start = starts[index]
        weeks = rng.randint(8, 40)
        spec = {
            "project": project, "code": f"PRJ-{codes[index]}", "budget": budgets[index], "start": start,
            "end": start + timedelta(weeks=weeks), "client": rng.choice(CUSTOMERS), "number": rng.randint(1, 9),
            "deliverables": rng.sample(DELIVERABLES, rng.randint(3, 6)),
            "milestones": sorted(rng.sample(range(1, len(MILESTONES)), rng.randint(2, 4))),
            "dates": rng.choice(DATE_STYLES), "money": rng.choice(MONEY_STYLES),
            "pricing": rng.choice(["fixed", "fixed", "capped"]), "assumptions": rng.random() < 0.6,
            "change_control": rng.random() < 0.5, "acceptance": rng.random() < 0.6, "table": rng.random() < 0.4,
            "title_names_subject": rng.random() < 0.15,
        }
        docs.append(_sow(spec, rng))
    return docs


def _sow(spec: dict, rng: random.Random) -> Doc:
    project, dates = spec["project"], spec["dates"]
    budget_text = money_text(spec["budget"], spec["money"])
    end_text = date_text(spec["end"], dates)
    span = (spec["end"] - spec["start"]).days
    steps = [MILESTONES[0], *(MILESTONES[index] for index in spec["milestones"])]
    milestone_days = [spec["start"]] + [spec["start"] + timedelta(days=span * (n + 1) // (len(steps)))
                                        for n in range(len(steps) - 1)]
    milestones = [(step, date_text(day, dates)) for step, day in zip(steps, milestone_days)]
    doc_date = spec["start"] - timedelta(days=rng.randint(7, 35))
    price = (f"The fixed price for this Statement of Work is {budget_text}, excluding VAT, invoiced in equal parts "
             "at each milestone after it is accepted." if spec["pricing"] == "fixed" else
             f"The work is charged on time and materials, capped at {budget_text} excluding VAT; {PROVIDER} reports "
             "the hours used every month and asks for written approval before the cap is reached.")
    title = f"{TITLE}: {project}" if spec["title_names_subject"] else TITLE
    blocks: list[Block] = [
        ("heading", 1, title),
        ("para", f"Statement of Work No. {spec['number']} under the Master Services Agreement between {PROVIDER} and "
                 f"{spec['client']}. Project: {project} (project code {spec['code']})."),
        ("heading", 2, "Background"),
        ("para", "The Customer wants to modernise part of its IT estate. This Statement of Work describes the "
                 f"part {PROVIDER} delivers, how it is accepted and what it costs."),
        ("heading", 2, "Scope and deliverables"),
        ("para", f"{PROVIDER} will deliver:"),
        ("list", list(spec["deliverables"])),
        ("heading", 2, "Timeline and milestones"),
        ("para", f"The Project starts on {date_text(spec['start'], dates)} and ends no later than {end_text}."),
        ("table", milestones) if spec["table"] else ("list", [f"{step}: {day}" for step, day in milestones]),
        ("heading", 2, "Budget"),
        ("para", price),
    ]
    if spec["assumptions"]:
        blocks += [("heading", 2, "Assumptions"),
                   ("para", "The Customer provides access to its systems and a named contact who can take decisions "
                            "within two working days. Delays caused by missing access move the milestones "
                            "accordingly.")]
    if spec["acceptance"]:
        blocks += [("heading", 2, "Acceptance"),
                   ("para", "Each deliverable is accepted in writing within ten working days of delivery, or is "
                            "deemed accepted. A rejection states the defects, which are corrected before the next "
                            "milestone.")]
    if spec["change_control"]:
        blocks += [("heading", 2, "Change control"),
                   ("para", "Changes to scope, timeline or budget are agreed through a written change request "
                            "signed by both project managers before work on them begins.")]
    blocks += [("heading", 2, "Contacts"),
               ("para", f"Project manager at {PROVIDER}: Jens Holm. The Customer names its project manager at "
                        "kick-off.")]
    blocks = with_typos(blocks, rng, rng.choice([0, 0, 1, 2]))
    facts = {
        "budget": Fact("budget", budget_text, spec["budget"]),
        "end_date": Fact("end_date", end_text, spec["end"].isoformat()),
        "code": Fact("code", spec["code"]),
        "client": Fact("client", spec["client"]),
    }
    return Doc(template=TEMPLATE, title=title, subject=project, version_group=f"{TEMPLATE}/{slug(project)}",
               edition=1, edition_label="", doc_date=doc_date, blocks=blocks, facts=facts)
