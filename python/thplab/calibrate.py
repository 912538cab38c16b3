"""``thplab calibrate``: measure this host's cost primitives and write a cost profile.

The native runner (``thplab-live calibrate``) measures on warmed memory, with repetitions,
and subtracts from each elapsed time what other tasks cost it (its run-queue wait): clearing
and copying 4 KiB and 2 MiB, memchr_inv over a page (best and worst case), a 4 KiB, THP and
zero-page fault round trip, the first touch of a 2 MiB block left idle long enough for the
guest to report it to its host; zram swap-out, swap-in and the zap of swapped-out pages per
content class and compressor, for 4 KiB pages and for THPs; the host's disk with O_DIRECT
through a file and through a loop block device (bandwidth with requests in flight, latency of
single requests); swap-out and swap-in on a swap file and on a loop device (per 4 KiB page and
per THP, the writeback drain, swap-cache hits, readahead); the THP split paths (a PMD split,
the deferred split of partially mapped THPs, the underused shrinker at max_ptes_none 0 and
256); MADV_COLLAPSE; vm.compact_memory at two fragmentation densities. This module turns the
samples into a profile (median of the repetitions; ``spread`` = relative standard deviation)
that ``thplab run --costs FILE`` uses: each primitive comes from the measurement that isolates
it, less what the model charges on the same path with the other primitives (the fields'
documentation in crates/workload/src/costs.rs says which).

This host's speed steps by tens of percent for seconds to minutes at a time (a THP fault
~175 us, then ~210 us; random reads past the cache 34 ns in one calibration, 20 ns in the
next, 2026-12-05), so the random reads (access_rand_*) and the THP faults (fault_2m_total)
are sampled at both ends of the calibration, a minute apart, and their medians taken over
both (crates/live/src/calibrate.rs).
"""

from __future__ import annotations

import datetime
import json
import statistics
import sys
import tempfile
from pathlib import Path

import tomllib

from thplab.atomic import write_atomic
from thplab.errors import InputError
from thplab.live import LiveError, find_binary, invoke_json

CLASSES = ("same", "sparse", "text", "random")


HELP_DESCRIPTION = """\
Measure what this machine's kernel takes for the model's cost primitives (clearing and copying
4 KiB and 2 MiB pages, page and THP faults, zero-page faults, zram, swap-file and block-device
swap traffic, the disk's bandwidth and latency, THP splits, the underused-THP shrinker,
MADV_COLLAPSE, compaction) and write them as a cost profile, which `thplab run --costs FILE`
uses for simulated times. The swap, split and compaction costs need root (every setting is
restored, every swap file and loop device removed); without it they keep their defaults."""

HELP_EPILOG = """\
examples:
  thplab calibrate --out host.toml
  thplab calibrate --quick --out /tmp/quick.toml       fewer, smaller repetitions
  thplab run W.json --costs host.toml

output: the TOML profile (written atomically) and a table of each primitive's median and spread."""


def add_arguments(parser) -> None:
    parser.add_argument(
        "--out", default="thplab-costs.toml", help="cost profile to write (TOML; default thplab-costs.toml)"
    )
    parser.add_argument("--quick", action="store_true", help="fewer, smaller repetitions (seconds, for tests)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per primitive (default 7, quick 3)")
    parser.add_argument(
        "--only",
        choices=("zram", "compaction", "refault"),
        default=None,
        help="measure one step alone (zram: the [zram] tables and swapin_ns; compaction: "
        + ", ".join(COMPACTION_ONLY_FIELDS)
        + "; refault: refault_reported_2m_ns, the first touch of a block the guest reported to its host)"
        + "; the other fields come from --base",
    )
    parser.add_argument("--base", default=None, help="with --only: the profile whose other fields are kept")


def _med(v):
    return statistics.median(v)


#: a unit (a THP fault, a MADV_COLLAPSE range) that took more than this many times the median
#: of its kind refaulted in the host (_backed_mean; the refault_reported_2m_ns fit)
HOST_REFAULT_FACTOR = 3


def _backed_mean(v):
    """The mean of per-unit samples (one THP fault, one MADV_COLLAPSE range each) less the
    units that refaulted in the host: a block free page reporting had discarded costs
    ~3.5 ms more (refault_reported_2m_ns, which the model charges apart), 5-15 times a
    backed unit, whose slowest were < 2x the median on the reference host. The mean, not
    the median, of the rest: the model charges every unit, so its sum wants the mean (the
    backed faults' tail: p90 1.1-1.2x the median)."""
    cut = _refault_cutoff(v)
    return statistics.mean([x for x in v if x <= cut])


def _refault_cutoff(v):
    """Above this a unit of the samples ``v`` refaulted in the host (HOST_REFAULT_FACTOR
    times their median)."""
    return HOST_REFAULT_FACTOR * statistics.median(v)


def _paired_diff(a, b):
    """The median of a[i] - b[i] when a and b are samples of the same repetitions (calibrate
    measures zram's content classes back to back within each repetition), else the
    difference of their medians. This host's speed steps by up to ~40 % for seconds to
    minutes (the host's, not this guest's doing: a same-filled swap-in's whole distribution
    shifts), which the difference of two medians taken apart carries whole: text less
    same-filled swap-in, each class's repetitions in a block, 6.0 us (lzo-rle) and 7.4 us
    (lzo); interleaved and paired 4.3 us (2026-11-27, validate.py's known gaps)."""
    if a and len(a) == len(b):
        return statistics.median([x - y for x, y in zip(a, b, strict=True)])
    return _med(a) - _med(b)


def _fastest_pass(a, b):
    """The least a[i] + b[i] over repetitions i (two consecutive steps of one repetition:
    a write and the wait for its completion), else min(a) + min(b)."""
    if a and len(a) == len(b):
        return min(x + y for x, y in zip(a, b, strict=True))
    return min(a) + min(b)


def _spread(v):
    if len(v) < 2:
        return 0.0
    m = statistics.mean(v)
    return statistics.stdev(v) / m if m else 0.0


