#!/usr/bin/env python3
"""thplab benchmarks: print rates and ratios (never thresholds).

fault path (issue 2): 10 GiB of 4 KiB faults and of THP faults on a 24G machine, and
THP faults on a 1 TiB machine: simulated faults per second of host time, host peak
memory per simulated 4 KiB page. Each case runs in its own process so peak RSS is its own.
Further benchmarks (reclaim, splits, compaction) add their scripts beside this one.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target/release/examples/bench_faults"


def main() -> int:
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "thplab-model", "--example", "bench_faults"], cwd=ROOT, check=True
    )
    cases = [("10G", "24G", "4K"), ("10G", "24G", "THP"), ("10G", "24G", "THP-touch"), ("256G", "1T", "THP-touch")]
    if "--quick" in sys.argv:
        cases = [("1G", "4G", "4K"), ("1G", "4G", "THP-touch")]
    print("== fault path ==")
    for size, machine, case in cases:
        out = subprocess.run([str(BIN), size, machine, case], capture_output=True, text=True, check=True).stdout
        print(out.strip().splitlines()[-1], f"[{size} on {machine}]")
    failed = []
    for extra in sorted((ROOT / "bench").glob("*.py")):
        if extra.name != "run.py":
            print(f"== {extra.stem} ==", flush=True)
            quick = ["--quick"] if "--quick" in sys.argv else []
            # one failing benchmark is reported, the others still run
            if subprocess.run([sys.executable, str(extra), *quick], cwd=ROOT, check=False).returncode != 0:
                failed.append(extra.stem)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
