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

__all__ = [
    "SEED_CENSUS",
    "SEED_HOT_COLD",
    "VARIANTS",
    "census_workload",
    "format_table",
    "hot_cold_workload",
    "main",
    "run",
    "run_census",
    "run_hot_cold",
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


_CACHE: dict[tuple[str, bool, str], Any] = {}


TITLE = "Vernon Yang 2025: khugepaged scan prioritisation"

# full model results of the last run, by label (the seeds report plots and saves them)
LAST_RESULTS: dict[str, dict] = {}


def _run(kind: str, quick: bool, variant: str, timeout: float | None):
    """thplab.run of one experiment variant; deterministic, so each is run once."""
    import thplab

    key = (kind, quick, variant)
    if key not in _CACHE:
        w = hot_cold_workload(quick) if kind == "hot_cold" else census_workload(quick)
        _CACHE[key] = thplab.run(w, knobs=VARIANTS[variant], timeout=timeout)
    LAST_RESULTS[f"{kind} {variant}"] = _CACHE[key].raw
    return _CACHE[key]


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


def _hot2_metrics(res) -> dict[str, float]:
    d = res.raw
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


def _delta(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a != a or b != b or a == 0:
        return None
    return (b - a) / a * 100.0


def _row(metric: str, seed: tuple[float | None, float | None] | None, before: float, after: float) -> dict[str, Any]:
    sb, sa = seed if seed else (None, None)
    sd, td = _delta(sb, sa), _delta(before, after)
    same = None
    if sd is not None and td is not None:
        same = (sd > 0) == (td > 0) if abs(td) > 1e-9 else False
    return {
        "metric": metric,
        "seed before": sb,
        "seed after": sa,
        "seed delta %": sd,
        "thplab before": before,
        "thplab after": after,
        "thplab delta %": td,
        "same direction?": same,
    }


def run_hot_cold(quick: bool = False, after: str = "v1", timeout: float | None = None) -> list[dict[str, Any]]:
    """Run experiment (a) with the baseline and the `after` variant; returns the table rows."""
    b = _hot2_metrics(_run("hot_cold", quick, "baseline", timeout))
    a = _hot2_metrics(_run("hot_cold", quick, after, timeout))
    return [_row(m, SEED_HOT_COLD.get(m), b[m], a[m]) for m in b]


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


def _census_metrics(res) -> dict[str, float]:
    d = res.raw
    kh = d["extra"]["khugepaged"]
    # the census: the first full scan that walked memory and ended once every process
    # had set up (SETTLE_NS); passes before it only saw processes registering
    log = [f for f in kh["full_scan_log"] if f["end_ns"] >= SETTLE_NS and f["results"]]
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


def run_census(quick: bool = False, after: str = "final", timeout: float | None = None) -> list[dict[str, Any]]:
    """Run experiment (b) with the baseline and the `after` variant; returns the table rows."""
    b = _census_metrics(_run("census", quick, "baseline", timeout))
    a = _census_metrics(_run("census", quick, after, timeout))
    # the seed's "after" figures are for cheap progress (v2); v1 published none
    ref = SEED_CENSUS if after == "final" else {k: (v[0], None) for k, v in SEED_CENSUS.items()}
    return [_row(m, ref.get(m), b[m], a[m]) for m in b]


def run(quick: bool = False, timeout: float | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every seed-002 table: {title: rows}."""
    return {
        "hot1 -> cold -> hot2: hot2, baseline vs v1 (skip collapsed, cold to tail, disabled next)": run_hot_cold(
            quick, "v1", timeout
        ),
        "hot1 -> cold -> hot2: hot2, baseline vs final (cheap progress, skip lazy-free, disabled next)": run_hot_cold(
            quick, "final", timeout
        ),
        "desktop census: first full scan, baseline vs final (cheap progress)": run_census(quick, "final", timeout),
        "desktop census: first full scan, baseline vs v1 (skip collapsed)": run_census(quick, "v1", timeout),
    }


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        if v != v:
            return "n/a"
        if abs(v) >= 1e5:
            return f"{v:,.0f}"
        return f"{v:.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def format_table(rows: list[dict[str, Any]]) -> str:
    cols = list(rows[0].keys()) if rows else []
    cells = [[_fmt(r[c]) for c in cols] for r in rows]
    widths = [max(len(c), *(len(x[i]) for x in cells)) for i, c in enumerate(cols)]
    line = lambda xs: (
        "| " + " | ".join(x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in enumerate(zip(xs, widths))) + " |"
    )
    out = [line(cols), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(x) for x in cells]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m thplab.experiments.seed002", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the small variant (for tests)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    for title, rows in run(args.quick).items():
        print(f"\n{title}\n")
        print(format_table(rows))
    print(f"\nhost time: {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
