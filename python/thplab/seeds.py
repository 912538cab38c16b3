"""`thplab seeds`: run the four seed experiments through the model and report our figures
beside the published ones.

The experiments follow thplab.experiments.contract (an `EXPERIMENT` per module). The report
folder gets report.html (self-contained, with the curated figures), report.md, the figures as
PNG files, results.json (every table row and a summary of every model run) and series.parquet
(every sampled time series of every run, one row per sample).
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thplab.atomic import write_atomic
from thplab.errors import InputError
from thplab.experiments.contract import Experiment, Outcome, Row, Table

SEEDS = {
    "000": "thplab.experiments.seed000",
    "002": "thplab.experiments.seed002",
    "003": "thplab.experiments.seed003",
    "004": "thplab.experiments.seed004",
}

HELP = "run the four seed experiments and show our figures beside the published ones"

HELP_DESCRIPTION = """\
Reproduce the benchmarks of the four kernel patch series thplab models, in the model, and
show thplab's numbers beside the figures each series published:

  000  Yu Zhao 2021: drop zero subpages when splitting a THP (test.c, zram and disk swap)
  002  Vernon Yang 2025: khugepaged scan prioritisation (hot1/cold/hot2, desktop census)
  003  Huang Ying 2018: THP swap-out and swap-in in one piece (vm-scalability swap-w-seq)
  004  Nitin Gupta 2020: proactive compaction (allocation latency, Java pre-touch, back-off)

Published figures are printed as reference values only; they are never model inputs.
The full run uses the seeds' own sizes (seed 004 simulates a 1 TiB machine) and takes
several minutes; --quick uses small sizes and takes under a minute."""

HELP_EPILOG = """\
examples:
  thplab seeds                          all four, at the seeds' scale, report in out/seeds/
  thplab seeds --only 004 --quick       one seed, small sizes
  thplab seeds --no-report              print the tables only

outputs (in --out DIR):
  report.html    the report: tables and figures, one self-contained file
  report.md      the same tables in Markdown, figures as seedNNN-K.png beside it
  results.json   every table row and a summary of every model run (no time series)
  series.parquet every sampled time series, one row per sample (seed, run, t_s, quantities):
                 pandas.read_parquet("out/seeds/series.parquet")"""

COLUMNS = ["metric", "seed before", "seed after", "seed Δ", "thplab before", "thplab after", "thplab Δ", "direction"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", metavar="LIST", help="comma-separated seeds to run, e.g. 000,004 (default: all)")
    p.add_argument("--quick", action="store_true", help="small sizes: under a minute instead of several")
    p.add_argument("--out", metavar="DIR", default="out/seeds", help="report folder (default: out/seeds)")
    p.add_argument("--no-report", action="store_true", help="print the tables only, write nothing")
    p.add_argument("--census", metavar="CENSUS.json", help="add a census section (from `thplab census --json`)")


# ---------------------------------------------------------------------------------------------
# formatting


def fmt_num(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 100):
        return f"{int(v):,}"
    a = abs(v)
    if a >= 100:
        return f"{v:,.1f}"
    if a >= 1:
        return f"{v:.3f}"
    return f"{v:.4g}"


def fmt_delta(d: Any) -> str:
    """mmtests style: a percentage in parentheses."""
    if d is None or (isinstance(d, float) and math.isnan(d)):
        return "—"
    if isinstance(d, str):
        return d
    return f"({d:+.2f}%)"


def columns(t: Table) -> list[str]:
    """The table's columns: the standard ones, plus the mTHP column when the table has one."""
    return [*COLUMNS[:-1], "thplab mTHP", COLUMNS[-1]] if t.mthp else COLUMNS


def row_cells(r: Row, t: Table | None = None) -> list[str]:
    metric = f"{r.metric} ({r.unit})" if r.unit else r.metric
    extra = [fmt_num(r.mthp)] if t is not None and t.mthp else []
    return [
        metric,
        fmt_num(r.seed_before),
        fmt_num(r.seed_after),
        fmt_delta(r.seed_delta),
        fmt_num(r.thplab_before),
        fmt_num(r.thplab_after),
        fmt_delta(r.thplab_delta),
        *extra,
        r.direction,
    ]


def _columns_note(t: Table) -> str:
    return f"before: {t.before}; after: {t.after}" + (f"; mTHP: {t.mthp}" if t.mthp else "")