def profile_from_samples(cal: dict, base_toml: str | None = None) -> tuple[dict, list[tuple[str, float, float, str]]]:
    """Build a cost profile (as a dict) from the runner's samples.

    Returns (profile, rows) where rows are (name, median, spread, note) for the report.
    """
    if base_toml is None:
        from thplab import _native as n

        base_toml = n.default_costs()
    prof = tomllib.loads(base_toml)
    S = cal["samples"]
    V = cal.get("values", {})
    rows = []
    spread = {}

    def have(k):
        return k in S and S[k]

    def put(field, value, src, note=""):
        prof[field] = round(max(0.0, value)) if isinstance(prof.get(field), int) else float(value)
        sp = _spread(S[src]) if src in S else 0.0
        spread[field] = round(sp, 4)
        rows.append((field, prof[field], sp, note))

    for f, k in [
        ("clear_4k_ns", "clear_4k"),
        ("clear_2m_ns", "clear_2m"),
        ("copy_4k_ns", "copy_4k"),
        ("copy_2m_ns", "copy_2m"),
        ("memchr_inv_4k_ns", "memchr_inv_4k_worst"),
        ("touch_page_ns", "touch_page"),
        ("fill_byte_4k_ns", "fill_4k_byte"),
        ("fill_text_4k_ns", "fill_4k_text"),
        ("fill_random_4k_ns", "fill_4k_random"),
        ("syscall_ns", "syscall"),
        ("fault_zero_ns", "fault_zero"),
    ]:
        if have(k):
            put(f, _med(S[k]), k)
    if have("sleep_1ms"):
        put("sleep_wake_ns", _med(S["sleep_1ms"]) - 1_000_000, "sleep_1ms", "a 1 ms sleep op less 1 ms")
    if have("cpu_ghz"):
        prof["cpu_ghz"] = round(_med(S["cpu_ghz"]), 3)
        spread["cpu_ghz"] = round(_spread(S["cpu_ghz"]), 4)
        rows.append(("cpu_ghz", prof["cpu_ghz"], spread["cpu_ghz"], "dependent-add chain"))
    if have("memchr_inv_4k_best"):
        rows.append(
            (
                "(memchr_inv_4k best case)",
                _med(S["memchr_inv_4k_best"]),
                _spread(S["memchr_inv_4k_best"]),
                "first byte non-zero; not a profile field",
            )
        )
    if have("host_probe"):
        # not a cost: the live runner's probe as calibrated, validate's reference for the
        # host's speed (CostProfile::probe_fault_4k_ns)
        put("probe_fault_4k_ns", _med(S["host_probe"]), "host_probe", "the live runner's speed probe (not charged)")
        prof["probe_fault_4k_ns"] = round(prof["probe_fault_4k_ns"])
    if have("cpu_probe"):
        # nor is the CPU probe the live runner takes around every phase (host::cpu_probe_ns;
        # CostProfile::probe_cpu_ns): validate tells the phases the host ran at another speed
        put("probe_cpu_ns", _med(S["cpu_probe"]), "cpu_probe", "the live runner's CPU probe (not charged)")
        prof["probe_cpu_ns"] = round(prof["probe_cpu_ns"])
    if have("fault_4k_total"):
        put(
            "fault_4k_ns",
            _med(S["fault_4k_total"]) - prof["clear_4k_ns"],
            "fault_4k_total",
            "4K write fault minus clear_4k",
        )
    if have("fault_4k_sparse") and have("fault_4k_total"):
        put(
            "pte_alloc_ns",
            _med(S["fault_4k_sparse"]) - _med(S["fault_4k_total"]) - prof["clear_4k_ns"] - prof["page_alloc_ns"],
            "fault_4k_sparse",
            "4K write fault that allocates a PTE table (one per 2 MiB) less a 4K fault, the table's clear and alloc",
        )
    if all(have(f"access_rand_{k}") for k in ("256k", "16m", "32m", "256m")):
        # the access op's random reads: in cache (256 KiB) the loop alone; over 256 MiB
        # nearly every read misses the last-level cache; over 16 and 32 MiB the share
        # that hits is the share of the buffer the cache holds
        base = _med(S["access_rand_256k"])
        put("access_cycles", base * prof["cpu_ghz"], "access_rand_256k", "random reads in cache, x cpu_ghz")
        miss = _med(S["access_rand_256m"]) - base
        put("cache_miss_ns", miss, "access_rand_256m", "random reads over 256 MiB less over 256 KiB")
        if miss > 0:
            held = [mib * (1 - min(1.0, max(0.0, (_med(S[f"access_rand_{mib}m"]) - base) / miss))) for mib in (16, 32)]
            # at least the model's smallest cache (64 KiB, costs.rs MIN_CACHE_BYTES): a share
            # that small misses on every read of these buffers all the same
            kib = max(64, round(statistics.median(held) * 1024))
            put(
                "cache_bytes",
                kib * 1024,
                "access_rand_16m",
                "16 and 32 MiB times the share of their random reads that hit, median",
            )
    if have("pte_walk_none"):
        # at least 1 ns: the model's walks charge whole nanoseconds per entry
        put(
            "pte_walk_ns",
            max(1.0, _med(S["pte_walk_none"])),
            "pte_walk_none",
            "MADV_COLD over PTE tables of 511 none entries and one inactive page, per PTE",
        )
    if have("munmap_zero"):
        put(
            "zap_zero_pte_ns",
            _med(S["munmap_zero"]) - prof["pte_walk_ns"],
            "munmap_zero",
            "munmap of zero-page PTEs per PTE, less the PTE walk",
        )
    # the free with room on the per-CPU list (munmap_4k_room; older calibrations: munmap_4k,
    # which filled the list part-way); a free that finds the list full also moves pages to
    # the buddy lists (pcp_drain_ns: the same munmaps with every list's high at its floor,
    # less those with room), which the model charges where its lists are full
    room = have("munmap_4k_room")
    free_src = "munmap_4k_room" if room else "munmap_4k"
    if have(free_src):
        put(
            "page_free_ns",
            _med(S[free_src]) - prof["pte_walk_ns"],
            free_src,
            "munmap of present 4K pages per page"
            + (" with room on the per-CPU list" if room else "")
            + ", less the PTE walk",
        )
    if room and have("munmap_4k_drain"):
        put(
            "pcp_drain_ns",
            max(0.0, _med(S["munmap_4k_drain"]) - _med(S["munmap_4k_room"])),
            "munmap_4k_drain",
            "the same munmaps with percpu_pagelist_high_fraction 100000 (every free spills), per page, less with room",
        )
    if have("dontneed_present") and have("dontneed_none"):
        # MADV_DONTNEED of one present page per call less the same call with nothing
        # present: the page's zap and free (page_free_ns) and the flush of its range
        put(
            "zap_flush_ns",
            _med(S["dontneed_present"]) - _med(S["dontneed_none"]) - prof["page_free_ns"],
            "dontneed_present",
            "MADV_DONTNEED of one present page less of none, less page_free_ns",
        )
    if have("dontneed_present3") and have("dontneed_present"):
        # three present pages per call against one: two more pages zapped and freed, and two
        # more invlpg in the flush of the range (flush_tlb_func's partial flush)
        put(
            "tlb_flush_page_ns",
            (
                _paired_diff(S["dontneed_present3"], S["dontneed_present"])
                - 2 * (prof["page_free_ns"] + prof["pte_walk_ns"])
            )
            / 2,
            "dontneed_present3",
            "MADV_DONTNEED of three present pages less of one (paired), less two pages' zap and free, per page",
        )
    if have("munmap_hole") and have("munmap_tail"):
        # munmap of one page of a mapping with nothing present: from the middle of a VMA
        # (two __split_vma and the removal of one VMA) and from its end (one of each)
        put(
            "vma_split_ns",
            _med(S["munmap_hole"]) - _med(S["munmap_tail"]),
            "munmap_hole",
            "munmap of a page from the middle of a VMA less one from its end, per call",
        )
        put(
            "munmap_vma_ns",
            _med(S["munmap_tail"]) - prof["syscall_ns"] - prof["vma_split_ns"],
            "munmap_tail",
            "munmap of the last page of a VMA (nothing present) less the syscall and one split",
        )
    if have("munmap_hole_anon") and have("munmap_hole"):
        # the same hole in a VMA that had pages (its anon_vma and page table kept): two
        # splits link three anon_vma_chains each, the removal unlinks one (seven), and the
        # zap walks the PMD and the PTE
        put(
            "anon_vma_chain_ns",
            (_med(S["munmap_hole_anon"]) - _med(S["munmap_hole"]) - prof["pmd_walk_ns"] - prof["pte_walk_ns"]) / 7,
            "munmap_hole_anon",
            "munmap of a page from the middle of a VMA with an anon_vma less munmap_hole and the PTE walk, over 7",
        )
    if have("munmap_2m") and have("munmap_tail"):
        # munmap of present THPs, per THP, less what the model charges besides the tail
        # pages (the PMD entry, the folio's free, the call and its flush shared by the THPs)
        shared = (prof["syscall_ns"] + prof["munmap_vma_ns"] + prof["zap_flush_ns"]) / V.get("munmap_2m.thps", 32)
        put(
            "free_tail_page_ns",
            (_med(S["munmap_2m"]) - prof["pmd_walk_ns"] - prof["page_free_ns"] - shared) / 511,
            "munmap_2m",
            "munmap of present THPs per THP less the PMD walk, the folio's free and the call, per tail page",
        )
    if have("munmap_64k") and have("munmap_tail"):
        nf = V.get("munmap_64k.folios", 1024)
        shared = (prof["syscall_ns"] + prof["munmap_vma_ns"] + prof["zap_flush_ns"]) / nf + prof["pmd_walk_ns"] / 32
        put(
            "free_one_page_ns",
            _med(S["munmap_64k"])
            - 16 * prof["pte_walk_ns"]
            - prof["page_free_ns"]
            - 15 * prof["free_tail_page_ns"]
            - shared,
            "munmap_64k",
            "munmap of present 64 KiB folios per folio less the PTE walk, the free, its tail pages",
        )
    if have("fault_64k_total") and have("fault_4k_total"):
        # a 64 KiB fault does a 4 KiB fault's work (fault_4k_total less its clear) plus the
        # folio's clear, a subpage at a time; its PTE table is shared by 32 faults, not 512
        other = _med(S["fault_4k_total"]) - prof["clear_4k_ns"] + prof["pte_alloc_ns"] * (1 / 32 - 1 / 512)
        put(
            "clear_folio_4k_ns",
            (_med(S["fault_64k_total"]) - other) / 16,
            "fault_64k_total",
            "64K mTHP write fault less a 4K fault's other work, per 4K subpage",
        )
    if have("fault_64k_touch") and have("fault_64k_total"):
        # the same 64 KiB faults each followed by a byte stored to the folio's other 15
        # pages, less the faults alone of the same repetition: each such first access
        # right after the fault, the store included
        _put(
            prof,
            rows,
            spread,
            "touch_after_fault_ns",
            _paired_diff(S["fault_64k_touch"], S["fault_64k_total"]) / 15,
            S["fault_64k_touch"],
            "a 64K fault with its other 15 pages stored to right after, less the fault alone, per page",
        )
    if have("fault_2m_total"):
        put(
            "fault_2m_ns",
            _backed_mean(S["fault_2m_total"]) - prof["clear_2m_ns"],
            "fault_2m_total",
            "THP write fault out of the cache (each timed; those > 3x the median, host refaults, left out) minus clear_2m",
        )
    if have("refault_reported_2m_total") and have("fault_2m_total"):
        warm = _backed_mean(S["fault_2m_total"])
        # a refault is a fault the host had to back again: beyond 3x a backed fault's median,
        # as _backed_mean leaves them out. 10x was the rule until this host (out/host-h50.toml,
        # a Xeon whose backed THP fault takes ~290 us, clear_2m 209 us): its refaults took
        # 1.6-1.8 ms, under 10x, so none counted and the base's 2 ms stood (compaction-fill's
        # eat phase 1.8-2.0x the live kernel's; 1.3-1.4x at the 1.46 ms measured so)
        cut = _refault_cutoff(S["fault_2m_total"])
        cold = [x for x in S["refault_reported_2m_total"] if x > cut]
        frac = len(cold) / len(S["refault_reported_2m_total"])
        if cold:
            put(
                "refault_reported_2m_ns",
                _med(cold) - warm,
                "refault_reported_2m_total",
                f"{frac:.0%} of {len(S['refault_reported_2m_total'])} idle blocks were reported"
                + (
                    f" ({V['refault_reported_kib'] / 1024:.0f} MiB reported while they waited)"
                    if V.get("refault_reported_kib") is not None
                    else ""
                )
                + "; extra cost over a warm THP fault",
            )
            spread["refault_reported_2m_ns"] = round(_spread(cold), 4)
        elif V.get("free_page_reporting"):
            # the guest reports free pages, but none of the blocks timed here had been
            # reported by then (out/cal-h13: 0 of them; h12: 6 %): no measurement, not a
            # zero cost. Keeping the base's figure; a zero made compaction-fill's eat phase,
            # whose THP faults land on reported blocks, 0.05x of the live kernel's
            rows.append(
                (
                    "refault_reported_2m_ns",
                    prof["refault_reported_2m_ns"],
                    0.0,
                    "not measured: no idle block had been reported when timed; the base profile's",
                )
            )
        else:
            put(
                "refault_reported_2m_ns",
                0,
                "refault_reported_2m_total",
                "no free page reporting on this guest: no refaults",
            )
    _fit_zram(prof, S, V, rows, spread)
    _fit_devices(prof, S, V, rows, spread)
    _fit_reclaim(prof, S, V, rows, spread)
    _fit_split_collapse(prof, S, V, rows, spread)
    _fit_reclaim_split(prof, S, V, rows, spread)
    _fit_compaction(prof, S, rows, spread)
    host = cal.get("host") or "host"
    prof["name"] = f"calibrated-{host}"
    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    prof["source"] = (
        f"calibrated on {host} (kernel {cal.get('kernel', '?')}) {date} by thplab calibrate"
        f"{' --quick' if cal.get('quick') else ''}, {cal.get('reps')} repetitions; medians, spread = relative stddev"
    )
    prof["spread"] = spread
    return prof, rows


