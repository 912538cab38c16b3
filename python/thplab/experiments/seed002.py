"""Seed 002 (Vernon Yang, "mm: khugepaged" scan improvements, Dec 2025, on v6.18).

Two experiments, run in the model through `thplab.run`:

* **hot1 -> cold -> hot2**: three processes, 128 MiB each, fault their memory with 4 KiB
  pages and then ask for THP (MADV_HUGEPAGE), in that order, so they join khugepaged's
  list in that order. hot1 and hot2 keep accessing their memory (random loads, in
  bursts); cold touches its memory briefly and calls MADV_COLD. The question is how soon
  khugepaged reaches hot2, and what that does to hot2's TLB misses and speed.
* **desktop census**: many processes whose memory is mostly PMD-mapped already or has no
  page table; per full scan: counts per scan result, progress and the full-scan time.

Each is run with the baseline kernel and with the seed policies ("v1": the series as
posted — skip fully collapsed mms, cold mms to the list tail, disabled mms at once;
"final": what the series became — cheap progress for PMD-mapped/table-less ranges, skip
lazy-free folios, disabled mms at once). The seed's own figures are shown beside thplab's
as *reference values*: they are never inputs to the model and never tuning targets.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from thplab.experiments.contract import Experiment, Figure, Outcome, Row, Table

__all__ = [
    "EXPERIMENT",
    "SEED_CENSUS",
    "SEED_HOT_COLD",
    "VARIANTS",
    "census_workload",
    "figures",
    "hot_cold_workload",
    "main",
    "run",
]

# ---- the policies -------------------------------------------------------------------

VARIANTS: dict[str, dict[str, str]] = {
    "baseline": {},
    # the series as posted (v1, Dec 2025)
    "v1": {
        "thplab.khugepaged_skip_collapsed": "1",
        "thplab.khugepaged_cold_to_tail": "1",
        "thplab.khugepaged_disabled_next": "1",
    },
    # what it became (v2 .. v8, mm-unstable 2026)
    "final": {
        "thplab.khugepaged_cheap_progress": "1",
        "thplab.khugepaged_skip_lazyfree": "1",
        "thplab.khugepaged_disabled_next": "1",
    },
}

# ---- reference values: the seed's published figures (never model inputs) -----------

#: hot2 on x86_64, "without patch" / "with patch" (seed 002 cover letter, v1)
SEED_HOT_COLD: dict[str, tuple[float, float]] = {
    "total access time (s)": (3.14, 2.92),
    "cycles per access": (4.91, 2.07),
    "throughput (M accesses/s)": (104.38, 112.12),
    "dTLB-load-misses": (288966432, 1292908),
}

#: bpftrace over one full scan of an idle desktop. "before" from the v1 cover letter;
#: "after" (progress and time with cheap progress) from the v2 cover letter, whose own
#: "before" was 674 MB / 419 s (142 PMD_MAPPED, 178 NO_PTE_TABLE).
SEED_CENSUS: dict[str, tuple[float | None, float | None]] = {
    "SCAN_SUCCEED per full scan": (1, None),
    "SCAN_PMD_MAPPED per full scan": (158, 142),
    "SCAN_PMD_NONE per full scan": (174, 178),
    "progress per full scan (MB)": (701, 45),
    "full scan time (s)": (440, 20),
}

MB = 1 << 20


def _size(b: int) -> str:
    return f"{b // MB}M" if b % MB == 0 else f"{b // 1024}K"


TITLE = "Vernon Yang 2025: khugepaged scan prioritisation"

#: the hot/cold run samples the system every second (AnonHugePages, and per process when
#: the model records it) for the report's timeline
HOT_COLD_RECORD = {"series_interval": "1s"}


def _run(kind: str, quick: bool, variant: str, timeout: float | None) -> dict:
    """thplab.run of one experiment variant; the full result dict."""
    import thplab

    if kind == "hot_cold":
        w = {**hot_cold_workload(quick), "record": HOT_COLD_RECORD}
    else:
        w = census_workload(quick)
    return thplab.run(w, knobs=VARIANTS[variant], timeout=timeout).raw


# ---- experiment (a): hot1 -> cold -> hot2 ---------------------------------------------


def hot_cold_workload(quick: bool = False) -> dict[str, Any]:
    """The hot1/cold/hot2 workload. Full: the seed's 128 MiB per process, 300 s of
    1 s-spaced access bursts (khugepaged at its defaults needs ~80 s per 128 MiB). Quick:
    32 MiB and 90 s, same knobs."""
    mem = (32 if quick else 128) * MB
    rounds = 90 if quick else 300
    burst = 20_000 if quick else 100_000

    def proc(name: str, start_ms: int, hot: bool) -> dict[str, Any]:
        ops: list[dict[str, Any]] = [
            {"op": "phase", "name": "fault"},
            {"op": "mmap", "name": "mem", "size": _size(mem)},
            # app.c allocates and touches its memory; with enabled=madvise it gets 4 KiB
            # pages, and MADV_HUGEPAGE afterwards registers it with khugepaged
            {"op": "write", "region": "mem", "bytes": 8, "data": "text"},
            {"op": "madvise", "region": "mem", "advice": "hugepage"},
            {"op": "phase", "name": "run"},
        ]
        if hot:
            burst_ops = [
                {"op": "access", "region": "mem", "pattern": "random", "count": burst},
                {"op": "sleep", "duration": "1s"},
            ]
            ops.append({"op": "repeat", "count": rounds, "ops": burst_ops})
        else:
            # "accesses its memory briefly and then calls MADV_COLD": a few bursts, so that
            # all three tasks are on khugepaged's list when the advice comes
            for _ in range(3):
                ops.append({"op": "access", "region": "mem", "pattern": "random", "count": burst})
                ops.append({"op": "sleep", "duration": "1s"})
            ops.append({"op": "madvise", "region": "mem", "advice": "cold"})
            ops.append({"op": "sleep", "duration": f"{rounds - 3}s"})
        return {"name": name, "start": f"{start_ms}ms", "ops": ops}

    return {
        "name": "seed002_hot_cold" + ("_quick" if quick else ""),
        "description": (
            "Seed 002 (Vernon Yang 2025): hot1 -> cold -> hot2, "
            f"{mem // MB} MiB each of 4 KiB pages, then MADV_HUGEPAGE in that order. "
            "hot1/hot2 access their memory in bursts; cold touches it once and calls "
            "MADV_COLD. khugepaged at its defaults walks its list FIFO. Compare hot2's "
            "TLB misses and time to collapse with the seed policies "
            "(thplab.khugepaged_cold_to_tail=1, thplab.khugepaged_skip_collapsed=1)."
        ),
        "seed": 2,
        "machine": "24G,cpus=4",
        "knobs": {"transparent_hugepage/enabled": "madvise"},
        "processes": [proc("hot1", 0, True), proc("cold", 10, False), proc("hot2", 20, True)],
    }


def _hot2_metrics(d: dict) -> dict[str, float]:
    p = next(p for p in d["processes"] if p["name"] == "hot2")
    ghz = d["cost_profile"]["cpu_ghz"]
    acc = p["tlb"]["accesses"]
    ns = p["access_ns"]
    kh = d["extra"]["khugepaged"]["mms"].get("hot2", {})
    t_collapsed = None
    if kh.get("last_collapse_ns") is not None and kh.get("entered_ns") is not None:
        t_collapsed = (kh["last_collapse_ns"] - kh["entered_ns"]) / 1e9
    return {
        "total access time (s)": ns / 1e9,
        "cycles per access": ns * ghz / acc if acc else float("nan"),
        "throughput (M accesses/s)": acc / ns * 1e3 if ns else float("nan"),
        "dTLB-load-misses": p["tlb"]["dtlb_load_misses"],
        "hot2 ranges collapsed": kh.get("collapses", 0),
        "time until hot2 collapsed (s)": t_collapsed if t_collapsed is not None else float("nan"),
    }


# ---- experiment (b): the desktop census ----------------------------------------------


def census_workload(quick: bool = False) -> dict[str, Any]:
    """An idle desktop: `nproc` processes whose eligible memory is THP-faulted (PMD-mapped)
    or reserved but never touched (no page table), plus one application whose 2 MiB of
    4 KiB pages khugepaged can collapse. Full: the seed's census (158 PMD-mapped, 174
    table-less and 1 collapsible range over 16 processes) and 1000 s of idling (two
    baseline full scans). Quick: a quarter of the ranges, 300 s."""
    nproc, mapped, none = (4, 40, 44) if quick else (16, 158, 174)
    idle = 300 if quick else 1000
    procs = []
    for i in range(nproc):
        m = mapped // nproc + (1 if i < mapped % nproc else 0)
        n = none // nproc + (1 if i < none % nproc else 0)
        procs.append(
            {
                "name": f"desktop{i}",
                "start": f"{i}ms",
                "ops": [
                    # a THP-backed heap: every 2 MiB touched once (enabled=always: THP faults)
                    {"op": "mmap", "name": "heap", "size": _size((m - 1) * 2 * MB)},
                    {"op": "write", "region": "heap", "every": "2M", "length": "4K", "bytes": 64},
                    # a reservation touched at its start only (one more THP): the rest has no
                    # page table
                    {"op": "mmap", "name": "arena", "size": _size((n + 1) * 2 * MB)},
                    {"op": "write", "region": "arena", "length": "4K", "bytes": 64},
                    {"op": "sleep", "duration": f"{idle}s"},
                ],
            }
        )
    # one application with a 2 MiB range of 4 KiB pages, made eligible later
    # (it asks for THP once the desktop has settled, so the census scan collapses it)
    procs.append(
        {
            "name": "app",
            "start": "20ms",
            "ops": [
                {"op": "mmap", "name": "buf", "size": "2M"},
                {"op": "madvise", "region": "buf", "advice": "nohugepage"},
                {"op": "write", "region": "buf", "bytes": 64, "data": "text"},
                {"op": "sleep", "duration": "2s"},
                {"op": "madvise", "region": "buf", "advice": "hugepage"},
                {"op": "sleep", "duration": f"{idle - 2}s"},
            ],
        }
    )
    return {
        "name": "seed002_census" + ("_quick" if quick else ""),
        "description": (
            "Seed 002 (Vernon Yang 2025): the idle-desktop census of khugepaged scan results. "
            f"{nproc} processes with {mapped} PMD-mapped and {none} table-less 2 MiB ranges plus one "
            "collapsible range; khugepaged at its defaults (4096 pages per 10 s). Compare the "
            "per-full-scan progress and time with thplab.khugepaged_cheap_progress=1 or "
            "thplab.khugepaged_skip_collapsed=1."
        ),
        "seed": 2,
        "machine": "24G,cpus=4",
        "knobs": {"transparent_hugepage/enabled": "always"},
        "processes": procs,
    }


SETTLE_NS = 1_000_000_000


def _census_metrics(d: dict) -> dict[str, float]:
    kh = d["extra"]["khugepaged"]
    # the census: the first full scan that walked memory and started once every process
    # had set up (SETTLE_NS), so it sees the settled desktop whole (the seed's census was
    # taken on a running desktop); passes before it saw processes still setting up (an mm
    # joins khugepaged's list at its first THP fault, khugepaged_enter_vma)
    log = [f for f in kh["full_scan_log"] if f["start_ns"] >= SETTLE_NS and f["results"]]
    nan = float("nan")
    # no full scan after set-up (the list emptied, e.g. every mm dropped as collapsed)
    first = log[0] if log else None
    r = first["results"] if first else {}
    steady = log[1:] or log
    return {
        "SCAN_SUCCEED per full scan": r.get("SCAN_SUCCEED", 0) if first else nan,
        "SCAN_PMD_MAPPED per full scan": r.get("SCAN_PMD_MAPPED", 0) if first else nan,
        "SCAN_PMD_NONE per full scan": r.get("SCAN_PMD_NONE", 0) if first else nan,
        "progress per full scan (MB)": first["progress"] * 4096 / MB if first else nan,
        "full scan time (s)": (first["end_ns"] - first["start_ns"]) / 1e9 if first else nan,
        "later full scans: progress (MB, mean)": (sum(f["progress"] for f in steady) * 4096 / MB / len(steady))
        if steady
        else nan,
        "full scans (census and later)": len(log),
        "full scans completed": kh["full_scans"],
        "pages_collapsed": kh["pages_collapsed"],
        "khugepaged CPU (ms)": next((k["cpu_ns"] for k in d["extra"]["kthreads"] if k["name"] == "khugepaged"), 0)
        / 1e6,
        "mm slots left on the list": kh["mm_slots"],
    }


HOT_COLD_UNITS = {
    "total access time (s)": ("total access time", "s"),
    "cycles per access": ("cycles per access", ""),
    "throughput (M accesses/s)": ("throughput", "M accesses/s"),
    "dTLB-load-misses": ("dTLB-load-misses", ""),
    "hot2 ranges collapsed": ("hot2 ranges collapsed", ""),
    "time until hot2 collapsed (s)": ("time from MADV_HUGEPAGE until hot2 is collapsed", "s"),
}

DESCRIBE = {
    "v1": "v1 (skip collapsed mms, cold mms to the tail, disabled mms at once)",
    "final": "final (cheap progress for PMD-mapped and table-less ranges, skip lazy-free, disabled mms at once)",
}


def hot_cold_table(base: dict[str, float], after: dict[str, float], variant: str, quick: bool) -> Table:
    rows = []
    for m, (name, unit) in HOT_COLD_UNITS.items():
        sb, sa = SEED_HOT_COLD.get(m, (None, None))
        rows.append(Row(name, unit, sb, sa, base[m], after[m]))
    size = 32 if quick else 128
    return Table(
        title=f"hot1 -> cold -> hot2 ({size} MiB each): how soon khugepaged serves hot2, baseline vs {variant}",
        rows=rows,
        before="baseline v6.18",
        after=DESCRIBE[variant],
    )


def census_table(base: dict[str, float], after: dict[str, float], variant: str) -> Table:
    # the seed's "after" figures are for cheap progress (v2+, our "final"); v1 published none
    ref = SEED_CENSUS if variant == "final" else {k: (v[0], None) for k, v in SEED_CENSUS.items()}
    rows = []
    for m in base:
        name, unit = m, ""
        if m.endswith(")") and "(" in m:
            name, unit = m[: m.rindex("(")].strip(), m[m.rindex("(") + 1 : -1]
        sb, sa = ref.get(m, (None, None))
        rows.append(Row(name, unit, sb, sa, base[m], after[m]))
    return Table(
        title=f"idle desktop census: khugepaged's first full scan, baseline vs {variant}",
        rows=rows,
        before="baseline v6.18",
        after=DESCRIBE[variant],
    )


def run(quick: bool = False, timeout: float | None = None) -> Outcome:
    """Both experiments with the baseline, v1 and final policies: six model runs."""
    results = {f"{kind} {v}": _run(kind, quick, v, timeout) for kind in ("hot_cold", "census") for v in VARIANTS}
    hot = {v: _hot2_metrics(results[f"hot_cold {v}"]) for v in VARIANTS}
    cen = {v: _census_metrics(results[f"census {v}"]) for v in VARIANTS}
    tables = [
        hot_cold_table(hot["baseline"], hot["v1"], "v1", quick),
        hot_cold_table(hot["baseline"], hot["final"], "final", quick),
        census_table(cen["baseline"], cen["final"], "final"),
        census_table(cen["baseline"], cen["v1"], "v1"),
    ]
    return Outcome(tables=tables, results=results, data={"hot2": hot, "census": cen, "quick": quick})


# ---- figures --------------------------------------------------------------------------

PROCS = ("hot1", "cold", "hot2")
PROC_COLOURS = {"hot1": "#2b6ca3", "cold": "#8c8c8c", "hot2": "#e6873c"}


def _series(r: dict) -> tuple[list[str], list[list[float]]]:
    s = r.get("series") or {}
    return list(s.get("columns") or []), list(s.get("rows") or [])


def _timeline(ax, r: dict, variant: str) -> bool:
    """AnonHugePages of hot1/cold/hot2 over time on `ax`; True when per-process columns
    (`AnonHugePages_kB[hot1]`) were there, False when it fell back to the system total and
    khugepaged's first..last collapse of each process."""
    cols, rows = _series(r)
    ts = [row[0] / 1e9 for row in rows]
    per_proc = all(f"AnonHugePages_kB[{p}]" in cols for p in PROCS)
    if per_proc:
        for p in PROCS:
            i = cols.index(f"AnonHugePages_kB[{p}]")
            ax.plot(ts, [row[i] / 1024 for row in rows], label=p, color=PROC_COLOURS[p], drawstyle="steps-post")
    else:
        if "AnonHugePages_kB" in cols:
            i = cols.index("AnonHugePages_kB")
            ax.plot(ts, [row[i] / 1024 for row in rows], label="all processes", color="#222", drawstyle="steps-post")
        mms = r["extra"]["khugepaged"]["mms"]
        top = max(ax.get_ylim()[1], 1)
        for k, p in enumerate(PROCS):
            m = mms.get(p, {})
            if m.get("first_collapse_ns") is None:
                continue
            t0, t1 = m["first_collapse_ns"] / 1e9, m["last_collapse_ns"] / 1e9
            y = top * (0.08 + 0.08 * k)
            ax.plot([t0, max(t1, t0 + 0.5)], [y, y], linewidth=5, color=PROC_COLOURS[p], label=f"{p}: collapses")
    ax.set_title(variant, fontsize=9)
    ax.grid(alpha=0.3)
    return per_proc


