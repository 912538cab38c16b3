"""What compaction's skip-bit reset would see on this host, pageblock by pageblock.

``__reset_isolation_suitable()`` (mm/compaction.c, 6.18) clears a pageblock's skip bit only
if one of the pfns it samples - every 8th pfn from the block start
(``__reset_isolation_pfn()``) - is an LRU page (migrate side) or a free buddy head (free
side). This reads ``/proc/kpageflags`` (root) over a pfn range and counts pageblocks by what
they mostly hold (anon, file, THP, slab, other) and by whether a sampled pfn is a free buddy
head and/or an LRU page. docs/compaction.md uses it to show that on a shared host the
fragmented blocks of issue 14's scenario mix both (the phase of the kept pages changes inside
a block), which is what lets the reset find free pages.

Run it while a workload holds its layout (e.g. during the settle phase of
examples/compaction_24g_p0.json):

    sudo .venv/bin/python bench/pageblock_sample.py [--lo 0x1000] [--hi 0x640000]

It only reads /proc/kpageflags; it changes nothing.
"""

from __future__ import annotations

import argparse
import collections
import struct
from collections.abc import Iterator

KPF_LRU, KPF_SLAB, KPF_BUDDY, KPF_ANON, KPF_COMPOUND_HEAD, KPF_HUGE, KPF_THP = 5, 7, 10, 12, 15, 17, 22
PAGEBLOCK = 512
SAMPLE = 8  # 1 << PAGE_ALLOC_COSTLY_ORDER


def bit(x: int, b: int) -> bool:
    return bool(x >> b & 1)


def blocks(lo: int = 0, hi: int | None = None) -> Iterator[tuple[int, tuple[int, ...]]]:
    """(first pfn, the 512 page-flag words) of each whole pageblock of /proc/kpageflags from
    the pageblock holding `lo` up to `hi` (default: the end of the file)."""
    with open("/proc/kpageflags", "rb") as f:
        start = lo - lo % PAGEBLOCK
        f.seek(start * 8)
        while hi is None or start < hi:
            data = f.read(PAGEBLOCK * 8)
            if len(data) < PAGEBLOCK * 8:
                return
            yield start, struct.unpack(f"<{PAGEBLOCK}Q", data)
            start += PAGEBLOCK


def classify(block: tuple[int, ...]) -> str:
    if bit(block[0], KPF_THP) and bit(block[0], KPF_COMPOUND_HEAD):
        return "thp"
    anon = sum(1 for x in block if bit(x, KPF_LRU) and bit(x, KPF_ANON))
    file = sum(1 for x in block if bit(x, KPF_LRU) and not bit(x, KPF_ANON))
    slab = sum(1 for x in block if bit(x, KPF_SLAB))
    for name, n in (("anon", anon), ("file", file), ("slab", slab)):
        if n > PAGEBLOCK // 8:
            return name
    return "other"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lo", type=lambda s: int(s, 0), default=0x1000, help="first pfn (pageblock aligned)")
    ap.add_argument("--hi", type=lambda s: int(s, 0), required=False, default=None, help="end pfn (default: MemTotal)")
    a = ap.parse_args()
    hi = a.hi
    if hi is None:
        with open("/proc/meminfo") as f:
            kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
        hi = a.lo + kb // 4 * 2  # generous: holes read as zero flags
    stats: collections.Counter = collections.Counter()
    for _, block in blocks(a.lo, hi):
        if not any(block):
            continue
        sampled = block[::SAMPLE]
        stats[(classify(block), any(bit(x, KPF_BUDDY) for x in sampled), any(bit(x, KPF_LRU) for x in sampled))] += 1
    print(f"{'holds':<6} {'sampled free head':>17} {'sampled LRU':>11} {'pageblocks':>10}")
    for (kind, b, lru), n in sorted(stats.items(), key=lambda kv: -kv[1]):
        print(f"{kind:<6} {b!s:>17} {lru!s:>11} {n:>10}")


if __name__ == "__main__":
    main()
