#!/usr/bin/env python3
"""Host speed of seed 004's model runs (a target, not a test): wall time, CPU time and peak
RSS of the five runs as `thplab seeds --only 004` does them (runs (a) and (b) share their
fragmentation prefix: thplab.api.run_shared), or with --separate each run in its own process
(the way before the prefix was shared). Each mode runs in a child process (os.wait4).
Target: <= 30 s wall at the seed's scale (1 TiB, 80 CPUs) on a 2-core host.

    .venv/bin/python bench/seed004_speed.py                          # 1 TiB, shared prefix
    .venv/bin/python bench/seed004_speed.py --separate --jobs 2      # 1 TiB, five separate runs
    .venv/bin/python bench/seed004_speed.py --machine 128G,cpus=80 --heap 90G   # a smaller scale
    .venv/bin/python bench/seed004_speed.py --quick --check          # and: shared == separate?

At 1 TiB each model state holds ~5 GiB of host memory (shared: the prefix and two
continuations at once); wrap 1 TiB runs in `flock /tmp/thplab-helpers-live.lock`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from thplab.experiments import seed004

CHILD = """
import json, sys, time, resource
from thplab.api import run
from thplab.experiments import seed004
spec = json.load(open(sys.argv[1]))
wls, machine, mode = spec["wls"], spec["machine"], spec["mode"]
out, times = {}, []
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
if mode == "shared":
    # as `thplab seeds` runs them: seed004.run_all()
    t0, c0 = time.monotonic(), cpu()
    out = seed004.run_all(wls, machine, spec["jobs"])
    times.append(("all five", time.monotonic() - t0, cpu() - c0))
    rest = []
else:
    rest = list(wls)
for n in rest:
    t0, c0 = time.monotonic(), cpu()
    out[n] = run(wls[n], machine=machine).raw
    times.append((n, time.monotonic() - t0, cpu() - c0))
json.dump({"results": out, "times": times}, open(sys.argv[2], "w"))
"""


def timed_child(code: str, args: list[str], out: str, tag: str) -> tuple[dict, dict]:
    """Run `python -c code *args` in a child process that writes JSON to `out`: (that
    JSON, {wall_s, cpu_s, peak_rss_mib} of the child, from os.wait4)."""
    t0 = time.monotonic()
    # as `make seeds` runs it: every malloc arena in transparent huge pages
    env = {**os.environ, "GLIBC_TUNABLES": os.environ.get("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")}
    p = subprocess.Popen([sys.executable, "-c", code, *args], env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if status != 0:
        raise SystemExit(f"{tag}: model run failed (status {status})")
    with open(out) as fh:
        doc = json.load(fh)
    return doc, {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mib": ru.ru_maxrss // 1024}


def child(spec: dict, tmp: str, tag: str) -> tuple[dict, dict]:
    sp, op = os.path.join(tmp, f"{tag}.spec.json"), os.path.join(tmp, f"{tag}.out.json")
    with open(sp, "w") as fh:
        json.dump(spec, fh)
    return timed_child(CHILD, [sp, op], op, tag)


def size(s: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="seed 004's quick scale (8 GiB)")
    ap.add_argument("--machine", help="another machine (e.g. 128G,cpus=80); with --heap")
    ap.add_argument("--heap", help="Java heap for --machine (default: 70 %% of memory)")
    ap.add_argument("--separate", action="store_true", help="five separate runs (no shared prefix)")
    ap.add_argument("--jobs", type=int, default=2, help="runs (shared: continuations) side by side")
    ap.add_argument("--check", action="store_true", help="also run the other mode; results must be identical")
    a = ap.parse_args()
    if a.machine:
        machine, heap = a.machine, size(a.heap) if a.heap else None
    else:
        s = seed004.SCALES["quick" if a.quick else "full"]
        machine, heap = s["machine"], s["java_heap"]
    boot = seed004.boot_memory(machine)
    sz = seed004.sizes(machine, heap, boot)
    wls = {
        "a_vanilla": seed004.workload_a(sz, 0),
        "a_proactive": seed004.workload_a(sz, 20),
        "b_vanilla": seed004.workload_b(sz, 0),
        "b_proactive": seed004.workload_b(sz, 20),
        "c_proactive": seed004.workload_c(sz, 40),
    }
    modes = ["separate" if a.separate else "shared"]
    if a.check:
        modes.append("shared" if a.separate else "separate")
    docs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            if mode == "separate" and a.jobs > 1:
                # the runs side by side, one process each (as seed004.run() did before)
                import concurrent.futures as cf

                def one(n: str, mode: str = mode) -> tuple[dict, dict]:
                    return child({"wls": {n: wls[n]}, "machine": machine, "mode": mode, "jobs": 1}, tmp, n)

                t0 = time.monotonic()
                with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
                    parts = dict(zip(wls, ex.map(one, wls), strict=True))
                doc = {"results": {}, "times": []}
                cpu, rss = 0.0, 0
                for n, (d, b) in parts.items():
                    doc["results"].update(d["results"])
                    doc["times"].append((n, b["wall_s"], b["cpu_s"]))
                    cpu, rss = cpu + b["cpu_s"], max(rss, b["peak_rss_mib"])
                tot = {"wall_s": time.monotonic() - t0, "cpu_s": cpu, "peak_rss_mib": rss}
            else:
                doc, tot = child({"wls": wls, "machine": machine, "mode": mode, "jobs": a.jobs}, tmp, mode)
            docs[mode] = doc
            print(f"seed 004 on {machine} ({mode}, {a.jobs} at a time):")
            print(f"  {'run':<14} {'wall s':>8} {'cpu s':>8}")
            for n, w, c in doc["times"]:
                print(f"  {n:<14} {w:>8.1f} {c:>8.1f}")
            print(
                f"  {'total':<14} {tot['wall_s']:>8.1f} {tot['cpu_s']:>8.1f}   peak RSS {tot['peak_rss_mib']} MiB"
                + ("   (target at 1 TiB: 30 s wall)" if machine.startswith("1T") else "")
            )
    if a.check:
        same = all(
            json.dumps(docs["shared"]["results"][n], sort_keys=True)
            == json.dumps(docs["separate"]["results"][n], sort_keys=True)
            for n in wls
        )
        print("shared-prefix results identical to separate runs:", "yes" if same else "NO")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
