"""`make bench`: run every benchmark (bench_*.py) and fault run (fault_*.py) here, one after another, and print their figures."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    only = sys.argv[1:]
    scripts = sorted(p for pattern in ("bench_*.py", "fault_*.py") for p in HERE.glob(pattern)
                     if not only or any(name in p.name for name in only))
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
