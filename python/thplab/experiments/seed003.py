"""Seed 003: Huang Ying, "[PATCH -V5 00/21] swap: Swapout/swapin THP in one piece" (2018).

vm-scalability's swap-w-seq as the cover letter ran it: 16 processes, each writing its
anonymous range from start to end for 8 rounds under memory pressure, swap on a RAM-backed
pmem device (examples/seed003_swap_w_seq.json). "before" is mainline THP swap
(thplab.pmd_swap_entries=0: a THP is swapped out whole, but its PMD becomes 512 swap PTEs
and it comes back as base pages); "after" is the seed's policy (thplab.pmd_swap_entries=1,
transparent_hugepage/swapin_enabled=always: one PMD swap entry, swapped in whole).

The seed's published figures are printed beside the model's as reference values only;
they are never inputs to the model.

Machine (the seed gives none beyond "Xeon E5 v3" and a pmem device): full -- one node of
4 GiB, 16 CPUs, 8 GiB pmem swap, 16 x 384 MiB = 6 GiB anonymous (1.5x RAM); quick -- 1 GiB,
16 CPUs, 2 GiB pmem, 16 x 96 MiB.

    python -m thplab.experiments.seed003 [--quick]
"""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path

from thplab.experiments.contract import Experiment, Figure, Outcome, Row, Table

REPO = Path(__file__).resolve().parents[3]
WORKLOAD = REPO / "examples" / "seed003_swap_w_seq.json"

# The cover letter's table (base, optimized, %change) -- reference values only.
SEED = {
    "throughput (bytes written/s)": (1417897, 15494673, "+992.8%"),
    "swap-in+out throughput (GB/s)": (2.17, 24.04, "+1008%"),
    "vmstat.swap.si (kB/s)": (1020489, 12156349, "+1091.2%"),
    "vmstat.swap.so (kB/s)": (1255093, 13056114, "+940.3%"),
    "meminfo.AnonHugePages (kB, mean)": (1259769, 24166779, "+1818.3%"),
    "meminfo.AnonPages (kB, mean)": (28021761, 25018848, "-10.7%"),
    "THP share of anon memory (%)": (4.5, 96.6, "+92.1 pts"),
    "TLB-flush IPIs (CAL interrupts)": (64080064, 2787565, "-95.6%"),
    "spinlock time (% of CPU time)": (13.91, 0.10, "-13.8 pts"),
}
POINTS = {"THP share of anon memory (%)", "spinlock time (% of CPU time)"}

QUICK_MACHINE = "1G,cpus=16,swap=pmem:2G"
QUICK_SIZE = "96M"


def workload(quick: bool) -> dict:
    w = json.loads(WORKLOAD.read_text())
    if quick:
        w = copy.deepcopy(w)
        w["machine"] = QUICK_MACHINE
        for p in w["processes"]:
            for op in p["ops"]:
                if op["op"] == "mmap":
                    op["size"] = QUICK_SIZE
        w["record"] = {"series_interval": "5ms"}
    return w


