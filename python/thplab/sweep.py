"""`thplab sweep`: run one workload over a grid of knob values (and machines) on Ray.

Every grid point is one model run, scheduled as a Ray task (one CPU each) on a local Ray
started for the sweep, or on an existing cluster (--address). Results are deterministic: a
point's row depends only on the workload, its knobs, machine and seed, never on where or in
which order it ran; rows are kept in grid order.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thplab.atomic import write_atomic
from thplab.errors import InputError

HELP_DESCRIPTION = """\
Run one workload over a grid of knob values, and optionally several machines, and compare
the runs: one row per run with the knob values, the simulated time and the key counters.
The runs are spread over a Ray cluster: a local one by default (--workers processes on this
machine), or an existing cluster given with --address, so a large grid (say, 1 TiB machines
at a minute of CPU per run) can use the cores of several machines."""

HELP_EPILOG = """\
examples:
  thplab sweep examples/fragmented.json \\
      --grid transparent_hugepage/defrag=madvise,always,never --grid vm.compaction_proactiveness=0,20 \\
      --machine 2G --machine 4G --out out/sweep
  thplab sweep W.json --grid enabled=always,madvise --workers 2 --out out/sweep

on a cluster (thplab built at the same path on every machine, e.g. with `make build`):
  ray start --head --port=6379                       on the first machine
  ray start --address=HEAD_IP:6379                   on each of the others
  thplab sweep W.json --grid ... --address HEAD_IP:6379 --out out/sweep

outputs (in --out DIR):
  sweep.parquet  one row per run: run, the grid's knobs, machine, sim_time_s, counters;
                 pandas.read_parquet("out/sweep/sweep.parquet")
  sweep.csv      the same rows as CSV
