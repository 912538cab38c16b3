"""thplab census: what THP is doing to the processes on this machine, and what each policy
would change.

Per process (and per VMA with --vmas): RSS, anonymous memory, AnonHugePages, PMD-mapped THPs,
mTHP folios by size, the 4 KiB subpages of PMD-mapped THPs that are all zero, swap, khugepaged
eligibility, and for each modelled policy what it would change: the underused-THP shrinker at
max_ptes_none 0/64/256/511, seed 000's split-on-reclaim, seed 003's whole-THP swap-in.
Reading is read-only (pagemap, PAGEMAP_SCAN, kpageflags, process memory of PMD-mapped THPs only,
through a bounded buffer) and needs root, or ptrace rights over the processes.

  thplab census --pid PID [--pid PID ...] | --all   [--vmas] [--json OUT] [--html OUT.html]
  thplab census --from CENSUS.json ...               show a saved census again
  thplab census ... --what-if KNOB=VALUE [...]       census + model replay + comparison
  thplab run [W.json] --from-census CENSUS.json      replay the census in the model, then W

The replay (to_workload) translates the census into an ordinary workload: one process per
censused process, one mmap per VMA, MADV_HUGEPAGE where the VMA has it, writes that reproduce
which subpages are non-zero (at the offset of their first non-zero byte), MADV_PAGEOUT for
swapped pages, and a swap device in the machine spec. docs/census.md lists its approximations.
"""

from __future__ import annotations

import argparse
import html
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from thplab.errors import InputError

PAGE = 4096
HPAGE = 2 << 20
HPAGE_NR = 512
THRESHOLDS = (0, 64, 256, 511)
CENSUS_VERSION = 1
SCENARIOS = ("none", "shrink", "reclaim", "idle", "all")

# content codes of THP subpages (the model's encoding, crates/model/src/content.rs)
C_ZERO, C_SAME, C_SPARSE, C_DENSE = 0, 1, 2, 3

# the counters the what-if comparison shows, in this order
WHAT_IF_COUNTERS = (
    "thp_fault_alloc",
    "thp_fault_fallback",
    "thp_collapse_alloc",
    "thp_split_pmd",
    "thp_split_page",
    "thp_deferred_split_page",
    "thp_underused_split_page",
    "thp_split_unmap",
    "thp_split_free",
    "thp_swpout",
    "thp_swpout_fallback",
    "pswpout",
    "pswpin",
    "swpout_zero",
    "swpin_zero",
    "pgfault",
    "pgmajfault",
)


# ---------------------------------------------------------------------------------------------
# taking and loading a census


def run_census(
    pids: list[int] | None = None,
    all_processes: bool = False,
    layout: bool = True,
    buffer: int | None = None,
    timeout: float | None = 600.0,
) -> dict[str, Any]:
    """Take a census of these processes (or of all) with the live runner `thplab-live census`."""
    from thplab import live

    if not pids and not all_processes:
        raise InputError("census: give --pid PID (repeatable) or --all")
    if pids and all_processes:
        raise InputError("census: give --pid PID ... or --all, not both")
    binary = live.find_binary()
    with tempfile.TemporaryDirectory(prefix="thplab-census-") as d:
        out = Path(d) / "census.json"
        args = [binary, "census", "--out", str(out)]
        if all_processes:
            args.append("--all")
        for p in pids or ():
            args += ["--pid", str(int(p))]
        if not layout:
            args.append("--no-layout")
        if buffer is not None:
            args += ["--buffer", str(int(buffer))]
        return live.invoke_json(args, timeout, out, "census")


def load(path: str | Path) -> dict[str, Any]:
    """A census saved by `thplab census --json`."""
    p = Path(path)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{p}: no such census file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{p}: not a census JSON file ({e})") from None
    check(d, str(p))
    return d


def check(d: Any, origin: str = "census") -> None:
    if not isinstance(d, dict) or "processes" not in d or "census_version" not in d:
        raise InputError(f"{origin}: not a thplab census (no census_version/processes)")
    if d["census_version"] != CENSUS_VERSION:
        raise InputError(f"{origin}: census_version {d['census_version']}, this thplab reads {CENSUS_VERSION}")
    if not isinstance(d["processes"], list):
        raise InputError(f"{origin}: processes: expected a list")
    for i, p in enumerate(d["processes"]):
        if not isinstance(p, dict) or "pid" not in p or "status" not in p:
            raise InputError(f"{origin}: processes[{i}]: expected an object with pid and status")


def ok_processes(census: dict[str, Any], pids: list[int] | None = None) -> list[dict[str, Any]]:
    ps = [p for p in census["processes"] if p.get("status") == "ok"]
    if pids:
        want = set(pids)
        ps = [p for p in ps if p["pid"] in want]
    return ps


# ---------------------------------------------------------------------------------------------
# the replay: a census as an ordinary workload


