#!/usr/bin/env python3
"""An idle 1 TiB, 80-CPU machine simulated for 24 h of kernel-thread timers (khugepaged,
kcompactd, kswapd): host wall time and peak host memory (ru_maxrss of a child process)."""

import json
import resource
import subprocess
import sys
import time

QUICK = "--quick" in sys.argv
MACHINE = "16G" if QUICK else "1T,cpus=80"

CHILD = r"""
import json, sys, thplab
w = {"name": "idle-day", "processes": [{"name": "idle", "ops": [
    {"op": "mmap", "name": "b", "size": "64M"}, {"op": "madvise", "region": "b", "advice": "hugepage"},
    {"op": "write", "region": "b", "every": "2M", "length": "4K"}, {"op": "sleep", "duration": "24h"}]}]}
r = thplab.run(w, machine=sys.argv[1])
print(json.dumps({"sim_s": r.raw["sim_time_ns"] / 1e9, "kthreads": r.raw["extra"]["kthreads"]}))
"""

t = time.perf_counter()
out = subprocess.run([sys.executable, "-c", CHILD, MACHINE], capture_output=True, text=True, check=True).stdout
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
d = json.loads(out)
runs = ", ".join(f"{k['name']} {k['runs']} runs" for k in d["kthreads"])
print(
    f"idle {MACHINE}: {d['sim_s'] / 3600:.1f} h simulated in {wall:.1f} s host, peak host memory {peak:.0f} MiB; {runs}"
)
