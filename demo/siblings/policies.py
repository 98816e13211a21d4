"""Per-country employment policies: one per country from one template (the 2024 edition), and a 2025 edition for
a few countries with changed annual leave. The country is named in the opening sentence only."""

from __future__ import annotations

import random
from datetime import date, timedelta

from demo.siblings.common import PROVIDER, Block, Doc, Fact, distinct_days, slug, with_typos

TEMPLATE = "country_policy"
TITLE = "Employment Policy"

# Country -> its data-protection supervisory authority (Norway and Denmark both have a "Datatilsynet", Portugal and
# Luxembourg a "CNPD": questions about those are ambiguous and refused).
COUNTRIES = {
    "Norway": "Datatilsynet", "Sweden": "Integritetsskyddsmyndigheten (IMY)", "Denmark": "Datatilsynet",
    "Finland": "Office of the Data Protection Ombudsman", "Iceland": "Personuvernd",
    "Germany": "Federal Commissioner for Data Protection and Freedom of Information (BfDI)",
    "France": "Commission nationale de l'informatique et des libertes (CNIL)",
    "Spain": "Agencia Espanola de Proteccion de Datos (AEPD)", "Portugal": "CNPD", "Luxembourg": "CNPD",
    "Italy": "Garante per la protezione dei dati personali", "Netherlands": "Autoriteit Persoonsgegevens",
    "Belgium": "Gegevensbeschermingsautoriteit (GBA)", "Ireland": "Data Protection Commission",
    "United Kingdom": "Information Commissioner's Office (ICO)", "Poland": "UODO (Personal Data Protection Office)",
    "Czech Republic": "UOOU (Office for Personal Data Protection)", "Austria": "Datenschutzbehoerde (DSB)",
    "Switzerland": "Federal Data Protection and Information Commissioner (FDPIC)",
    "Estonia": "Andmekaitse Inspektsioon", "Greece": "Hellenic Data Protection Authority",
    "Hungary": "NAIH (National Authority for Data Protection and Freedom of Information)",
}
NEW_EDITIONS = 4  # countries with a 2025 edition


def build(rng: random.Random) -> list[Doc]:
    countries = list(COUNTRIES)
    # Company leave (the statutory minimum plus company days), a figure of its own per country, so that a question
    # about one country's leave is not answered by another's; a new edition adds a day or a few.
    leave = dict(zip(countries, rng.sample(range(20, 45), len(countries))))
    taken = set(leave.values())
    raised: dict[str, int] = {}
    for country in rng.sample(countries, len(countries)):
        free = [days for days in range(leave[country] + 1, leave[country] + 5) if days not in taken]
        if free and len(raised) < NEW_EDITIONS:
            raised[country] = free[0]
            taken.add(free[0])
    dates = distinct_days(rng, len(countries), date(2024, 1, 8), date(2024, 3, 29))
    docs = []
    for index, country in enumerate(countries):
        spec = {
            "country": country, "authority": COUNTRIES[country], "leave": leave[country], "date": dates[index],
            "holidays": rng.randint(8, 14), "notice": rng.choice(["one month", "two months", "three months"]),
            "sick": rng.choice([3, 5, 8]), "parental": rng.choice([12, 16, 26, 49]),
            "carry": rng.choice([0, 5, 10]), "remote": rng.random() < 0.5, "expenses": rng.random() < 0.4,
            "edition_line": rng.random() < 0.6, "title_names_subject": rng.random() < 0.12, "year": 2024,
        }
        seed = rng.random()
        docs.append(_policy(spec, random.Random(seed)))
        if country in raised:
            changes = {"leave": raised[country], "year": 2025, "edition_line": True,
                       "date": date(2025, 1, 1) + timedelta(days=rng.randint(0, 60))}
            if rng.random() < 0.5:
                changes["holidays"] = spec["holidays"] + 1
            docs.append(_policy({**spec, **changes}, random.Random(seed)))
    return docs


def _policy(spec: dict, rng: random.Random) -> Doc:
    country, year = spec["country"], spec["year"]
    title = f"{TITLE} - {country}" if spec["title_names_subject"] else TITLE
    opening = (f"This policy applies to every employee of {PROVIDER} employed in {country}. It supplements the Group "
               "Employee Handbook; where local law gives employees more, local law applies.")
    if spec["edition_line"]:
        opening += f" Edition {year}."
    if year == 2025:
        opening += " This edition replaces the 2024 edition from 1 January 2025."
    carry = ("Unused leave cannot be carried over to the next year." if not spec["carry"] else
             f"Up to {spec['carry']} unused days can be carried over until 31 March of the next year.")
    sections: list[tuple[str, str]] = [
        ("Annual leave", f"Employees are entitled to {spec['leave']} days of paid annual leave per calendar year. "
                         f"{carry} Leave is requested in the HR system at least two weeks in advance."),
        ("Public holidays", f"The company observes {spec['holidays']} public holidays a year. The list for the "
                            "current year is published on the intranet in December."),
        ("Sick leave", f"Employees may self-certify up to {spec['sick']} days of sickness; a doctor's note is "
                       "necessary from the day after."),
        ("Parental leave", f"Parental leave follows local law; the company tops up pay to full salary for the first "
                           f"{spec['parental']} weeks."),
        ("Notice periods", f"After probation, employees give {spec['notice']} notice of resignation in writing. "
                           "The company's notice periods follow local law and the employment contract."),
        ("Data protection", "Personal data of employees is processed under the group privacy notice. Questions go to "
                            f"the group data protection officer; the supervisory authority is {spec['authority']}."),
    ]
    if spec["remote"]:
        sections.insert(rng.randint(2, len(sections)),
                        ("Remote work", "Employees may work remotely up to three days a week when their role "
                                        "allows it, as agreed with their manager in writing."))
    if spec["expenses"]:
        sections.append(("Expenses", "Business expenses are reimbursed against receipts submitted within 30 days."))
    blocks: list[Block] = [("heading", 1, title), ("para", opening)]
    for heading, text in sections:
        blocks += [("heading", 2, heading), ("para", text)]
    blocks = with_typos(blocks, rng, rng.choice([0, 0, 1]))
    facts = {
        "annual_leave": Fact("annual_leave", f"{spec['leave']} days of paid annual leave", spec["leave"]),
        "public_holidays": Fact("public_holidays", f"{spec['holidays']} public holidays", spec["holidays"]),
        "notice": Fact("notice", f"{spec['notice']} notice"),
        "authority": Fact("authority", spec["authority"]),
    }
    return Doc(template=TEMPLATE, title=title, subject=country, version_group=f"{TEMPLATE}/{slug(country)}",
               edition=1 if year == 2024 else 2, edition_label=str(year), doc_date=spec["date"], blocks=blocks,
               facts=facts)
