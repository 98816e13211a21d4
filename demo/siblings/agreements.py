"""Service agreements: one per customer from one template, and an amended and restated copy for a few customers.

The customer is named once, in the opening ("made between Northwind Services and Acme Corp (the Customer)") and in
the signatures; every clause after that says "the Customer". That is the hard case: the fee passage does not say
whose fee it is.
"""

from __future__ import annotations

import random
from datetime import date, timedelta

from demo.siblings.common import (
    DATE_STYLES, MONEY_STYLES, PROVIDER, Block, Doc, Fact, date_text, distinct_days, money_text, slug, unused_near,
    with_typos,
)

TEMPLATE = "service_agreement"
TITLE = "Service Agreement"

CUSTOMERS = [
    "Acme Corp", "Fjord AS", "Cobalt GmbH", "Birchwood Ltd", "Helios Energy SA", "Kestrel Logistics",
    "Marrow & Finch LLP", "Nordlys Shipping AS", "Orchid Retail BV", "Pinecrest Health", "Quarry Lane Foods",
    "Redwing Aviation", "Saffron Hotels", "Tidewater Marine", "Umbra Analytics", "Vantage Textiles",
    "Willow Creek Farms", "Yarrow Pharma AG", "Zephyr Telecom", "Alder & Sons", "Bluebell Dairy", "Cinder Media",
    "Driftwood Studios", "Ember Robotics", "Foxglove Insurance", "Granite Peak Mining", "Harbor Lights Ltd",
    "Ironbark Construction", "Juniper Legal", "Kingfisher Travel", "Larkspur Schools", "Meridian Freight",
    "Nettle Bank", "Oakhurst Properties", "Pelican Water", "Quill Publishing", "Rosewood Clinics",
    "Sable Security", "Thistle Brewing", "Upland Wind Oy",
]
AMENDED = 5  # customers whose agreement was amended and restated in 2025
CITIES = ["Oslo", "Bergen", "Hamburg", "Rotterdam", "Lyon", "Gothenburg", "Aarhus", "Tampere", "Leeds", "Porto",
          "Gdansk", "Graz", "Antwerp", "Cork", "Tallinn", "Bilbao"]
SERVICES = ["24/7 infrastructure monitoring", "nightly backup and restore tests", "a first-line helpdesk",
            "monthly security patching", "network management for up to 12 sites", "managed cloud hosting",
            "endpoint management for up to 150 devices", "quarterly disaster-recovery drills",
            "licence management", "on-site support two days a month"]
SIGNATORIES = ["Chief Executive Officer", "Chief Financial Officer", "Head of IT", "Managing Director",
               "Operations Director", "General Counsel"]
FIRST = ["Anna", "Per", "Sophie", "Mark", "Elena", "Tobias", "Grace", "Henrik", "Nadia", "Oliver", "Julia", "Ravi",
         "Camille", "Stefan", "Marta", "Ben", "Ines", "Lukas", "Priya", "Tom"]
LAST = ["Halvorsen", "Meyer", "Dubois", "Jansen", "Rossi", "Lindqvist", "O'Brien", "Kowalski", "Virtanen",
        "Ferreira", "Novak", "Schmidt", "Andersen", "Clarke", "Moreau", "Bakker", "Sorensen", "Walsh"]

# Optional clauses and how often an agreement has each.
OPTIONAL = {"cpi": 0.5, "service_levels": 0.6, "confidentiality": 0.7, "data_protection": 0.5, "liability": 0.6,
            "insurance": 0.3, "non_solicitation": 0.3, "subcontractors": 0.25}


