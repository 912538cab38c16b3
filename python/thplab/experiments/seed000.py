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
from thplab.experiments.contract import Experiment, Figure, Outcome, Row, Table

TITLE = "Yu Zhao 2021: zero-subpage-aware THP split (test.c)"

# Published in the seed's cover letter (000): total time in seconds, before/after, delta %.
REFERENCE = {
    ("zram", "best"): (7.170, 3.559, -50.36),
    ("zram", "worst"): (8.216, 8.94, +8.81),
    ("disk", "best"): (70.466, 3.544, -94.97),
    ("disk", "worst"): (67.014, 65.521, -2.22),
}

DEVICES = ("zram", "disk")
# policy labels: the seed's kernel before and after the series, and mainline v6.18
POLICIES = ("none", "seed", "mainline", "mthp64")


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

# the seed's kernel (5.14-era): CONFIG_THP_SWAP=n as in its runs, and no swap zeromap
# (v6.12+), so zero pages went to the device; mainline: v6.18 defaults
ERA = {"thplab.config_thp_swap": "n", "thplab.swap_zeromap": "n"}
# the mTHP column (issue 18): mainline v6.18 with 64 KiB folios instead of PMD THPs in the
# MADV_HUGEPAGE region (hugepages-64kB inherit of madvise, hugepages-2048kB never)
MTHP = {
    "transparent_hugepage/hugepages-64kB/enabled": "inherit",
    "transparent_hugepage/hugepages-2048kB/enabled": "never",
}
KNOBS = {
    "none": {"thplab.split_zero_subpages": "none", **ERA},
    "seed": {"thplab.split_zero_subpages": "seed", **ERA},
    "mainline": {},
    "mthp64": MTHP,
}
MTHP_LABEL = "mainline v6.18, 64 KiB mTHP instead of 2 MiB THP (splits: hugepages-64kB/stats/split)"


def _phase_s(r: dict, name: str) -> float:
    ph = next((p for p in r["phases"] if p["name"].endswith(f":{name}")), None)
    return (ph["end_ns"] - ph["start_ns"]) / 1e9 if ph else float("nan")


def summarise(r: dict) -> dict[str, float]:
    """The figures of one run: total test.c time, MADV_PAGEOUT time, bytes written to swap."""
    d = r["vmstat_delta"]
    return {
        "total_s": r["sim_time_ns"] / 1e9,
        "pageout_s": _phase_s(r, "pageout"),
        "swap_bytes": d.get("pswpout", 0) * 4096,
        "pswpout": d.get("pswpout", 0),
        "thp_split_page": d.get("thp_split_page", 0),
        "thp_split_unmap": d.get("thp_split_unmap", 0),
        "split_64k": (r.get("extra") or {}).get("mthp_stats", {}).get("hugepages-64kB/stats/split", 0),
        "swpout_64k": (r.get("extra") or {}).get("mthp_stats", {}).get("hugepages-64kB/stats/swpout", 0),
    }


def run(quick: bool = False) -> Outcome:
    size, ram = ("512M", "4G") if quick else ("10G", "24G")
    swap_size = "1G" if quick else "11G"
    results: dict[str, dict] = {}
    summary: dict[tuple[str, str, str], dict[str, float]] = {}
    tables = []
    for dev in DEVICES:
        machine = f"{ram},swap={dev}:{swap_size}"
        for case, (offset, num_dirty) in CASES.items():
            w = workload(size, offset, num_dirty)
            for label in POLICIES:
                r = thplab.run(w, machine=machine, knobs=KNOBS[label]).raw
                results[f"{dev} {case} {label}"] = r
                summary[(dev, case, label)] = summarise(r)
            sb, sa, _ = REFERENCE[(dev, case)]
            m = {label: summary[(dev, case, label)] for label in POLICIES}
            where = "the first byte of each THP" if case == "best" else "the last byte of every 4 KiB subpage"
            tables.append(
                Table(
                    title=f"{dev} swap, {size} test.c, {case} case (non-zero: {where})",
                    before="split_zero_subpages=none (the seed’s kernel without the series)",
                    after="split_zero_subpages=seed (with the series)",
                    mthp=MTHP_LABEL,
                    rows=[
                        Row(
                            "test.c time",
                            "s",
                            sb,
                            sa,
                            m["none"]["total_s"],
                            m["seed"]["total_s"],
                            mthp=m["mthp64"]["total_s"],
                        ),
                        Row(
                            "MADV_PAGEOUT time",
                            "s",
                            None,
                            None,
                            m["none"]["pageout_s"],
                            m["seed"]["pageout_s"],
                            mthp=m["mthp64"]["pageout_s"],
                        ),
                        Row(
                            "written to swap",
                            "MiB",
                            None,
                            None,
                            m["none"]["swap_bytes"] / 2**20,
                            m["seed"]["swap_bytes"] / 2**20,
                            mthp=m["mthp64"]["swap_bytes"] / 2**20,
                        ),
                        Row(
                            "pswpout",
                            "pages",
                            None,
                            None,
                            m["none"]["pswpout"],
                            m["seed"]["pswpout"],
                            mthp=m["mthp64"]["pswpout"],
                        ),
                        Row(
                            "thp_split_page",
                            "",
                            None,
                            None,
                            m["none"]["thp_split_page"],
                            m["seed"]["thp_split_page"],
                            mthp=m["mthp64"]["split_64k"],
                        ),
                        Row("thp_split_unmap", "", None, None, 0, m["seed"]["thp_split_unmap"], mthp=0),
                        Row(
                            "mainline v6.18 defaults: test.c time (before = none)",
                            "s",
                            None,
                            None,
                            m["none"]["total_s"],
                            m["mainline"]["total_s"],
                            mthp=m["mthp64"]["total_s"],
                        ),
                        Row(
                            "64 KiB folios swapped out whole (hugepages-64kB/stats/swpout)",
                            "",
                            None,
                            None,
                            None,
                            None,
                            mthp=m["mthp64"]["swpout_64k"],
                        ),
                    ],
                )
            )
    return Outcome(tables=tables, results=results, data={"summary": summary, "size": size})


