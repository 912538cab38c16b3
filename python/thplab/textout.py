"""Terminal output (rich): results, knobs and machines, shown the way the kernel shows them.

Kernel texts (buddyinfo, meminfo lines, sysfs choices such as `always [madvise] never`) are
printed verbatim, never through rich markup (square brackets are markup to rich) and never
wrapped, so they can be diffed against a real /proc file.
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Iterable
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from thplab.result import Result

__all__ = [
    "MEMINFO_ORDER",
    "fmt_ns",
    "make_console",
    "meminfo_lines",
    "render_knobs",
    "render_machine",
    "render_result",
    "vmstat_groups",
]


def make_console(file: TextIO | None = None) -> Console:
    return Console(file=file if file is not None else sys.stdout, highlight=False)


# ---------------------------------------------------------------------------------------------
# number formatting


def fmt_ns(ns: float | int | None) -> str:
    """A duration for people: 850 ns, 2.50 µs, 12.345 ms, 7.170 s."""
    if ns is None:
        return "-"
    if ns == 0:
        return "0"
    ns = float(ns)
    a = abs(ns)
    if a < 1e3:
        return f"{ns:.0f} ns"
    if a < 1e6:
        return f"{ns / 1e3:.2f} µs"
    if a < 1e9:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e9:.3f} s"


def fmt_ns_short(ns: float | int | None) -> str:
    """A compact duration, 3 significant digits: 850ns, 84.0µs, 140µs, 1.20ms, 7.17s."""
    if ns is None:
        return "-"
    ns = float(ns)
    if abs(ns) < 1e3:
        return f"{ns:.0f}ns"
    for div, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if abs(ns) >= div * 0.9995:
            v = float(f"{ns / div:.3g}")
            return f"{v:.0f}{unit}" if abs(v) >= 100 else f"{v:.1f}{unit}" if abs(v) >= 10 else f"{v:.2f}{unit}"
    return f"{ns:.0f}ns"  # pragma: no cover


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _bytes(v: Any) -> int:
    """Bytes of a size as the Rust side writes it (`512G`, `4097`, or an int)."""
    if isinstance(v, int):
        return v
    m = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)\s*", str(v))
    return int(m.group(1)) * _UNITS[m.group(2)] if m else 0


def fmt_bytes(b: int) -> str:
    for unit, m in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= m:
            v = b / m
            return f"{v:.0f}{unit}" if b % m == 0 else f"{v:.1f}{unit}"
    return f"{b}"


def fmt_kb(kb: int) -> str:
    return fmt_bytes(kb * 1024) if kb else "0"


def _signed(v: int) -> str:
    return f"+{v}" if v > 0 else str(v)


# ---------------------------------------------------------------------------------------------
# vmstat grouping

_GROUPS: list[tuple[str, re.Pattern[str]]] = [
    ("THP", re.compile(r"^(thp_|nr_anon_transparent_hugepages$)")),
    ("faults", re.compile(r"^(pgfault|pgmajfault)$")),
    ("allocation", re.compile(r"^(pgalloc_|pgfree$|allocstall|pgskip_)")),
    ("compaction", re.compile(r"^(compact_|kcompactd_)")),
    ("migration", re.compile(r"^(pgmigrate_|numa_|pgpromote|pgdemote)")),
    ("swap", re.compile(r"^(pswp|swp|zswp|swap_|pgmajfault_swap)")),
    (
        "reclaim",
        re.compile(
            r"^(pgscan|pgsteal|pgrefill|pgactivate|pgdeactivate|pglazyfree|pgrotated|pageoutrun|"
            r"workingset_|kswapd_|slabs_scanned|drop_|pginodesteal|pgpgin|pgpgout)"
        ),
    ),
    ("counts", re.compile(r"^nr_")),
]


def vmstat_groups(names: Iterable[str]) -> list[tuple[str, list[str]]]:
    """Group counter names (THP first, then faults, allocation, compaction, migration, swap,
    reclaim, nr_* counts, the rest), names sorted within each group; empty groups dropped."""
    buckets: dict[str, list[str]] = {g: [] for g, _ in _GROUPS}
    buckets["other"] = []
    for n in names:
        for g, pat in _GROUPS:
            if pat.search(n):
                buckets[g].append(n)
                break
        else:
            buckets["other"].append(n)
    return [(g, sorted(v)) for g, v in buckets.items() if v]


# ---------------------------------------------------------------------------------------------
# meminfo in the kernel's order and format (fs/proc/meminfo.c)

MEMINFO_ORDER = [
    "MemTotal",
    "MemFree",
    "MemAvailable",
    "Buffers",
    "Cached",
    "SwapCached",
    "Active",
    "Inactive",
    "Active(anon)",
    "Inactive(anon)",
    "Active(file)",
    "Inactive(file)",
    "Unevictable",
    "Mlocked",
    "SwapTotal",
    "SwapFree",
    "Zswap",
    "Zswapped",
    "Dirty",
    "Writeback",
    "AnonPages",
    "Mapped",
    "Shmem",
    "KReclaimable",
    "Slab",
    "SReclaimable",
    "SUnreclaim",
    "KernelStack",
    "PageTables",
    "SecPageTables",
    "NFS_Unstable",
    "Bounce",
    "WritebackTmp",
    "CommitLimit",
    "Committed_AS",
    "VmallocTotal",
    "VmallocUsed",
    "VmallocChunk",
    "Percpu",
    "HardwareCorrupted",
    "AnonHugePages",
    "ShmemHugePages",
    "ShmemPmdMapped",
    "FileHugePages",
    "FilePmdMapped",
    "CmaTotal",
    "CmaFree",
    "Unaccepted",
    "Balloon",
    "HugePages_Total",
    "HugePages_Free",
    "HugePages_Rsvd",
    "HugePages_Surp",
    "Hugepagesize",
    "Hugetlb",
    "DirectMap4k",
    "DirectMap2M",
    "DirectMap1G",
]
MEMINFO_BRIEF = [
    "MemTotal",
    "MemFree",
    "MemAvailable",
    "SwapCached",
    "Active(anon)",
    "Inactive(anon)",
    "SwapTotal",
    "SwapFree",
    "Zswap",
    "Zswapped",
    "AnonPages",
    "PageTables",
    "AnonHugePages",
]


def meminfo_lines(meminfo: dict[str, int], full: bool = True) -> list[str]:
    """`/proc/meminfo` lines: `MemTotal:       24522284 kB` (HugePages_* are counts, no unit)."""
    order = MEMINFO_ORDER if full else MEMINFO_BRIEF
    keys = [k for k in order if k in meminfo]
    if full:
        keys += sorted(k for k in meminfo if k not in MEMINFO_ORDER)
    out = []
    for k in keys:
        v = meminfo[k]
        unit = "" if k.startswith("HugePages_") else " kB"
        out.append(f"{k + ':':<16}{v:>8}{unit}")
    return out


# ---------------------------------------------------------------------------------------------
# results


def _table(title: str | None = None, **kw: Any) -> Table:
    kw.setdefault("title_style", "bold")
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, **kw)


def _num(t: Table, header: str) -> None:
    """A right-aligned column that never wraps (numbers and durations)."""
    t.add_column(header, justify="right", no_wrap=True)


def _heading(console: Console, text: str) -> None:
    console.print(Text(text, style="bold"))


def _verbatim(console: Console, text: str, indent: str = "  ") -> None:
    for line in text.rstrip("\n").splitlines():
        console.print(Text(indent + line), soft_wrap=True)


def machine_summary(m: Any) -> str:
    if not m:
        return "-"
    if isinstance(m, str):
        return m
    nodes = m.get("nodes") or []
    total = sum(_bytes(n.get("mem", 0)) for n in nodes)
    cpus = sum(int(n.get("cpus", 0)) for n in nodes)
    s = f"{fmt_bytes(total)} in {len(nodes)} node{'s' if len(nodes) != 1 else ''}, {cpus} cpus"
    swaps = m.get("swap") or []
    if swaps:
        s += ", swap " + " ".join(f"{w.get('type')}:{w.get('size')}" for w in swaps)
    if m.get("name"):
        s = f"{m['name']} ({s})"
    return s


def _short_phase(name: str, single_process: bool) -> str:
    return name.split(":", 1)[1] if single_process and ":" in name else name


def render_result(
    res: Result, console: Console | None = None, full: bool = False, defaults: dict[str, str] | None = None
) -> None:
    """Everything a run shows: header, phases, vmstat deltas, meminfo, buddyinfo,
    smaps_rollup, TLB, latency, op errors. `full` shows every meminfo/smaps field."""
    c = console or make_console()
    title = f"{res.name or 'workload'} · {res.backend or '?'}"
    c.print(Rule(Text(title, style="bold"), align="left"))
    info = [
        ("machine", machine_summary(res.machine)),
        ("seed", str(res.seed)),
        ("simulated time" if res.backend == "model" else "time", fmt_ns(res.sim_time_ns)),
    ]
    if isinstance(res.kernel, dict) and res.kernel.get("release"):
        info.append(("kernel", str(res.kernel["release"])))
    if defaults is not None:
        changed = [f"{k}={v}" for k, v in res.knobs.items() if defaults.get(k) != v]
        if changed:
            info.append(("knobs", ", ".join(changed)))
    if isinstance(res.raw.get("cost_profile"), dict) and res.raw["cost_profile"].get("name"):
        info.append(("costs", str(res.raw["cost_profile"]["name"])))
    for k, v in info:
        c.print(Text.assemble((f"{k}: ", "dim"), v), soft_wrap=True)
    c.print()

    phases = res.raw.get("phases") or []
    procs = res.processes
    single = len({p.get("process") for p in phases}) <= 1
    if phases:
        t = _table("phases")
        for col in ("phase", "process"):
            t.add_column(col)
        for col in ("start", "end", "time", "sys"):
            _num(t, col)
        for ph in phases:
            s, e = ph.get("start_ns", 0), ph.get("end_ns", 0)
            t.add_row(
                ph.get("name", ""),
                ph.get("process", ""),
                fmt_ns(s),
                fmt_ns(e),
                fmt_ns(e - s),
                fmt_ns(ph.get("sys_ns", 0)),
            )
        c.print(t)
        c.print()

    delta = {k: v for k, v in res.vmstat_delta.items() if v}
    if delta:
        per_phase = 1 < len(phases) <= 6
        t = _table("vmstat deltas (non-zero)")
        t.add_column("group", style="dim", no_wrap=True)
        t.add_column("counter", no_wrap=True)
        if per_phase:
            for ph in phases:
                _num(t, _short_phase(ph.get("name", ""), single))
        _num(t, "total")
        for gi, (group, names) in enumerate(vmstat_groups(delta)):
            if gi:
                t.add_section()
            for i, n in enumerate(names):
                cells = [group if i == 0 else "", n]
                if per_phase:
                    for ph in phases:
                        v = (ph.get("vmstat_delta") or {}).get(n, 0)
                        cells.append(_signed(v) if n.startswith("nr_") and v else (str(v) if v else "·"))
                cells.append(_signed(delta[n]) if n.startswith("nr_") else str(delta[n]))
                t.add_row(*cells)
        c.print(t)
        c.print()
    elif phases or res.vmstat:
        c.print(Text("vmstat: no counter changed", style="dim"))
        c.print()

    if res.meminfo:
        _heading(c, "meminfo (end of run)" + ("" if full else "; --full for every line"))
        _verbatim(c, "\n".join(meminfo_lines(res.meminfo, full=full)))
        c.print()

    if res.buddyinfo_before or res.buddyinfo_after:
        for label, text in (("before", res.buddyinfo_before), ("after", res.buddyinfo_after)):
            if text:
                _heading(c, f"buddyinfo ({label})")
                _verbatim(c, text)
        c.print()

    if procs:
        fields_all: list[str] = []
        for p in procs:
            for k in p.get("smaps_rollup") or {}:
                if k not in fields_all:
                    fields_all.append(k)
        brief = ["Rss", "Anonymous", "AnonHugePages", "Swap"]
        fields = fields_all if full else [f for f in brief if f in fields_all]
        killed = any(p.get("killed") for p in procs)
        t = _table("smaps_rollup (kB, just before exit)")
        t.add_column("process")
        _num(t, "pid")
        for f in fields:
            _num(t, f)
        _num(t, "lifetime")
        if killed:
            t.add_column("killed")
        for p in procs:
            sr = p.get("smaps_rollup") or {}
            row = [
                p.get("name", ""),
                str(p.get("pid", "")),
                *[str(sr.get(f, 0)) for f in fields],
                fmt_ns(p.get("end_ns", 0) - p.get("start_ns", 0)),
            ]
            if killed:
                row.append(str(p.get("killed") or ""))
            t.add_row(*row)
        c.print(t)
        c.print()

        tlb_procs = [p for p in procs if (p.get("tlb") or {}).get("accesses")]
        if tlb_procs:
            t = _table("access streams (TLB)")
            t.add_column("process", no_wrap=True)
            cols = ["accesses", "time", "cyc/acc", "dTLB miss", "walks"]
            if full:
                cols += ["load miss", "store miss", "STLB hit", "walk cyc"]
            for col in cols:
                _num(t, col)
            for p in tlb_procs:
                tl = p["tlb"]
                n = tl.get("accesses", 0)
                cpa = f"{tl.get('cycles', 0) / n:.2f}" if n else "-"
                ld, st = tl.get("dtlb_load_misses", 0), tl.get("dtlb_store_misses", 0)
                row = [
                    p.get("name", ""),
                    str(n),
                    fmt_ns(p.get("access_ns", 0)),
                    cpa,
                    str(ld + st),
                    str(tl.get("page_walks", 0)),
                ]
                if full:
                    row += [str(ld), str(st), str(tl.get("stlb_hits", 0)), str(tl.get("walk_cycles", 0))]
                t.add_row(*row)
            c.print(t)
            c.print()

    lat = res.raw.get("latency") or {}
    if lat:
        pcols = sorted(
            {k for v in lat.values() for k in (v.get("ns") or {})}, key=lambda k: int(re.sub(r"\D", "", k) or 0)
        )
        if not full:
            pcols = [p for p in pcols if p in ("p05", "p25", "p50", "p75", "p90", "p95", "p99")] or pcols
        t = _table("latency percentiles")
        t.add_column("name", no_wrap=True)
        _num(t, "count")
        for p in pcols:
            _num(t, p)
        for name, v in lat.items():
            ns = v.get("ns") or {}
            t.add_row(name, str(v.get("count", 0)), *[fmt_ns_short(ns.get(p)) for p in pcols])
        c.print(t)
        c.print()

    errs = res.errors
    if errs:
        t = _table(f"op errors ({len(errs)})", title_style="bold red")
        for col in ("process", "op#", "op", "errno", "message"):
            t.add_column(col, justify="right" if col == "op#" else "left")
        for e in errs:
            t.add_row(
                e.get("process", ""),
                str(e.get("op_index", "")),
                e.get("op", ""),
                e.get("errno", ""),
                e.get("message", ""),
            )
        c.print(t)
        c.print()
    for p in procs:
        if p.get("killed"):
            c.print(Text(f"process {p.get('name')} was killed: {p['killed']}", style="bold red"))


# ---------------------------------------------------------------------------------------------
# knobs


def knob_show(k: dict[str, Any], value: str) -> str:
    """How sysfs shows a knob's value: `always [madvise] never` for choices, the number otherwise."""
    vals = k.get("values") or {}
    if vals.get("type") == "choice":
        return " ".join(f"[{c}]" if c == value else c for c in vals.get("choices", []))
    if vals.get("type") == "trigger":
        return "(write-only trigger)"
    return value


