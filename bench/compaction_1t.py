#!/usr/bin/env python3
"""Seed 004 at the seed's scale (1 TiB, 80 CPUs): each model run in its own process, with
host wall time, CPU time and peak RSS (os.wait4), then the seed-vs-thplab table.

    .venv/bin/python bench/compaction_1t.py            # 1 TiB (about 10 minutes of CPU)
    .venv/bin/python bench/compaction_1t.py --quick    # 8 GiB
    .venv/bin/python bench/compaction_1t.py --only a_vanilla,c_proactive
    .venv/bin/python bench/compaction_1t.py --jobs 2    # two runs side by side (~5 GiB each)

(`thplab seeds` now runs (a) and (b) through one shared prefix: bench/seed004_speed.py
times it that way.)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys
import tempfile
import time

from thplab.experiments import seed004

CHILD = """
import json, sys
from thplab import run
wl, machine, out = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
open(out, "w").write(run(wl, machine=machine).to_json())
"""


def run_child(wl: dict, machine: str, tmp: str, name: str) -> tuple[dict, dict]:
    from seed004_speed import timed_child

    wpath, opath = os.path.join(tmp, f"{name}.wl.json"), os.path.join(tmp, f"{name}.out.json")
    with open(wpath, "w") as fh:
        json.dump(wl, fh)
    res, st = timed_child(CHILD, [wpath, machine, opath], opath, name)
    return res, {
        "run": name,
        "wall_s": round(st["wall_s"], 1),
        "cpu_s": round(st["cpu_s"], 1),
        "peak_rss_mib": st["peak_rss_mib"],
        "sim_s": round(res["sim_time_ns"] / 1e9, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--only", help="comma-separated run names (a_vanilla, a_proactive, b_vanilla, b_proactive, c_proactive)"
    )
    ap.add_argument("--out", help="write rows, bench figures and results here (JSON)")
    ap.add_argument("--jobs", type=int, default=1, help="runs side by side")
    a = ap.parse_args()
    scale = "quick" if a.quick else "full"
    s = seed004.SCALES[scale]
    t0 = time.monotonic()
    boot = seed004.boot_memory(s["machine"])
    sz = seed004.sizes(s["machine"], s["java_heap"], boot)
    wls = seed004.workloads(scale, boot)
    names = a.only.split(",") if a.only else list(wls)
    results, bench = {}, []
    with tempfile.TemporaryDirectory() as tmp:

        def one(n: str) -> tuple[dict, dict]:
            print(f"running {n} on {s['machine']} ...", file=sys.stderr, flush=True)
            r, b = run_child(wls[n], s["machine"], tmp, n)
            print(f"  {b}", file=sys.stderr, flush=True)
            return r, b

        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
            for n, (r, b) in zip(names, ex.map(one, names), strict=True):
                results[n] = r
                bench.append(b)
    print(
        f"machine {s['machine']}: boot MemFree {boot['free'] >> 20} MiB; fragmenter {sz['frag'] >> 20} MiB, "
        f"free after fragmenting {sz['free_after_frag'] >> 20} MiB, hugepage benchmark asks for {sz['pool_request']} x 2 MiB, "
        f"Java heap {sz['java'] >> 20} MiB"
    )
    print()
    print(f"{'run':<12} {'wall s':>8} {'cpu s':>8} {'peak RSS MiB':>13} {'simulated s':>12}")
    for b in bench:
        print(f"{b['run']:<12} {b['wall_s']:>8} {b['cpu_s']:>8} {b['peak_rss_mib']:>13} {b['sim_s']:>12}")
    print(f"total wall {time.monotonic() - t0:.0f} s")
    rows = None
    if set(results) >= set(wls):
        from rich.console import Console
        from thplab.seeds import print_tables

        tables = seed004.tables(results, sz)
        rows = [r.to_dict() for t in tables for r in t.rows]
        print()
        print_tables("004", seed004.TITLE, tables, Console())
    if a.out:
        from thplab.atomic import write_atomic

        doc = {
            "bench": bench,
            "rows": rows,
            "sizes": sz,
            "results": {
                n: {k: r[k] for k in ("latency", "phases", "vmstat_delta", "extra", "fragmentation", "trace")}
                for n, r in results.items()
            },
        }
        write_atomic(a.out, json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
