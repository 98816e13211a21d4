"""`make bench`: run every benchmark (bench_*.py) and fault run (fault_*.py), then print ONE table of every target.

Every script reports each of its targets, met or not, measured or estimated, through `_setup.target()`
(a `TARGET {json}` line): those lines are the only ones the table reads, so a verdict in prose can
neither be cut nor misread. A script that fails, or ends without one TARGET line, is a MISSED row of
its own.

    python benchmarks/run_all.py                 # everything, full sizes
    python benchmarks/run_all.py --quick         # smaller runs (BENCH_QUICK=1), for a check in minutes
    python benchmarks/run_all.py --smoke         # the smallest runs (BENCH_SMOKE=1): every script still works;
                                                 # one shared PostgreSQL and Redis, the real corpus's stand-in
    python benchmarks/run_all.py chat search     # only the scripts whose name holds one of these
    python benchmarks/run_all.py --table var/bench/targets.json   # also write the rows as JSON
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _setup import TARGET_PREFIX, machine_load  # noqa: E402
from _smoke_services import SmokeServices  # noqa: E402

def rows_from_output(script: str, lines: list[str]) -> list[dict]:
    """The script's targets, from its TARGET lines alone."""
    rows = [json.loads(line[len(TARGET_PREFIX):]) for line in lines if line.startswith(TARGET_PREFIX)]
    return [{"script": script, **row} for row in rows]


# Corpora a script reads, built (or reused: the builder keeps what an earlier run left) before it runs, as
# `make eval-real` does; the script finds the folder in BENCH_REAL_CORPUS. A smoke run builds the stand-in
# (no download) through the same step, so a script whose corpus this step does not provide fails there too.
REAL_CORPUS = (["demo/real/build_corpus.py", "--out", "var/real-corpus"], "var/real-corpus/corpus")
SMOKE_CORPUS = (["benchmarks/_smoke_corpus.py", "--out", "var/bench/smoke-corpus"], "var/bench/smoke-corpus/corpus")
CORPUS_READERS = {"bench_lineage", "bench_search", "bench_search_scale", "bench_index_load", "bench_pipeline"}


def run_script(script: Path, *, quick: bool, smoke: bool, timeout: float | None,
               extra_env: dict[str, str] | None = None) -> tuple[int, list[str], float]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"BENCH_QUICK": "1"} if quick or smoke else {}),
           **({"BENCH_SMOKE": "1"} if smoke else {}), **(extra_env or {})}
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, str(script)], cwd=HERE.parent, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines: list[str] = []
    try:
        for line in process.stdout:  # shown as it comes, kept for the table
            if not line.startswith(TARGET_PREFIX):
                print(line, end="", flush=True)
            lines.append(line.rstrip("\n"))
            if timeout and time.monotonic() - started > timeout:
                process.kill()
                lines.append(f"stopped after {timeout:.0f}s")
                break
    finally:
        code = process.wait()
    return code, lines, time.monotonic() - started


RAN = "script runs to the end and reports its targets"


def script_rows(script: str, code: int, lines: list[str], seconds: float) -> list[dict]:
    """The script's rows, and a MISSED one when it failed or reported no target at all."""
    rows = rows_from_output(script, lines)
    if code != 0 or not rows:
        rows.append({"script": script, "issue": "", "target": RAN,
                     "figure": f"exit {code} after {seconds:.0f}s, {len(rows)} TARGET lines", "met": False})
    return rows


def table(rows: list[dict]) -> str:
    """One line per target, uncut: verdict, script, issue, target, figure (modelled ones say so)."""
    out = [f"{'verdict':<7} {'script':<22} {'issue':<5} target: figure"]
    for r in rows:
        figure = f"{r['figure']} (estimated)" if r.get("estimated") else r["figure"]
        out.append(f"{'MET' if r['met'] else 'MISSED':<7} {r['script']:<22} {r['issue']:<5} {r['target']}: {figure}")
    met = sum(r["met"] for r in rows)
    estimated = sum(bool(r.get("estimated")) for r in rows)
    out.append(f"{met} of {len(rows)} targets met ({estimated} on estimated figures); {machine_load()} at the end")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("only", nargs="*", help="run only scripts whose file name holds one of these")
    parser.add_argument("--quick", action="store_true", help="smaller runs (BENCH_QUICK=1)")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest runs (BENCH_SMOKE=1); exit 0 when every script ran and reported its targets")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per script before it is stopped")
    parser.add_argument("--table", type=Path, help="write the rows as JSON here too")
    args = parser.parse_args()
    scripts = sorted(p for pattern in ("bench_*.py", "fault_*.py") for p in HERE.glob(pattern)
                     if not args.only or any(name in p.name for name in args.only))
    builder, corpus = SMOKE_CORPUS if args.smoke else REAL_CORPUS
    rows: list[dict] = []
    built = False
    # A smoke run's scripts share one PostgreSQL and Redis, each on its own database (_smoke_services.py).
    with SmokeServices() if args.smoke else contextlib.nullcontext() as services:
        for script in scripts:
            env = {}
            if script.stem in CORPUS_READERS:
                if not built:
                    print(f"\n=== {' '.join(builder)} ===", flush=True)
                    subprocess.run([sys.executable, *builder], cwd=HERE.parent, check=True)
                    built = True
                env["BENCH_REAL_CORPUS"] = str(HERE.parent / corpus)
            if services:
                env.update(services.environ(script.stem))
            print(f"\n=== {script.name} ===", flush=True)
            code, lines, seconds = run_script(script, quick=args.quick, smoke=args.smoke, timeout=args.timeout,
                                              extra_env=env)
            print(f"--- {script.name}: exit {code} in {seconds:.1f}s", flush=True)
            rows += script_rows(script.stem, code, lines, seconds)
    print("\n=== targets ===")
    print(table(rows))
    if args.table:
        args.table.parent.mkdir(parents=True, exist_ok=True)
        args.table.write_text(json.dumps(rows, indent=1))
    if args.smoke:  # tiny runs' figures mean nothing: only whether each script ran and reported
        return 0 if not any(r["target"] == RAN for r in rows) else 1
    return 0 if all(row["met"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
