#!/usr/bin/env python3
"""thplab census scan rate: GB of THP-backed memory read and classified per CPU second.

A child maps 1 GiB (256 MiB with --quick) of PMD-mapped THPs whose contents mix the cases the
census tells apart (a quarter each: one non-zero page, 64 sparse pages, every page dense, all
zero) and sleeps; `thplab-live census --pid CHILD` then reads it. The rate is bytes of THP
memory scanned per second of the census's own CPU time (user + system, getrusage), the
best of several runs (other processes share the machine), for the default reader
(process_vm_readv through a 64 KiB buffer) and for /proc/PID/mem and bigger buffers.
Reads other processes' memory: run as root (or the child's owner with ptrace allowed).
Prints rates, never asserts them. The target is >= 2 GB per CPU second.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target/release/thplab-live"
QUICK = "--quick" in sys.argv
MIB = 256 if QUICK else 1024
RUNS = 3 if QUICK else 7

CHILD = r"""
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
M = 2 << 20
n = int(sys.argv[1]) // 2
raw = libc.mmap(None, (n + 1) * M, 3, 0x22, -1, 0)
base = (raw + M - 1) // M * M
libc.madvise(base, n * M, 14)  # MADV_HUGEPAGE
dense = bytes((i * 7 + 1) % 251 + 1 for i in range(4096)) * 512
for t in range(n):
    a = base + t * M
    kind = t % 4
    if kind == 0:
        ctypes.memset(a + 123, 1, 1)
    elif kind == 1:
        for i in range(64):
            ctypes.memset(a + i * 8192 + 17, 0xAB, 8)
    elif kind == 2:
        ctypes.memmove(a, dense, M)
    else:
        ctypes.memset(a, 0, 4096)
print("ready", flush=True)
time.sleep(3600)
"""


def census(pid: int, *extra: str) -> dict:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "c.json"
        subprocess.run(
            [str(BIN), "census", "--pid", str(pid), "--no-layout", "--out", str(out), *extra],
            check=True,
            capture_output=True,
        )
        return json.loads(out.read_text())


def main() -> int:
    if not BIN.exists():
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "thplab-live"], cwd=ROOT, check=True)
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(MIB)], stdout=subprocess.PIPE, text=True)
    try:
        if child.stdout.readline().strip() != "ready":
            print("census bench: the child did not start")
            return 1
        time.sleep(0.2)
        first = census(child.pid)
        p = first["processes"][0]
        if p["status"] != "ok":
            print(f"census bench: cannot read the child: {p.get('error')} (run as root)")
            return 0
        thp_mib = p["thp_pmd"] * 2
        print(
            f"child: {thp_mib} MiB of PMD-mapped THPs of {MIB} MiB mapped; zero subpages "
            f"{p['thp_zero_subpages']:,}; zero-count histogram {p['thp_zero_hist']}"
        )
        if thp_mib < MIB // 2:
            print("census bench: too few THPs (THP disabled or memory fragmented?); rates below are not meaningful")
        configs = [
            ("process_vm_readv, 64 KiB buffer (default)", []),
            ("process_vm_readv, 2 MiB buffer", ["--buffer", str(2 << 20)]),
            ("/proc/PID/mem, 64 KiB buffer", ["--proc-mem"]),
            ("/proc/PID/mem, 2 MiB buffer", ["--proc-mem", "--buffer", str(2 << 20)]),
        ]
        for label, extra in configs:
            rates, walls = [], []
            for _ in range(RUNS):
                s = census(child.pid, *extra)["scan"]
                rates.append(s["thp_bytes_read"] / max(1, s["cpu_ns"]))
                walls.append(s["thp_bytes_read"] / max(1, s["wall_ns"]))
            rates.sort()
            walls.sort()
            print(
                f"{label:44s} {max(rates):5.2f} GB per CPU second (median {rates[len(rates) // 2]:.2f}), "
                f"wall {max(walls):5.2f} GB/s (median {walls[len(walls) // 2]:.2f}) over {RUNS} runs"
            )
        load = os.getloadavg()[0]
        print(f"(load average {load:.1f} on {os.cpu_count()} CPUs while measuring; target >= 2 GB per CPU second)")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