def build(rng: random.Random) -> list[Doc]:
    fees = rng.sample(range(1000, 6001, 50), len(CUSTOMERS))
    taken = set(fees)
    starts = sorted(distinct_days(rng, len(CUSTOMERS), date(2023, 2, 1), date(2024, 11, 29)))
    numbers = rng.sample(range(100, 1000), len(CUSTOMERS))
    order = rng.sample(CUSTOMERS, len(CUSTOMERS))
    amended = set(rng.sample(order, AMENDED))
    docs: list[Doc] = []
    previous_date: date | None = None
    for index, customer in enumerate(order):
        start = starts[index]
        # Agreements are often signed in batches: a few share their date with the one before.
        signed = previous_date if previous_date and rng.random() < 0.15 and previous_date <= start \
            else start - timedelta(days=rng.randint(5, 30))
        previous_date = signed
        spec = {
            "customer": customer, "fee": fees[index], "start": start, "signed": signed,
            "number": f"NS-{signed.year}-{numbers[index]:04d}", "payment_days": rng.choice([14, 20, 30, 30, 30, 45, 60]),
            "interest": rng.choice(["8", "8.5", "9", "10", "12"]), "term": rng.choice([12, 12, 24, 24, 36, 48]),
            "renewal": rng.choice([12, 12, 12, 24]), "notice": rng.choice([30, 60, 90, 90]),
            "services": rng.sample(SERVICES, rng.randint(2, 5)), "city": rng.choice(CITIES),
            "signatory": f"{rng.choice(FIRST)} {rng.choice(LAST)}", "role": rng.choice(SIGNATORIES),
            "dates": rng.choice(DATE_STYLES), "money": rng.choice(MONEY_STYLES),
            "optional": {name: rng.random() < chance for name, chance in OPTIONAL.items()},
            "cpi_cap": rng.choice(["3", "4", "5"]), "response_hours": rng.choice([1, 2, 4]),
            "liability": rng.choice([1, 2, 3]), "numbered": rng.random() < 0.5, "shuffle": rng.random() < 0.3,
            "title_names_subject": rng.random() < 0.12, "term_until": None,
        }
        seed = rng.random()
        docs.append(_agreement(spec, random.Random(seed), edition=1))
        if customer in amended:
            # The amendment reuses the document (same clause order and wording: one seed), with a new fee, a
            # later date and, for most, a term extended to a fixed end.
            effective = date(2025, rng.randint(1, 6), rng.randint(1, 28))
            until = date(2026 + rng.randint(0, 1), 12, 31) if rng.random() < 0.6 else None
            raised = unused_near(round(spec["fee"] * rng.uniform(1.04, 1.2) / 50) * 50, 50, taken)
            docs.append(_agreement({**spec, "amended": effective, "fee": raised, "original_signed": signed,
                                    "term_until": until}, random.Random(seed), edition=2))
    return docs


