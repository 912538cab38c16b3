"""Seed 000/001 — Yu Zhao, "mm: optimize thp for reclaim and migration" (2021).

The seed's test.c: mmap SIZE, MADV_HUGEPAGE, write one 0xff byte at OFFSET in the first
NUM_DIRTY 4 KiB pages of every 2 MiB, MADV_PAGEOUT, munmap. Best case: only the first byte
of each THP's head is non-zero (OFFSET 0, NUM_DIRTY 1). Worst case: the last byte of every
subpage is non-zero (OFFSET 4095, NUM_DIRTY 512). Swap on zram and on a disk, with
CONFIG_THP_SWAP=n as in the seed, policy `none` (before) vs `seed` (after); and the same
under mainline v6.18 defaults (CONFIG_THP_SWAP=y, zero subpages remapped to the zero page,
the swap zeromap). Before/after run on the seed's kernel generation: no swap zeromap
(thplab.swap_zeromap=n), so zero pages are written to zram (same-filled) or the disk.
"""

from __future__ import annotations

import thplab

TITLE = "Yu Zhao 2021: zero-subpage-aware THP split (test.c)"

# Published in the seed's cover letter (000): total time in seconds, before/after, delta %.
REFERENCE = {
    ("zram", "best"): (7.170, 3.559, -50.36),
    ("zram", "worst"): (8.216, 8.94, +8.81),
    ("disk", "best"): (70.466, 3.544, -94.97),
    ("disk", "worst"): (67.014, 65.521, -2.22),
}

LAST_RESULTS: dict[str, dict] = {}


def workload(size: str, offset: int, num_dirty: int) -> dict:
    return {
        "name": f"test.c {size} offset={offset} num_dirty={num_dirty}",
        "description": "seed 000 test.c",
        "record": {"series_interval": "20ms"},
        "processes": [
            {
                "name": "test",
                "ops": [
                    {"op": "mmap", "name": "buf", "size": size},
                    {"op": "madvise", "region": "buf", "advice": "hugepage"},
                    {
                        "op": "write",
                        "region": "buf",
                        "every": "2M",
                        "length": f"{num_dirty * 4}K",
                        "byte": offset,
                        "bytes": 1,
                        "data": 255,
                    },
                    {"op": "phase", "name": "pageout"},
                    {"op": "madvise", "region": "buf", "advice": "pageout"},
                    {"op": "phase", "name": "munmap"},
                    {"op": "munmap", "region": "buf"},
                ],
            }
        ],
    }


CASES = {"best": (0, 1), "worst": (4095, 512)}


def run(quick: bool = False) -> list[dict]:
    size, ram = ("512M", "4G") if quick else ("10G", "24G")
    swap_size = "1G" if quick else "11G"
    LAST_RESULTS.clear()
    rows = []
    for dev in ("zram", "disk"):
        machine = f"{ram},swap={dev}:{swap_size}"
        for case, (offset, num_dirty) in CASES.items():
            w = workload(size, offset, num_dirty)
            out = {}
            # the seed's kernel (5.14-era): CONFIG_THP_SWAP=n as in its runs, and no swap zeromap
            # (v6.12+), so zero pages went to the device; mainline: v6.18 defaults
            era = {"thplab.config_thp_swap": "n", "thplab.swap_zeromap": "n"}
            for label, knobs in (
                ("none", {"thplab.split_zero_subpages": "none", **era}),
                ("seed", {"thplab.split_zero_subpages": "seed", **era}),
                ("mainline", {}),
            ):
                r = thplab.run(w, machine=machine, knobs=knobs)
                out[label] = r.raw
                LAST_RESULTS[f"{dev} {case} {label}"] = r.raw
            sb, sa, sd = REFERENCE[(dev, case)]
            t = {k: v["sim_time_ns"] / 1e9 for k, v in out.items()}
            exp = f"{dev} {size}, {case} case"
            rows.append(
                {
                    "experiment": exp,
                    "metric": "total time",
                    "unit": "s",
                    "seed_before": sb,
                    "seed_after": sa,
                    "seed_delta": sd,
                    "thplab_before": t["none"],
                    "thplab_after": t["seed"],
                }
            )
            unmap = out["seed"]["vmstat_delta"].get("thp_split_unmap", 0)
            rows.append(
                {
                    "experiment": exp,
                    "metric": "thp_split_unmap (seed policy)",
                    "seed_before": None,
                    "seed_after": None,
                    "seed_delta": None,
                    "thplab_before": 0,
                    "thplab_after": unmap,
                    "thplab_delta": None,
                    "same_direction": "n/a",
                }
            )
            for c in ("pswpout", "thp_split_page"):
                rows.append(
                    {
                        "experiment": exp,
                        "metric": c,
                        "seed_before": None,
                        "seed_after": None,
                        "seed_delta": None,
                        "thplab_before": out["none"]["vmstat_delta"].get(c, 0),
                        "thplab_after": out["seed"]["vmstat_delta"].get(c, 0),
                        "same_direction": "n/a",
                    }
                )
            rows.append(
                {
                    "experiment": exp,
                    "metric": "mainline v6.18 defaults: total time",
                    "unit": "s",
                    "seed_before": None,
                    "seed_after": None,
                    "seed_delta": None,
                    "thplab_before": t["none"],
                    "thplab_after": t["mainline"],
                    "same_direction": "n/a",
                }
            )
    return rows