The comparison table is printed at the end (the first run is the baseline)."""

HELP = "run a workload over a grid of knob values (on Ray); table and Parquet file"

#: the counters every row carries (vmstat deltas over the whole run)
COUNTERS = [
    "thp_fault_alloc",
    "thp_fault_fallback",
    "thp_collapse_alloc",
    "thp_split_page",
    "thp_swpout",
    "compact_stall",
    "compact_success",
    "compact_fail",
    "pgmigrate_success",
    "pswpout",
    "pswpin",
    "pgfault",
    "oom_kill",
]
MEMINFO = ["AnonHugePages", "AnonPages", "MemFree"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload", metavar="WORKLOAD", help="workload file (.json, .yaml), see docs/workload.md")
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KNOB=V1,V2,...",
        help="a grid dimension: the knob and its values (repeatable; the grid is every combination)",
    )
    p.add_argument(
        "--machine",
        "-m",
        action="append",
        default=[],
        metavar="M",
        help="a machine to run on (repeatable: one more grid dimension); default: the workload's",
    )
    p.add_argument("--set", "-s", action="append", default=[], metavar="KNOB=VALUE", help="a knob fixed for every run")
    p.add_argument("--seed", type=int, metavar="N", help="override the workload's seed")
    p.add_argument("--costs", metavar="FILE", help="cost profile (TOML), e.g. from `thplab calibrate`")
    p.add_argument("--out", metavar="DIR", default="out/sweep", help="output folder (default: out/sweep)")
    p.add_argument(
        "--address",
        metavar="HOST:PORT",
        help="an existing Ray cluster (`ray start --head` prints it); default: start a local Ray for the sweep",
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="local Ray only: runs at a time (default: the number of CPUs)",
    )


@dataclass(frozen=True)
class Point:
    index: int
    knobs: tuple[tuple[str, str], ...]  # the grid's knob values, in grid order
    machine: str | None


def parse_grid(specs: list[str]) -> list[tuple[str, list[str]]]:
    """[(canonical knob name, [normalised values])]; every value is checked (exit 2 naming it)."""
    from thplab import api

    grid: list[tuple[str, list[str]]] = []
    for spec in specs:
        name, sep, values = spec.partition("=")
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not name.strip() or not vals:
            raise InputError(f"--grid {spec}: expected KNOB=V1,V2,... (e.g. vm.compaction_proactiveness=0,20)")
        checked = [api.parse_knobs([(name.strip(), v)])[0] for v in vals]
        canon = checked[0][0]
        if any(canon == g[0] for g in grid):
            raise InputError(f"--grid {spec}: knob {canon} is already a grid dimension")
        values_n = [v for _, v in checked]
        if len(set(values_n)) != len(values_n):
            raise InputError(f"--grid {spec}: a value is given twice")
        grid.append((canon, values_n))
    return grid


def points(grid: list[tuple[str, list[str]]], machines: list[str | None]) -> list[Point]:
    names = [n for n, _ in grid]
    combos = itertools.product(machines, *(vals for _, vals in grid))
    return [Point(i, tuple(zip(names, c[1:], strict=True)), c[0]) for i, c in enumerate(combos)]


def summarise(raw: dict[str, Any]) -> dict[str, Any]:
    """The row values of one result: simulated time, counters, meminfo at the end."""
    d = raw.get("vmstat_delta") or {}
    mi = raw.get("meminfo") or {}
    row: dict[str, Any] = {"sim_time_s": raw.get("sim_time_ns", 0) / 1e9}
    for c in COUNTERS:
        row[c] = int(d.get(c, 0))
    for m in MEMINFO:
        row[f"{m}_kB"] = int(mi.get(m, 0))
    return row


def run_point(wtext: str, machine: str | None, knobs: list[tuple[str, str]], seed: int | None, costs: str | None):
    """One grid point in the model (runs inside a Ray worker)."""
    from thplab import api

    res = api.run(wtext, machine=machine, knobs=knobs, seed=seed, costs=costs)
    return summarise(res.raw)


def _ray():
    try:
        import ray
    except ImportError:
        raise InputError(
            "`thplab sweep` needs Ray: `make setup` installs it from uv.lock (or pip install 'ray>=2.9')"
        ) from None
    return ray


def run_grid(
    wtext: str,
    pts: list[Point],
    fixed: list[tuple[str, str]],
    seed: int | None,
    costs: str | None,
    address: str | None,
    workers: int | None,
    console,
) -> list[dict[str, Any]]:
    """Run every point on Ray; rows in grid order."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    ray = _ray()
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    init: dict[str, Any] = {"log_to_driver": False, "logging_level": "ERROR"}
    if address:
        init["address"] = address
    else:
        init.update(
            num_cpus=workers or os.cpu_count() or 1,
            include_dashboard=False,
            object_store_memory=128 << 20,
        )
    console.print(f"starting Ray ({'cluster ' + address if address else 'local'}) ...", style="dim")
    _ray_init(ray, init, retries=0 if address else 2, console=console)
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(run_point)
        pending = {remote.remote(wtext, p.machine, [*fixed, *p.knobs], seed, costs): p for p in pts}
        rows: dict[int, dict[str, Any]] = {}
        with Progress(
            TextColumn("[bold]sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
        ) as prog:
            task = prog.add_task("sweep", total=len(pts))
            waiting = list(pending)
            while waiting:
                done, waiting = ray.wait(waiting, num_returns=1)
                for ref in done:
                    p = pending[ref]
                    try:
                        vals = ray.get(ref)
                    except ray.exceptions.RayTaskError as e:
                        # Ray re-raises the task's exception as a subclass of its own type
                        cause = getattr(e, "cause", None)
                        if isinstance(e, InputError) or isinstance(cause, InputError):
                            raise InputError(f"run {p.index} ({_label(p)}): {cause or e}") from None
                        raise
                    rows[p.index] = {"run": p.index, **dict(p.knobs), "machine": p.machine or "workload's", **vals}
                    prog.advance(task)
        return [rows[p.index] for p in pts]
    finally:
        ray.shutdown()


def _ray_init(ray, init: dict[str, Any], retries: int, console) -> None:
    """ray.init, again after a start-up time-out: a local Ray's processes (GCS, raylet, the
    agents) can take longer than Ray's own 30 s start-up limit on a busy machine."""
    for attempt in range(retries + 1):
        try:
            ray.init(**init)
            return
        except Exception as e:  # Ray raises a bare Exception for this
            ray.shutdown()
            if "timed out during startup" not in str(e) or attempt == retries:
                raise
            console.print("Ray did not start in time (a busy machine?); trying again", style="yellow")


def _label(p: Point) -> str:
    parts = [f"{k}={v}" for k, v in p.knobs]
    if p.machine:
        parts.append(f"machine {p.machine}")
    return ", ".join(parts) or "defaults"


def frame(rows: list[dict[str, Any]], knob_names: list[str]):
    import pandas as pd

    cols = ["run", *knob_names, "machine", "sim_time_s", *COUNTERS, *(f"{m}_kB" for m in MEMINFO)]
    df = pd.DataFrame.from_records(rows, columns=cols)
    for c in knob_names:
        df[c] = df[c].astype(str)
    return df


def print_table(df, knob_names: list[str], console) -> None:
    from rich import box
    from rich.table import Table

    from thplab.experiments.contract import pct

    varying = [c for c in COUNTERS + [f"{m}_kB" for m in MEMINFO] if df[c].nunique() > 1]
    t = Table(
        title="thplab sweep (run 0 is the baseline)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        caption="counters: vmstat deltas over the run; *_kB: /proc/meminfo at the end; columns equal in every run are left out",
        caption_justify="left",
    )
    t.add_column("run", justify="right")
    for k in knob_names:
        t.add_column(k.rsplit("/", 1)[-1])
    if df["machine"].nunique() > 1:
        t.add_column("machine")
    t.add_column("sim time (s)", justify="right")
    t.add_column("Δ", justify="right")
    for c in varying:
        t.add_column(c, justify="right")
    base = float(df["sim_time_s"].iloc[0])
    for _, r in df.iterrows():
        d = pct(base, float(r["sim_time_s"]))
        cells = [str(r["run"]), *(str(r[k]) for k in knob_names)]
        if df["machine"].nunique() > 1:
            cells.append(str(r["machine"]))
        cells += [f"{r['sim_time_s']:.4f}", "—" if d is None else f"({d:+.2f}%)"]
        cells += [f"{int(r[c]):,}" for c in varying]
        t.add_row(*cells)
    # as wide as the table needs: a truncated knob value or counter is no use
    from rich.console import Console

    for col in t.columns:
        col.no_wrap = True
    wide = Console(file=console.file, width=10_000, highlight=False)
    width = wide.measure(t).maximum
    Console(file=console.file, width=max(console.width, width), highlight=False).print(t)


def cmd(args: argparse.Namespace) -> int:
    import shutil

    from rich.console import Console

    from thplab import api

    if not args.grid and len(args.machine) < 2:
        raise InputError("give at least one --grid KNOB=V1,V2 (or two --machine) to sweep over")
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers {args.workers}: expected a positive number")
    if args.workers is not None and args.address:
        raise InputError("--workers applies to a local Ray only; a cluster's size is its own")
    if args.seed is not None and args.seed < 0:
        raise InputError(f"--seed {args.seed}: expected a non-negative integer")
    wl = api.load_workload(Path(args.workload))
    grid = parse_grid(args.grid)
    set_by_ops = {
        op.get("knob"): f"processes[{i}].ops[{j}]"
        for i, p in enumerate(wl.get("processes") or [])
        for j, op in enumerate(p.get("ops") or [])
        if op.get("op") == "set"
    }
    for name, _ in grid:
        if name in set_by_ops:
            raise InputError(
                f"--grid {name}: the workload sets this knob itself ({set_by_ops[name]}, a `set` op), "
                "which would override the grid's value"
            )
    fixed = api.parse_knobs(args.set)
    clash = {n for n, _ in fixed} & {n for n, _ in grid}
    if clash:
        raise InputError(f"--set {', '.join(sorted(clash))}: also a --grid dimension")
    for m in args.machine:
        api.parse_machine(m)
    costs = api.load_costs(args.costs) if args.costs else None
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a directory")
    pts = points(grid, list(args.machine) or [None])

    console = Console(width=max(120, shutil.get_terminal_size((120, 40)).columns))
    console.print(
        f"{len(pts)} runs of {wl.get('name') or args.workload}: "
        + " x ".join(
            [f"{n} ({len(v)})" for n, v in grid] + ([f"machine ({len(args.machine)})"] if len(args.machine) > 1 else [])
        )
    )
    t0 = time.monotonic()
    rows = run_grid(json.dumps(wl), pts, fixed, args.seed, costs, args.address, args.workers, console)
    knob_names = [n for n, _ in grid]
    df = frame(rows, knob_names)
    out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    write_atomic(out / "sweep.parquet", buf.getvalue())
    write_atomic(out / "sweep.csv", df.to_csv(index=False))
    print_table(df, knob_names, console)
    console.print(f"{len(pts)} runs in {time.monotonic() - t0:.1f} s; wrote {out}/sweep.parquet and {out}/sweep.csv")
    return 0
