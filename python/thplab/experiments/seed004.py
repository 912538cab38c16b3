"""Seed 004: Nitin Gupta, "mm: proactive compaction" (v5.9, commit facdaa917c).

The seed's benchmarks, run through the model at the seed's scale (1 TiB, 80 CPUs) or at a
quick scale for tests. Published figures are printed beside ours as reference values only:
they are never inputs and nothing is tuned towards them.

(a) Fragment memory the seed's way: a process allocates (writes) ~95 % of memory with base
    pages, then munmaps 3/4 of every 2 MiB region (offset 512K, length 1.5M: one
    munmap per region). Then allocate as many 2 MiB pages as possible and record each
    allocation's latency. The seed used a kernel driver; the kernel's own driver of that
    kind is the hugetlb pool: writing vm.nr_hugepages (a number larger than memory allows)
    allocates order-9 pages one at a time (set_max_huge_pages -> alloc_pool_huge_folio,
    GFP_HIGHUSER_MOVABLE | __GFP_COMP | __GFP_THISNODE | __GFP_RETRY_MAYFAIL: direct
    reclaim and synchronous direct compaction) until the first allocation fails. The
    latency recorded is each successful allocation (`latency.hugetlb_alloc`, with its
    empirical CDF for the figure).
    vanilla = vm.compaction_proactiveness 0; proactive = 20, written right after the
    fragmentation (as the seed's `sysctl -w`), then a 1 s pause before the benchmark.
(b) The Java heap: the same fragmentation, then a 700 GiB MADV_HUGEPAGE heap written page
    by page (-XX:+AlwaysPreTouch, single-threaded); elapsed and system time of the
    pre-touch, vanilla vs proactiveness 20. Quick scale: 70 % of memory.
(c) Back-off: memory filled with unmovable pages (kalloc of order-7 blocks, then kfree of
    the first three of each 2 MiB - "freeing the first 3/4 of each hugepage" of the seed's
    driver; kfree releases whole blocks, so order 7 stands in for 3/4 of an order-9 one),
    proactiveness 40, 100 s: proactive rounds cannot lower the fragmentation score, so
    kcompactd backs off for 500 ms << 6 = 32 s between rounds.

The bench workload runs as process 1 (CPU 1): process 0 is an idle placeholder on CPU 0,
where the engine places kcompactd0 (the kernel's kcompactd may run on any CPU of the node).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys

from thplab.experiments.contract import Experiment, Figure, Outcome, Row, Table

MIB = 1 << 20
GIB = 1 << 30

SCALES = {
    "full": {"machine": "1T,cpus=80", "java_heap": 700 * GIB},
    "quick": {"machine": "8G,cpus=4", "java_heap": None},  # None: 70 % of MemTotal
}

#: The seed's published figures (reference only).
SEED = {
    "a_latency_us": {  # percentile -> (vanilla, proactive)
        5: (7894, 2),
        10: (9496, 2),
        25: (12561, 3),
        30: (15295, 3),
        40: (18244, 3),
        50: (21229, 4),
        60: (27556, 4),
        75: (30147, 4),
        80: (31047, 4),
        90: (32859, 5),
        95: (33799, 429),
    },
    "a_hugepages": (383859, 384105),
    "a_fraction": (98, 98),
    "b_elapsed_s": (27 * 60 + 37.89, 3 * 60 + 19.62),
    "b_system_s": (1666.48, 194.58),
    "c_retry_s": 30,
}

BENCH_KNOBS = {
    "transparent_hugepage/enabled": "madvise",
    "transparent_hugepage/defrag": "madvise",
    "vm.compaction_proactiveness": "0",
}


def _align(b: int, a: int = 2 * MIB) -> int:
    return b // a * a


def boot_memory(machine: str) -> dict[str, int]:
    """MemTotal/MemFree (bytes) of the machine at boot: from its zone layout (the model's
    managed pages, equal to a run that does nothing: tests/test_seed004.py), or from such a
    run for an aged machine. At 1 TiB the run took 4.3 s of host time, most of it the
    host backing a 2 GiB frame array."""
    from thplab import _native
    from thplab import run as thplab_run

    pages = _native.boot_managed_pages(machine)
    if pages is not None:
        return {"total": pages * 4096, "free": pages * 4096}
    wl = {"name": "boot", "processes": [{"name": "p", "ops": [{"op": "sleep", "duration": "0"}]}]}
    mi = thplab_run(wl, machine=machine, knobs={"vm.compaction_proactiveness": "0"}).meminfo
    return {"total": mi["MemTotal"] * 1024, "free": mi["MemFree"] * 1024}


def sizes(machine: str, java_heap: int | None, boot: dict[str, int] | None = None) -> dict[str, int]:
    """Region sizes for a machine: the fragmenter holds 95 % of free memory (a quarter of it
    stays); the hugepage benchmark asks for more 2 MiB pages than the machine has."""
    boot = boot or boot_memory(machine)
    frag = _align(boot["free"] * 95 // 100)
    left = boot["free"] - frag // 4 - (frag // (2 * MIB)) * 4096
    return {
        "frag": frag,
        # (a) asks the hugetlb pool for more 2 MiB pages than the machine has
        "pool_request": boot["total"] // (2 * MIB) + 1,
        "free_after_frag": left,
        "java": java_heap if java_heap is not None else _align(boot["total"] * 70 // 100),
    }


def _fmt(b: int) -> str:
    return f"{b // MIB}M"


def _fragment_knobs(frag: int) -> dict[str, str]:
    """The fragmenter's munmaps cut a hole in each 2 MiB of one mapping: a VMA each (490 K
    at 1 TiB), past the default vm.max_map_count (65530), above which a munmap that splits
    a VMA fails with ENOMEM (vms_gather_munmap_vmas). The benchmark raises the limit, as a
    run of the seed's method at this scale must."""
    return {"vm.max_map_count": str(max(65530, frag // (2 * MIB) + 65530))}


def _fragment_ops(frag: int) -> list[dict]:
    return [
        {"op": "mmap", "name": "all", "size": _fmt(frag)},
        {"op": "write", "region": "all"},
        {"op": "munmap", "region": "all", "every": "2M", "offset": "512K", "length": "1536K"},
    ]


def _bench(name: str, ops: list[dict], knobs: dict | None = None, record: dict | None = None) -> dict:
    return {
        "name": name,
        "seed": 4,
        "knobs": {**BENCH_KNOBS, **(knobs or {})},
        "processes": [
            {"name": "idle", "ops": [{"op": "sleep", "duration": "0"}]},
            {"name": "bench", "ops": ops},
        ],
        "record": record or {},
    }


def workload_a(sz: dict[str, int], proactiveness: int) -> dict:
    ops = [
        *_fragment_ops(sz["frag"]),
        {"op": "set", "knob": "vm.compaction_proactiveness", "value": str(proactiveness)},
        {"op": "sleep", "duration": "1s"},
        {"op": "phase", "name": "alloc"},
        {"op": "set", "knob": "vm.nr_hugepages", "value": str(sz["pool_request"])},
        {"op": "phase", "name": "done"},
    ]
    return _bench(f"seed004-a-p{proactiveness}", ops, _fragment_knobs(sz["frag"]), record={"fault_latency": True})


def workload_b(sz: dict[str, int], proactiveness: int) -> dict:
    ops = [
        *_fragment_ops(sz["frag"]),
        {"op": "set", "knob": "vm.compaction_proactiveness", "value": str(proactiveness)},
        {"op": "sleep", "duration": "1s"},
        {"op": "phase", "name": "java"},
        {"op": "mmap", "name": "heap", "size": _fmt(sz["java"])},
        {"op": "madvise", "region": "heap", "advice": "hugepage"},
        {"op": "write", "region": "heap", "bytes": 8, "data": 1},
        {"op": "phase", "name": "done"},
    ]
    return _bench(f"seed004-b-p{proactiveness}", ops, _fragment_knobs(sz["frag"]))


def workload_c(sz: dict[str, int], proactiveness: int = 40, duration: str = "100s") -> dict:
    ops = [
        {"op": "kalloc", "name": "drv", "size": _fmt(sz["frag"]), "order": 7},
        {"op": "kfree", "region": "drv", "every": "2M", "offset": "0", "length": "1536K"},
        {"op": "set", "knob": "vm.compaction_proactiveness", "value": str(proactiveness)},
        {"op": "phase", "name": "idle"},
        {"op": "sleep", "duration": duration},
    ]
    return _bench(f"seed004-c-p{proactiveness}", ops, record={"trace": ["thplab_proactive_round"]})


def workloads(scale: str, boot: dict[str, int] | None = None) -> dict[str, dict]:
    s = SCALES[scale]
    sz = sizes(s["machine"], s["java_heap"], boot)
    return {
        "a_vanilla": workload_a(sz, 0),
        "a_proactive": workload_a(sz, 20),
        "b_vanilla": workload_b(sz, 0),
        "b_proactive": workload_b(sz, 20),
        "c_proactive": workload_c(sz, 40),
    }


def run_workload(wl: dict, machine: str) -> dict:
    from thplab import run as thplab_run

    return thplab_run(wl, machine=machine).raw


# ---------------------------------------------------------------------------------------------
# metrics


def _phase(r: dict, name: str) -> dict:
    return next(p for p in r["phases"] if p["name"] == f"bench:{name}")


def metrics_a(r: dict, sz: dict[str, int]) -> dict[str, float]:
    lat = r["latency"].get("hugetlb_alloc", {}).get("ns", {})
    ph = _phase(r, "alloc")["vmstat_delta"]
    got = ph.get("htlb_buddy_alloc_success", 0)
    m = {f"p{p:02d}": lat.get(f"p{p:02d}", 0) / 1000 for p in SEED["a_latency_us"]}
    m["hugepages"] = got
    m["fraction"] = 100.0 * got * 2 * MIB / sz["free_after_frag"]
    m["compact_stall"] = ph.get("compact_stall", 0)
    m["kcompactd_cpu_s"] = next(k["cpu_ns"] for k in r["extra"]["kthreads"] if k["name"] == "kcompactd0") / 1e9
    return m


def metrics_b(r: dict) -> dict[str, float]:
    p = _phase(r, "java")
    d = p["vmstat_delta"]
    alloc, fb = d.get("thp_fault_alloc", 0), d.get("thp_fault_fallback", 0)
    return {
        "elapsed_s": (p["end_ns"] - p["start_ns"]) / 1e9,
        "system_s": p["sys_ns"] / 1e9,
        "thp_fraction": 100.0 * alloc / max(1, alloc + fb),
        "compact_stall": d.get("compact_stall", 0),
        "kcompactd_cpu_s": next(k["cpu_ns"] for k in r["extra"]["kthreads"] if k["name"] == "kcompactd0") / 1e9,
    }


def metrics_c(r: dict) -> dict[str, float]:
    rounds = [e for e in r["trace"] if e.get("event") == "thplab_proactive_round"]
    starts = [e["t_ns"] / 1e9 for e in rounds]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    kc = r["extra"]["kcompactd"][0]
    d = _phase(r, "idle")["vmstat_delta"]
    return {
        "rounds": len(rounds),
        "backoffs": kc["proactive_backoffs"],
        "retry_s": sum(gaps) / len(gaps) if gaps else float("nan"),
        "min_retry_s": min(gaps) if gaps else float("nan"),
        "score_drop": sum(e["prev_score"] - e["score"] for e in rounds),
        "pgmigrate_success": d.get("pgmigrate_success", 0),
        "compact_daemon_migrate_scanned": d.get("compact_daemon_migrate_scanned", 0),
    }


TITLES = {
    "a": "(a) hugepage allocation after fragmentation: latency of each 2 MiB allocation (vm.nr_hugepages)",
    "b": "(b) Java heap pre-touch (-XX:+AlwaysPreTouch) after fragmentation",
    "c": "(c) back-off: unmovable memory that compaction cannot improve",
}


def tables(results: dict[str, dict], sz: dict[str, int]) -> list[Table]:
    a0, a1 = metrics_a(results["a_vanilla"], sz), metrics_a(results["a_proactive"], sz)
    ra = [
        Row(f"alloc latency p{p}", "us", sb, sa, a0[f"p{p:02d}"], a1[f"p{p:02d}"])
        for p, (sb, sa) in SEED["a_latency_us"].items()
    ]
    h0, h1 = a0["hugepages"], a1["hugepages"]
    ra.append(Row("hugepages allocated", "", *SEED["a_hugepages"], h0, h1, check=abs(h1 - h0) <= 0.02 * max(h0, 1)))
    fa, fb = SEED["a_fraction"]
    ra.append(
        Row(
            "free memory as hugepages",
            "%",
            fa,
            fb,
            round(a0["fraction"], 1),
            round(a1["fraction"], 1),
            check=abs(a1["fraction"] - a0["fraction"]) < 2,
        )
    )
    ra.append(Row("compact_stall", "", None, None, a0["compact_stall"], a1["compact_stall"]))
    ra.append(Row("kcompactd CPU", "s", None, None, round(a0["kcompactd_cpu_s"], 3), round(a1["kcompactd_cpu_s"], 3)))
    b0, b1 = metrics_b(results["b_vanilla"]), metrics_b(results["b_proactive"])
    rb = [
        Row("pre-touch elapsed", "s", *SEED["b_elapsed_s"], round(b0["elapsed_s"], 2), round(b1["elapsed_s"], 2)),
        Row("pre-touch system", "s", *SEED["b_system_s"], round(b0["system_s"], 2), round(b1["system_s"], 2)),
        Row("heap faults as THP", "%", None, None, round(b0["thp_fraction"], 1), round(b1["thp_fraction"], 1)),
        Row("compact_stall", "", None, None, b0["compact_stall"], b1["compact_stall"]),
        Row("kcompactd CPU", "s", None, None, round(b0["kcompactd_cpu_s"], 2), round(b1["kcompactd_cpu_s"], 2)),
    ]
    c = metrics_c(results["c_proactive"])
    ok = c["retry_s"] == c["retry_s"] and abs(c["retry_s"] - SEED["c_retry_s"]) / SEED["c_retry_s"] < 0.25
    rc = [
        Row("time between proactive retries", "s", None, SEED["c_retry_s"], None, round(c["retry_s"], 2), check=ok),
        Row("proactive rounds in 100 s", "", None, None, None, c["rounds"]),
        Row("rounds that backed off", "", None, None, None, c["backoffs"], check=c["rounds"] == c["backoffs"]),
        Row("fragmentation score drop over all rounds", "", None, 0, None, c["score_drop"], check=c["score_drop"] == 0),
        Row("pages migrated", "", None, 0, None, c["pgmigrate_success"], check=c["pgmigrate_success"] == 0),
    ]
    both = {"before": "vanilla (proactiveness 0)", "after": "proactive (proactiveness 20)"}
    return [
        Table(TITLES["a"], ra, **both),
        Table(TITLES["b"], rb, **both),
        Table(
            TITLES["c"],
            rc,
            before="(not applicable)",
            after="proactiveness 40: the seed's statement, and ours",
            note="The seed states that proactive compaction backs off (retries after about 30 s) when a round "
            "cannot lower the fragmentation score; 'matches' means ours does, within 25 %.",
        ),
    ]


TITLE = "Nitin Gupta 2020: proactive compaction"


def run_all(wls: dict[str, dict], machine: str, workers: int, progress=None) -> dict[str, dict]:
    """The five runs' raw results: (a) and (b) through one shared prefix (`workers`
    continuations at a time), (c) beside the prefix when workers > 1."""
    import concurrent.futures as cf

    from thplab.api import run_shared

    # the longest continuation first ((b) vanilla: hundreds of thousands of direct
    # compactions), so that the others fill the second worker beside it
    shared = sorted((n for n in wls if n != "c_proactive"), key=lambda n: n != "b_vanilla")
    if progress:
        progress(", ".join(shared) + " (shared prefix)")
    results: dict[str, dict] = {}
    with cf.ThreadPoolExecutor(max_workers=2) as ex:
        ab = ex.submit(run_shared, [wls[n] for n in shared], machine=machine, threads=workers)
        if workers <= 1:
            ab.result()
        c = ex.submit(run_workload, wls["c_proactive"], machine)
        for n, r in zip(shared, ab.result(), strict=True):
            results[n] = r.raw
        if progress:
            progress("c_proactive")
        results["c_proactive"] = c.result()
    return results


def run(quick: bool = False, boot: dict[str, int] | None = None, progress=None, workers: int | None = None) -> Outcome:
    """Run seed 004's experiments through the model; rows of seed vs thplab figures.
    Runs (a) and (b) share their fragmentation (every op before the proactiveness write):
    it runs once and the four runs continue from copies of its state, `workers` at a time
    (at the seed's scale each state holds ~5 GiB of host memory: the prefix and two
    continuations at once); (c) runs beside the prefix. Results are those of separate
    runs: they do not depend on the order, the sharing or the parallelism."""
    scale = "quick" if quick else "full"
    s = SCALES[scale]
    boot = boot or boot_memory(s["machine"])
    sz = sizes(s["machine"], s["java_heap"], boot)
    wls = workloads(scale, boot)
    if workers is None:
        workers = 1 if quick else min(2, os.cpu_count() or 1)
    results = run_all(wls, s["machine"], workers, progress)
    return Outcome(tables=tables(results, sz), results=results, data={"sizes": sz, "machine": s["machine"]})


def figures(out: Outcome) -> list[Figure]:
    from thplab import plotting as P

    res = out.data
    figs = []
    # (a) allocation latency CDF, log x; the seed's percentiles as markers
    fig, ax = P.subplots(width=8, height=3.8)
    seed_p = list(SEED["a_latency_us"])
    for i, (label, key, colour) in enumerate(
        (("vanilla (proactiveness 0)", "a_vanilla", P.SEED_AFTER), ("proactive (20)", "a_proactive", P.OURS_AFTER))
    ):
        xs, ps = P.latency_cdf_us(out.results[key]["latency"].get("hugetlb_alloc", {}))
        P.step_cdf(ax, xs, ps, f"thplab, {label}", colour)
        ax.scatter(
            [SEED["a_latency_us"][p][i] for p in seed_p],
            seed_p,
            marker="x" if i == 0 else "+",
            s=36,
            color=colour,
            label=f"seed (published), {label}",
            zorder=3,
        )
    ax.set_xscale("log")
    ax.set_xlabel("latency of one 2 MiB allocation (µs, log scale)")
    ax.set_ylabel("allocations at or below (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("hugepage allocation latency after fragmentation (CDF)", fontsize=10)
    figs.append(
        Figure(
            f"2 MiB allocation latency (vm.nr_hugepages), vanilla vs proactive compaction, {res['machine']}: "
            "thplab CDF, seed percentiles",
            fig,
            "Lines: thplab's empirical CDF of every pool allocation's latency (exact at each step's corner); "
            "markers: the seed's published percentiles. With proactive compaction most allocations find a "
            "free 2 MiB block at once.",
        )
    )
    # (b) Java pre-touch
    b0, b1 = metrics_b(out.results["b_vanilla"]), metrics_b(out.results["b_proactive"])
    fig, ax = P.subplots(width=7.5, height=3.6)
    P.grouped_bars(
        ax,
        ["elapsed", "system"],
        [
            ("seed, vanilla", [SEED["b_elapsed_s"][0], SEED["b_system_s"][0]], P.SEED_BEFORE),
            ("seed, proactive", [SEED["b_elapsed_s"][1], SEED["b_system_s"][1]], P.SEED_AFTER),
            ("thplab, vanilla", [b0["elapsed_s"], b0["system_s"]], P.OURS_BEFORE),
            ("thplab, proactive", [b1["elapsed_s"], b1["system_s"]], P.OURS_AFTER),
        ],
        "pre-touch time (s)",
    )
    ax.legend(fontsize=7, ncols=2)
    heap = res["sizes"]["java"] / GIB
    ax.set_title(f"Java heap pre-touch ({heap:.0f} GiB, single thread)", fontsize=10)
    figs.append(
        Figure(
            "Java heap pre-touch time, vanilla vs proactive compaction: published (700 GiB heap) vs thplab",
            fig,
            "Elapsed and system time of writing every page of a MADV_HUGEPAGE heap after the same fragmentation. "
            + ("At --quick the heap is smaller than the seed's, so compare the change." if heap < 700 else ""),
        )
    )
    # (c) back-off timeline
    c = out.results["c_proactive"]
    rounds = [e for e in c.get("trace", []) if e.get("event") == "thplab_proactive_round"]
    if rounds:
        fig, ax = P.subplots(width=8, height=3.6)
        ts = [e["t_ns"] / 1e9 for e in rounds]
        ax.vlines(
            ts, 0, [e["prev_score"] for e in rounds], color=P.OURS_AFTER, linewidth=2, label="thplab: proactive round"
        )
        ax.scatter(ts, [e["score"] for e in rounds], color=P.OURS_AFTER, zorder=3, label="score after the round")
        end = c["sim_time_ns"] / 1e9
        seed_ts = [ts[0] + k * SEED["c_retry_s"] for k in range(int((end - ts[0]) // SEED["c_retry_s"]) + 1)]
        ax.vlines(
            seed_ts, 0, 100, color=P.SEED_AFTER, linestyles="dashed", linewidth=1, label="seed: a retry every ~30 s"
        )
        for t0, t1 in itertools.pairwise(ts):
            ax.annotate(f"{t1 - t0:.1f} s", ((t0 + t1) / 2, 8), ha="center", fontsize=7)
        ax.set_xlim(-0.02 * end, end * 1.02)
        ax.set_ylim(0, 105)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("fragmentation score")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=3, frameon=False)
        ax.grid(alpha=0.3)
        ax.set_title("kcompactd proactive rounds when compaction cannot help (proactiveness 40)", fontsize=10)
        figs.append(
            Figure(
                "Proactive compaction back-off: when the rounds run and the fragmentation score they leave",
                fig,
                "Memory filled with unmovable pages: no round lowers the score, so kcompactd defers the next "
                "one (500 ms << 6 = 32 s); the dashed lines are the seed's ~30 s.",
            )
        )
    return figs


EXPERIMENT = Experiment(
    seed="004",
    title=TITLE,
    run=run,
    figures=figures,
    summary="kcompactd compacts memory in the background while a node's fragmentation score is above a "
    "threshold set by vm.compaction_proactiveness, so THP faults find free 2 MiB blocks. Run at the seed's "
    "scale (a 1 TiB machine, 80 CPUs) or, with --quick, an 8 GiB one.",
)


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    from thplab.seeds import print_tables

    ap = argparse.ArgumentParser(prog="python -m thplab.experiments.seed004", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="quick scale (8 GiB) instead of the seed's 1 TiB")
    ap.add_argument("--json", help="also write the rows here")
    a = ap.parse_args(argv)
    out = run(quick=a.quick, progress=lambda n: print(f"running {n} ...", file=sys.stderr, flush=True))
    print_tables("004", TITLE, out.tables, Console())
    if a.json:
        from thplab.atomic import write_atomic

        write_atomic(a.json, json.dumps([r.to_dict() for r in out.rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
