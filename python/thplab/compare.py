"""thplab compare: mmtests-style comparison of saved results (from `thplab run --json`,
either backend). The first result is the baseline, shown as (0.00%); the others show their
value and the change against it. Rows: simulated/wall time, per-phase times, every
non-zero /proc/vmstat delta, smaps AnonHugePages, TLB misses."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from thplab.errors import InputError
from thplab.experiments.contract import pct

HELP_DESCRIPTION = """\
Compare saved results (from `thplab run --json`, model or kernel) side by side, mmtests style:
the first result is the baseline, shown as (0.00%); each other shows its value and the change
against it. Rows: total and per-phase times, every non-zero /proc/vmstat delta, smaps
AnonHugePages and TLB misses."""

HELP_EPILOG = """\
examples:
  thplab run W.json --json a.json && thplab run W.json --set enabled=always --json b.json
  thplab compare a.json b.json
  thplab compare a.json b.json c.json --all      also rows where every result is equal

output: a table on the terminal."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", nargs="+", metavar="RESULT.json", help="results to compare; the first is the baseline")
    p.add_argument("--all", action="store_true", help="also rows where every result is equal")


def load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: not a JSON result file ({e})") from None
    if not isinstance(d, dict) or "vmstat_delta" not in d:
        raise InputError(f"{path}: not a thplab result (no vmstat_delta)")
    return d


def metrics(r: dict) -> dict[str, float]:
    m: dict[str, float] = {"time sim_time (s)": r.get("sim_time_ns", 0) / 1e9}
    for ph in r.get("phases", []):
        m[f"time {ph['name']} (ms)"] = (ph["end_ns"] - ph["start_ns"]) / 1e6
    for k, v in sorted(r.get("vmstat_delta", {}).items()):
        m[f"vmstat {k}"] = float(v)
    for p in r.get("processes", []):
        sm = p.get("smaps_rollup", {})
        if "AnonHugePages" in sm:
            m[f"smaps {p['name']} AnonHugePages (kB)"] = float(sm["AnonHugePages"])
        tlb = p.get("tlb") or {}
        if tlb.get("accesses"):
            m[f"tlb {p['name']} dTLB-load-misses"] = float(tlb.get("dtlb_load_misses", 0))
    return m


def cmd(args: argparse.Namespace) -> int:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    rs = [load(p) for p in args.results]
    ms = [metrics(r) for r in rs]
    keys = list(dict.fromkeys(k for m in ms for k in m))
    for m in ms:
        # a counter missing from a result's vmstat delta did not move: 0
        for k in keys:
            if k.startswith("vmstat ") and k not in m:
                m[k] = 0.0
    t = Table(box=box.SIMPLE, title="thplab compare (first = baseline)", title_justify="left")
    t.add_column("metric")
    for p, r in zip(args.results, rs, strict=True):
        t.add_column(f"{Path(p).stem}\n{r.get('backend', '')}", justify="right")
    for k in keys:
        vals = [m.get(k) for m in ms]
        if not args.all and len({v for v in vals}) == 1:
            continue
        base = vals[0]
        cells = []
        for i, v in enumerate(vals):
            if v is None:
                cells.append("—")
                continue
            d = 0.0 if i == 0 else pct(base, v)
            ds = f"({d:+7.2f}%)" if d is not None else "(    n/a)"
            cells.append(f"{v:,.2f} {ds}")
        t.add_row(k, *cells)
    import shutil

    Console(width=max(160, shutil.get_terminal_size((160, 40)).columns)).print(t)
    return 0