def _put(prof, rows, spread, field, value, samples, note):
    """Set ``field`` to ``value`` (rounded like the default; never negative), record the
    spread of the samples it came from and a report row."""
    prof[field] = round(max(0.0, value)) if isinstance(prof.get(field, 0), int) else float(value)
    sp = _spread(samples) if samples else 0.0
    spread[field] = round(sp, 4)
    rows.append((field, prof[field], sp, note))


def _fit_zram(prof, S, V, rows, spread):
    """zram per compressor: per page swap-out/in/free of each content class; compression is
    the extra over the same-filled path (which stores a value), plus the same-filled check."""

    def have(k):
        return k in S and S[k]

    zram = prof.setdefault("zram", {})
    algs = sorted({k.split(".")[1] for k in S if k.startswith("zram.")})
    for alg in algs:
        z = dict(zram.get(alg, zram.get("lzo-rle", {})))

        def d(c: str, what: str, alg: str = alg) -> float:
            """Class c's figure less the same-filled one, paired by repetition."""
            return _paired_diff(S[f"zram.{alg}.{c}.{what}"], S[f"zram.{alg}.same.{what}"])

        if not all(have(f"zram.{alg}.{c}.{x}") for c in CLASSES for x in ("out", "in")):
            continue
        same_chk = _med(S["same_filled_4k"]) if have("same_filled_4k") else z.get("same_ns", 320)
        z["same_ns"] = round(same_chk)
        for c in ("sparse", "text", "random"):
            # page_same_filled() of a page of class c stops at the first word that differs
            # (the model charges that share of same_ns apart, zram.rs same_check_ns): the
            # first and the last word, 16 bytes, of text, random data and a calibration
            # sparse page (one non-zero byte, the last: calibrate.rs fill_class)
            chk = same_chk * 16 / 4096
            # the compression is the class's swap-out less a same-filled one, per page, taken
            # from MADV_PAGEOUT of THPs (written whole: ~1.3 us a page besides zram's work)
            # where measured, else of 4 KiB pages (~6.5 us a page besides it: the difference
            # of two such figures carries their noise; over four calibrations of one host it
            # gave -0.4-1.7 us for sparse pages and 0.7-3.1 us for random ones, the THP path
            # 0.7-1.2 and 2.1-3.2 us)
            if have(f"zram.{alg}.{c}.thp_out") and have(f"zram.{alg}.same.thp_out"):
                diff = d(c, "thp_out")
            else:
                diff = d(c, "out")
            z[f"{c}_compress_ns"] = round(max(0.0, diff) + same_chk - chk)
            # zs_free of the class's object, beyond a same-filled slot's free: from the
            # entries of THPs written whole where measured (thp_free, paired with the
            # same-filled THPs' of each repetition), as slot_free_ns comes from the same-filled
            # ones (_fit_reclaim); else from 4 KiB-written entries (free). Over the twelve
            # calibration passes of out/vk-h72..h75 the 4 KiB figure of lzo-rle's text ran -3
            # to +53 ns an entry above the THP one (207-398 against 210-377), and with it the
            # munmap of 256 64 KiB folios' text entries (mthp_64k_pageout_zram p:munmap)
            # 1.22-1.30x of the live kernel's in three validations of four (live 298-328 ns
            # an entry)
            free = None
            src = next(
                (w for w in ("thp_free", "free") if have(f"zram.{alg}.{c}.{w}") and have(f"zram.{alg}.same.{w}")),
                None,
            )
            if src:
                free = max(0.0, d(c, src))
                z[f"{c}_free_ns"] = round(free)
                spread[f"zram.{alg}.{c}_free_ns"] = round(_spread(S[f"zram.{alg}.{c}.{src}"]), 4)
            # a swap-in from zram (SWP_SYNCHRONOUS_IO) frees the slot in the fault:
            # do_swap_page() -> swap_free_nr()/swapcache_clear() -> swap_range_free() ->
            # zram_slot_free_notify() -> zram_free_page() -> zs_free(), which the model charges
            # as the slot's release (slot_free_ns + the class's free_ns, zram.rs free); the
            # swap-in of a class less a same-filled one therefore holds the class's free
            # besides its decompression, and the same-filled read's fill
            # (read_same_filled_page: zram_fill_page, clear_4k_ns) stands in for it
            z[f"{c}_decompress_ns"] = round(max(0.0, d(c, "in") + prof["clear_4k_ns"] - (free or 0.0)))
            b = V.get(f"zram.{alg}.{c}.bytes")
            if b is not None:
                z[f"{c}_bytes"] = round(b)
            spread[f"zram.{alg}.{c}_compress_ns"] = round(_spread(S[f"zram.{alg}.{c}.out"]), 4)
            spread[f"zram.{alg}.{c}_decompress_ns"] = round(_spread(S[f"zram.{alg}.{c}.in"]), 4)
        zram[alg] = z
        for c in CLASSES:
            for d, what in (
                ("out", "4 KiB MADV_PAGEOUT per page"),
                ("in", "swap-in fault per page"),
                ("free", "munmap of a swapped-out page"),
                ("thp_out", "THP MADV_PAGEOUT (written whole) per page"),
                ("thp_free", "munmap of a swapped-out THP, per page"),
            ):
                k = f"zram.{alg}.{c}.{d}"
                if have(k):
                    extra = f", {V.get(f'zram.{alg}.{c}.bytes', 0):.0f} B stored" if d == "out" else ""
                    rows.append((f"zram {alg} {c} {d}", _med(S[k]), _spread(S[k]), what + extra))


def _device_alg(S):
    """The compressor whose THP and same-filled figures feed the reclaim fit."""
    algs = sorted({k.split(".")[1] for k in S if k.startswith("zram.") and k.endswith(".same.thp_out")})
    return "lzo-rle" if "lzo-rle" in algs else (algs[0] if algs else None)