def print_tables(seed: str, title: str, tables: list[Table], console) -> None:
    from rich import box
    from rich.table import Table as RichTable

    for t in tables:
        rt = RichTable(
            title=f"seed {seed}: {t.title}",
            box=box.SIMPLE_HEAVY,
            title_justify="left",
            caption=f"{_columns_note(t)}. seed columns: published reference figures; thplab columns: this model",
            caption_justify="left",
        )
        for i, c in enumerate(columns(t)):
            rt.add_column(c, justify="left" if i == 0 else "right", no_wrap=i > 0)
        for r in t.rows:
            rt.add_row(*row_cells(r, t), style="bold red" if r.flagged else None)
        console.print(rt)


def markdown_table(t: Table) -> str:
    cols = columns(t)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in t.rows:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in row_cells(r, t)) + " |")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# one section per seed


@dataclass
class Section:
    seed: str
    title: str
    summary: str = ""
    outcome: Outcome | None = None
    figures: list[tuple[str, str, bytes]] = field(default_factory=list)  # (title, caption, png)
    host_seconds: float = 0.0
    error: str | None = None

    @property
    def sim_seconds(self) -> float:
        return self.outcome.sim_seconds if self.outcome else 0.0


def load_experiment(seed: str) -> Experiment:
    return importlib.import_module(SEEDS[seed]).EXPERIMENT


def run_section(seed: str, quick: bool, warm=None) -> Section:
    """Run one seed's experiments and draw its figures; `warm`: a thread from
    plotting.warm_in_background() to join before drawing."""
    from thplab import plotting

    t0 = time.monotonic()
    try:
        exp = load_experiment(seed)
    except ModuleNotFoundError as e:
        if e.name != SEEDS[seed]:
            raise
        return Section(seed, seed, error=f"experiment module {SEEDS[seed]} is not available")
    sec = Section(seed, exp.title, exp.summary)
    sec.outcome = exp.run(quick)
    if warm is not None:
        warm.join()
    for f in exp.figures(sec.outcome):
        sec.figures.append((f.title, f.caption, plotting.png(f.figure)))
    sec.host_seconds = time.monotonic() - t0
    return sec


# ---------------------------------------------------------------------------------------------
# the report folder


def result_summary(r: dict) -> dict:
    """A run's result without its time series (they go to series.parquet)."""
    s = {k: v for k, v in r.items() if k != "series"}
    rows = (r.get("series") or {}).get("rows") or []
    s["series_samples"] = len(rows)
    return s


def series_frame(sections: list[Section]):
    """Every sampled series of every run: columns seed, run, t_s, then one column per
    sampled quantity (NaN where a run did not sample it)."""
    import pandas as pd

    frames = []
    for sec in sections:
        for label, r in (sec.outcome.results if sec.outcome else {}).items():
            s = r.get("series") or {}
            cols, rows = s.get("columns") or [], s.get("rows") or []
            if not cols or not rows:
                continue
            df = pd.DataFrame(rows, columns=cols, dtype="float64")
            t = df.pop(cols[0])
            df.insert(0, "t_s", t / 1e9)
            df.insert(0, "run", label)
            df.insert(0, "seed", sec.seed)
            frames.append(df)
    if not frames:
        return pd.DataFrame({"seed": pd.Series(dtype=str), "run": pd.Series(dtype=str), "t_s": []})
    return pd.concat(frames, ignore_index=True, sort=False)


def _clean_old_figures(out: Path) -> None:
    for p in out.glob("seed[0-9][0-9][0-9]-*.png"):
        p.unlink()