def figures(out: Outcome) -> list[Figure]:
    from thplab import plotting as P

    summ = out.data["summary"]
    cats = [f"{dev}\n{case} case" for dev in DEVICES for case in CASES]
    keys = [(dev, case) for dev in DEVICES for case in CASES]
    figs = []

    fig, ax = P.subplots(width=8, height=3.8)
    P.grouped_bars(
        ax,
        cats,
        [
            ("seed, before", [REFERENCE[k][0] for k in keys], P.SEED_BEFORE),
            ("seed, after", [REFERENCE[k][1] for k in keys], P.SEED_AFTER),
            ("thplab, before", [summ[(*k, "none")]["total_s"] for k in keys], P.OURS_BEFORE),
            ("thplab, after", [summ[(*k, "seed")]["total_s"] for k in keys], P.OURS_AFTER),
        ],
        "test.c run time (s)",
    )
    ax.legend(fontsize=7, ncols=2)
    ax.set_title(f"test.c on {out.data['size']}: time to fault, MADV_PAGEOUT and unmap", fontsize=10)
    figs.append(
        Figure(
            "test.c run time before and after the seed's split, zram and disk swap: published vs thplab",
            fig,
            "Published figures (grey) are the cover letter's; thplab's (blue) are simulated seconds. "
            "Before: every subpage of a split THP is written out; after: zero-filled subpages are dropped.",
        )
    )

    fig, (a1, a2) = P.subplots(ncols=2, width=9.5, height=3.6)
    bars = [
        ("before (none)", "none", P.OURS_BEFORE),
        ("after (seed)", "seed", P.OURS_AFTER),
        ("mainline v6.18", "mainline", P.EXTRA),
    ]
    P.grouped_bars(
        a1, cats, [(lab, [summ[(*k, p)]["pageout_s"] for k in keys], c) for lab, p, c in bars], "MADV_PAGEOUT time (s)"
    )
    a1.set_title("time in MADV_PAGEOUT", fontsize=10)
    P.grouped_bars(
        a2,
        cats,
        [(lab, [summ[(*k, p)]["swap_bytes"] / 2**20 for k in keys], c) for lab, p, c in bars],
        "written to the swap device (MiB)",
    )
    a2.set_title("bytes written to swap (pswpout x 4 KiB)", fontsize=10)
    a1.legend(fontsize=7)
    figs.append(
        Figure(
            "MADV_PAGEOUT: time and bytes written to swap, thplab (the seed published neither)",
            fig,
            "The seed's policy writes only the non-zero subpages; mainline v6.18 swaps the THP out whole "
            "(CONFIG_THP_SWAP=y) and keeps zero pages out of the device with the swap zeromap.",
        )
    )
    return figs


EXPERIMENT = Experiment(
    seed="000",
    title=TITLE,
    run=run,
    figures=figures,
    summary="Splitting a THP under reclaim drops its zero-filled subpages instead of writing them to swap. "
    "test.c maps a region with MADV_HUGEPAGE, dirties one byte per THP (best case) or per subpage (worst "
    "case) and pages it all out, on zram and on a disk.",
)