def figures(out: Outcome) -> list[Figure]:
    from thplab import plotting as P

    figs = []
    fig, axes = P.subplots(ncols=3, width=11, height=3.4, sharey=True)
    per_proc = True
    for ax, v in zip(axes, VARIANTS, strict=True):
        per_proc &= _timeline(ax, out.results[f"hot_cold {v}"], v)
        ax.set_xlabel("simulated time (s)")
    axes[0].set_ylabel("AnonHugePages (MiB)")
    axes[0].legend(fontsize=7, loc="lower right")
    figs.append(
        Figure(
            "AnonHugePages of hot1, cold and hot2 over time: baseline vs the seed's v1 and final policies",
            fig,
            (
                "Each process's memory in THPs as khugepaged collapses it."
                if per_proc
                else "This model build records no per-process AnonHugePages; the black line is the system "
                "total, the coloured bars span each process's first to last collapse."
            )
            + " The seed's point: with cold moved to the tail, hot2 is collapsed before cold.",
        )
    )

    cen = out.data["census"]
    fig, (a1, a2) = P.subplots(ncols=2, width=9.5, height=3.6)
    cats = ["seed (published)", "thplab"]
    for ax, metric, label in (
        (a1, "progress per full scan (MB)", "progress per full scan (MB)"),
        (a2, "full scan time (s)", "full scan time (s)"),
    ):
        seed_b, seed_final = SEED_CENSUS[metric]
        P.grouped_bars(
            ax,
            cats,
            [
                ("baseline", [seed_b, cen["baseline"][metric]], P.OURS_BEFORE),
                ("v1", [None, cen["v1"][metric]], P.EXTRA),
                ("final (cheap progress)", [seed_final, cen["final"][metric]], P.OURS_AFTER),
            ],
            label,
        )
        ax.set_title(label.split(" (")[0], fontsize=10)
    a1.legend(fontsize=7)
    figs.append(
        Figure(
            "khugepaged's full scan of an idle desktop: progress counted and time taken, published vs thplab",
            fig,
            "PMD-mapped and table-less ranges cost a full 512 pages of scan progress at baseline; with cheap "
            "progress (final) they cost one, so a full scan finishes sooner. The seed published no v1 figures.",
        )
    )
    return figs


EXPERIMENT = Experiment(
    seed="002",
    title=TITLE,
    run=run,
    figures=figures,
    summary="khugepaged walks its list of mms in order. The series moves cold mms to the tail, drops fully "
    "collapsed ones and (in its final form) counts PMD-mapped and table-less ranges as cheap progress, so "
    "hot memory is collapsed sooner and a full scan finishes faster.",
)


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    from thplab.seeds import print_tables

    ap = argparse.ArgumentParser(prog="python -m thplab.experiments.seed002", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the small variant (for tests)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    print_tables("002", TITLE, run(args.quick).tables, Console())
    print(f"\nhost time: {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
