"""`thplab show RESULT.json --html OUT.html`: a saved result as one self-contained HTML page
(run summary, phases, vmstat deltas, meminfo, buddyinfo, latency, and plots of its series)."""

from __future__ import annotations

import itertools
from typing import Any

from thplab import htmlpage as H
from thplab.result import Result
from thplab.textout import fmt_ns, machine_summary, meminfo_lines, vmstat_groups

# series columns grouped into a few panels, each with one unit
_FREE = ("MemFree_kB", "SwapFree_kB", "MemAvailable_kB")
_PANELS = [
    ("free memory", "MiB", lambda c: c in _FREE, lambda v: v / 1024),
    ("free memory", "MiB", lambda c: c == "nr_free_pages", lambda v: v * 4 / 1024),
    ("memory in use", "MiB", lambda c: c.endswith("_kB") and "[" not in c and c not in _FREE, lambda v: v / 1024),
    ("memory per process", "MiB", lambda c: c.endswith("]") and "_kB[" in c, lambda v: v / 1024),
    ("fragmentation score", "score (0-100)", lambda c: c.startswith("fragmentation_score"), lambda v: v),
]


def _panel_of(col: str) -> int:
    for i, (_, _, match, _) in enumerate(_PANELS):
        if match(col):
            return i
    return len(_PANELS)  # event counters (cumulative counts)


def series_figures(r: Result) -> list[tuple[str, str, bytes]]:
    """Plots of the sampled series: one panel per unit, only columns that change."""
    from thplab import plotting as P

    s = r.raw.get("series") or {}
    cols, rows = list(s.get("columns") or []), s.get("rows") or []
    if len(rows) < 2:
        return []
    ts = [row[0] / 1e9 for row in rows]
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(cols[1:], 1):
        vals = [row[i] for row in rows]
        if max(vals) != min(vals):
            groups.setdefault(_panel_of(c), []).append(i)
    # panels sharing a title share an axis (MemFree_kB and nr_free_pages, both in MiB)
    panels: dict[str, list[int]] = {}
    for g in sorted(groups):
        title = _PANELS[g][0] if g < len(_PANELS) else "events"
        panels.setdefault(title, []).extend(groups[g])
    figs = []
    for title, idx in panels.items():
        unit = next((p[1] for p in _PANELS if p[0] == title), "count")
        fig, ax = P.subplots(width=8, height=3.2)
        for k, i in enumerate(idx):
            g = _panel_of(cols[i])
            conv = _PANELS[g][3] if g < len(_PANELS) else None
            ys = [conv(row[i]) if conv else row[i] for row in rows]
            ax.plot(ts, ys, label=cols[i], color=P.PALETTE[k % len(P.PALETTE)], drawstyle="steps-post")
        ax.set_xlabel("simulated time (s)" if r.backend == "model" else "time (s)")
        ax.set_ylabel(f"{title} ({unit})" if unit != "count" else "cumulative count")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title(f"{title} over the run", fontsize=10)
        names = ", ".join(cols[i] for i in idx)
        figs.append((f"{title} over the run", f"sampled every {_interval(ts)}: {names}", P.png(fig)))
    return figs


def _interval(ts: list[float]) -> str:
    d = min((b - a for a, b in itertools.pairwise(ts) if b > a), default=0)
    return fmt_ns(d * 1e9)


def latency_figure(r: Result) -> tuple[str, str, bytes] | None:
    from thplab import plotting as P

    lat = {k: v for k, v in (r.raw.get("latency") or {}).items() if (v or {}).get("ns")}
    # a kind's per-phase summary (`kind@process:phase`) that holds all its samples draws
    # the same line as the kind's own
    lat = {k: v for k, v in lat.items() if "@" not in k or v.get("count") != lat.get(k.split("@")[0], {}).get("count")}
    if not lat:
        return None
    fig, ax = P.subplots(width=8, height=3.4)
    for k, (name, v) in enumerate(lat.items()):
        xs, ps = P.latency_cdf_us(v)
        P.step_cdf(ax, xs, ps, f"{name} ({v.get('count', 0):,})", P.PALETTE[k])
    ax.set_xscale("log")
    ax.set_xlabel("latency (µs, log scale)")
    ax.set_ylabel("samples at or below (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title("latency distributions (empirical CDF)", fontsize=10)
    return ("latency distributions", "the number of samples is in parentheses", P.png(fig))


def render(r: Result, source: str = "", defaults: dict[str, str] | None = None) -> str:
    d = r.raw
    title = f"{r.name or 'workload'} · {r.backend or '?'}"
    body = [f"<h1>{H.esc(title)}</h1>"]
    info: list[tuple[str, Any]] = [
        ("result file", source),
        ("machine", machine_summary(r.machine)),
        ("seed", r.seed),
        ("simulated time" if r.backend == "model" else "time", fmt_ns(r.sim_time_ns)),
        ("thplab", r.version),
    ]
    if isinstance(r.kernel, dict) and r.kernel.get("release"):
        info.append(("kernel", r.kernel["release"]))
    if defaults is not None:
        changed = [f"{k}={v}" for k, v in r.knobs.items() if defaults.get(k) != v]
        info.append(("knobs changed", ", ".join(changed) or "none (defaults)"))
    body.append(H.table(["run", ""], [[k, str(v)] for k, v in info if v not in ("", None)]))

    phases = d.get("phases") or []
    if phases:
        body.append("<h2>phases</h2>")
        body.append(
            H.table(
                ["phase", "process", "start", "end", "time", "sys"],
                [
                    [
                        p.get("name", ""),
                        p.get("process", ""),
                        fmt_ns(p.get("start_ns", 0)),
                        fmt_ns(p.get("end_ns", 0)),
                        fmt_ns(p.get("end_ns", 0) - p.get("start_ns", 0)),
                        fmt_ns(p.get("sys_ns", 0)),
                    ]
                    for p in phases
                ],
            )
        )

    delta = {k: v for k, v in r.vmstat_delta.items() if v}
    if delta:
        body.append("<h2>/proc/vmstat: change over the run (non-zero)</h2>")
        rows = [[g, n, f"{delta[n]:+,}"] for g, names in vmstat_groups(delta) for n in names]
        body.append(H.table(["group", "counter", "delta"], rows))

    figs = series_figures(r)
    lat = latency_figure(r)
    if lat:
        figs.append(lat)
    if figs:
        body.append("<h2>plots</h2>")
        body += [H.figure(png, t, cap) for t, cap, png in figs]

    if r.meminfo:
        body.append("<h2>/proc/meminfo at the end</h2>")
        body.append(f"<pre>{H.esc(chr(10).join(meminfo_lines(r.meminfo)))}</pre>")
    for key, label in (("buddyinfo_before", "before"), ("buddyinfo_after", "after")):
        if d.get(key):
            body.append(f"<h2>/proc/buddyinfo {label}</h2><pre>{H.esc(d[key])}</pre>")
    errors = r.errors
    if errors:
        body.append("<h2>op errors</h2>")
        body.append(H.table(["process", "error"], [[e.get("process", ""), str(e)] for e in errors]))
    return H.page(f"thplab: {title}", "".join(body))
