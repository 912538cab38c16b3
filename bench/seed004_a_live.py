"""Seed 004 (a) on the live kernel, sized so the host's other tenants keep memory.

The live runner refuses a workload whose peak plus hugetlb pool exceeds a share of
MemAvailable (it adds the pool to the fragmenter's peak, although the pool is written after
the munmap). This script does the same steps by hand: fragment F bytes (write every 4 KiB
page, then munmap offset 512K length 1536K of every 2 MiB), vm.compaction_proactiveness=0,
1 s pause, then write vm.nr_hugepages = P and report what the kernel got, the vmstat deltas
and (with --trace) a summary of the mm_compaction tracepoints. Everything is restored
(nr_hugepages, proactiveness, tracing, the mapping). Run it as root under
`flock /tmp/thplab-helpers-live.lock`.

    python3 bench/seed004_a_live.py --frag 12G --pool 9G [--trace] [--kpageflags] [--out R.json]
    python3 bench/seed004_a_live.py --auto 0.88 --leave 2G --drop-caches --trace  # sized from MemAvailable

With --workload W.json it only writes the same workload for the model (run it with
`target/release/examples/runwl W.json MACHINE` or `thplab run W.json --machine MACHINE`).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import signal
import sys
import time
from collections import Counter

MIB = 1 << 20
GIB = 1 << 30
TR = "/sys/kernel/tracing"
EVENTS = [
    "compaction/mm_compaction_begin",
    "compaction/mm_compaction_end",
    "compaction/mm_compaction_deferred",
    "compaction/mm_compaction_defer_compaction",
    "compaction/mm_compaction_try_to_compact_pages",
    "oom/compact_retry",
    "vmscan/mm_vmscan_kswapd_wake",
    "vmscan/mm_vmscan_kswapd_sleep",
    "compaction/mm_compaction_wakeup_kcompactd",
    "compaction/mm_compaction_kcompactd_wake",
]
VMSTAT = [
    "htlb_buddy_alloc_success",
    "htlb_buddy_alloc_fail",
    "compact_stall",
    "compact_fail",
    "compact_success",
    "compact_migrate_scanned",
    "compact_free_scanned",
    "compact_isolated",
    "compact_daemon_wake",
    "allocstall_movable",
    "pgsteal_direct",
    "pgscan_direct",
]


def size(s: str) -> int:
    m = re.fullmatch(r"(\d+)([KMG]?)", s)
    if not m:
        raise SystemExit(f"bad size {s!r}")
    return int(m.group(1)) * {"": 1, "K": 1024, "M": MIB, "G": GIB}[m.group(2)]


def rd(p: str) -> str:
    with open(p) as f:
        return f.read()


def wr(p: str, v: str) -> None:
    with open(p, "w") as f:
        f.write(v)


def vmstat() -> dict[str, int]:
    return {k: int(v) for k, v in (ln.split() for ln in rd("/proc/vmstat").splitlines())}


def meminfo() -> dict[str, int]:
    return {ln.split(":")[0]: int(ln.split()[1]) * 1024 for ln in rd("/proc/meminfo").splitlines()}


def workload(frag: int, pool_pages: int) -> dict:
    return {
        "name": "seed004-a-p0-live",
        "seed": 4,
        "knobs": {
            "transparent_hugepage/enabled": "madvise",
            "transparent_hugepage/defrag": "madvise",
            "vm.compaction_proactiveness": "0",
        },
        "processes": [
            {
                "name": "bench",
                "ops": [
                    {"op": "mmap", "name": "all", "size": f"{frag // MIB}M"},
                    {"op": "write", "region": "all"},
                    {"op": "munmap", "region": "all", "every": "2M", "offset": "512K", "length": "1536K"},
                    {"op": "sleep", "duration": "1s"},
                    {"op": "phase", "name": "alloc"},
                    {"op": "set", "knob": "vm.nr_hugepages", "value": str(pool_pages)},
                    {"op": "phase", "name": "done"},
                ],
            }
        ],
    }


def trace_summary(text: str) -> dict:
    """Counts of compaction ends by (sync mode, status) and of compact_retry decisions."""
    ends: Counter[str] = Counter()
    begins: Counter[str] = Counter()
    retry: Counter[str] = Counter()
    other: Counter[str] = Counter()
    last: list[str] = []
    for ln in text.splitlines():
        if "mm_compaction_begin:" in ln:
            m = re.search(r"mode=(\w+)", ln)
            begins[m.group(1) if m else "?"] += 1
        elif "mm_compaction_end:" in ln:
            m = re.search(r"mode=(\w+) status=(\w+)", ln)
            ends[f"{m.group(1)}/{m.group(2)}" if m else "?"] += 1
        elif "compact_retry:" in ln:
            m = re.search(r"priority=(\w+) compaction_result=(\w+).*should_retry=(\d)", ln)
            retry[" ".join(m.groups()) if m else "?"] += 1
        for ev in (
            "mm_vmscan_kswapd_wake",
            "mm_vmscan_kswapd_sleep",
            "mm_compaction_wakeup_kcompactd",
            "mm_compaction_kcompactd_wake",
        ):
            if f"{ev}:" in ln:
                other[ev] += 1
        if "compaction" in ln or "compact_retry" in ln:
            last.append(ln.strip())
            last = last[-40:]
    return {"begin": dict(begins), "end": dict(ends), "compact_retry": dict(retry), **dict(other), "tail": last}


def kpageflags_blocks() -> dict[str, int]:
    """Pageblocks (2 MiB) by content, from /proc/kpageflags: LRU pages, free (buddy) pages,
    hugetlb. 'lru=N' counts blocks with N LRU pages and only free pages besides (the
    fragmenter's untouched blocks have 128; a block compaction left after migrating a batch
    of COMPACT_CLUSTER_MAX pages has 96, 64 or 32)."""
    from pageblock_sample import KPF_BUDDY, KPF_HUGE, KPF_LRU, bit, blocks

    out: Counter[str] = Counter()
    for _, blk in blocks():
        if bit(blk[0], KPF_HUGE):
            out["hugetlb"] += 1
            continue
        lru = sum(1 for x in blk if bit(x, KPF_LRU))
        buddy = sum(1 for x in blk if bit(x, KPF_BUDDY))  # buddy heads only
        if lru == 512:
            out["lru=512"] += 1
        elif lru and buddy and lru % 32 == 0 and lru <= 128:
            out[f"lru={lru}+free"] += 1
        elif lru and buddy:
            out["lru+free other"] += 1
        elif lru:
            out["lru+other"] += 1
        elif buddy:
            out["free/other"] += 1
        else:
            out["other"] += 1
    return dict(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frag", help="bytes the fragmenter writes (e.g. 12G)")
    ap.add_argument(
        "--pool",
        help="hugetlb pool to ask for, bytes (e.g. 9G), or max (MemAvailable less the kept quarter and --leave)",
    )
    ap.add_argument(
        "--auto", type=float, help="size from MemAvailable: frag = AUTO x MemAvailable, pool = the rest less --leave"
    )
    ap.add_argument("--leave", default="3G", help="MemAvailable the run leaves to others (default 3G)")
    ap.add_argument("--drop-caches", action="store_true", help="sync; drop_caches=3 first (free memory = available)")
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--kpageflags", action="store_true", help="classify pageblocks after the pool write")
    ap.add_argument("--out")
    ap.add_argument("--workload", help="write the model workload here and exit")
    a = ap.parse_args(argv)
    if a.drop_caches and not a.workload:
        libc0 = ctypes.CDLL("libc.so.6")
        libc0.sync()
        wr("/proc/sys/vm/drop_caches", "3")
    if a.auto:
        avail = meminfo()["MemAvailable"]
        frag = int(avail * a.auto)
        pool = avail - frag // 4 - size(a.leave)
    else:
        frag = size(a.frag)
        # "max": all MemAvailable less what the fragmenter keeps and --leave
        pool = meminfo()["MemAvailable"] - frag // 4 - size(a.leave) if a.pool == "max" else size(a.pool)
    frag = frag // (2 * MIB) * (2 * MIB)
    pool_pages = pool // (2 * MIB)
    if a.workload:
        with open(a.workload, "w") as f:
            json.dump(workload(frag, pool_pages), f, indent=1)
        return 0

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # restore in `finally`
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    nr_path, pro_path = "/proc/sys/vm/nr_hugepages", "/proc/sys/vm/compaction_proactiveness"
    saved = {nr_path: rd(nr_path).strip(), pro_path: rd(pro_path).strip()}
    if saved[nr_path] != "0":
        raise SystemExit("vm.nr_hugepages is not 0; refusing")
    mi0 = meminfo()
    if frag // 4 + pool_pages * 2 * MIB > mi0["MemAvailable"] - size(a.leave) + 64 * MIB:
        raise SystemExit(
            f"refused: {frag // 4 // MIB} MiB kept + {pool_pages * 2} MiB pool leaves < {a.leave} of "
            f"MemAvailable {mi0['MemAvailable'] // MIB} MiB"
        )
    saved_tr = {}
    if a.trace:
        saved_tr = {f"{TR}/buffer_size_kb": rd(f"{TR}/buffer_size_kb").strip()}
        for e in EVENTS:
            saved_tr[f"{TR}/events/{e}/enable"] = rd(f"{TR}/events/{e}/enable").strip()
    base = None
    out: dict = {"frag": frag, "pool_request": pool_pages, "meminfo_start": mi0}
    try:
        length = frag + 2 * MIB
        base = libc.mmap(None, length, 3, 0x22, -1, 0)  # RW, MAP_PRIVATE|MAP_ANONYMOUS
        if base in (None, ctypes.c_void_p(-1).value):
            raise SystemExit("mmap failed")
        start = (base + 2 * MIB - 1) // (2 * MIB) * (2 * MIB)
        libc.madvise(base, length, 15)  # MADV_NOHUGEPAGE: base pages only
        t0 = time.monotonic()
        for off in range(0, frag, 4096):
            ctypes.memset(start + off, 1, 1)
        for off in range(0, frag, 2 * MIB):
            libc.munmap(start + off + 512 * 1024, 1536 * 1024)
        out["fragment_s"] = time.monotonic() - t0
        wr(pro_path, "0")
        time.sleep(1)
        if a.trace:
            wr(f"{TR}/buffer_size_kb", "65536")
            wr(f"{TR}/trace", "")
            for e in EVENTS:
                wr(f"{TR}/events/{e}/enable", "1")
        mi1, v0 = meminfo(), vmstat()
        out["meminfo_before_pool"] = mi1
        t0 = time.monotonic()
        try:
            wr(nr_path, str(pool_pages))
        except OSError as e:
            out["write_error"] = str(e)
        out["pool_write_s"] = time.monotonic() - t0
        got = int(rd(nr_path))
        v1 = vmstat()
        out["meminfo_after_pool"] = meminfo()
        out["buddyinfo_after_pool"] = rd("/proc/buddyinfo")
        if a.kpageflags:
            out["blocks_after_pool"] = kpageflags_blocks()
        if a.trace:
            for e in EVENTS:
                wr(f"{TR}/events/{e}/enable", "0")
            out["trace"] = trace_summary(rd(f"{TR}/trace"))
        out["pool_pages"] = got
        out["free_before_pool"] = mi1["MemFree"]
        out["pct_of_free"] = 100.0 * got * 2 * MIB / mi1["MemFree"]
        out["vmstat_delta"] = {k: v1.get(k, 0) - v0.get(k, 0) for k in VMSTAT}
    finally:
        wr(nr_path, saved[nr_path])
        wr(pro_path, saved[pro_path])
        for p, v in saved_tr.items():
            if p.endswith("/enable"):
                wr(p, v)
        for p, v in saved_tr.items():
            if not p.endswith("/enable"):
                wr(p, v)
        if saved_tr:
            wr(f"{TR}/trace", "")
        if base:
            # only what is still ours: the holes may hold the interpreter's own mappings now
            start = (base + 2 * MIB - 1) // (2 * MIB) * (2 * MIB)
            libc.munmap(base, start - base)
            for off in range(0, frag, 2 * MIB):
                libc.munmap(start + off, 512 * 1024)
            libc.munmap(start + frag, base + frag + 2 * MIB - start - frag)
        out["nr_hugepages_after_restore"] = int(rd(nr_path))
    summary = {k: v for k, v in out.items() if not k.startswith("meminfo") and k != "trace"}
    summary["trace"] = {k: v for k, v in out.get("trace", {}).items() if k != "tail"}
    print(json.dumps(summary, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