def _fit_devices(prof, S, V, rows, spread):
    """`file` and `disk` DeviceCosts from O_DIRECT I/O: bandwidth from 2 MiB requests with 4 in
    flight (the write bandwidth of a block device from swap writes of whole THPs when measured),
    latency from single 4 KiB requests less their transfer, the queue depth, bio split size,
    wbt latency target and write cache from the block queue's sysfs attributes."""
    for dev in ("file", "disk"):
        if not all(f"{dev}.{k}" in S for k in ("write_2m_qd4", "read_2m_qd4", "write_4k_rand", "read_4k_rand")):
            continue
        d = dict(prof.get(dev, {}))
        for io in ("write", "read"):
            per_req = _med(S[f"{dev}.{io}_2m_qd4"])
            mbps = (2 << 20) / per_req * 1e9 / 1e6
            d[f"{io}_mb_per_s"] = max(1, round(mbps))
            lat = _med(S[f"{dev}.{io}_4k_rand"]) - 4096 / (mbps * 1e6) * 1e9
            d[f"{io}_latency_ns"] = max(0, round(lat))
            spread[f"{dev}.{io}_mb_per_s"] = round(_spread(S[f"{dev}.{io}_2m_qd4"]), 4)
            spread[f"{dev}.{io}_latency_ns"] = round(_spread(S[f"{dev}.{io}_4k_rand"]), 4)
        # a seek: random 4 KiB reads slower than sequential ones by more than 20 %
        if f"{dev}.read_4k_seq" in S:
            pen = _med(S[f"{dev}.read_4k_rand"]) - _med(S[f"{dev}.read_4k_seq"])
            d["random_penalty_ns"] = round(pen) if pen > 0.2 * _med(S[f"{dev}.read_4k_seq"]) else 0
        # swap writes of whole THPs (a block device: thp_swpout per THP): MADV_PAGEOUT of random
        # data and the writeback drain after it, per 2 MiB, is the rate the device takes swap
        # writes at (bio sizes, wbt's depth and the host's caching as swap meets them), which
        # O_DIRECT requests from 4 threads can underestimate several times over
        pk, dk = f"{dev}.thp_pageout_random", f"{dev}.thp_drain_random"
        swap_fit = False
        if pk in S and dk in S and (V.get(f"{dev}.thp_random.thp_swpout") or 0) >= 0.9:
            per_thp = _med(S[pk]) + _med(S[dk])
            if per_thp > 0:
                d["write_mb_per_s"] = max(1, round((2 << 20) / per_thp * 1e9 / 1e6))
                spread[f"{dev}.write_mb_per_s"] = round(max(_spread(S[pk]), _spread(S[dk])), 4)
                swap_fit = True
        # the device's time per segment of a write request beyond its bandwidth: 4 KiB swap
        # writes merge into requests of one segment per page, a THP's write is one segment.
        # Where the bandwidth comes from whole-THP swap writes, the 4 KiB swap-out of random
        # pages (MADV_PAGEOUT, then the drain until the device has no write in flight) per
        # page less 4 KiB at that bandwidth is what a segment adds, at most: where the device
        # keeps up with the pageout, the sum is the pageout's own time and the model's
        # pageout stays CPU-bound. O_DIRECT requests from a 4 KiB-page buffer already carry
        # one segment per 4 KiB in their bandwidth: 0 there.
        # The fastest repetition's pageout and drain, not their medians: a stall of the
        # host's disk only ever adds to a repetition (drain per page 25 ns in one
        # calibration, 46.5 us in the next an hour later: out/host-h14, -h15, stop 37). The
        # drain once waited for meminfo's Writeback, whose tail of 15-25 ms after the
        # device's last completion made 1-2 us a page of 64 MiB (stop 53).
        ok, dk4 = f"{dev}.pageout_4k", f"{dev}.writeback_drain_4k"
        seg = 0
        if swap_fit and ok in S and dk4 in S:
            per_page = _fastest_pass(S[ok], S[dk4])
            seg = max(0, round(per_page - 4096 / (d["write_mb_per_s"] * 1e6) * 1e9))
            spread[f"{dev}.write_segment_ns"] = round(max(_spread(S[ok]), _spread(S[dk4])), 4)
        d["write_segment_ns"] = seg
        # the block queue's nr_requests: how many requests are in flight before a writer waits
        qd = str(V.get(f"{dev}.nr_requests") or "")
        if qd.isdigit() and int(qd) > 0:
            d["queue_depth"] = int(qd)
        # the bio split size, the segments per request, writeback throttling's latency target and the write cache
        for attr in ("max_sectors_kb", "max_segments", "wbt_lat_usec"):
            x = str(V.get(f"{dev}.{attr}") or "")
            if x.isdigit():
                d[attr] = int(x)
        wc = V.get(f"{dev}.write_cache")
        if isinstance(wc, str) and wc:
            d["write_cache"] = wc.strip() == "write back"
        prof[dev] = d
        rot = V.get(f"{dev}.rotational")
        for io in ("write", "read"):
            rows.append(
                (
                    f"{dev} {io}_mb_per_s",
                    d[f"{io}_mb_per_s"],
                    _spread(S[f"{dev}.{io}_2m_qd4"]),
                    (
                        "THP MADV_PAGEOUT of random data + writeback drain, per 2 MiB"
                        if io == "write" and swap_fit
                        else "O_DIRECT 2 MiB requests, 4 in flight"
                    )
                    + (f" (rotational={rot})" if io == "write" else ""),
                )
            )
            rows.append(
                (
                    f"{dev} {io}_latency_ns",
                    d[f"{io}_latency_ns"],
                    _spread(S[f"{dev}.{io}_4k_rand"]),
                    "a single 4 KiB request at a random offset, less its transfer",
                )
            )
        rows.append(
            (
                f"{dev} write_segment_ns",
                d["write_segment_ns"],
                spread.get(f"{dev}.write_segment_ns", 0.0),
                "fastest 4 KiB swap-out + drain per page less 4 KiB at the THP swap-write rate"
                if swap_fit
                else "0: the bandwidth is that of 4 KiB-page O_DIRECT requests",
            )
        )
        for k, note in [
            ("pageout_4k", "4 KiB MADV_PAGEOUT per page (async writeback: not waited for)"),
            ("pageout_4k_sparse", "the same, one page per 2 MiB (a reclaim_pages() call each)"),
            ("writeback_drain_4k", "then until writeback completes, per page"),
            ("swapcache_hit", "a fault on a page still in the swap cache"),
            ("pageout_clean_4k", "MADV_PAGEOUT of clean swap-cache pages (freed, no I/O)"),
            ("swapin_seq", "swap-in fault with readahead, per page"),
            ("swapin_single", "swap-in fault of an isolated page"),
            ("munmap_cached", "munmap of a page still in the swap cache"),
            ("munmap_present", "then munmap of a present page, beside it"),
            ("munmap_cached_rev", "munmap of swap-cache pages paged out one by one from the end (a zap batch each)"),
            ("munmap_entry", "munmap of a swap entry"),
            ("thp_pageout_best", "THP MADV_PAGEOUT, seed 000 best case, per THP"),
            ("thp_pageout_random", "THP MADV_PAGEOUT of random data, per THP"),
            ("thp_munmap_best", "then its munmap, per THP"),
            ("thp_drain_random", "then until its writeback completes, per THP"),
        ]:
            if f"{dev}.{k}" in S:
                rows.append((f"{dev}.{k}", _med(S[f"{dev}.{k}"]), _spread(S[f"{dev}.{k}"]), note))


