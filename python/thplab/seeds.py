"""thplab seeds: reproduce every experiment of the four seed series in the model and show
our figures beside the published ones.

Each experiment module (thplab.experiments.seedNNN) provides
  TITLE: str
  run(quick: bool) -> list[dict]   rows: experiment, metric, unit, seed_before, seed_after,
                                   seed_delta, thplab_before, thplab_after, thplab_delta,
                                   same_direction (published figures are reference values only)
  LAST_RESULTS: dict[str, dict]    the full model results of the last run, by label (optional)
  plots(results) -> list[(title, matplotlib Figure)]   (optional)
The report folder gets report.md, a self-contained report.html with the plots, and
results.json with every row, every full result and the machine/knobs/costs/version used.
"""

from __future__ import annotations

import argparse
import base64
import html
import importlib
import io
import json
import math
import os
import time
from pathlib import Path
from typing import Any

from thplab.errors import InputError

SEEDS = {
    "000": "thplab.experiments.seed000",
    "002": "thplab.experiments.seed002",
    "003": "thplab.experiments.seed003",
    "004": "thplab.experiments.seed004",
}

COLUMNS = ["metric", "seed before", "seed after", "seed Δ", "thplab before", "thplab after", "thplab Δ", "direction"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", metavar="LIST", help="comma-separated seeds to run: 000,002,003,004 (default: all)")
    p.add_argument("--quick", action="store_true", help="reduced sizes (for tests)")
    p.add_argument("--out", metavar="DIR", default="out/seeds", help="report folder (default: out/seeds)")
    p.add_argument("--no-report", action="store_true", help="print the tables only")


def _fmt_num(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, str):
        return v
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 100):
        return f"{int(v):,}"
    a = abs(v)
    if a >= 100:
        return f"{v:,.1f}"
    if a >= 1:
        return f"{v:.3f}"
    return f"{v:.4g}"


def fmt_delta(d: Any) -> str:
    """mmtests style: a percentage in parentheses, baseline (0.00%)."""
    if d is None or (isinstance(d, float) and math.isnan(d)):
        return "—"
    if isinstance(d, str):
        return d
    return f"({d:+.2f}%)"


def pct(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or before == 0:
        return None
    return (after - before) * 100.0 / abs(before)


def direction(seed_delta: Any, ours: Any) -> str:
    """Do our delta and the seed's point the same way? Says so when they do not."""
    if not isinstance(seed_delta, (int, float)) or not isinstance(ours, (int, float)):
        return "n/a"
    if abs(ours) < 0.5:
        return "same" if abs(seed_delta) < 0.5 else "ours ~flat"
    if seed_delta * ours > 0:
        return "same"
    return "OPPOSITE"


ALIASES = {
    "seed before": "seed_before",
    "seed after": "seed_after",
    "seed delta %": "seed_delta",
    "thplab before": "thplab_before",
    "thplab after": "thplab_after",
    "thplab delta %": "thplab_delta",
    "same direction?": "same_direction",
}


def _num(*vs: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vs)


def normalise(row: dict) -> dict:
    """Fill in deltas/direction a module left out; accept the spaced key names too."""
    r = {ALIASES.get(k, k): v for k, v in row.items()}
    if isinstance(r.get("same_direction"), bool) or r.get("same_direction") is None:
        r["same_direction"] = None
    # numeric deltas are always the percentage change from before to after (modules may
    # have put absolute differences there); a string delta ("+92.1 pts") is kept as given
    for side in ("seed", "thplab"):
        b, a, d = r.get(f"{side}_before"), r.get(f"{side}_after"), r.get(f"{side}_delta")
        if isinstance(b, (int, float)) and isinstance(a, (int, float)) and not isinstance(d, str):
            r[f"{side}_delta"] = pct(b, a)
    # the direction always comes from the values, whatever a module printed as its delta
    sd = pct(r.get("seed_before"), r.get("seed_after")) if _num(r.get("seed_before"), r.get("seed_after")) else None
    td = (
        pct(r.get("thplab_before"), r.get("thplab_after"))
        if _num(r.get("thplab_before"), r.get("thplab_after"))
        else None
    )
    if sd is not None and td is not None:
        r["same_direction"] = direction(sd, td)
    elif not r.get("same_direction") or isinstance(r.get("same_direction"), bool):
        r["same_direction"] = direction(r.get("seed_delta"), r.get("thplab_delta"))
    return r


def row_cells(r: dict) -> list[str]:
    metric = r.get("metric", "")
    if r.get("unit"):
        metric = f"{metric} ({r['unit']})"
    return [
        metric,
        _fmt_num(r.get("seed_before")),
        _fmt_num(r.get("seed_after")),
        fmt_delta(r.get("seed_delta")),
        _fmt_num(r.get("thplab_before")),
        _fmt_num(r.get("thplab_after")),
        fmt_delta(r.get("thplab_delta")),
        str(r.get("same_direction", "")),
    ]


def _groups(rows: list[dict]) -> dict[str, list[dict]]:
    g: dict[str, list[dict]] = {}
    for r in rows:
        g.setdefault(r.get("experiment") or "", []).append(r)
    return g


def print_tables(seed: str, title: str, rows: list[dict], console) -> None:
    from rich import box
    from rich.table import Table

    for exp, rs in _groups(rows).items():
        t = Table(
            title=f"seed {seed}: {title}" + (f" — {exp}" if exp else ""),
            box=box.SIMPLE_HEAVY,
            title_justify="left",
            caption="seed columns: published reference figures; thplab columns: this model",
            caption_justify="left",
        )
        for i, c in enumerate(COLUMNS):
            t.add_column(c, justify="left" if i == 0 else "right", no_wrap=i > 0)
        for r in rs:
            cells = row_cells(r)
            style = "bold red" if r.get("same_direction") == "OPPOSITE" else None
            t.add_row(*cells, style=style)
        console.print(t)


def markdown_table(rows: list[dict]) -> str:
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in row_cells(r)) + " |")
    return "\n".join(out)