def _size_bytes(s: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


TITLE = "Huang Ying 2018: THP swap-out and swap-in in one piece (swap-w-seq)"


def measure(w: dict, knobs: dict) -> tuple[dict, dict]:
    """Run the model; (the seed's metrics, the full result)."""
    from thplab.api import run as trun

    t0 = time.perf_counter()
    r = trun(w, knobs=knobs)
    host_s = time.perf_counter() - t0
    d = r.raw
    sim_s = d["sim_time_ns"] / 1e9
    dv = d.get("vmstat_delta") or {}
    ex = d.get("extra") or {}
    # vm-scalability's throughput: the sum of each process's bytes written per second
    thr = 0.0
    for p, spec in zip(d["processes"], w["processes"], strict=True):
        size = sum(_size_bytes(op["size"]) for op in spec["ops"] if op["op"] == "mmap")
        rounds = sum(1 for op in spec["ops"] if op["op"] == "write")
        dt = (p["end_ns"] - p["start_ns"]) / 1e9
        thr += size * rounds / dt if dt > 0 else 0.0
    s = r.series
    ahp = float(s["AnonHugePages_kB"].mean()) if len(s) else 0.0
    ap = float(s["AnonPages_kB"].mean()) if len(s) else 0.0
    cpu_ns = sum(p["end_ns"] - p["start_ns"] for p in d["processes"]) + sum(k["cpu_ns"] for k in ex.get("kthreads", []))
    pin, pout = dv.get("pswpin", 0), dv.get("pswpout", 0)
    return {
        "throughput (bytes written/s)": thr,
        "swap-in+out throughput (GB/s)": (pin + pout) * 4096 / sim_s / 1e9 if sim_s else 0.0,
        "vmstat.swap.si (kB/s)": pin * 4 / sim_s if sim_s else 0.0,
        "vmstat.swap.so (kB/s)": pout * 4 / sim_s if sim_s else 0.0,
        "meminfo.AnonHugePages (kB, mean)": ahp,
        "meminfo.AnonPages (kB, mean)": ap,
        "THP share of anon memory (%)": 100.0 * ahp / ap if ap else 0.0,
        "TLB-flush IPIs (CAL interrupts)": float(ex.get("tlb_shootdown_ipis", 0)),
        "spinlock time (% of CPU time)": 100.0 * ex.get("lock_wait_ns", 0) / cpu_ns if cpu_ns else 0.0,
        "_host_s": host_s,
        "_sim_s": sim_s,
        "_counters": {
            k: dv.get(k, 0)
            for k in (
                "pswpin",
                "pswpout",
                "thp_swpout",
                "thp_swpout_fallback",
                "thp_split_pmd",
                "thp_swpin",
                "thp_swpin_fallback",
                "thp_fault_alloc",
                "thp_fault_fallback",
                "allocstall_movable",
                "pgsteal_kswapd",
                "pgsteal_direct",
                "oom_kill",
            )
        },
        # the per-size stats of the 64 KiB size (the mTHP column, issue 18)
        "_mthp": {
            k: (ex.get("mthp_stats") or {}).get(f"hugepages-64kB/stats/{k}", 0)
            for k in ("anon_fault_alloc", "anon_fault_fallback", "swpout", "swpout_fallback", "swpin", "split")
        },
    }, d


def _delta(name: str, before: float, after: float) -> float | None:
    if name in POINTS:
        return after - before
    if before == 0:
        return None
    return 100.0 * (after - before) / before


def _fmt_delta(name: str, v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{v:+.1f} pts" if name in POINTS else f"{v:+.1f}%"


BEFORE_KNOBS = {"thplab.pmd_swap_entries": "0"}
AFTER_KNOBS = {"thplab.pmd_swap_entries": "1", "transparent_hugepage/swapin_enabled": "always"}
# the mTHP column (issue 18): mainline with 64 KiB folios instead of PMD THPs (the workload's
# transparent_hugepage/enabled=always is inherited; hugepages-2048kB never)
MTHP_KNOBS = {
    **BEFORE_KNOBS,
    "transparent_hugepage/hugepages-64kB/enabled": "inherit",
    "transparent_hugepage/hugepages-2048kB/enabled": "never",
}
MTHP_LABEL = "mainline with 64 KiB mTHP instead of 2 MiB THP (AnonHugePages counts PMD-mapped THPs only)"


def run(quick: bool = False) -> Outcome:
    """The seed-003 table: one row per metric with the seed's published values (reference
    only) and the model's, before (mainline) and after (the seed's policy)."""
    w = workload(quick)
    b, rb = measure(w, BEFORE_KNOBS)
    a, ra = measure(w, AFTER_KNOBS)
    m, rm = measure(w, MTHP_KNOBS)
    rows = []
    for name, (sb, sa, sd) in SEED.items():
        tb, ta = b[name], a[name]
        unit = ""
        metric = name
        if name.endswith(")") and "(" in name:
            metric, unit = name[: name.rindex("(")].strip(), name[name.rindex("(") + 1 : -1]
        rows.append(
            Row(
                metric,
                unit,
                sb,
                sa,
                tb,
                ta,
                seed_delta=sd,
                thplab_delta=_fmt_delta(name, _delta(name, tb, ta)),
                direction=_direction(sb, sa, tb, ta),
                mthp=m[name],
            )
        )
    table = Table(
        title=f"swap-w-seq on {w['machine']}: 16 processes write their memory 8 times over, swap on pmem",
        rows=rows,
        before="mainline (pmd_swap_entries=0)",
        after="the seed's policy (pmd_swap_entries=1, swapin_enabled=always)",
        mthp=MTHP_LABEL,
    )
    counters = Table(
        title="swap-w-seq: what the kernel counted (thplab only)",
        rows=[
            Row(k, "", None, None, b["_counters"][k], a["_counters"][k], mthp=m["_counters"][k]) for k in b["_counters"]
        ]
        + [
            Row(f"hugepages-64kB/stats/{k}", "", None, None, b["_mthp"][k], a["_mthp"][k], mthp=m["_mthp"][k])
            for k in b["_mthp"]
        ],
        before="mainline",
        after="the seed's policy",
        mthp=MTHP_LABEL,
    )
    return Outcome(
        tables=[table, counters],
        results={"mainline (before)": rb, "PMD swap entries (after)": ra, "64 KiB mTHP (mainline)": rm},
        data={"before": b, "after": a, "mthp": m, "machine": w["machine"]},
    )


def _direction(sb, sa, tb, ta) -> str:
    seed_dir = (sa > sb) - (sa < sb)
    model_dir = (ta > tb) - (ta < tb)
    return "same" if seed_dir == model_dir else "OPPOSITE"


def figures(out: Outcome) -> list[Figure]:
    from thplab import plotting as P

    b, a = out.data["before"], out.data["after"]
    name_thr, name_share = "throughput (bytes written/s)", "THP share of anon memory (%)"
    fig, (a1, a2) = P.subplots(ncols=2, width=9, height=3.6)
    P.grouped_bars(
        a1,
        ["seed (published)", "thplab"],
        [
            ("before: mainline", [SEED[name_thr][0] / 1e6, b[name_thr] / 1e6], P.OURS_BEFORE),
            ("after: the seed's policy", [SEED[name_thr][1] / 1e6, a[name_thr] / 1e6], P.OURS_AFTER),
        ],
        "throughput (MB written/s)",
    )
    a1.set_title("vm-scalability throughput", fontsize=10)
    a1.legend(fontsize=7)
    P.grouped_bars(
        a2,
        ["seed (published)", "thplab"],
        [
            ("before: mainline", [SEED[name_share][0], b[name_share]], P.OURS_BEFORE),
            ("after: the seed's policy", [SEED[name_share][1], a[name_share]], P.OURS_AFTER),
        ],
        "AnonHugePages / AnonPages, mean (%)",
        log=False,
    )
    a2.set_ylim(0, 110)
    a2.set_title("share of anonymous memory in THPs", fontsize=10)
    figs = [
        Figure(
            "swap-w-seq throughput and THP share, before and after THP swap in one piece: published vs thplab",
            fig,
            "Throughput is the sum over the 16 processes of bytes written per second; the seed's machine "
            "and ours differ in size, so compare the change, not the level.",
        )
    ]
    rb, ra = out.results.get("mainline (before)"), out.results.get("PMD swap entries (after)")
    if rb and ra:
        fig, ax = P.subplots(width=8, height=3.4)
        for label, r, colour in (
            ("before: mainline", rb, P.OURS_BEFORE),
            ("after: the seed's policy", ra, P.OURS_AFTER),
        ):
            s = r.get("series") or {}
            cols, rows = s.get("columns") or [], s.get("rows") or []
            if "AnonHugePages_kB" not in cols or "AnonPages_kB" not in cols or not rows:
                continue
            ih, ia = cols.index("AnonHugePages_kB"), cols.index("AnonPages_kB")
            xs = [row[0] / 1e9 for row in rows]
            ys = [100.0 * row[ih] / row[ia] if row[ia] else float("nan") for row in rows]
            ax.plot(xs, ys, label=label, color=colour, linewidth=1.5)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("AnonHugePages / AnonPages (%)")
        ax.set_ylim(0, 105)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title("THP share of anonymous memory while swapping", fontsize=10)
        figs.append(
            Figure(
                "THP share of anonymous memory over the run, mainline vs THP swap in one piece (thplab)",
                fig,
                "Mainline brings swapped THPs back as 4 KiB pages, so the share falls as pages cycle "
                "through swap; with PMD swap entries they come back whole.",
            )
        )
    return figs


EXPERIMENT = Experiment(
    seed="003",
    title=TITLE,
    run=run,
    figures=figures,
    summary="Swapping a THP out and in as one piece keeps it huge through swap. vm-scalability's "
    "swap-w-seq: 16 processes write 1.5x RAM in total, 8 times over, with swap on a RAM-backed pmem device.",
)


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    from thplab.seeds import print_tables

    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    t0 = time.perf_counter()
    out = run(quick)
    print_tables("003", TITLE, out.tables, Console())
    print(f"total host time {time.perf_counter() - t0:.1f} s ({'quick' if quick else 'full'})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
