"""Product datasheets: one per product from one template, and a revision B for a few products (new power draw,
price or warranty). The product is named in the opening line and in its model number; the price and warranty
sections do not name it."""

from __future__ import annotations

import random
from datetime import date, timedelta

from demo.siblings.common import (
    MONEY_STYLES, PROVIDER, Block, Doc, Fact, distinct_days, money_text, slug, unused_near, with_typos,
)

TEMPLATE = "product_datasheet"
TITLE = "Product Datasheet"

LINES = {
    "Nimbus": ("NW-AP", "indoor Wi-Fi 6 access point", ["X200", "X210", "X300", "X320", "X400", "X450"]),
    "Stratus": ("NW-SW", "managed Ethernet switch", ["S8", "S16", "S24", "S24P", "S48", "S48P"]),
    "Cirrus": ("NW-RT", "branch-office router", ["R20", "R50", "R75", "R100", "R200"]),
    "Halo": ("NW-CAM", "network camera", ["C2", "C4", "C4D", "C8", "C8X"]),
    "Vela": ("NW-SN", "environment sensor", ["T1", "T2", "H1", "Q3", "Q5", "W1"]),
}
REVISED = 3  # products with a revision B datasheet
WARRANTIES = ["12 months", "2 years", "2 years", "3 years", "3 years", "5 years", "limited lifetime", "18 months",
              "4 years", "7 years"]


def build(rng: random.Random) -> list[Doc]:
    products = [(line, model) for line, (_, _, models) in LINES.items() for model in models]
    prices = [price - 1 for price in rng.sample(range(90, 2400, 10), len(products))]  # 89, 1249, ...
    taken = set(prices)
    dates = sorted(distinct_days(rng, len(products), date(2023, 3, 1), date(2024, 10, 31)))
    revised = set(rng.sample(range(len(products)), REVISED))
    docs = []
    for index, (line, model) in enumerate(products):
        prefix, kind, _ = LINES[line]
        spec = {
            "line": line, "model": model, "name": f"{line} {model}", "number": f"{prefix}-{model}-EU", "kind": kind,
            "price": prices[index], "date": dates[index], "money": rng.choice(MONEY_STYLES),
            "width": rng.randint(60, 480), "depth": rng.randint(40, 330), "height": rng.randint(20, 90),
            "weight": f"{rng.randint(90, 5200) / 1000:.2f} kg", "power": f"{rng.randint(25, 1800) / 10:g} W",
            "warranty": rng.choice(WARRANTIES), "temperature": rng.choice(["0 to 40", "-10 to 50", "-20 to 55"]),
            "table": rng.random() < 0.55, "label_revision": rng.random() < 0.5, "compliance": rng.random() < 0.7,
            "support": rng.random() < 0.5, "title_names_subject": rng.random() < 0.15,
        }
        seed = rng.random()
        docs.append(_datasheet(spec, random.Random(seed), revision="A"))
        if index in revised:
            factor = rng.choice([rng.uniform(0.85, 0.95), rng.uniform(1.05, 1.15)])
            changes = {"price": unused_near(round(spec["price"] * factor / 10) * 10 - 1, 10, taken),
                       "date": spec["date"] + timedelta(days=rng.randint(240, 420))}
            if rng.random() < 0.7:  # a new power supply
                changes["power"] = f"{round(float(spec['power'].split()[0]) * rng.uniform(0.7, 0.9), 1):g} W"
            if rng.random() < 0.5:
                changes["warranty"] = rng.choice([w for w in WARRANTIES if w != spec["warranty"]])
            docs.append(_datasheet({**spec, **changes, "label_revision": True}, random.Random(seed), revision="B"))
    return docs


def _datasheet(spec: dict, rng: random.Random, *, revision: str) -> Doc:
    name, model = spec["name"], spec["model"]
    price_text = money_text(spec["price"], spec["money"])
    dimensions = f"{spec['width']} x {spec['depth']} x {spec['height']} mm"
    specs = [("Model number", spec["number"]), ("Dimensions (W x D x H)", dimensions), ("Weight", spec["weight"]),
             ("Power consumption", f"{spec['power']} typical"),
             ("Operating temperature", f"{spec['temperature']} °C")]
    title = f"{TITLE}: {name}" if spec["title_names_subject"] else TITLE
    blocks: list[Block] = [("heading", 1, title),
                           ("para", f"{name} - {spec['kind']} by {PROVIDER}."
                                    + (f" Datasheet revision {revision}." if spec["label_revision"] else ""))]
    if revision == "B":
        blocks.append(("para", "Revision B replaces revision A: the power supply and the price list were updated. "
                               "Units shipped before are covered by the terms they were sold under."))
    blocks += [("heading", 2, "Overview"),
               ("para", f"A {spec['kind']} for small and medium offices, managed from the {PROVIDER} cloud console "
                        "or locally. It is designed to be installed by one person in under an hour, with "
                        "mounting hardware in the box.")]
    blocks += [("heading", 2, "Specifications"),
               ("table", specs) if spec["table"] else ("list", [f"{key}: {value}" for key, value in specs])]
    blocks += [("heading", 2, "Ordering and price"),
               ("para", f"List price: {price_text} excluding VAT and shipping. Volume discounts apply from 20 units; "
                        "ask your account manager.")]
    blocks += [("heading", 2, "Warranty"),
               ("para", f"{spec['warranty'].capitalize()} hardware warranty from the date of purchase, with advance "
                        "replacement for units that fail. The warranty does not cover damage caused by incorrect "
                        "installation or an unsuitable power source.")]
    if spec["compliance"]:
        blocks += [("heading", 2, "Compliance"),
                   ("para", "CE, UKCA and RoHS compliant. The declaration of conformity is available on request.")]
    if spec["support"]:
        blocks += [("heading", 2, "Support"),
                   ("para", "Firmware updates are free for the life of the product. Support is available by e-mail "
                            "and phone on working days, and it is necessary to register the unit first.")]
    blocks = with_typos(blocks, rng, rng.choice([0, 0, 1]))
    facts = {
        "price": Fact("price", price_text, spec["price"]),
        "power": Fact("power", spec["power"]),
        "dimensions": Fact("dimensions", dimensions),
        "weight": Fact("weight", spec["weight"]),
        "warranty": Fact("warranty", f"{spec['warranty']} hardware warranty"),
        "model_number": Fact("model_number", spec["number"]),
    }
    return Doc(template=TEMPLATE, title=title, subject=name, version_group=f"{TEMPLATE}/{slug(name)}",
               edition=1 if revision == "A" else 2, edition_label=f"rev {revision}", doc_date=spec["date"],
               blocks=blocks, facts=facts, short_subject=model)