def _fit_reclaim(prof, S, V, rows, spread):
    """The reclaim path's primitives, each from the measurement that isolates it, less what
    the model charges on the same path with the other primitives (see costs.rs)."""

    def m(k):
        return _med(S[k]) if S.get(k) else None

    pte, pmd = prof["pte_walk_ns"], prof["pmd_walk_ns"]
    tlb = prof["tlb_flush_ns"]
    best = _med(S["memchr_inv_4k_best"]) if S.get("memchr_inv_4k_best") else 0.0
    dev = "file" if m("file.munmap_entry") is not None else ("disk" if m("disk.munmap_entry") is not None else None)
    # remove_mapping_ns solved with swap_put_cached_ns (below) where the loop device's THP
    # munmap and 4 KiB pair were measured, else from `dev`'s 4 KiB munmaps
    solved = (
        m("disk.thp_munmap_best") is not None
        and m("disk.munmap_cached") is not None
        and m("disk.munmap_present") is not None
        and (V.get("disk.thp_best.thp_swpout") or 0) >= 0.9
    )
    # free_swap_and_cache_nr()'s own cost per call: the same swap-cache pages unmapped with
    # one call per PTE (paged out one by one from the end: descending slots) against up to
    # 512 per call (paged out in order), paired by piece; per call, a batched page carries
    # 1/512 of one. The call is the same on a swap file and a block device: both devices'
    # pairs pooled (out/host-h38: 240 ns on the file, 116 on the loop device; h39: 105 and
    # 105)
    bdevs = [d for d in ("file", "disk") if m(f"{d}.munmap_cached_rev") and m(f"{d}.munmap_cached")]
    if bdevs:
        rev = [x for d in bdevs for x in S[f"{d}.munmap_cached_rev"]]
        fwd = [x for d in bdevs for x in S[f"{d}.munmap_cached"]]
        _put(
            prof,
            rows,
            spread,
            "swap_batch_ns",
            _paired_diff(rev, fwd) * 512 / 511,
            rev,
            f"{'+'.join(bdevs)} munmap_cached_rev less munmap_cached (a free_swap_and_cache_nr per PTE against per 512)",
        )
    if dev:
        _put(
            prof,
            rows,
            spread,
            "swap_free_ns",
            m(f"{dev}.munmap_entry") - pte,
            S[f"{dev}.munmap_entry"],
            f"{dev}.munmap_entry less pte_walk",
        )
        if not solved and m(f"{dev}.munmap_cached") is not None and m(f"{dev}.munmap_present") is not None:
            # paired: the munmap of as many present pages, taken right after in the same
            # round, stands for pte_walk + page_free: a co-running job slows both alike
            # (remove_mapping_ns from the unpaired difference moved 312-1502 ns between
            # calibrations on this shared host)
            _put(
                prof,
                rows,
                spread,
                "remove_mapping_ns",
                m(f"{dev}.munmap_cached") - m(f"{dev}.munmap_present") - prof["swap_free_ns"],
                S[f"{dev}.munmap_cached"],
                f"{dev}.munmap_cached less munmap_present (beside it) and swap_free (the model frees the folio apart)",
            )
        elif not solved and m(f"{dev}.munmap_cached") is not None:
            _put(
                prof,
                rows,
                spread,
                "remove_mapping_ns",
                m(f"{dev}.munmap_cached") - prof["swap_free_ns"] - pte - prof["page_free_ns"],
                S[f"{dev}.munmap_cached"],
                f"{dev}.munmap_cached less swap_free, pte_walk, page_free (the model frees the folio apart)",
            )
    # swap PTEs whose slot a cached folio still holds (free_swap_and_cache_nr: the count's drop
    # only, the slot freed with the folio's others at put_swap_folio): from the munmap of THPs
    # written whole to the loop device (512 such PTEs, one folio) and the 4 KiB pair (one PTE,
    # one folio), solved with remove_mapping_ns
    if solved:
        call = (prof["syscall_ns"] + prof["munmap_vma_ns"] + prof["zap_flush_ns"]) / (V.get("disk.thp_pages") or 64)
        one = m("disk.munmap_cached") - m("disk.munmap_present")  # s + r
        thp = (
            m("disk.thp_munmap_best")
            - prof["pmd_walk_ns"]
            - prof["page_free_ns"]
            - 511 * prof["free_tail_page_ns"]
            - call
            - 512 * pte
        )  # 512 s + r
        put = max(0.0, (thp - one) / 511)
        _put(
            prof,
            rows,
            spread,
            "swap_put_cached_ns",
            put,
            S["disk.thp_munmap_best"],
            "disk.thp_munmap_best (512 cached PTEs, one THP) and munmap_cached less munmap_present (one), solved",
        )
        _put(
            prof,
            rows,
            spread,
            "remove_mapping_ns",
            one - put,
            S["disk.munmap_cached"],
            "disk.munmap_cached less munmap_present and swap_put_cached (solved with the THP munmap)",
        )
    # zram_slot_free_notify() of a same-filled slot: the munmap of such swap entries less
    # what the model charges beside it (the PTE walk, free_swap_and_cache). From the entries
    # of THPs written whole (same.thp_free: 512 consecutive slots per PTE table, which
    # zap_nonpresent_ptes() frees as one swap_pte_batch) where measured: ~75 ns an entry
    # here, as a 256 MiB munmap of 4 KiB-written ones takes (~77 ns); the 4096 4 KiB-written
    # entries of same.free cost ~106 ns, which made seed 000's zram munmaps 1.3-1.7x
    # A same-filled slot's free never reaches the compressor (zram_free_page(): ZRAM_SAME
    # clears its flags and same_pages, no zs_free), so the fastest compressor's figure from
    # THP-written entries stands for each that has one: a slowdown of the host only adds, and
    # the compressors' figures of one calibration differed by up to 1.3x (out/host-h14:
    # lz4 57.6, lzo-rle 73, lzo 75 ns an entry; the same munmap, C loop on this guest after
    # swapon, 52-57 ns at 16 MiB to 1 GiB with outliers of 65-79 ns; seed 000 zram_best's
    # 262 K entries 58 ns live, 78 ns in the model with lzo-rle's 73)
    thp_free = [x for a in (prof.get("zram") or {}) if (x := m(f"zram.{a}.same.thp_free")) is not None]
    for a, z in (prof.get("zram") or {}).items():
        src = next((k for k in (f"zram.{a}.same.thp_free", f"zram.{a}.same.free") if m(k) is not None), None)
        if src:
            per_entry = min(thp_free) if src.endswith(".thp_free") else m(src)
            z["slot_free_ns"] = round(max(0.0, per_entry - prof["swap_free_ns"] - pte))
            spread[f"zram.{a}.slot_free_ns"] = round(_spread(S[src]), 4)
    alg = _device_alg(S)
    # reclaim_pages(): MADV_PAGEOUT's one call per PMD. One page per 2 MiB against 512 (the
    # same device, paired by repetition) differ per page by (1 - 1/512) of a call and its
    # PMD step, and by the walk of 511 more none PTEs
    sk = f"{dev}.pageout_4k_sparse" if dev else None
    if sk and S.get(sk) and S.get(f"{dev}.pageout_4k"):
        diff = _paired_diff(S[sk], S[f"{dev}.pageout_4k"])
        _put(
            prof,
            rows,
            spread,
            "reclaim_pages_ns",
            (diff - 511 * pte) * 512 / 511 - pmd,
            S[sk],
            f"{sk} less {dev}.pageout_4k (paired), less 511 PTEs' walk and a PMD step",
        )
    # a dense pageout's share of its calls: one per 512 pages
    call = (prof["reclaim_pages_ns"] + pmd) / 512
    x = None
    if dev and m(f"{dev}.pageout_4k") is not None:
        # reclaim_scan_page + unmap_page: a 4 KiB folio written and kept in the swap cache
        x = m(f"{dev}.pageout_4k") - tlb - pte - best - call
    elif alg and m(f"zram.{alg}.same.out") is not None:
        z = prof["zram"][alg]["same_ns"]
        x = m(f"zram.{alg}.same.out") - z - tlb - pte - best - prof["remove_mapping_ns"] - prof["page_free_ns"] - call
    if x is None:
        return
    if alg and m(f"zram.{alg}.same.thp_out") is not None:
        z = prof["zram"][alg]["same_ns"]
        fixed = (
            x
            + prof["split_pmd_ns"]
            + tlb
            + prof["remove_mapping_ns"]
            + prof["page_free_ns"]
            + 511 * prof["free_tail_page_ns"]
            + pmd
            + prof["reclaim_pages_ns"]
        )
        u = ((m(f"zram.{alg}.same.thp_out") - z) - fixed / 512) / (1 - 1 / 512)
        _put(
            prof,
            rows,
            spread,
            "unmap_page_ns",
            u,
            S[f"zram.{alg}.same.thp_out"],
            f"zram {alg} same-filled THP pageout per page less same_ns and the folio's fixed costs / 512",
        )
    if alg and S.get(f"zram.{alg}.zero.thp_out") and S.get(f"zram.{alg}.same.thp_out"):
        # is_folio_zero_filled() per zero page: all-zero THPs' pageout (zeromap) less the
        # same-filled THPs' of the same repetitions, plus their page_same_filled (same_ns):
        # the model charges both the same unmap_page_ns and folio costs beside the check
        _put(
            prof,
            rows,
            spread,
            "zero_filled_4k_ns",
            _paired_diff(S[f"zram.{alg}.zero.thp_out"], S[f"zram.{alg}.same.thp_out"]) + prof["zram"][alg]["same_ns"],
            S[f"zram.{alg}.zero.thp_out"],
            f"zram {alg} all-zero THP pageout (zeromap) less same-filled, per page, plus same_ns",
        )
    src = f"{dev}.pageout_4k" if dev and m(f"{dev}.pageout_4k") is not None else f"zram.{alg}.same.out"
    _put(
        prof,
        rows,
        spread,
        "reclaim_scan_page_ns",
        x - prof["unmap_page_ns"],
        S[src],
        f"{src} less unmap_page, tlb_flush, pte_walk",
    )
    if m("noswap.pageout_4k") is not None and (V.get("noswap.pageout_4k.pgactivate") or 0) >= 0.9:
        # with no swap device each 4 KiB folio's pass ends at folio_alloc_swap()'s failure
        # (activated): the pass short of the swap-out. What reclaim_scan_page_ns charges
        # beyond it is the swap-out's own part
        short = m("noswap.pageout_4k") - pte - call
        _put(
            prof,
            rows,
            spread,
            "reclaim_swapout_ns",
            prof["reclaim_scan_page_ns"] - max(0.0, short),
            S["noswap.pageout_4k"],
            "reclaim_scan_page_ns less noswap.pageout_4k (each page activated: no swap-out) less its PTE walk"
            " and a 512th of a reclaim_pages() call",
        )
    if alg and m(f"zram.{alg}.same.in") is not None:
        # the model charges a same-filled zram swap-in fault_4k_ns, swapin_ns, the fill
        # (read_same_filled_page: clear_4k_ns) and the slot's release in the fault
        # (zram_slot_free_notify: slot_free_ns)
        _put(
            prof,
            rows,
            spread,
            "swapin_ns",
            m(f"zram.{alg}.same.in")
            - prof["fault_4k_ns"]
            - prof["clear_4k_ns"]
            - prof["zram"][alg].get("slot_free_ns", 0),
            S[f"zram.{alg}.same.in"],
            f"zram {alg} same-filled swap-in less fault_4k, clear_4k, slot_free",
        )