def _pmd_mode(census: dict[str, Any]) -> str:
    """always / madvise / never for PMD-size anonymous THP faults (hugepages-2048kB/enabled,
    `inherit` resolved through transparent_hugepage/enabled)."""
    host = census.get("host", {})
    glob = host.get("enabled") or host.get("knobs", {}).get("transparent_hugepage/enabled", "madvise")
    pmd = host.get("mthp_enabled", {}).get("2048kB", "inherit")
    return glob if pmd == "inherit" else pmd


def _write_op(region: str, off: int, npages: int, content: int | None) -> dict[str, Any] | None:
    """The write that gives pages this content (None: unknown, written as text; 0: zero, no write)."""
    op: dict[str, Any] = {"op": "write", "region": region, "offset": off, "length": npages * PAGE}
    if content is None:
        op["data"] = "text"
        return op
    cls, low = content >> 13, content & 0xFFF
    if cls == C_ZERO:
        return None
    if cls == C_SAME:
        op["data"] = low
    elif cls == C_SPARSE:
        op.update(byte=low, bytes=1, data=255)
    else:
        op.update(byte=low, data="text")
    return op


def _vma_ops(v: dict[str, Any], mode: str, notes: list[str]) -> list[dict[str, Any]]:
    """The ops that rebuild one VMA: mmap (PMD alignment kept), 4 KiB pages, MADV_HUGEPAGE,
    THPs (faulted, or collapsed when no THP fault is possible), huge zero pages, pageout."""
    runs = v.get("layout") or []
    if not runs:
        return []
    start, end = int(v["start"], 16), int(v["end"], 16)
    size = end - start
    name = f"vma_{v['start']}"
    flags = set(v.get("vm_flags", []))
    hg, nh = "hg" in flags, "nh" in flags
    pad = start % HPAGE
    ops: list[dict[str, Any]] = []
    if pad:
        ops.append({"op": "mmap", "name": name, "size": size + pad, "align": HPAGE})
        ops.append({"op": "munmap", "region": name, "offset": 0, "length": pad})
    else:
        ops.append({"op": "mmap", "name": name, "size": size, "align": HPAGE})
    hstart = -(-start // HPAGE) * HPAGE
    hend = end // HPAGE * HPAGE

    def whole_window(page: int) -> bool:
        a = start + page * PAGE
        return hstart <= a < hend

    small = [r for r in runs if r[2] in ("pte", "mthp", "swap", "zp")]
    thp_runs = [r for r in runs if r[2] in ("thp", "swapthp")]
    hzp = [r for r in runs if r[2] == "hzp"]
    # Can THPs be faulted in after the 4 KiB pages are in place?
    fault_ok = (mode == "always" and not nh) or (mode == "madvise" and hg)
    # In the 4 KiB phase a fault must not become a THP fault: under `madvise` the VMA gets its
    # MADV_HUGEPAGE only afterwards; under `always` it needs MADV_NOHUGEPAGE first, and gets
    # MADV_HUGEPAGE afterwards (the closest flags madvise can restore; `always` treats both alike
    # except for `defrag`).
    guard = mode == "always" and not nh and any(whole_window(r[0]) for r in small)
    if nh:
        ops.append({"op": "madvise", "region": name, "offset": pad, "length": size, "advice": "nohugepage"})
    if guard:
        ops.append({"op": "madvise", "region": name, "offset": pad, "length": size, "advice": "nohugepage"})
        if not hg:
            notes.append(
                f"{name}: replayed with MADV_HUGEPAGE (needed MADV_NOHUGEPAGE for its 4 KiB pages under enabled=always)"
            )
    pageout: list[tuple[int, int]] = []
    collapse: list[tuple[int, int]] = []

    def add_range(lst: list[tuple[int, int]], off: int, n: int) -> None:
        if lst and lst[-1][0] + lst[-1][1] == off:
            lst[-1] = (lst[-1][0], lst[-1][1] + n)
        else:
            lst.append((off, n))

    # phase 1: 4 KiB pages (contents unknown: not read by the census), zero-page reads
    for page, n, kind, _content in small:
        off = pad + page * PAGE
        if kind == "zp":
            ops.append({"op": "read", "region": name, "offset": off, "length": n * PAGE})
        else:
            ops.append(_write_op(name, off, n, None))  # type: ignore[arg-type]
            if kind == "swap":
                add_range(pageout, off, n * PAGE)

    def thp_writes(page_runs: list[list[Any]]) -> list[dict[str, Any]]:
        """Writes for the THP windows; a window with no non-zero subpage gets one write of
        zeros, so that it is faulted in and stays all zero."""
        out = []
        covered: dict[int, None] = {}
        written: set[int] = set()
        for page, n, kind, content in page_runs:
            a0, a1 = start + page * PAGE, start + (page + n) * PAGE
            wins = range(a0 // HPAGE, (a1 - 1) // HPAGE + 1)
            covered.update(dict.fromkeys(wins))
            op = _write_op(name, pad + page * PAGE, n, None if kind == "swapthp" else content)
            if op is not None:
                out.append(op)
                written.update(wins)
        for w in covered:
            if w not in written:
                out.append(
                    {"op": "write", "region": name, "offset": pad + w * HPAGE - start, "length": PAGE, "data": 0}
                )
        return out

    if thp_runs and not fault_ok:
        if nh:
            notes.append(f"{name}: THPs in a MADV_NOHUGEPAGE VMA are replayed as 4 KiB pages")
        else:
            notes.append(f"{name}: no THP fault is possible under enabled={mode}: THPs replayed with MADV_COLLAPSE")
        ops.extend(thp_writes(thp_runs))
        if not nh:
            for page, n, _k, _c in thp_runs:
                add_range(collapse, pad + page * PAGE, n * PAGE)
    if hg or guard:
        ops.append({"op": "madvise", "region": name, "offset": pad, "length": size, "advice": "hugepage"})
    if thp_runs and fault_ok:
        ops.extend(thp_writes(thp_runs))
    for off, ln in collapse:
        ops.append({"op": "madvise", "region": name, "offset": off, "length": ln, "advice": "collapse"})
    for page, n, _k, _c in hzp:
        if fault_ok:
            for w in range(n // HPAGE_NR):
                ops.append({"op": "read", "region": name, "offset": pad + (page + w * HPAGE_NR) * PAGE, "length": PAGE})
        else:
            notes.append(f"{name}: huge zero page mappings not replayed (no THP fault possible)")
    for page, n, kind, _c in thp_runs:
        if kind == "swapthp":
            add_range(pageout, pad + page * PAGE, n * PAGE)
    for off, ln in pageout:
        ops.append({"op": "madvise", "region": name, "offset": off, "length": ln, "advice": "pageout"})
    return ops


def _populated(v: dict[str, Any]) -> list[tuple[int, int]]:
    """(byte offset in the replay region, length) of every populated run of a VMA."""
    start = int(v["start"], 16)
    pad = start % HPAGE
    out: list[tuple[int, int]] = []
    for page, n, kind, _c in v.get("layout") or []:
        if kind in ("zp", "hzp"):
            continue
        off = pad + page * PAGE
        if out and out[-1][0] + out[-1][1] == off:
            out[-1] = (out[-1][0], out[-1][1] + n * PAGE)
        else:
            out.append((off, n * PAGE))
    return out


def scenario_ops(p: dict[str, Any], scenario: str, duration: str) -> list[dict[str, Any]]:
    """What happens after the replay: `shrink` runs the shrinkers (drop_caches 2: the
    deferred-split queue, with underused THPs when shrink_underused=1 and max_ptes_none < 511),
    `reclaim` pages every populated range out (MADV_PAGEOUT) and reads it back in, `idle`
    sleeps (khugepaged and kcompactd run), `all` does the three in that order."""
    if scenario not in SCENARIOS:
        raise InputError(f"--scenario {scenario}: expected one of {', '.join(SCENARIOS)}")
    steps = ["shrink", "reclaim", "idle"] if scenario == "all" else [] if scenario == "none" else [scenario]
    ops: list[dict[str, Any]] = []
    regions = [(f"vma_{v['start']}", _populated(v)) for v in p.get("vmas", []) if v.get("layout")]
    for s in steps:
        ops.append({"op": "phase", "name": s})
        if s == "shrink":
            ops.append({"op": "drop_caches", "value": 2})
        elif s == "reclaim":
            for name, rs in regions:
                for off, ln in rs:
                    ops.append({"op": "madvise", "region": name, "offset": off, "length": ln, "advice": "pageout"})
            ops.append({"op": "phase", "name": "swapin"})
            for name, rs in regions:
                for off, ln in rs:
                    ops.append({"op": "read", "region": name, "offset": off, "length": ln})
        elif s == "idle":
            ops.append({"op": "sleep", "duration": duration})
    return ops


def _proc_name(p: dict[str, Any]) -> str:
    comm = re.sub(r"[^A-Za-z0-9_.+-]", "_", str(p.get("comm") or "proc"))[:24] or "proc"
    return f"{comm}.{p['pid']}"


def _size_str(b: int) -> str:
    for unit, sh in (("G", 30), ("M", 20)):
        if b >= 1 << sh and b % (1 << sh) == 0:
            return f"{b >> sh}{unit}"
    return f"{-(-b // (2 << 20)) * 2}M"


def replay_machine(census: dict[str, Any], procs: list[dict[str, Any]]) -> dict[str, Any]:
    """The census host as a machine spec, with swap for what was swapped plus everything anonymous
    (so a reclaim scenario can page it all out): the host's swap devices when it had any, else zram."""
    host = census.get("host", {})
    m = host.get("machine") or {}
    nodes = [{"mem": n["mem"], "cpus": n.get("cpus", 2)} for n in m.get("nodes", [])] or [{"mem": "24G", "cpus": 2}]
    need_kb = sum(p.get("anon_kb", 0) + p.get("swap_kb", 0) for p in procs)
    need = max(64 << 20, (need_kb * 1024 * 5) // 4)
    swap: list[dict[str, Any]] = []
    have = 0
    for s in host.get("swaps", []):
        path = str(s.get("path", ""))
        kind = "zram" if path.startswith("/dev/zram") else "file" if s.get("type") == "file" else "ssd"
        size = int(s.get("size_kb", 0)) * 1024 // (2 << 20) * (2 << 20)
        if size >= 2 << 20:
            swap.append({"type": kind, "size": _size_str(size), "priority": int(s.get("priority", 0))})
            have += size
    if have < need:
        more = -(-(need - have) // (2 << 20)) * (2 << 20)
        swap.append({"type": "zram", "size": _size_str(more)})
    return {"nodes": nodes, "swap": swap}


def replay_knobs(census: dict[str, Any]) -> dict[str, str]:
    """The census host's knob values that the model accepts (thplab knobs), as found."""
    from thplab import api

    out: dict[str, str] = {}
    for k, v in sorted((census.get("host", {}).get("knobs") or {}).items()):
        try:
            ((name, value),) = api.parse_knobs([(k, v)])
        except InputError:
            continue
        out[name] = value
    return out


def to_workload(
    census: dict[str, Any],
    pids: list[int] | None = None,
    scenario: str = "none",
    duration: str = "30s",
    name: str | None = None,
) -> dict[str, Any]:
    """The census as a workload that rebuilds every censused process's anonymous memory
    (then runs `scenario`). Region names are `vma_<start address in hex>`; process names
    `<comm>.<pid>`. The list of approximations made is in the workload's description."""
    check(census)
    procs = ok_processes(census, pids)
    if not procs:
        raise InputError("census: no process with status ok to replay" + (f" among pids {pids}" if pids else ""))
    if not any(v.get("layout") for p in procs for v in p.get("vmas", [])):
        raise InputError("census: no page layout in this census (taken with --no-layout?); take it again with layout")
    mode = _pmd_mode(census)
    notes: list[str] = []
    wprocs = []
    for p in procs:
        ops: list[dict[str, Any]] = [{"op": "phase", "name": "replay"}]
        for v in p.get("vmas", []):
            ops.extend(_vma_ops(v, mode, notes))
        if p.get("thp_enabled") is False:
            ops.append({"op": "prctl", "thp_disable": True})
        ops.extend(scenario_ops(p, scenario, duration))
        wprocs.append({"name": _proc_name(p), "ops": ops})
    desc = (
        f"replay of a thplab census (kernel {census.get('kernel', '?')}, {len(procs)} processes); "
        "4 KiB pages and swapped pages are written as text (their contents are not read)"
    )
    if notes:
        desc += "; " + "; ".join(dict.fromkeys(notes))
    return {
        "name": name or "census-replay",
        "description": desc,
        "seed": 1,
        "machine": replay_machine(census, procs),
        "knobs": replay_knobs(census),
        "processes": wprocs,
    }


def merge_workload(replay: dict[str, Any], w: dict[str, Any]) -> dict[str, Any]:
    """`thplab run W --from-census C`: the replay first, then W. A process of W named like a
    replay process (`<comm>.<pid>`) continues that process after its replay (and can use its
    `vma_<addr>` regions); other processes of W run beside them. W's knobs override the census's,
    W's machine (when given) replaces the replay's, W's seed and record apply."""
    out = json.loads(json.dumps(replay))
    out["name"] = w.get("name") or out["name"]
    if w.get("description"):
        out["description"] = f"{w['description']} (after: {out['description']})"
    if "seed" in w:
        out["seed"] = w["seed"]
    if w.get("machine") is not None:
        out["machine"] = w["machine"]
    out["knobs"] = {**out.get("knobs", {}), **(w.get("knobs") or {})}
    if w.get("record"):
        out["record"] = w["record"]
    by_name = {p["name"]: p for p in out["processes"]}
    for i, p in enumerate(w.get("processes") or []):
        pname = p.get("name") or f"p{i}"
        if pname in by_name:
            if p.get("start"):
                raise InputError(f"processes[{i}] ({pname}): continues a replayed process, so it cannot have `start`")
            by_name[pname]["ops"].extend([{"op": "phase", "name": "main"}, *p.get("ops", [])])
        else:
            q = dict(p)
            q["name"] = pname
            out["processes"].append(q)
            by_name[pname] = q
    return out


def from_census_workloads(path: str, workloads: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """`thplab run [W ...] --from-census C`: the replay of C alone, or each W after it."""
    from thplab import api

    c = load(path)
    replay = to_workload(c)
    if not workloads:
        return [(path, api.load_workload(replay))]
    return [(src, api.load_workload(merge_workload(replay, w))) for src, w in workloads]


# ---------------------------------------------------------------------------------------------
# what-if: census -> model replay under the host's knobs and under other ones


def what_if(
    census: dict[str, Any],
    sets: list[str],
    scenario: str = "all",
    duration: str = "30s",
    pids: list[int] | None = None,
    costs: str | None = None,
    timeout: float | None = None,
):
    """Replay the census in the model twice: as found, and with `sets` (KNOB=VALUE) applied.
    Returns (workload, baseline Result, what-if Result)."""
    from thplab import api

    knobs = api.parse_knobs(sets)
    w = to_workload(census, pids=pids, scenario=scenario, duration=duration, name="census-what-if")
    base = api.run(w, costs=costs, timeout=timeout)
    alt = api.run(w, knobs=knobs, costs=costs, timeout=timeout)
    return w, base, alt


def _totals(r) -> dict[str, float]:
    raw = r.raw if hasattr(r, "raw") else r
    m: dict[str, float] = {}
    sm: dict[str, float] = {}
    for p in raw.get("processes", []):
        for f in ("AnonHugePages", "Anonymous", "Swap", "Rss"):
            sm[f] = sm.get(f, 0) + float((p.get("smaps_rollup") or {}).get(f, 0))
    for f in ("AnonHugePages", "Anonymous", "Swap", "Rss"):
        m[f"smaps {f} (kB, at exit)"] = sm.get(f, 0.0)
    phases: dict[str, float] = {}
    for ph in raw.get("phases", []):
        short = ph["name"].split(":", 1)[-1]
        phases[short] = max(phases.get(short, 0.0), (ph["end_ns"] - ph["start_ns"]) / 1e6)
    for k, v in phases.items():
        m[f"time {k} (ms, slowest process)"] = v
    d = raw.get("vmstat_delta", {})
    for c in WHAT_IF_COUNTERS:
        m[f"vmstat {c}"] = float(d.get(c, 0))
    return m


def render_what_if(sets: list[str], base, alt, console, scenario: str = "all") -> list[dict[str, Any]]:
    from rich import box
    from rich.table import Table

    a, b = _totals(base), _totals(alt)
    t = Table(
        box=box.SIMPLE_HEAD,
        title=f"what if {', '.join(sets)}: the census replayed in the model, scenario {scenario}",
        title_justify="left",
    )
    t.add_column("metric")
    t.add_column("as found", justify="right")
    t.add_column("what-if", justify="right")
    t.add_column("change", justify="right")
    rows = []
    for k in dict.fromkeys([*a, *b]):
        x, y = a.get(k, 0.0), b.get(k, 0.0)
        if x == 0 and y == 0:
            continue
        ch = "—" if x == y else (f"{(y - x) / x * 100:+.1f}%" if round(x, 3) else "new")
        t.add_row(k, f"{x:,.0f}" if x == int(x) else f"{x:,.3f}", f"{y:,.0f}" if y == int(y) else f"{y:,.3f}", ch)
        rows.append({"metric": k, "as_found": x, "what_if": y})
    console.print(t)
    return rows


# ---------------------------------------------------------------------------------------------
# text output


def fmt_kb(kb: float | int | None) -> str:
    if kb is None:
        return "—"
    kb = float(kb)
    if kb == 0:
        return "0"
    for unit, div in (("GiB", 1 << 20), ("MiB", 1 << 10)):
        if abs(kb) >= div:
            return f"{kb / div:.1f} {unit}"
    return f"{kb:.0f} kB"


def _mthp_str(m: dict[str, int] | None, pte_thp: int = 0) -> str:
    """PTE-mapped large folios: `64kB:3 2048kB(pte):1` (the last: PMD-order folios mapped by PTEs)."""
    if m is None:
        return "?"
    parts = [f"{k}:{v}" for k, v in sorted(m.items(), key=lambda kv: int(kv[0][:-2]))]
    if pte_thp:
        parts.append(f"2048kB(pte):{pte_thp}")
    return " ".join(parts) or "—"


def _short_name(name: str) -> str:
    if not name:
        return "[anon]"
    return name if len(name) <= 32 else "…" + name[-31:]


def _under(p: dict[str, Any], t: int) -> dict[str, Any]:
    for u in p["policies"]["underused_shrinker"]["by_max_ptes_none"]:
        if u["max_ptes_none"] == t:
            return u
    return {"thps_split": 0, "kb_freed": 0}


def render(census: dict[str, Any], console, vmas: bool = False, top: int | None = None) -> None:
    """The human summary: a memory table, a policy table, per-VMA tables with --vmas."""
    from rich import box
    from rich.table import Table

    host = census.get("host", {})
    kn = host.get("knobs", {})
    procs = sorted(ok_processes(census), key=lambda p: (-(p.get("anon_kb", 0) + p.get("swap_kb", 0)), p["pid"]))
    shown = procs[:top] if top else procs
    console.print(
        f"thplab census · kernel {census.get('kernel', '?')} · enabled={host.get('enabled', '?')} · "
        f"max_ptes_none={kn.get('transparent_hugepage/khugepaged/max_ptes_none', '?')} · "
        f"shrink_underused={kn.get('transparent_hugepage/shrink_underused', '?')} · "
        f"{len(procs)} processes" + (f" (top {len(shown)} by anonymous memory)" if len(shown) < len(procs) else ""),
        markup=False,
        highlight=False,
    )
    t = Table(box=box.SIMPLE_HEAD, title="memory (kB, MiB, GiB)", title_justify="left")
    for h in ("pid", "process"):
        t.add_column(h, no_wrap=True)
    for h in ("RSS", "anon", "AnonHuge", "THP", "zero in THP", "mTHP by size", "4K anon", "swap", "THP-swapped"):
        t.add_column(h, justify="right")
    t.add_column("khugepaged", no_wrap=True)
    tot: dict[str, float] = {}
    for p in shown:
        thp_kb = p["thp_pmd"] * 2048
        zero_pct = f" ({p['thp_zero_kb'] / thp_kb * 100:.0f}%)" if thp_kb else ""
        kh = p["khugepaged"]
        khs = (
            f"{'reg' if kh.get('mm_registered') else 'no'} · {kh['collapsible']} collapsible"
            if kh["eligible"]
            else "not eligible"
        )
        t.add_row(
            str(p["pid"]),
            str(p.get("comm", "")),
            fmt_kb(p["rss_kb"]),
            fmt_kb(p["anon_kb"]),
            fmt_kb(p["anon_huge_kb"]),
            str(p["thp_pmd"]),
            fmt_kb(p["thp_zero_kb"]) + zero_pct,
            _mthp_str(p.get("mthp", {}), p.get("pte_mapped_thp", 0)),
            fmt_kb(p["small_pages"] * 4),
            fmt_kb(p["swap_kb"]),
            "—" if p.get("thp_swapped_ranges") is None else str(p["thp_swapped_ranges"]),
            khs,
        )
        for k in ("rss_kb", "anon_kb", "anon_huge_kb", "thp_pmd", "thp_zero_kb", "swap_kb"):
            tot[k] = tot.get(k, 0) + p[k]
    if len(shown) > 1:
        t.add_row(
            "",
            "total",
            fmt_kb(tot["rss_kb"]),
            fmt_kb(tot["anon_kb"]),
            fmt_kb(tot["anon_huge_kb"]),
            str(int(tot["thp_pmd"])),
            fmt_kb(tot["thp_zero_kb"]),
            "",
            "",
            fmt_kb(tot["swap_kb"]),
            "",
            "",
            style="bold",
        )
    console.print(t)
    pt = Table(box=box.SIMPLE_HEAD, title="what each policy would change", title_justify="left")
    pt.add_column("pid")
    pt.add_column("process", no_wrap=True)
    for th in THRESHOLDS:
        pt.add_column(f"underused @{th}\nsplit · freed", justify="right")
    pt.add_column("seed 000\nzero not swapped", justify="right")
    pt.add_column("seed 000\nswap-out pages", justify="right")
    pt.add_column("seed 003\nswap-in faults saved", justify="right")
    pt.add_column("seed 003\nTHP kept on swap", justify="right")
    for p in shown:
        pol = p["policies"]
        s0 = pol["seed000_split_on_reclaim"]
        s3 = pol["seed003_thp_swapin"]
        pt.add_row(
            str(p["pid"]),
            str(p.get("comm", "")),
            *(f"{_under(p, th)['thps_split']} · {fmt_kb(_under(p, th)['kb_freed'])}" for th in THRESHOLDS),
            fmt_kb(s0["kb_dropped_instead_of_swapped"]),
            f"{s0['swapout_pages_mainline']:,} → {s0['swapout_pages_seed000']:,}",
            f"{s3['swapin_faults_saved']:,}",
            fmt_kb(s3["resident_thp_kb_kept_through_swap"] + s3["thp_kb_restored"]),
        )
    console.print(pt)
    bad = [p for p in census["processes"] if p.get("status") != "ok"]
    for p in bad:
        console.print(
            f"  pid {p['pid']} ({p.get('comm', '?')}): {p['status']}: {p.get('error', '')}",
            markup=False,
            highlight=False,
            style="yellow",
        )
    if any(p.get("status") == "denied" for p in bad):
        console.print(
            "  some processes could not be read: the census needs root, or ptrace rights over them "
            "(same user and kernel.yama.ptrace_scope permitting)",
            style="yellow",
            markup=False,
        )
    if not census.get("privileges", {}).get("pfns", True):
        console.print(f"  {census['privileges'].get('note', '')}", style="yellow", markup=False)
    if vmas:
        for p in shown:
            vt = Table(box=box.SIMPLE_HEAD, title=f"{p['pid']} {p.get('comm', '')}: VMAs", title_justify="left")
            for h in ("start", "size", "flags", "name"):
                vt.add_column(h, no_wrap=True)
            for h in ("anon", "AnonHuge", "THP", "zero in THP", "mTHP", "4K", "swap", "khugepaged"):
                vt.add_column(h, justify="right")
            for v in p.get("vmas", []):
                kh = v["khugepaged"]
                khs = (
                    f"{kh['collapsible']}/{kh['ranges_with_pages']} ranges"
                    if kh["eligible"]
                    else v.get("khugepaged_ineligible_reason", "no")
                )
                fl = " ".join(f for f in v.get("vm_flags", []) if f in ("hg", "nh", "lo"))
                vt.add_row(
                    v["start"],
                    fmt_kb(v["size_kb"]),
                    f"{v['perms']} {fl}".strip(),
                    _short_name(v.get("name", "")),
                    fmt_kb(v["smaps"].get("Anonymous", 0)),
                    fmt_kb(v["smaps"].get("AnonHugePages", 0)),
                    str(v["thp_pmd"]),
                    fmt_kb(v["thp_zero_kb"]),
                    _mthp_str(v.get("mthp", {}), v.get("pte_mapped_thp", 0)),
                    fmt_kb(v["small_pages"] * 4),
                    fmt_kb(v["smaps"].get("Swap", 0)),
                    khs,
                )
            console.print(vt)
    scan = census.get("scan", {})
    if scan.get("thp_bytes_read"):
        # the rate is of the whole census's CPU time: meaningful once the THPs dominate it
        rate = f"{scan['gb_per_cpu_second']:.2f} GB per CPU second, " if scan["thp_bytes_read"] >= 64 << 20 else ""
        console.print(
            f"  scanned {fmt_kb(scan['thp_bytes_read'] / 1024)} of THP memory in "
            f"{scan['wall_ns'] / 1e9:.2f} s ({rate}{scan.get('mem_method', '?')})",
            style="dim",
            markup=False,
            highlight=False,
        )


# ---------------------------------------------------------------------------------------------
# the HTML report section


def plots(census: dict[str, Any], top: int = 20) -> list[tuple[str, Any]]:
    """Per-process bars of anonymous memory: THP-backed non-zero, THP zero-filled subpages, 4 KiB
    (and mTHP), swapped."""
    from thplab.plotting import pyplot

    plt = pyplot()
    procs = sorted(ok_processes(census), key=lambda p: -(p["anon_kb"] + p["swap_kb"]))[:top]
    procs = [p for p in procs if p["anon_kb"] + p["swap_kb"] > 0]
    if not procs:
        return []
    procs.reverse()
    labels = [f"{p.get('comm', '?')} ({p['pid']})" for p in procs]
    mib = 1024.0
    thp_zero = [p["thp_zero_kb"] / mib for p in procs]
    thp_data = [max(0, p["thp_pmd"] * 2048 - p["thp_zero_kb"]) / mib for p in procs]
    small = [max(0, p["anon_kb"] - p["anon_huge_kb"]) / mib for p in procs]
    swap = [p["swap_kb"] / mib for p in procs]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(procs) + 2.0))  # inches: a bar per process
    y = range(len(procs))
    left = [0.0] * len(procs)
    for vals, lab, col in (
        (thp_data, "THP, non-zero subpages", "#1f77b4"),
        (thp_zero, "THP, zero-filled subpages", "#ff7f0e"),
        (small, "4 KiB and mTHP pages", "#2ca02c"),
        (swap, "swapped out", "#9467bd"),
    ):
        ax.barh(list(y), vals, left=left, label=lab, color=col)
        left = [a + b for a, b in zip(left, vals, strict=True)]
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("anonymous memory (MiB)")
    ax.set_title("census: THP vs 4 KiB vs zero-filled memory per process")
    height = 0.45 * len(procs) + 2.0
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1))
    return [("census: THP vs 4 KiB vs zero-filled memory per process (MiB)", fig)]


def html_section(census: dict[str, Any], top: int = 20) -> str:
    """The census section of an HTML report: a summary table and the per-process bars."""
    procs = sorted(ok_processes(census), key=lambda p: -(p["anon_kb"] + p["swap_kb"]))[:top]
    e = html.escape
    rows = []
    for p in procs:
        thp_kb = p["thp_pmd"] * 2048
        u64 = _under(p, 64)
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{e(str(c))}</td>"
                for c in (
                    p["pid"],
                    p.get("comm", ""),
                    fmt_kb(p["rss_kb"]),
                    fmt_kb(p["anon_kb"]),
                    fmt_kb(p["anon_huge_kb"]),
                    p["thp_pmd"],
                    fmt_kb(p["thp_zero_kb"]) + (f" ({p['thp_zero_kb'] / thp_kb * 100:.0f}%)" if thp_kb else ""),
                    fmt_kb(p["swap_kb"]),
                    f"{u64['thps_split']} / {fmt_kb(u64['kb_freed'])}",
                    fmt_kb(p["policies"]["seed000_split_on_reclaim"]["kb_dropped_instead_of_swapped"]),
                )
            )
            + "</tr>"
        )
    head = "".join(
        f"<th>{e(h)}</th>"
        for h in (
            "pid",
            "process",
            "RSS",
            "anon",
            "AnonHugePages",
            "THPs",
            "zero in THPs",
            "swap",
            "underused @64: split / freed",
            "seed 000: zero not swapped",
        )
    )
    from thplab import htmlpage, plotting

    figs = [htmlpage.figure(plotting.png(fig), title) for title, fig in plots(census, top=top)]
    host = census.get("host", {})
    n = len(ok_processes(census))
    return (
        f"<h2>census: {n} process{'es' if n != 1 else ''} on kernel {e(str(census.get('kernel', '?')))}</h2>"
        f"<p>enabled={e(str(host.get('enabled', '?')))}; zero-filled subpages are 4 KiB subpages of PMD-mapped "
        "THPs whose contents are all zero.</p>"
        f"<table><tr>{head}</tr>{''.join(rows)}</table>{''.join(figs)}"
    )