def knob_accepted(k: dict[str, Any]) -> str:
    vals = k.get("values") or {}
    t = vals.get("type")
    if t == "choice":
        return " ".join(vals.get("choices", []))
    if t == "int":
        extra = " or auto" if k.get("name") == "vm.min_free_kbytes" else ""
        return f"{vals.get('min')}..={vals.get('max')}{extra}"
    if t == "trigger":
        return f"write {vals.get('min')}..={vals.get('max')}"
    return "?"


def render_knobs(
    registry: list[dict[str, Any]],
    current: dict[str, str],
    console: Console | None = None,
    changed: set[str] | None = None,
) -> None:
    """Every knob as sysfs would show it, grouped by kind:

    transparent_hugepage/enabled: always [madvise] never
        default madvise · accepted always madvise never · sysfs /sys/kernel/mm/transparent_hugepage/enabled
        PMD THP on anonymous faults: ...
    """
    c = console or make_console()
    changed = changed or set()
    titles = {
        "sysfs": "sysfs (/sys/kernel/mm)",
        "sysctl": "sysctl (/proc/sys)",
        "policy": "thplab policies (model switches and seed mechanisms)",
    }
    kinds = []
    for k in registry:
        if k.get("kind") not in kinds:
            kinds.append(k.get("kind"))
    for kind in kinds:
        c.print(Rule(Text(titles.get(kind, str(kind)), style="bold"), align="left"))
        for k in (k for k in registry if k.get("kind") == kind):
            name = k["name"]
            val = current.get(name, k.get("default", ""))
            line = Text.assemble((name, "bold cyan"), ": ", (knob_show(k, val), "bold" if name in changed else ""))
            if name in changed:
                line.append("  (set)", style="yellow")
            c.print(line, soft_wrap=True)
            meta = [f"default {k.get('default') or '-'}", f"accepted {knob_accepted(k)}", str(kind)]
            if k.get("path"):
                meta[-1] += f" {k['path']}"
            if k.get("live_value") is not None:
                meta.append(f"live kernel: {k['live_value']}")
            c.print(Text("    " + " · ".join(meta), style="dim"), soft_wrap=True)
            doc = textwrap.fill(
                k.get("doc", ""), width=max(40, c.width), initial_indent="    ", subsequent_indent="    "
            )
            c.print(Text(doc), soft_wrap=True)
        c.print()