def _fit_split_collapse(prof, S, V, rows, spread):
    def m(k):
        return _med(S[k]) if S.get(k) else None

    nh = V.get("split.thp_pages") or 1
    best = _med(S["memchr_inv_4k_best"]) if S.get("memchr_inv_4k_best") else 0.0
    slab = m("drop_slab")
    if slab is not None:
        _put(prof, rows, spread, "drop_slab_ns", slab, S["drop_slab"], "drop_caches=2 with nothing of ours to do")
    # deferred_split_scan()'s walk of the queue, per folio: the shrinker at max_ptes_none
    # 511 splits none (thp_underused() is false at once)
    if m("underused_511") is not None:
        _put(
            prof,
            rows,
            spread,
            "deferred_split_scan_ns",
            max(0.0, m("underused_511") - (slab or 0) / nh),
            S["underused_511"],
            "underused shrinker at max_ptes_none 511 (splits none, per THP) less drop_slab / THPs",
        )
    scan = prof.get("deferred_split_scan_ns", 0)
    if m("underused_0") is not None and m("underused_256") is not None:
        _put(
            prof,
            rows,
            spread,
            "memchr_inv_4k_ns",
            (m("underused_256") - m("underused_0")) / 256,
            S["underused_256"],
            "underused shrinker: max_ptes_none 256 less 0, per subpage read",
        )
    elif S.get("memchr_inv_4k_worst"):
        _put(
            prof,
            rows,
            spread,
            "memchr_inv_4k_ns",
            _med(S["memchr_inv_4k_worst"]),
            S["memchr_inv_4k_worst"],
            "memchr_inv over a zero page (user space)",
        )
    # A munmap of one page from the middle of a large folio's mapping is, in the model, a
    # hole's munmap with nothing present (munmap_hole_anon: the syscall, two VMA splits, the
    # removal, the anon_vma_chains, the PMD and PTE walks), the zap's flush and, for a PMD
    # mapping, the PMD's split
    hole = m("munmap_hole_anon")
    if m("split_pmd_munmap") is not None:
        vma = hole if hole is not None else prof["syscall_ns"] + prof["pte_walk_ns"]
        _put(
            prof,
            rows,
            spread,
            "split_pmd_ns",
            m("split_pmd_munmap") - vma - prof["zap_flush_ns"],
            S["split_pmd_munmap"],
            "munmap of one page of a THP (per THP) less munmap_hole_anon and the zap's flush",
        )
    if m("munmap_partial_64k") is not None and hole is not None:
        rows.append(
            (
                "(check) partial munmap of 64K folios",
                m("munmap_partial_64k"),
                _spread(S["munmap_partial_64k"]),
                f"a page from the middle of each, per call: measured; the profile predicts "
                f"{hole + prof['zap_flush_ns']:,.0f} (munmap_hole_anon and zap_flush_ns)",
            )
        )
    # The splits (costs.rs): a PTE-mapped THP pays split_unmap_pte_ns per mapped PTE, a
    # PMD-mapped one the PMD's split instead; every split pays split_folio_ns, each zero
    # subpage a full zero check and split_zero_subpage_ns (its remap and free), each non-zero
    # one a check that stops at its first byte (`best`). Per THP, less drop_slab per THP
    # (pf = page_free_ns, the unmapped page's free):
    #   split_partial      (PTE, 511 non-zero, 1 unmapped) = F + 511 u + 511 best + pf
    #   split_partial_zero (PTE, 4 non-zero, 507 zero)     = F + 511 u + 4 best + 507 (memchr + z) + pf
    #   underused_0        (PMD, 4 non-zero, 508 zero)     = reads (4 best + memchr) + split_pmd + F
    #                                                        + 4 best + 508 (memchr + z)
    mem = prof["memchr_inv_4k_ns"]
    sp = m("split_partial")
    spz = m("split_partial_zero")
    if sp is not None and spz is not None:
        _put(
            prof,
            rows,
            spread,
            "split_zero_subpage_ns",
            (spz - sp) / 507 + best - mem,
            S["split_partial_zero"],
            "deferred split of THPs with 507 zero subpages less split_partial, per zero subpage, less its zero check",
        )
    z = prof["split_zero_subpage_ns"]
    if m("underused_0") is not None:
        _put(
            prof,
            rows,
            spread,
            "split_folio_ns",
            m("underused_0") - (slab or 0) / nh - scan - (8 * best + mem) - prof["split_pmd_ns"] - 508 * (mem + z),
            S["underused_0"],
            "underused shrinker's split of PMD-mapped THPs (per THP) less drop_slab / THPs, the queue's walk, "
            "its reads, the PMD split and the zero subpages",
        )
    if sp is not None:
        _put(
            prof,
            rows,
            spread,
            "split_unmap_pte_ns",
            (sp - (slab or 0) / nh - scan - prof["page_free_ns"] - 511 * best - prof["split_folio_ns"]) / 511,
            S["split_partial"],
            "deferred split of partially mapped THPs (per THP) less drop_slab / THPs, the queue's walk and "
            "split_folio_ns, per PTE",
        )
    if m("split_partial_64k") is not None and sp is not None:
        # 64 KiB folios split the same way: fixed + 16/512 of (split_folio_ns - fixed) and 15
        # PTEs unmapped, per folio, less what the model charges beside it
        n64 = V.get("split_64k.folios") or 256
        x = (
            m("split_partial_64k")
            - (slab or 0) / n64
            - scan
            - prof["page_free_ns"]
            - 15 * best
            - 15 * prof["split_unmap_pte_ns"]
        )
        _put(
            prof,
            rows,
            spread,
            "split_folio_fixed_ns",
            (x - prof["split_folio_ns"] * 16 / 512) / (1 - 16 / 512),
            S["split_partial_64k"],
            "deferred split of partially mapped 64K folios (per folio) against split_folio_ns",
        )
    if spz is not None:
        pred = (
            (slab or 0) / nh
            + scan
            + prof["split_folio_ns"]
            + 511 * prof["split_unmap_pte_ns"]
            + 4 * best
            + 507 * (mem + z)
            + prof["page_free_ns"]
        )
        rows.append(
            (
                "(check) partial split, zero subpages",
                spz,
                _spread(S["split_partial_zero"]),
                f"507 zero subpages, PTE-mapped: measured; the profile predicts {pred:,.0f}",
            )
        )
    # each range timed alone: the mean of those that did not refault in the host
    col = _backed_mean(S["collapse_2m"]) if S.get("collapse_2m") else None
    if col is not None:
        _put(
            prof,
            rows,
            spread,
            "collapse_ns",
            col - 512 * prof["copy_4k_ns"],
            S["collapse_2m"],
            "MADV_COLLAPSE per 2 MiB (each range timed; host refaults left out) less 512 x copy_4k",
        )
        # what the model charges a collapse of 512 present pages beside collapse_isolate_ns:
        # the call's share (one MADV_COLLAPSE over collapse_2m.ranges), the THP's allocation,
        # the scan's PMD walk, two walks of 512 PTEs (the scan and the isolation), the
        # flush, and per page its copy and its free
        nh = V.get("collapse_2m.ranges") or 64
        rest = (
            prof["syscall_ns"] / nh
            + prof["page_alloc_ns"]
            + prof["pmd_walk_ns"]
            + 1024 * prof["pte_walk_ns"]
            + prof["tlb_flush_ns"]
            + 512 * (prof["copy_4k_ns"] + prof["page_free_ns"])
        )
        _put(
            prof,
            rows,
            spread,
            "collapse_isolate_ns",
            (col - rest) / 512,
            S["collapse_2m"],
            "MADV_COLLAPSE per 2 MiB less the model's other charges (copy, free, walks, flush), per page",
        )


def _reclaim_split_rest(prof, S, swapped):
    """What the model charges MADV_PAGEOUT of a THP whose first byte only is non-zero when
    it is split for reclaim, beside the passes of its 511 unmapped zero subpages: the scan of
    the THP (short of the swap-out: it got no cluster) and of its one written subpage (which
    goes on to swap when ``swapped``), the PMD split, the folio split and the zero checks of
    511 subpages (plus the first page's, which stops at its first byte), the TLB flush, the
    PMD walk and the reclaim_pages() call."""
    best = _med(S["memchr_inv_4k_best"]) if S.get("memchr_inv_4k_best") else 0.0
    out = prof.get("reclaim_swapout_ns") or 0
    return (
        2 * prof["reclaim_scan_page_ns"]
        - (1 if swapped else 2) * out
        + prof["split_pmd_ns"]
        + prof["split_folio_ns"]
        + 511 * prof["memchr_inv_4k_ns"]
        + best
        + prof["tlb_flush_ns"]
        + prof["pmd_walk_ns"]
        + prof["reclaim_pages_ns"]
    )


def _fit_reclaim_split(prof, S, V, rows, spread):
    """reclaim_unmapped_ns: MADV_PAGEOUT to a swap file of THPs whose first byte only is
    non-zero (file.thp_pageout_best, per THP; a swap file has no 2 MiB slots, so each THP is
    split and its 511 zero subpages remapped to the zero page), less what the model charges
    the rest of it (_reclaim_split_rest, and the unmap of the written page); per zero
    subpage, each of which still takes a pass of shrink_folio_list (see costs.rs).

    reclaim_activate_ns: the same with no swap device (noswap.thp_pageout_best): the THP's
    folio_alloc_swap() fails, so it is split as well, and each piece's pass ends at
    activate_locked_split; the rest as above, the written page left mapped (its PTE walked
    by the split instead of unmapped)."""

    for dev, field, own, note in [
        ("file", "reclaim_unmapped_ns", prof["unmap_page_ns"], "swap-file THP pageout"),
        ("noswap", "reclaim_activate_ns", prof["pte_walk_ns"], "THP pageout with no swap device"),
    ]:
        swapped = dev != "noswap"
        k = f"{dev}.thp_pageout_best"
        if S.get(k) and (V.get(f"{dev}.thp_best.thp_swpout_fallback") or 0) >= 0.9:
            _put(
                prof,
                rows,
                spread,
                field,
                (_med(S[k]) - _reclaim_split_rest(prof, S, swapped) - own) / 511,
                S[k],
                f"{note}, seed 000 best case (each THP split), per THP less the model's other charges, per zero"
                " subpage",
            )


# a vm.compact_memory run of the fragmented memory that migrated fewer pages is left out of
# migrate_4k_ns (its time is the scanners', ~10-40 ms)
MIN_MIGRATED = 2000


