"""Text from pictures of pages: scanned PDF pages and .png/.jpg/.tiff images, by RapidOCR.

RapidOCR runs PaddleOCR's detection and recognition models on onnxruntime, and its wheel
carries those models, so nothing is downloaded at run time (checked when the engine starts).
Recognised lines come back with their boxes; lines are put in reading order and joined into
paragraphs by their vertical gaps, like the PDF reader does with a text layer.
"""

from __future__ import annotations

import io
import statistics
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from rag.parsers._common import ParsedDocument, ParseError, Progress, Section, joined_line, no_progress, squash

OCR_DPI = 200  # scanned PDF pages are rendered at this resolution: 10 pt text is then ~28 px high
_MIN_SCORE = 0.5  # recognitions below this confidence are mostly specks and stains
_PARAGRAPH_GAP = 0.8  # a vertical gap above this many line heights ends a paragraph
_SAME_LINE = 0.5  # boxes whose centres differ by less than this many line heights share a line
# Text is found on the page scaled to this longest side (RapidOCR's default: 2000): detection then
# takes about half the time, and 10 pt text at 200 dpi is still ~20 px high (bench_ocr: no loss).
# 1280 cost 6.5 CPU-seconds a page against 8.4, same characters, but its coarser boxes pad body
# lines and shrink titles (47.5 and 54.8 px against 43.9 and 58.5): titles stop reading as headings.
_DETECT_SIDE = 1600
# onnxruntime threads per model. Its default (one per core) spins waiting threads: on the two shared
# cores, with the web server and other workers busy, a page cost 10-12 CPU-seconds with two threads
# and 8.4 with one, and one thread was also faster in wall time (33-36 s against 41-42 s a page at
# load 12). Pages in parallel come from the worker pool instead.
_THREADS = 1


@dataclass(frozen=True)
class OcrLine:
    text: str
    top: float  # pixels from the top of the page image
    bottom: float
    left: float
    score: float


@lru_cache(maxsize=1)
def ocr_engine() -> Any:
    """One engine per process: loading the models takes a second or two.

    The orientation classifier is off: it only turns lines printed upside down, and doubles the time.
    """
    # Imported here: rapidocr pulls in OpenCV, which most processes that parse text never need.
    import rapidocr
    from rapidocr import RapidOCR

    models = Path(rapidocr.__file__).parent / "models"
    if not any(models.glob("*det*.onnx")) or not any(models.glob("*rec*.onnx")):
        raise ParseError("OCR is not available: the rapidocr package has no models inside it (reinstall it)")
    return RapidOCR(params={"Global.log_level": "error", "Global.use_cls": False, "Global.max_side_len": _DETECT_SIDE,
                            "EngineConfig.onnxruntime.intra_op_num_threads": _THREADS,
                            "EngineConfig.onnxruntime.inter_op_num_threads": 1})


def ocr_lines(image: Image.Image) -> list[OcrLine]:
    """Recognised lines of one page image, in reading order, in coordinates of the page set straight.

    A scan is skewed a degree or three, so across a 1,500 px line its height changes by more than
    the gap between two lines: positions are measured after turning the page back by the median
    angle of its long boxes, and a box's height is its left edge (the text's height at any angle).
    """
    result = ocr_engine()(np.array(image.convert("RGB")))
    boxes = getattr(result, "boxes", None)
    if boxes is None:
        return []
    found = [(np.asarray(box, dtype=float), squash(text), float(score))
             for box, text, score in zip(boxes, result.txts, result.scores, strict=True)]
    found = [(box, text, score) for box, text, score in found if text and score >= _MIN_SCORE]
    slope = _page_slope([box for box, _, _ in found])
    lines = []
    for box, text, score in found:
        (left_x, left_y), _, _, (bottom_x, bottom_y) = box
        height = float(np.hypot(bottom_x - left_x, bottom_y - left_y))
        middle = float(box[:, 1].mean() - slope * box[:, 0].mean())
        lines.append(OcrLine(text, middle - height / 2, middle + height / 2, float(box[:, 0].min()), score))
    return _reading_order(lines)