def write_html(census: dict[str, Any], path: str | Path) -> Path:
    from thplab import htmlpage
    from thplab.atomic import write_atomic

    return write_atomic(path, htmlpage.page("thplab census", f"<h1>thplab census</h1>{html_section(census)}"))


# ---------------------------------------------------------------------------------------------
# the command


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--pid",
        action="append",
        default=[],
        metavar="PID",
        help="a process to take the census of (repeatable, or comma-separated)",
    )
    src.add_argument("--all", action="store_true", help="every process with user memory")
    src.add_argument(
        "--from", dest="from_file", metavar="CENSUS.json", help="show a saved census instead of taking one"
    )
    p.add_argument("--vmas", action="store_true", help="also one table per process with its VMAs")
    p.add_argument(
        "--top", type=int, metavar="N", help="show the N processes with most anonymous memory (default 25 with --all)"
    )
    p.add_argument("--json", metavar="OUT", help="write the census as JSON (atomically; - for stdout)")
    p.add_argument("--html", metavar="OUT.html", help="write an HTML report of the census (table and bars)")
    p.add_argument("--no-layout", action="store_true", help="leave the page layout out of the JSON (no replay then)")
    p.add_argument(
        "--buffer", type=int, metavar="BYTES", help="bytes of the buffer process memory is read through (default 65536)"
    )
    p.add_argument(
        "--what-if",
        action="append",
        default=[],
        metavar="KNOB=VALUE",
        help="replay the census in the model as found and with KNOB=VALUE (repeatable), and compare",
    )
    p.add_argument(
        "--scenario",
        default="all",
        choices=SCENARIOS,
        help="what the what-if replay does after rebuilding memory: shrink (drop_caches 2), reclaim "
        "(pageout + read back), idle (sleep --duration), all (the three; default), none",
    )
    p.add_argument("--duration", default="30s", help="the idle scenario's sleep (simulated time, default 30s)")
    p.add_argument("--costs", metavar="FILE", help="cost profile for the what-if model runs")


