"""`make bench`: run every benchmark (bench_*.py) and fault run (fault_*.py), then print ONE table of every target.

A script reports a target through `_setup.target()` (a `TARGET {json}` line); a script not yet
converted still gets its lines that say met/MISSED in the table, verbatim. A script that fails
is a MISSED row of its own.

    python benchmarks/run_all.py                 # everything, full sizes
    python benchmarks/run_all.py --quick         # smaller runs (BENCH_QUICK=1), for a check in minutes
    python benchmarks/run_all.py chat search     # only the scripts whose name holds one of these
    python benchmarks/run_all.py --table var/bench/targets.json   # also write the rows as JSON
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _setup import TARGET_PREFIX, machine_load  # noqa: E402

_VERDICT = re.compile(r"\b(met|MET|MISSED)\b")


def rows_from_output(script: str, lines: list[str]) -> list[dict]:
    """The script's targets: its TARGET lines, else its lines that say met or MISSED."""
    rows = [json.loads(line[len(TARGET_PREFIX):]) for line in lines if line.startswith(TARGET_PREFIX)]
    if not rows:
        for line in lines:
            found = _VERDICT.search(line)
            if found and not line.lstrip().startswith("#"):
                rows.append({"issue": "", "target": line.strip()[:110], "figure": "",
                             "met": found.group(1).lower() == "met"})
    return [{"script": script, **row} for row in rows]


def run_script(script: Path, *, quick: bool, timeout: float | None) -> tuple[int, list[str], float]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"BENCH_QUICK": "1"} if quick else {})}
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


def table(rows: list[dict]) -> str:
    width = max([len(r["target"]) for r in rows] + [10])
    out = [f"{'script':<24} {'issue':<6} {'target':<{width}}  {'figure':<44} verdict"]
    for r in rows:
        out.append(f"{r['script']:<24} {r['issue']:<6} {r['target']:<{width}}  {r['figure'][:44]:<44} "
                   f"{'MET' if r['met'] else 'MISSED'}")
    met = sum(r["met"] for r in rows)
    out.append(f"{met} of {len(rows)} targets met; {machine_load()} at the end")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("only", nargs="*", help="run only scripts whose file name holds one of these")
    parser.add_argument("--quick", action="store_true", help="smaller runs (BENCH_QUICK=1)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per script before it is stopped")
    parser.add_argument("--table", type=Path, help="write the rows as JSON here too")
    args = parser.parse_args()
    scripts = sorted(p for pattern in ("bench_*.py", "fault_*.py") for p in HERE.glob(pattern)
                     if not args.only or any(name in p.name for name in args.only))
    rows: list[dict] = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        code, lines, seconds = run_script(script, quick=args.quick, timeout=args.timeout)
        print(f"--- {script.name}: exit {code} in {seconds:.1f}s", flush=True)
        rows += rows_from_output(script.stem, lines)
        if code != 0:
            rows.append({"script": script.stem, "issue": "", "target": "script runs to the end",
                         "figure": f"exit {code} after {seconds:.0f}s", "met": False})
    print("\n=== targets ===")
    print(table(rows))
    if args.table:
        args.table.parent.mkdir(parents=True, exist_ok=True)
        args.table.write_text(json.dumps(rows, indent=1))
    return 0 if all(row["met"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