def _fig_png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def generic_plots(label_results: dict[str, dict]) -> list[tuple[str, Any]]:
    """Plots any result offers: series over time (THP share, free memory, fragmentation
    score, swap traffic) and latency distributions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = []
    series = {k: r for k, r in label_results.items() if r.get("series", {}).get("rows")}
    if series:
        cols = set()
        for r in series.values():
            # system-wide columns only (per-process ones, NAME[process], are in the results)
            cols.update(c for c in r["series"]["columns"][1:] if "[" not in c)
        for col in sorted(cols):
            fig, ax = plt.subplots(figsize=(7, 3.2))
            for label, r in series.items():
                c = r["series"]["columns"]
                if col not in c:
                    continue
                i = c.index(col)
                xs = [row[0] / 1e9 for row in r["series"]["rows"]]
                ys = [row[i] for row in r["series"]["rows"]]
                ax.plot(xs, ys, label=label, drawstyle="steps-post")
            ax.set_xlabel("simulated time (s)")
            ax.set_ylabel(col)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            figs.append((f"{col} over time", fig))
    lat = {k: r for k, r in label_results.items() if r.get("latency")}
    if lat:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        for label, r in lat.items():
            for name, p in r["latency"].items():
                ns = p.get("ns", {})
                ks = sorted(ns, key=lambda s: int(s[1:]))
                ax.plot([ns[k] / 1000 for k in ks], [int(k[1:]) for k in ks], marker="o", label=f"{label}: {name}")
        ax.set_xscale("symlog")
        ax.set_xlabel("latency (µs)")
        ax.set_ylabel("percentile")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        figs.append(("latency distribution (CDF)", fig))
    return figs


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_report(out: Path, sections: list[dict], meta: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    md = [
        "# thplab seeds report",
        "",
        f"thplab {meta['thplab_version']} · quick={meta['quick']} · host time {meta['host_seconds']:.1f} s",
        "",
        "Seed columns are the figures published with each patch series, printed as reference values;",
        "thplab columns are this model's. `direction` says whether our effect points the way the seed's does.",
        "",
    ]
    body = []
    for s in sections:
        md += [f"## seed {s['seed']}: {s['title']}", ""]
        body.append(f"<h2>seed {html.escape(s['seed'])}: {html.escape(s['title'])}</h2>")
        if s.get("error"):
            md += [f"**not run:** {s['error']}", ""]
            body.append(f"<p class=err>not run: {html.escape(s['error'])}</p>")
            continue
        md += [f"host time {s['host_seconds']:.1f} s, simulated {s['sim_seconds']:.1f} s", ""]
        for exp, rs in _groups(s["rows"]).items():
            if exp:
                md += [f"### {exp}", ""]
                body.append(f"<h3>{html.escape(exp)}</h3>")
            md += [markdown_table(rs), ""]
            body.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS) + "</tr>")
            for r in rs:
                cls = " class=opp" if r.get("same_direction") == "OPPOSITE" else ""
                body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in row_cells(r)) + "</tr>")
            body.append("</table>")
        for i, (title, png) in enumerate(s.get("plots", [])):
            name = f"seed{s['seed']}_{i}.png"
            md += [f"![{title}]({name})", ""]
            write_atomic(out / name, png)
            b64 = base64.b64encode(png).decode()
            body.append(
                f'<figure><img class=plot alt="{html.escape(title)}" src="data:image/png;base64,{b64}">'
                f"<figcaption>{html.escape(title)}</figcaption></figure>"
            )
    doc = f"""<!doctype html><html><head><meta charset="utf-8"><title>thplab seeds report</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}}