def _pids(vals: list[str]) -> list[int]:
    out = []
    for v in vals:
        for raw in str(v).split(","):
            part = raw.strip()
            if not part:
                continue
            if not part.isdigit() or int(part) <= 0:
                raise InputError(f"--pid {v}: expected positive process ids")
            out.append(int(part))
    return out


def cmd(args: argparse.Namespace) -> int:
    import shutil

    from rich.console import Console

    from thplab.atomic import write_atomic

    if args.top is not None and args.top < 1:
        raise InputError(f"--top {args.top}: expected a positive number")
    if args.buffer is not None and (args.buffer < 65536 or args.buffer & (args.buffer - 1)):
        raise InputError(f"--buffer {args.buffer}: expected a power of two of at least 65536")
    sets = list(args.what_if)
    if sets:
        from thplab import api

        api.parse_knobs(sets)  # bad knobs fail before the census is taken
        if args.no_layout:
            raise InputError("--what-if needs the page layout: drop --no-layout")
    if args.from_file:
        census = load(args.from_file)
    else:
        pids = _pids(args.pid)
        if not pids and not args.all:
            raise InputError("census: give --pid PID (repeatable), --all, or --from CENSUS.json")
        census = run_census(pids=pids, all_processes=args.all, layout=not args.no_layout, buffer=args.buffer)
    to_stdout = args.json == "-"  # JSON only on stdout: the tables are not printed
    console = Console(
        file=io.StringIO() if to_stdout else None,
        width=max(160, shutil.get_terminal_size((160, 40)).columns),
        highlight=False,
    )
    render(census, console, vmas=args.vmas, top=args.top or (25 if args.all else None))
    if sets:
        _w, base, alt = what_if(census, sets, scenario=args.scenario, duration=args.duration, costs=args.costs)
        rows = render_what_if(sets, base, alt, console, args.scenario)
        census["what_if"] = {"set": sets, "scenario": args.scenario, "duration": args.duration, "rows": rows}
    if to_stdout:
        import sys

        sys.stdout.write(json.dumps(census, indent=1) + "\n")
    elif args.json:
        write_atomic(args.json, json.dumps(census, indent=1).encode())
        console.print(f"wrote {args.json}", style="dim", markup=False)
    if args.html:
        write_html(census, args.html)
        console.print(f"wrote {args.html}", style="dim", markup=False)
    ok = ok_processes(census)
    return 0 if ok or not census["processes"] else 1
