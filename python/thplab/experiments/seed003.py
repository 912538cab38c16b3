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

# full model results of the last run, by label (the seeds report plots and saves them)
LAST_RESULTS: dict[str, dict] = {}


def measure(w: dict, knobs: dict, label: str | None = None) -> dict:
    """Run the model and derive the seed's metrics."""
    from thplab.api import run as trun

    t0 = time.perf_counter()
    r = trun(w, knobs=knobs)
    host_s = time.perf_counter() - t0
    d = r.raw
    if label:
        LAST_RESULTS[label] = d
    sim_s = d["sim_time_ns"] / 1e9
    dv = d.get("vmstat_delta") or {}
    ex = d.get("extra") or {}
    # vm-scalability's throughput: the sum of each process's bytes written per second
    thr = 0.0
    for p, spec in zip(d["processes"], w["processes"]):
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
    }


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


def run(quick: bool = False, _meta: dict | None = None) -> list[dict]:
    """The seed-003 table: one row per metric with the seed's published values (reference
    only) and the model's, before (mainline) and after (the seed's policy)."""
    w = workload(quick)
    b = measure(w, BEFORE_KNOBS, "mainline (before)")
    a = measure(w, AFTER_KNOBS, "PMD swap entries (after)")
    if _meta is not None:
        _meta.update({"before": b, "after": a, "machine": w["machine"]})
    rows = []
    for name, (sb, sa, sd) in SEED.items():
        tb, ta = b[name], a[name]
        td = _delta(name, tb, ta)
        seed_dir = (sa > sb) - (sa < sb)
        model_dir = (ta > tb) - (ta < tb)
        rows.append(
            {
                "metric": name,
                "seed_before": sb,
                "seed_after": sa,
                "seed_delta": sd,
                "thplab_before": tb,
                "thplab_after": ta,
                "thplab_delta": _fmt_delta(name, td),
                "same_direction": seed_dir == model_dir,
            }
        )
    return rows


def _num(v) -> str:
    if isinstance(v, float):
        return f"{v:,.2f}" if abs(v) < 1000 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def print_table(rows: list[dict], meta: dict, file=None) -> None:
    out = file or sys.stdout
    cols = [
        "metric",
        "seed_before",
        "seed_after",
        "seed_delta",
        "thplab_before",
        "thplab_after",
        "thplab_delta",
        "same_direction",
    ]
    cells = [[_num(r[c]) for c in cols] for r in rows]
    widths = [max(len(c), *(len(x[i]) for x in cells)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cols)), file=out)
    for x in cells:
        print("  ".join(v.ljust(widths[i]) if i == 0 else v.rjust(widths[i]) for i, v in enumerate(x)), file=out)
    b, a = meta["before"], meta["after"]
    print(
        f"machine {meta['machine']}; seed columns: the cover letter's figures (reference only, not model inputs)",
        file=out,
    )
    print(
        f"simulated time: before {b['_sim_s']:.3f} s, after {a['_sim_s']:.3f} s; host time: before {b['_host_s']:.1f} s, after {a['_host_s']:.1f} s",
        file=out,
    )
    print(f"before: {b['_counters']}", file=out)
    print(f"after:  {a['_counters']}", file=out)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    meta: dict = {}
    t0 = time.perf_counter()
    rows = run(quick, _meta=meta)
    print_table(rows, meta)
    print(f"total host time {time.perf_counter() - t0:.1f} s ({'quick' if quick else 'full'})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
