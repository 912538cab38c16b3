#!/usr/bin/env python3
"""Splits per second of host time: 10 GiB of THPs (one non-zero page each) split by the
deferred-split shrinker (max_ptes_none=0, drop_caches=2), under each zero-subpage policy.
Host time of the split = run with the drop_caches op minus the same run without it."""

import sys
import time

import thplab

QUICK = "--quick" in sys.argv
SIZE, MACHINE = ("1G", "4G") if QUICK else ("10G", "24G")


def wl(split: bool) -> dict:
    ops = [
        {"op": "mmap", "name": "b", "size": SIZE},
        {"op": "madvise", "region": "b", "advice": "hugepage"},
        {"op": "write", "region": "b", "every": "2M", "length": "4K"},
    ]
    if split:
        ops.append({"op": "drop_caches", "value": 2})
    return {"name": "splits", "processes": [{"name": "p", "ops": ops}]}


def timed(split: bool, policy: str) -> tuple[float, dict]:
    best = None
    for _ in range(3):
        t = time.perf_counter()
        r = thplab.run(
            wl(split), machine=MACHINE, knobs={"khugepaged/max_ptes_none": "0", "thplab.split_zero_subpages": policy}
        )
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, r.raw


for policy in ("none", "seed", "mainline"):
    base, _ = timed(False, policy)
    with_split, r = timed(True, policy)
    n = r["vmstat_delta"].get("thp_split_page", 0)
    host = max(with_split - base, 1e-9)
    print(
        f"policy {policy:8}: {n} splits in {host:.3f} s host = {n / host:,.0f} splits/s "
        f"(simulated {r['sim_time_ns'] / 1e9:.3f} s for the whole run) [{SIZE} on {MACHINE}]"
    )