def _fit_compaction(prof, S, rows, spread):
    """compact_scan_migrate_ns and migrate_4k_ns from the vm.compact_memory samples, each
    sample's time less what the model charges on the same path with the other fields.

    compact_scan.<tag>.*: the compacted memory compacted again (next to nothing to migrate),
    with the migrate scanner's loop iterations counted from the page flags and a traced walk
    (calibrate_mm.rs migrate_scan_steps): compact_scan_migrate_ns per iteration =
    (time - free-scanner pfns x compact_scan_free_ns - pageblocks x compact_block_ns -
    migrated pages x migrate_4k_ns) / iterations, the median over the runs.

    compact.<tag>.*: the fragmented memory compacted (runs paired with the scan runs through
    compact_scan.<tag>.pair): migrate_4k_ns = the sum over the runs of (time - the same
    charges, the migrate scanner's iterations taken from the paired scan run, scaled to the
    pfns this run counted, plus one for each page it isolated) over the sum of the pages
    migrated (a run that migrated little weighs little; the host's other memory decides how
    much a run migrates: 300 to 150,000 pages for the same 1 GiB region). What the model
    charges per free block isolated or returned (page_alloc_ns, page_free_ns) and per lock
    handoff stays inside migrate_4k_ns, as before.

    Without scan samples (a calibration taken before they existed): the old least squares,
    time = (migrate + free scanned pfns) x compact_scan_pfn_ns + migrated pages x
    migrate_4k_ns, which swings with the pfns scanned (830-3164 ns a page over ten
    calibrations of one host)."""
    tags = sorted({k.split(".")[1] for k in S if k.startswith("compact_scan.")})
    if not tags:
        return _fit_compaction_lsq(prof, S, rows, spread)
    free_ns, block_ns = prof["compact_scan_free_ns"], prof["compact_block_ns"]
    scans = []  # (tag, pair, ns, steps, blocks, ms, fs, mg)
    for tag in tags:
        ks = ["pair", "ns", "steps", "blocks", "compact_migrate_scanned", "compact_free_scanned", "pgmigrate_success"]
        cols = [S.get(f"compact_scan.{tag}.{k}", []) for k in ks]
        for row in zip(*cols, strict=False):
            if row[2] > 0:
                scans.append((tag, int(row[0]), *row[1:]))
    if not scans:
        return
    migrate = prof["migrate_4k_ns"]
    step_ns = None
    for _ in range(3):  # each estimate uses the other's: the scan runs migrate a few pages
        per = [(ns - fs * free_ns - bl * block_ns - mg * migrate) / st for _, _, ns, st, bl, _, fs, mg in scans]
        step_ns = _med(per)
        resid, pages, each = 0.0, 0.0, []
        for tag, pair, _, st, bl, ms_b, _, mg_b in scans:
            ks = [
                f"compact.{tag}.{x}"
                for x in ("ns", "compact_migrate_scanned", "compact_free_scanned", "pgmigrate_success")
            ]
            if not all(k in S and pair < len(S[k]) for k in ks):
                continue
            ns, ms, fs, mg = (S[k][pair] for k in ks)
            if mg < MIN_MIGRATED:
                continue  # a scan, not a migration: its time says nothing per page
            steps = st * (ms / ms_b if ms_b else 1.0) + max(0.0, mg - mg_b)
            r = ns - steps * step_ns - fs * free_ns - bl * block_ns
            resid += r
            pages += mg
            if mg > 0:
                each.append(r / mg)
        if pages < MIN_MIGRATED:
            rows.append(("(compaction fit)", 0.0, 0.0, f"migrate_4k_ns not fitted: {pages:.0f} pages migrated"))
            break
        migrate = resid / pages
    n = len(scans)
    _put(
        prof,
        rows,
        spread,
        "compact_scan_migrate_ns",
        step_ns,
        per,
        f"vm.compact_memory of compacted memory, per migrate-scanner iteration, {n} runs",
    )
    pfn = [ns / ms for _, _, ns, _, _, ms, _, _ in scans if ms]
    if pfn:
        _put(prof, rows, spread, "compact_scan_pfn_ns", _med(pfn), pfn, "cross-check: the same runs per pfn counted")
    if migrate > 0 and migrate != prof["migrate_4k_ns"]:
        prof["migrate_4k_ns"] = round(migrate)
        spread["migrate_4k_ns"] = round(_spread(each), 4)
        rows.append(
            ("migrate_4k_ns", prof["migrate_4k_ns"], _spread(each), f"vm.compact_memory, {pages:,.0f} pages migrated")
        )


def _fit_compaction_lsq(prof, S, rows, spread):
    """time = (migrate + free scanned pfns) x compact_scan_pfn_ns + migrated pages x
    migrate_4k_ns, least squares over every vm.compact_memory sample."""
    pts = []
    for tag in sorted({k.split(".")[1] for k in S if k.startswith("compact.")}):
        ks = [
            f"compact.{tag}.{x}" for x in ("ns", "compact_migrate_scanned", "compact_free_scanned", "pgmigrate_success")
        ]
        if all(k in S for k in ks):
            for t, ms, fs, mg in zip(*(S[k] for k in ks), strict=False):
                pts.append((t, ms + fs, mg))
    if len(pts) < 2:
        return
    sxx = sum(a * a for _, a, _ in pts)
    syy = sum(b * b for _, _, b in pts)
    sxy = sum(a * b for _, a, b in pts)
    tx = sum(t * a for t, a, _ in pts)
    ty = sum(t * b for t, _, b in pts)
    det = sxx * syy - sxy * sxy
    if det <= 0:
        return
    a = (tx * syy - ty * sxy) / det
    b = (ty * sxx - tx * sxy) / det
    if a <= 0 or b <= 0:
        rows.append(("(compaction fit)", 0.0, 0.0, f"not used: scan {a:.1f} ns/pfn, migrate {b:.0f} ns/page"))
        return
    resid = [t - (a * x + b * y) for t, x, y in pts]
    rel = (sum(r * r for r in resid) / len(resid)) ** 0.5 / (sum(t for t, _, _ in pts) / len(pts))
    prof["compact_scan_pfn_ns"] = max(1, round(a))
    prof["migrate_4k_ns"] = round(b)
    spread["compact_scan_pfn_ns"] = spread["migrate_4k_ns"] = round(rel, 4)
    n = len(pts)
    rows.append(("compact_scan_pfn_ns", prof["compact_scan_pfn_ns"], rel, f"vm.compact_memory fit over {n} runs"))
    rows.append(("migrate_4k_ns", prof["migrate_4k_ns"], rel, f"vm.compact_memory fit over {n} runs"))


#: the host's two speeds (docs/host_speed.md, "The two speeds label the runs"): a set of CPU
#: probes (host::cpu_probe_ns) splits into them where its two-means centres lie at least this
#: far apart (h67-h68: ~90 and ~97 us, 1.08x) ...
SPEED_MIN_GAP = 1.04
#: ... and each side holds at least this share of the probes
SPEED_MIN_SHARE = 0.1


def speed_cut(probes: list[float]) -> float | None:
    """The CPU probe (ns) that parts the host's fast speed from its slow one in ``probes``
    (the live runner's host::cpu_probe_ns readings: a calibration's, a validation's phases):
    the midpoint of the two centres of a two-means split, or None where the probes do not
    fall into two speeds (centres closer than SPEED_MIN_GAP, or a side with less than
    SPEED_MIN_SHARE of them)."""
    v = sorted(p for p in probes if p and p > 0)
    if len(v) < 4:
        return None
    lo, hi = v[0], v[-1]
    cut = (lo + hi) / 2
    for _ in range(100):
        a = [x for x in v if x < cut]
        b = [x for x in v if x >= cut]
        if not a or not b:
            return None
        lo, hi = statistics.mean(a), statistics.mean(b)
        new = (lo + hi) / 2
        if new == cut:
            break
        cut = new
    if hi < SPEED_MIN_GAP * lo or min(len(a), len(b)) < SPEED_MIN_SHARE * len(v):
        return None
    return cut


#: a kind of sample keeps its samples of one speed where it has at least this many of them
#: (else all its samples: a speed the calibration met too rarely for that kind)
SPEED_MIN_SAMPLES = 2


def samples_at_speed(cal: dict, fast: bool, cut: float) -> tuple[dict, list[str]]:
    """``cal`` (a calibration: thplab-live calibrate's JSON) with each kind's samples cut to
    those taken at one of the host's two speeds: a CPU probe (its ``sample_probes``) below
    ``cut`` for the fast one (``fast``), at or above it for the slow one. A kind with fewer
    than SPEED_MIN_SAMPLES of that speed keeps all its samples, as do the compaction runs,
    whose kinds are columns of one table (compact.*, compact_scan.*, cut alike or not at
    all); returns the calibration and the kinds that kept all. profile_from_samples on it
    gives the profile of that speed."""
    S, P = cal.get("samples") or {}, cal.get("sample_probes") or {}
    out, kept_all = {}, []
    for k, v in S.items():
        p = P.get(k)
        if k.startswith("compact") or not p or len(p) != len(v):
            out[k] = v
            continue
        sel = [x for x, q in zip(v, p, strict=True) if (q < cut) == fast]
        if len(sel) >= min(SPEED_MIN_SAMPLES, len(v)):
            out[k] = sel
        else:
            out[k] = v
            kept_all.append(k)
    return {**cal, "samples": out}, kept_all


def sample_probes(cal: dict) -> list[float]:
    """Every sample's CPU probe in ``cal`` (its ``sample_probes``; none in a calibration
    taken before they were recorded)."""
    return [q for v in (cal.get("sample_probes") or {}).values() for q in v]


#: fields of a profile no speed has its own of (what the profile is, not what it charges)
_NOT_BY_SPEED = ("name", "source", "spread", "speed")


def _differ(a: dict, b: dict) -> dict:
    """The fields of ``b`` whose values are not ``a``'s (tables compared field by field)."""
    out = {}
    for k, v in b.items():
        if k in _NOT_BY_SPEED:
            continue
        if isinstance(v, dict) and isinstance(a.get(k), dict):
            d = _differ(a[k], v)
            if d:
                out[k] = d
        elif a.get(k) != v:
            out[k] = v
    return out


