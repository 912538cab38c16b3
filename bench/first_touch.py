#!/usr/bin/env python3
"""What this host charges for memory the model touches first (docs/compaction.md, issue 14).

A VM guest with free page reporting hands idle 2 MiB blocks back to its host; the next
first touch of such memory costs the host's fault as well as the guest's zeroing. The
model's 1 TiB states (~4-5 GiB each) are such memory. Prints seconds per GiB for a
`memset` of anonymous THP memory: the first touch, again at once (memory freed under a
second ago, not yet reported), after an idle wait (reported), and a second pass over
memory already backed (the bandwidth).

    .venv/bin/python bench/first_touch.py            # 3 GiB, 12 s idle
    .venv/bin/python bench/first_touch.py --gib 1 --idle 5
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import time

GIB = 1 << 30
MADV_HUGEPAGE = 14


def touch(libc, n: int) -> tuple[float, float]:
    """Seconds per GiB of the first and the second memset of a fresh n-byte mapping."""
    m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        buf = ctypes.c_char.from_buffer(m)
        a = ctypes.addressof(buf)
        libc.madvise(a, n, MADV_HUGEPAGE)
        t = time.perf_counter()
        libc.memset(a, 1, n)
        first = time.perf_counter() - t
        t = time.perf_counter()
        libc.memset(a, 2, n)
        second = time.perf_counter() - t
        del buf
    finally:
        m.close()
    return first * GIB / n, second * GIB / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=3, help="size of each mapping (GiB)")
    ap.add_argument("--idle", type=float, default=12, help="seconds to wait before the last pass")
    a = ap.parse_args()
    libc = ctypes.CDLL("libc.so.6")
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    n = int(a.gib * GIB) // (2 << 20) * (2 << 20)
    rows = [("first touch", *touch(libc, n)), ("again at once", *touch(libc, n))]
    time.sleep(a.idle)
    rows.append((f"after {a.idle:g} s idle", *touch(libc, n)))
    print(f"{'memset of ' + format(n / GIB, 'g') + ' GiB':<24} {'first s/GiB':>12} {'second s/GiB':>13}")
    for label, f, s in rows:
        print(f"{label:<24} {f:>12.3f} {s:>13.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