# ---------------------------------------------------------------------------------------------
# machines


def render_machine(m: dict[str, Any], console: Console | None = None) -> None:
    c = console or make_console()
    c.print(Rule(Text(f"machine {m.get('name') or ''}".rstrip(), style="bold"), align="left"))
    c.print(Text(machine_summary({**m, "name": None})), soft_wrap=True)
    t = _table("NUMA nodes")
    t.add_column("node", justify="right")
    t.add_column("memory", justify="right")
    t.add_column("cpus", justify="right")
    t.add_column("zones")
    for i, n in enumerate(m.get("nodes") or []):
        mem = _bytes(n.get("mem", 0))
        if i == 0:
            zones = "DMA (<16M), DMA32 (<3G)" + (", Normal (>=4G)" if mem > (3 << 30) else "")
        else:
            zones = "Normal"
        t.add_row(str(i), str(n.get("mem")), str(n.get("cpus")), zones)
    c.print(t)
    swaps = m.get("swap") or []
    if swaps:
        t = _table("swap devices")
        for col in ("type", "size", "priority", "compressor", "rotational", "path"):
            t.add_column(col)
        for i, s in enumerate(swaps):
            prio = s.get("priority")
            t.add_row(
                str(s.get("type")),
                str(s.get("size")),
                str(prio if prio is not None else -(i + 2)),
                str(s.get("comp_algorithm") or ("lzo-rle" if s.get("type") == "zram" else "-")),
                "-" if s.get("rotational") is None else str(s.get("rotational")).lower(),
                str(s.get("path") or "-"),
            )
        c.print(t)
    else:
        c.print(Text("no swap", style="dim"))
    tlb = m.get("tlb") or {}
    if tlb:
        c.print(
            Text(
                f"dTLB: L1 4K {tlb.get('l1_4k_entries')} entries/{tlb.get('l1_4k_ways')}-way, "
                f"L1 2M {tlb.get('l1_2m_entries')}/{tlb.get('l1_2m_ways')}-way, "
                f"STLB {tlb.get('stlb_entries')}/{tlb.get('stlb_ways')}-way"
            ),
            soft_wrap=True,
        )
    c.print(Text(f"kernel reserve: {m.get('kernel_reserve') or '32M (default)'}"))