def speed_table(main: dict, cals: list[dict], other_probes=()) -> dict | None:
    """A profile's ``speed`` table: where the host's two speeds part (``cut_ns``, speed_cut
    over every sample's CPU probe in ``cals`` and ``other_probes``, e.g. the live runs'
    phases in a validation) and, under ``fast`` and ``slow``, the fields whose value at that
    speed is not ``main``'s. Each speed's value is the median over the calibrations in
    ``cals`` that met it (SPEED_MIN_SHARE of their samples or more) of profile_from_samples
    on their samples of that speed (samples_at_speed). None where the probes do not fall
    into two speeds, or a speed no calibration met enough. The model charges ``main``;
    `thplab validate` prices each live run's phase at the speed its CPU probe says the
    host ran the guest at (docs/host_speed.md)."""
    each = [sample_probes(c) for c in cals]
    cut = speed_cut([q for ps in each for q in ps] + [q for q in other_probes if q])
    if cut is None:
        return None
    out: dict = {"cut_ns": round(cut)}
    for name, fast in (("fast", True), ("slow", False)):
        profs = []
        for c, ps in zip(cals, each, strict=True):
            if ps and sum((q < cut) == fast for q in ps) >= SPEED_MIN_SHARE * len(ps):
                profs.append(profile_from_samples(samples_at_speed(c, fast, cut)[0])[0])
        if not profs:
            return None
        out[f"{name}_calibrations"] = len(profs)
        out[name] = _differ(main, median_profile(profs, ""))
    return out


def profile_at_speed(prof: dict, speed: str) -> dict:
    """``prof`` with its ``speed`` table's fields of ``speed`` ("fast" or "slow") in place of
    its own (speed_table), and no speed table."""

    def merged(a: dict, b: dict) -> dict:
        out = dict(a)
        for k, v in b.items():
            out[k] = merged(a[k], v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
        return out

    base = {k: v for k, v in prof.items() if k != "speed"}
    return merged(base, (prof.get("speed") or {}).get(speed) or {})


def median_profile(profiles: list[dict], source: str) -> dict:
    """Each numeric field the median of its value in ``profiles`` (calibrations of one host,
    e.g. `validate --calibrate`'s passes spread over a validation; an integer field stays
    an integer), tables field by field, anything else the first profile's; ``source`` says
    how they were taken. A field a profile lacks is the median of those that have it."""

    def med(vals):
        vals = [v for v in vals if v is not None]
        if not vals:
            return None
        if all(isinstance(v, dict) for v in vals):
            keys = list(dict.fromkeys(k for v in vals for k in v))
            return {k: med([v.get(k) for v in vals]) for k in keys}
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            m = statistics.median(vals)
            return round(m) if all(isinstance(v, int) for v in vals) else float(m)
        return vals[0]

    if not profiles:
        raise ValueError("median_profile: no profiles")
    keys = list(dict.fromkeys(k for p in profiles for k in p))
    out = {k: med([p.get(k) for p in profiles]) for k in keys}
    out["source"] = source
    return out


def _tv(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    raise TypeError(v)


def _tk(k: str) -> str:
    """A TOML key: bare where it can be, else quoted."""
    return k if k and all(c.isalnum() or c in "_-" for c in k) else json.dumps(k)


def to_toml(prof: dict, comments: list[str] = ()) -> str:
    """A small TOML writer for the profile's shape: scalars, then each table (at any depth)
    under its own header."""
    out = [f"# {c}" for c in comments]

    def table(path: list[str], t: dict) -> None:
        if path:
            out.append("")
            out.append("[" + ".".join(_tk(k) for k in path) + "]")
        for k, v in t.items():
            if not isinstance(v, dict):
                out.append(f"{_tk(k)} = {_tv(v)}")
        for k, v in t.items():
            if isinstance(v, dict):
                table([*path, k], v)

    table([], prof)
    return "\n".join(out) + "\n"


def profile_toml(prof: dict, notes=()) -> str:
    """A calibrated profile as the TOML file calibrate writes: its source and the notes as
    comments on top."""
    return to_toml(prof, [f"thplab cost profile, {prof.get('source', '')}"] + [f"note: {x}" for x in notes])


def run_native(quick: bool, reps: int | None, timeout: float = 300.0, only: str | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="thplab-cal-") as d:
        out = Path(d) / "cal.json"
        args = [find_binary(), "calibrate", "--out", str(out)]
        if quick:
            args.append("--quick")
        if reps is not None:
            args += ["--reps", str(reps)]
        if only:
            args += ["--only", only]
        return invoke_json(args, timeout, out, "calibration")


# the fields `--only zram` refits; every other field is the base profile's
ZRAM_ONLY_FIELDS = ("swapin_ns", "zero_filled_4k_ns")


def _profile_only(
    cal: dict, base_toml: str, step: str, keep, what: str
) -> tuple[dict, list[tuple[str, float, float, str]]]:
    """The base profile with the fields (and tables, spreads and rows) that `keep` names
    refitted from a calibration of `step` alone; the fits take the base's other fields."""
    new, rows = profile_from_samples(cal, base_toml)
    prof = tomllib.loads(base_toml)
    for k, v in new.items():
        if keep(k):
            prof[k] = v
    spread = prof.setdefault("spread", {})
    for k, v in new.get("spread", {}).items():
        if keep(k):
            spread[k] = v
    rows = [r for r in rows if keep(r[0])]
    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    prof["source"] = f"{prof.get('source', '?')}; {what} from thplab calibrate --only {step} {date}"
    return prof, rows


def profile_only_zram(cal: dict, base_toml: str) -> tuple[dict, list[tuple[str, float, float, str]]]:
    """The base profile with its zram tables and swapin_ns refitted from a zram-only
    calibration (the fits take the base's other fields: fault_4k_ns, clear_4k_ns,
    swap_free_ns, pte_walk_ns...)."""
    return _profile_only(
        cal, base_toml, "zram", lambda k: k.startswith("zram") or k in ZRAM_ONLY_FIELDS, "zram tables and swapin_ns"
    )


# the fields `--only compaction` refits
COMPACTION_ONLY_FIELDS = ("compact_scan_migrate_ns", "compact_scan_pfn_ns", "migrate_4k_ns")


def profile_only_compaction(cal: dict, base_toml: str) -> tuple[dict, list[tuple[str, float, float, str]]]:
    """The base profile with the compaction fields refitted from a compaction-only calibration
    (the fit takes the base's compact_scan_free_ns and compact_block_ns)."""
    return _profile_only(
        cal,
        base_toml,
        "compaction",
        lambda k: k in COMPACTION_ONLY_FIELDS or k.startswith("(compaction"),
        "compaction fields",
    )


def profile_only_refault(cal: dict, base_toml: str) -> tuple[dict, list[tuple[str, float, float, str]]]:
    """The base profile with refault_reported_2m_ns refitted from a refault-only calibration
    (its own backed THP faults give the warm fault it is measured against)."""
    return _profile_only(cal, base_toml, "refault", lambda k: k == "refault_reported_2m_ns", "refault_reported_2m_ns")


def _print_rows(rows, cal, path):
    try:
        from rich.console import Console
        from rich.table import Table

        t = Table(title=f"thplab calibrate: {cal.get('host')} ({cal.get('elapsed_s', 0):.1f} s)")
        for c in ("primitive", "value", "spread", "note"):
            t.add_column(c, justify="right" if c in ("value", "spread") else "left")
        for name, v, sp, note in rows:
            t.add_row(name, f"{v:,.1f}" if isinstance(v, float) else f"{v:,}", f"{sp:.1%}", note)
        Console().print(t)
    except ImportError:  # pragma: no cover
        for name, v, sp, note in rows:
            print(f"{name:40s} {v:>14,.1f} {sp:7.1%}  {note}")
    for n_ in cal.get("notes", []):
        print(f"note: {n_}")
    print(f"wrote {path}")


def cmd(args) -> int:
    if args.reps is not None and not (1 <= args.reps <= 1000):
        raise InputError("--reps must be 1..1000")
    if args.only and not args.base:
        raise InputError(f"--only {args.only} needs --base PROFILE (the fields it does not measure)")
    if args.base and not args.only:
        raise InputError("--base goes with --only")
    base_text = None
    if args.base:
        try:
            base_text = Path(args.base).read_text()
            tomllib.loads(base_text)
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise InputError(f"--base {args.base}: {e}") from e
    cal = run_native(args.quick, args.reps, only=args.only)
    if args.only == "zram":
        prof, rows = profile_only_zram(cal, base_text)
    elif args.only == "refault":
        prof, rows = profile_only_refault(cal, base_text)
    elif args.only:
        prof, rows = profile_only_compaction(cal, base_text)
    else:
        prof, rows = profile_from_samples(cal)
        # the host's two speeds, where its samples met both (speed_table)
        table = speed_table(prof, [cal])
        if table:
            prof["speed"] = table
            rows.append(
                (
                    "(speed table)",
                    float(table["cut_ns"]),
                    0.0,
                    f"CPU probe parting the host's two speeds; {len(table['fast'])} fields differ at the fast "
                    f"one, {len(table['slow'])} at the slow one",
                )
            )
    text = profile_toml(prof, cal.get("notes", []))
    from thplab import _native as n

    try:
        n.parse_costs(text)
    except ValueError as e:  # pragma: no cover - a bug here, not bad input
        raise LiveError(f"calibrate produced an invalid profile: {e}") from e
    path = write_atomic(args.out, text)
    _print_rows(rows, cal, path)
    return 0


if __name__ == "__main__":  # pragma: no cover
    import argparse

    p = argparse.ArgumentParser(prog="thplab calibrate")
    add_arguments(p)
    sys.exit(cmd(p.parse_args()))