def write_report(out: Path, sections: list[Section], meta: dict, extra_html: list[str] | None = None) -> None:
    from thplab import htmlpage as H

    out.mkdir(parents=True, exist_ok=True)
    _clean_old_figures(out)
    intro = (
        "Seed columns are the figures published with each patch series, printed as reference values; "
        "thplab columns are this model's, in simulated time. `direction` says whether our change "
        "points the way the seed's does (`matches`/`DIFFERS` for a named check)."
    )
    md = [
        "# thplab seeds report",
        "",
        f"thplab {meta['thplab_version']} · quick={meta['quick']} · host time {meta['host_seconds']:.1f} s",
        "",
        intro,
        "",
    ]
    body = [
        "<h1>thplab seeds report</h1>",
        f"<p>thplab {H.esc(meta['thplab_version'])} · {'quick sizes' if meta['quick'] else 'the seeds’ sizes'} · "
        f"host time {meta['host_seconds']:.1f} s.</p><p class=note>{H.esc(intro)}</p>",
    ]
    for s in sections:
        md += [f"## seed {s.seed}: {s.title}", ""]
        body.append(f"<h2>seed {H.esc(s.seed)}: {H.esc(s.title)}</h2>")
        if s.error or not s.outcome:
            md += [f"**not run:** {s.error}", ""]
            body.append(f"<p class=err>not run: {H.esc(s.error)}</p>")
            continue
        if s.summary:
            md += [s.summary, ""]
            body.append(f"<p>{H.esc(s.summary)}</p>")
        stats = f"host time {s.host_seconds:.1f} s, simulated {s.sim_seconds:.1f} s over {len(s.outcome.results)} runs"
        md += [stats, ""]
        body.append(f"<p class=note>{H.esc(stats)}</p>")
        for t in s.outcome.tables:
            md += [f"### {t.title}", "", f"*{_columns_note(t)}*", "", markdown_table(t), ""]
            body.append(f"<h3>{H.esc(t.title)}</h3><p class=note>{H.esc(_columns_note(t))}</p>")
            body.append(H.table(columns(t), [row_cells(r, t) for r in t.rows], [r.flagged for r in t.rows]))
            if t.note:
                md += [t.note, ""]
                body.append(f"<p class=note>{H.esc(t.note)}</p>")
        for i, (title, caption, png) in enumerate(s.figures, 1):
            name = f"seed{s.seed}-{i}.png"
            write_atomic(out / name, png)
            md += [f"![{title}]({name})", "", f"*{title}.* {caption}", ""]
            body.append(H.figure(png, title, caption))
    write_atomic(out / "report.md", "\n".join(md))
    body.extend(extra_html or [])  # further sections (the census: thplab.census.html_section)
    write_atomic(out / "report.html", H.page("thplab seeds report", "".join(body)))
    results = {
        "meta": meta,
        "seeds": [
            {
                "seed": s.seed,
                "title": s.title,
                "error": s.error,
                "host_seconds": s.host_seconds,
                "sim_seconds": s.sim_seconds,
                "tables": [
                    {
                        "title": t.title,
                        "before": t.before,
                        "after": t.after,
                        "mthp": t.mthp,
                        "rows": [r.to_dict() for r in t.rows],
                    }
                    for t in (s.outcome.tables if s.outcome else [])
                ],
                "figures": [f"seed{s.seed}-{i}.png" for i in range(1, len(s.figures) + 1)],
                "runs": {k: result_summary(r) for k, r in (s.outcome.results if s.outcome else {}).items()},
            }
            for s in sections
        ],
        "series": "series.parquet",
    }
    write_atomic(out / "results.json", json.dumps(results, indent=1, sort_keys=True, default=str))
    buf = io.BytesIO()
    series_frame(sections).to_parquet(buf, index=False, compression="zstd")
    write_atomic(out / "series.parquet", buf.getvalue())


def run_seeds(only: list[str], quick: bool, out: Path | None, console=None, census: str | None = None) -> list[Section]:
    import shutil

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    import thplab
    from thplab import plotting

    console = console or Console(width=max(160, shutil.get_terminal_size((160, 40)).columns))
    warm = plotting.warm_in_background()
    sections: list[Section] = []
    t_all = time.monotonic()
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as prog:
        tasks = {s: prog.add_task(f"seed {s}", total=1, status="waiting") for s in only}
        for s in only:
            prog.update(tasks[s], status="running")
            sec = run_section(s, quick, warm)
            status = (
                "not available"
                if sec.error
                else f"host {sec.host_seconds:.1f} s, simulated {sec.sim_seconds:.1f} s, {len(sec.figures)} figures"
            )
            prog.update(tasks[s], completed=1, status=status)
            sections.append(sec)
    for sec in sections:
        if sec.error or not sec.outcome:
            console.print(f"[yellow]seed {sec.seed}: {sec.error}[/]")
        else:
            print_tables(sec.seed, sec.title, sec.outcome.tables, console)
    meta = {
        "thplab_version": thplab.__version__,
        "quick": quick,
        "seeds": only,
        "host_seconds": time.monotonic() - t_all,
    }
    if out is not None:
        extra = []
        if census:
            from thplab import census as census_mod

            extra.append(census_mod.html_section(census_mod.load(census)))
            meta["census"] = census
        write_report(out, sections, meta, extra)
        console.print(f"report: {out}/report.html (also report.md, results.json, series.parquet)")
    return sections


def cmd(args: argparse.Namespace) -> int:
    only = list(SEEDS) if not args.only else [s.strip() for s in args.only.split(",") if s.strip()]
    for s in only:
        if s not in SEEDS:
            raise InputError(f"--only: unknown seed `{s}`; known: {', '.join(SEEDS)}")
    if not args.no_report:
        out = Path(args.out)
        if out.exists() and not out.is_dir():
            raise InputError(f"--out {out}: exists and is not a directory")
    if args.census:
        from thplab import census as census_mod

        census_mod.load(args.census)  # a bad census fails before the experiments run
    sections = run_seeds(only, args.quick, None if args.no_report else Path(args.out), census=args.census)
    return 0 if any(not s.error for s in sections) else 1