table{{border-collapse:collapse;margin:1em 0;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}
td:first-child,th:first-child{{text-align:left}}tr.opp td{{background:#fde2e2}}figure{{margin:1em 0}}
img.plot{{max-width:100%;border:1px solid #ddd}}.err{{color:#a00}}</style></head><body>
<h1>thplab seeds report</h1><p>thplab {html.escape(meta["thplab_version"])} · quick={meta["quick"]} ·
host time {meta["host_seconds"]:.1f} s. Seed columns: published reference figures; thplab columns: this model.</p>
{"".join(body)}
<script>
// the browser check reads this: every plot decoded and laid out
window.addEventListener('load', function () {{
  var imgs = document.querySelectorAll('img.plot'), ok = 0;
  imgs.forEach(function (i) {{ if (i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 0) ok++; }});
  document.title = 'plots-ok ' + ok + '/' + imgs.length;
}});
</script></body></html>"""
    write_atomic(out / "report.md", "\n".join(md).encode())
    write_atomic(out / "report.html", doc.encode())
    results = {"meta": meta, "seeds": [{k: v for k, v in s.items() if k != "plots"} for s in sections]}
    write_atomic(out / "results.json", json.dumps(results, indent=1, sort_keys=True, default=str).encode())


def run_seeds(only: list[str], quick: bool, out: Path | None, console=None) -> list[dict]:
    import shutil

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    import thplab

    console = console or Console(width=max(160, shutil.get_terminal_size((160, 40)).columns))
    sections = []
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
            t0 = time.monotonic()
            sec: dict[str, Any] = {"seed": s, "title": s, "rows": []}
            try:
                mod = importlib.import_module(SEEDS[s])
                sec["title"] = getattr(mod, "TITLE", s)
                produced = mod.run(quick)
                if isinstance(produced, dict):
                    # {experiment title: rows}
                    rows = [normalise({"experiment": t, **r}) for t, rs in produced.items() for r in rs]
                else:
                    rows = [normalise(r) for r in produced]
                results = dict(getattr(mod, "LAST_RESULTS", {}) or {})
                sec["rows"] = rows
                sec["results"] = results
                sec["sim_seconds"] = sum(r.get("sim_time_ns", 0) for r in results.values()) / 1e9
                figs = mod.plots(results) if hasattr(mod, "plots") else generic_plots(results)
                sec["plots"] = [(t, _fig_png(f)) for t, f in figs]
            except ModuleNotFoundError as e:
                if e.name != SEEDS[s]:
                    raise
                sec["error"] = f"experiment module {SEEDS[s]} is not available"
            sec["host_seconds"] = time.monotonic() - t0
            sec.setdefault("sim_seconds", 0.0)
            prog.update(
                tasks[s],
                completed=1,
                status=f"host {sec['host_seconds']:.1f} s, simulated {sec['sim_seconds']:.1f} s"
                if "error" not in sec
                else "not available",
            )
            sections.append(sec)
    for sec in sections:
        if sec.get("error"):
            console.print(f"[yellow]seed {sec['seed']}: {sec['error']}[/]")
        else:
            print_tables(sec["seed"], sec["title"], sec["rows"], console)
    meta = {
        "thplab_version": thplab.__version__,
        "quick": quick,
        "seeds": only,
        "host_seconds": time.monotonic() - t_all,
    }
    if out is not None:
        write_report(out, sections, meta)
        console.print(f"report: {out}/report.html, {out}/report.md, {out}/results.json")
    return sections


def cmd(args: argparse.Namespace) -> int:
    only = list(SEEDS) if not args.only else [s.strip() for s in args.only.split(",") if s.strip()]
    for s in only:
        if s not in SEEDS:
            raise InputError(f"--only: unknown seed `{s}`; known: {', '.join(SEEDS)}")
    sections = run_seeds(only, args.quick, None if args.no_report else Path(args.out))
    return 0 if any(not s.get("error") for s in sections) else 1