def _page_slope(boxes: list[np.ndarray]) -> float:
    """dy/dx of the text lines: the median over boxes much wider than high (short ones lean at random)."""
    slopes = []
    for box in boxes:
        (top_left_x, top_left_y), (top_right_x, top_right_y) = box[0], box[1]
        width, height = top_right_x - top_left_x, float(np.hypot(*(box[3] - box[0])))
        if width > 4 * height:
            slopes.append((top_right_y - top_left_y) / width)
    return float(statistics.median(slopes)) if slopes else 0.0


def _reading_order(lines: list[OcrLine]) -> list[OcrLine]:
    """Top to bottom; pieces of one printed line (split by a wide gap) left to right."""
    if not lines:
        return lines
    height = statistics.median(line.bottom - line.top for line in lines)
    ordered = sorted(lines, key=lambda line: (line.top + line.bottom) / 2)
    rows: list[list[OcrLine]] = []
    for line in ordered:
        middle = (line.top + line.bottom) / 2
        if rows and abs(middle - (rows[-1][0].top + rows[-1][0].bottom) / 2) < _SAME_LINE * height:
            rows[-1].append(line)
        else:
            rows.append([line])
    return [line for row in rows for line in sorted(row, key=lambda piece: piece.left)]


def merge_rows(lines: list[OcrLine]) -> list[OcrLine]:
    """One OcrLine per printed line: pieces at the same height joined with a space."""
    merged: list[OcrLine] = []
    for line in lines:
        previous = merged[-1] if merged else None
        height = line.bottom - line.top
        if previous is not None and abs((line.top + line.bottom) / 2 - (previous.top + previous.bottom) / 2) < _SAME_LINE * height:
            merged[-1] = OcrLine(f"{previous.text} {line.text}", min(previous.top, line.top),
                                 max(previous.bottom, line.bottom), previous.left, min(previous.score, line.score))
        else:
            merged.append(line)
    return merged


def paragraphs(lines: list[OcrLine]) -> list[str]:
    """Lines joined into paragraphs at large vertical gaps, words hyphenated at a line end re-joined."""
    rows = merge_rows(lines)
    if not rows:
        return []
    height = statistics.median(row.bottom - row.top for row in rows)
    out: list[str] = []
    current = ""
    previous: OcrLine | None = None
    for row in rows:
        if previous is None or row.top - previous.bottom > _PARAGRAPH_GAP * height:
            if current:
                out.append(current)
            current = row.text
        else:
            current = joined_line(current, row.text)
        previous = row
    if current:
        out.append(current)
    return out


def page_images(data: bytes) -> list[Image.Image]:
    """Every frame of an image file (a multi-page TIFF has several), upright per its EXIF."""
    try:
        image = Image.open(io.BytesIO(data))
        frames = []
        for index in range(getattr(image, "n_frames", 1)):
            image.seek(index)
            frames.append(ImageOps.exif_transpose(image.copy()))
    except Image.DecompressionBombError as error:
        raise ParseError(f"refused image: {error}") from error
    except (UnidentifiedImageError, OSError, ValueError, EOFError) as error:
        raise ParseError(f"not a readable image: {squash(str(error)) or type(error).__name__}") from error
    return frames


def parse_image(stem: str, data: bytes, *, max_pages: int, progress: Progress = no_progress) -> ParsedDocument:
    """An image file as a document of one section per page (frame), every page OCR'd."""
    frames = page_images(data)
    sections: list[Section] = []
    notices: list[str] = []
    ocr_pages: list[int] = []
    for number, frame in enumerate(frames[:max_pages], start=1):
        progress(f"OCR page {number} of {min(len(frames), max_pages)}")
        text = "\n\n".join(paragraphs(ocr_lines(frame)))
        ocr_pages.append(number)
        if text:
            sections.append(Section((stem,), 0, text, page=number))
    if len(frames) > max_pages:
        notices.append(f"OCR read the first {max_pages} of {len(frames)} pages; the rest was skipped (bound: OCR_MAX_PAGES)")
    if not sections:
        raise ParseError("no text found by OCR in the image")
    first = sections[0].text.split("\n\n", 1)[0]
    title = first if len(first) <= 100 else stem
    sections = [Section((title,), 0, section.text, page=section.page) for section in sections]
    return ParsedDocument(title=title, format="image", sections=sections, page_count=len(frames),
                          metadata={"ocr_pages": ocr_pages}, notices=notices, ocr_pages=ocr_pages)