def _agreement(spec: dict, rng: random.Random, *, edition: int) -> Doc:
    customer, dates, money = spec["customer"], spec["dates"], spec["money"]
    start_text = date_text(spec["start"], dates)
    fee_text = money_text(spec["fee"], money)
    amended = spec.get("amended")
    doc_date = amended or spec["signed"]
    if amended:
        opening = (f"This Amended and Restated {TITLE} (No. {spec['number']}-A) is made on {date_text(amended, dates)} "
                   f"between {PROVIDER} and {customer} (the Customer), {spec['city']}. It amends and restates the "
                   f"agreement of {date_text(spec['original_signed'], dates)} in full; where the two differ, this "
                   "document applies from its effective date.")
    else:
        opening = (f"This {TITLE} (No. {spec['number']}) is made on {date_text(spec['signed'], dates)} between "
                   f"{PROVIDER} and {customer} (the Customer), {spec['city']}. {PROVIDER} and the Customer are "
                   "together the Parties.")
    if spec["term_until"]:
        term_text = f"until {date_text(spec['term_until'], dates)}"
        term = (f"The Agreement started on {start_text} and now runs {term_text}. After that it renews "
                f"automatically for periods of {spec['renewal']} months.")
    else:
        term_text = f"{spec['term']} months"
        term = (f"The Agreement starts on {start_text} and runs for an initial term of {term_text}. It renews "
                f"automatically for successive periods of {spec['renewal']} months unless either Party gives "
                "notice of termination.")
    fee = f"The Customer pays a monthly fee of {fee_text} for the Services, excluding VAT."
    if spec["optional"]["cpi"]:
        fee += (" The fee is adjusted every January by the change in the consumer price index, capped at "
                f"{spec['cpi_cap']}% a year.")
    clauses: list[tuple[str, list[Block]]] = [
        ("Services", [("para", f"{PROVIDER} will provide the following managed services (the Services):"),
                      ("list", list(spec["services"])),
                      ("para", "Changes to the Services are agreed in writing and priced separately.")]),
        ("Fees", [("para", fee)]),
        ("Payment", [("para", f"Invoices are issued monthly in advance and are payable within {spec['payment_days']} "
                              f"days of the invoice date. Late payments bear interest at {spec['interest']}% a year. "
                              "The Customer shall notify any disputed amount immediately and pay the undisputed "
                              "part on time.")]),
        ("Term and renewal", [("para", term)]),
        ("Termination", [("para", f"Either Party may terminate the Agreement by written notice of {spec['notice']} "
                                  "days before the end of the current term. Either Party may terminate immediately if "
                                  "the other commits a material breach and does not remedy it within 30 days of "
                                  "written notice.")]),
    ]
    optional = {
        "service_levels": ("Service levels", [("para", f"{PROVIDER} responds to priority 1 incidents within "
                                                       f"{spec['response_hours']} hours, around the clock. Service "
                                                       "credits are the Customer's sole remedy for missed service "
                                                       "levels and are set out in the service description.")]),
        "confidentiality": ("Confidentiality", [("para", "Each Party keeps the other's confidential information "
                                                         "secret and uses it only to perform this Agreement. This "
                                                         "obligation survives for three years after the Agreement "
                                                         "ends. Information that is public, or that a Party was "
                                                         "responsible for developing independently, is excluded.")]),
        "data_protection": ("Data protection", [("para", f"Where {PROVIDER} processes personal data on behalf of "
                                                         "the Customer, it does so as processor under the data "
                                                         "processing agreement annexed to this Agreement. Any breach "
                                                         "that has occurred is reported without undue delay.")]),
        "liability": ("Limitation of liability", [("para", "Each Party's total liability under this Agreement is "
                                                           f"limited to {spec['liability']} times the fees paid in "
                                                           "the twelve months before the claim. Neither Party is "
                                                           "liable for indirect or consequential loss.")]),
        "insurance": ("Insurance", [("para", f"{PROVIDER} maintains professional indemnity insurance and will "
                                             "provide a certificate on request.")]),
        "non_solicitation": ("Non-solicitation", [("para", "During the Agreement and for six months after it, "
                                                           "neither Party will actively solicit the other's staff "
                                                           "who were involved in the Services.")]),
        "subcontractors": ("Subcontractors", [("para", f"{PROVIDER} may use subcontractors and remains responsible "
                                                       "for their work as for its own.")]),
    }
    for name, clause in optional.items():
        if spec["optional"][name]:
            clauses.insert(rng.randint(2, len(clauses)) if spec["shuffle"] else len(clauses), clause)
    if spec["shuffle"]:
        middle = clauses[1:]
        rng.shuffle(middle)
        clauses = clauses[:1] + middle
    clauses.append(("Governing law", [("para", "This Agreement is governed by the laws of Norway. Disputes that "
                                               "the Parties cannot settle are decided by Oslo District Court.")]))
    title = f"{TITLE} - {customer}" if spec["title_names_subject"] else TITLE
    blocks: list[Block] = [("heading", 1, title), ("para", opening)]
    for number, (heading, body) in enumerate(clauses, start=1):
        blocks.append(("heading", 2, f"{number}. {heading}" if spec["numbered"] else heading))
        blocks += body
    blocks += [("heading", 2, "Signatures"),
               ("para", f"For {PROVIDER}: Kari Nordmann, Managing Director. For {customer}: {spec['signatory']}, "
                        f"{spec['role']}. Signed on {date_text(doc_date, dates)}.")]
    blocks = with_typos(blocks, rng, rng.choice([0, 0, 0, 1, 2]))
    facts = {
        "monthly_fee": Fact("monthly_fee", fee_text, spec["fee"] or 0),
        "start_date": Fact("start_date", start_text, spec["start"].isoformat()),
        "agreement_number": Fact("agreement_number", spec["number"] + ("-A" if amended else "")),
        "payment_term": Fact("payment_term", f"within {spec['payment_days']} days"),
        "initial_term": Fact("initial_term", term_text),
        "notice": Fact("notice", f"{spec['notice']} days"),
    }
    return Doc(template=TEMPLATE, title=title, subject=customer, version_group=f"{TEMPLATE}/{slug(customer)}",
               edition=edition, edition_label=str(doc_date.year), doc_date=doc_date, blocks=blocks, facts=facts)
