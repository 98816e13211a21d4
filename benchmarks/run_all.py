"""`make bench`: run every benchmark script in this folder, one after another, and print their figures."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    only = sys.argv[1:]
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not only or any(name in p.name for name in only))
    failures = 0
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        started = time.monotonic()
        result = subprocess.run([sys.executable, str(script)], cwd=HERE.parent)
        print(f"--- {script.name}: exit {result.returncode} in {time.monotonic() - started:.1f}s", flush=True)
        failures += result.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
