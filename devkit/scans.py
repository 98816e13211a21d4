"""Pages as a scanner delivers them: known text drawn on a page image, then skewed, blurred,
speckled and JPEG-compressed, so OCR can be scored against the text it should find.

Shared by the tests, the OCR benchmark (benchmarks/bench_ocr.py) and the demo's scanned page. Pillow's
built-in font always works; DejaVu/Liberation faces are used as well where the system has them.
"""

from __future__ import annotations

import io
import random
import textwrap
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

PAGE_TEXT = [
    "Gateway maintenance notice",
    "",
    "The backup window moves to 03:00 UTC on 1 April 2025.",
    "Snapshots are kept for 45 days instead of 30 days.",
    "Operators must rotate the admin token every 90 days.",
    "",
    "Questions go to the operations team at ops@example.com.",
]

SYSTEM_FONTS = [
    Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"),
    Path("/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf"),
    Path("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf"),
    Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
]


def font(size: int, face: Path | None = None) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(face), size) if face else ImageFont.load_default(size=size)


def scanned_page(lines: list[str], *, dpi: int = 200, skew: float = 0.0, blur: float = 0.0, noise: float = 0.0,
                 seed: int = 0, face: Path | None = None, point_size: float = 11, paper: int = 255) -> Image.Image:
    """An A4 page of text (the first line a larger title) as a scanner would deliver it."""
    width, height = int(8.27 * dpi), int(11.69 * dpi)
    page = Image.new("L", (width, height), paper)
    draw = ImageDraw.Draw(page)
    body = font(round(point_size / 72 * dpi), face)
    title = font(round(point_size * 1.6 / 72 * dpi), face)
    top = dpi
    for index, line in enumerate(lines):
        if line:
            draw.text((dpi, top), line, fill=25, font=title if index == 0 else body)
        top += round((point_size * (2.4 if index == 0 else 1.55)) / 72 * dpi)
    if skew:
        page = page.rotate(skew, resample=Image.BICUBIC, fillcolor=paper)
    if blur:
        page = page.filter(ImageFilter.GaussianBlur(blur))
    if noise:
        pixels = np.asarray(page, dtype=np.float32) + np.random.default_rng(seed).normal(0, noise, (height, width))
        page = Image.fromarray(pixels.clip(0, 255).astype(np.uint8))
    return page


def image_bytes(page: Image.Image, image_format: str = "PNG", **options) -> bytes:
    buffer = io.BytesIO()
    page.save(buffer, image_format, **options)
    return buffer.getvalue()


def scanned_pdf(pages: list[Image.Image], *, dpi: int = 200, jpeg_quality: int = 70,
                scanned_at: datetime | None = None) -> bytes:
    """An image-only PDF, each page a JPEG as scanners write them; dated now unless `scanned_at` is given."""
    jpegs = [Image.open(io.BytesIO(image_bytes(page, "JPEG", quality=jpeg_quality))) for page in pages]
    buffer = io.BytesIO()
    stamp = scanned_at.strftime("D:%Y%m%d%H%M%SZ") if scanned_at else None  # the PDF date format
    dates = {"creationDate": stamp, "modDate": stamp} if stamp else {}
    jpegs[0].save(buffer, "PDF", resolution=dpi, save_all=True, append_images=jpegs[1:], **dates)
    return buffer.getvalue()


def random_lines(count: int, *, seed: int) -> list[str]:
    """Lines of English-like words and numbers, for text nobody tuned for."""
    words = ("gateway release token backup window operator snapshot network limit request minute policy "
             "cluster storage upgrade rollback certificate region replica config health metric alert").split()
    chooser = random.Random(seed)
    return [" ".join(chooser.choice(words) if chooser.random() > 0.15 else str(chooser.randint(2, 2048))
                     for _ in range(chooser.randint(6, 9))).capitalize() + "." for _ in range(count)]


@dataclass(frozen=True)
class DamagedScan:
    """One page of known text and how it was damaged, for the report."""

    text: str  # what OCR should read, lines joined by single spaces
    dpi: int
    skew: float
    blur: float
    noise: float
    jpeg_quality: int
    face: str
    pdf: bytes


def damaged_scan(paragraphs: list[str], *, seed: int, lines_per_page: int = 32) -> DamagedScan:
    """A page of the given prose at 200-300 dpi, skewed up to 3 degrees, blurred, speckled, on
    greyish paper, saved as a JPEG of quality 45-75 inside a PDF."""
    chooser = random.Random(seed)
    lines = [line for paragraph in paragraphs for line in textwrap.wrap(paragraph, 78)][:lines_per_page]
    faces = [None, *[face for face in SYSTEM_FONTS if face.exists()]]
    face = chooser.choice(faces)
    dpi = chooser.choice((200, 240, 300))
    skew = chooser.uniform(-3, 3)
    blur = chooser.uniform(0.3, 1.0) * dpi / 200
    noise = chooser.uniform(5, 14)
    quality = chooser.randint(45, 75)
    page = scanned_page(["", *lines], dpi=dpi, skew=skew, blur=blur, noise=noise, seed=seed, face=face,
                        paper=chooser.randint(225, 250))
    return DamagedScan(text=" ".join(lines), dpi=dpi, skew=skew, blur=blur, noise=noise, jpeg_quality=quality,
                       face=face.name if face else "Pillow default", pdf=scanned_pdf([page], dpi=dpi,
                                                                                   jpeg_quality=quality))


def character_accuracy(expected: str, found: str) -> float:
    """1 - edit distance / length of the expected text, on whitespace-normalised text (the usual OCR measure)."""
    expected, found = " ".join(expected.split()), " ".join(found.split())
    if not expected:
        return 1.0 if not found else 0.0
    previous = list(range(len(found) + 1))
    for index, char in enumerate(expected, start=1):
        current = [index]
        for column, other in enumerate(found, start=1):
            current.append(min(previous[column] + 1, current[column - 1] + 1, previous[column - 1] + (char != other)))
        previous = current
    return max(0.0, 1 - previous[-1] / len(expected))
