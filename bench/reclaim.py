"""Reclaim speed of the model: pages reclaimed per second of host time for a 10 GiB
MADV_PAGEOUT, with THPs (written whole to zram), with THPs under CONFIG_THP_SWAP=n (split
first), and with base pages. Each case runs twice, with and without the MADV_PAGEOUT, and
the host time of the page-out is the difference. Prints rates and ratios; no thresholds.

    .venv/bin/python bench/reclaim.py [--size 10G]
"""

from __future__ import annotations

import sys
import time

import thplab

MACHINE = "24G,swap=zram:12G"


def workload(size: str, thp: bool, pageout: bool) -> dict:
    ops = [
        {"op": "mmap", "name": "buf", "size": size},
        {"op": "madvise", "region": "buf", "advice": "hugepage" if thp else "nohugepage"},
        {"op": "write", "region": "buf", "byte": 64, "bytes": 8, "data": 255},
    ]
    if pageout:
        ops += [{"op": "phase", "name": "pageout"}, {"op": "madvise", "region": "buf", "advice": "pageout"}]
    return {
        "name": "bench-reclaim",
        "seed": 1,
        "knobs": {"transparent_hugepage/enabled": "madvise"},
        "processes": [{"name": "p", "ops": ops}],
    }


def timed(w: dict, knobs: dict) -> tuple[float, thplab.Result]:
    t0 = time.perf_counter()
    r = thplab.run(w, machine=MACHINE, knobs=knobs)
    return time.perf_counter() - t0, r


def main(argv: list[str]) -> int:
    size = argv[argv.index("--size") + 1] if "--size" in argv else "10G"
    cases = [
        ("THP, written whole", True, {}),
        ("THP, CONFIG_THP_SWAP=n (split first)", True, {"thplab.config_thp_swap": "n"}),
        ("base pages", False, {}),
    ]
    print(f"MADV_PAGEOUT of {size} on {MACHINE} (model)")
    print(f"{'case':40s} {'pages':>10s} {'host s':>8s} {'pages/s (host)':>15s} {'sim s':>8s} {'sim/host':>9s}")
    for name, thp, knobs in cases:
        t_base, _ = timed(workload(size, thp, False), knobs)
        t_all, r = timed(workload(size, thp, True), knobs)
        ph = next(p for p in r.raw["phases"] if p["name"].endswith(":pageout"))
        dv = ph["vmstat_delta"]
        pages = dv.get("pswpout", 0) + dv.get("swpout_zero", 0) + dv.get("thp_split_page", 0) * 0
        freed = -dv.get("nr_anon_pages", 0)
        host = t_all - t_base
        sim = (ph["end_ns"] - ph["start_ns"]) / 1e9
        if host < 0.05:
            # below what two timed runs can resolve: a bound, not a rate
            print(
                f"{name:40s} {freed:>10,} {'<0.05':>8s} {'>' + format(freed / 0.05, ',.0f'):>15s} {sim:>8.3f} {'>' + format(sim / 0.05, '.0f'):>9s}"
            )
        else:
            print(f"{name:40s} {freed:>10,} {host:>8.2f} {freed / host:>15,.0f} {sim:>8.3f} {sim / host:>9.2f}")
        del pages
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
