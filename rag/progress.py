"""Rate and time left of an indexing job, from what its finished items measured."""

from __future__ import annotations

from datetime import datetime


def format_duration(seconds: float) -> str:
    """"2 h 05 min", "3 min 20 s", "45 s": as precise as a person reading a progress bar needs."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def job_rates(*, finished: int, total: int, chunks: int, first_started: datetime | None, now: datetime) -> dict:
    """files/s and chunks/s since the first item started, and the time left at that file rate.

    None until there is something to measure: no file finished yet.
    """
    elapsed = (now - first_started).total_seconds() if first_started else 0.0
    if finished == 0 or elapsed <= 0:
        return {"elapsed_seconds": elapsed, "files_per_second": None, "chunks_per_second": None,
                "eta_seconds": None, "eta_text": ""}
    files_per_second = finished / elapsed
    eta_seconds = (total - finished) / files_per_second
    return {"elapsed_seconds": elapsed, "files_per_second": files_per_second, "chunks_per_second": chunks / elapsed,
            "eta_seconds": eta_seconds, "eta_text": format_duration(eta_seconds) if total > finished else ""}
