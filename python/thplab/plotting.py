"""Figure helpers shared by the seed report, `thplab show --html` and `thplab sweep`:
grouped bars (seed vs thplab, before vs after), CDFs from percentiles, PNG encoding."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

#: seed (published) figures are grey, ours blue; "before" light, "after" dark
SEED_BEFORE, SEED_AFTER = "#c7c7c7", "#6b6b6b"
OURS_BEFORE, OURS_AFTER = "#9ecae1", "#2b6ca3"
EXTRA = "#e6873c"  # a third variant (mainline, final, ...)
PALETTE = ["#2b6ca3", "#e6873c", "#3a9a4a", "#c23b3b", "#8462b0", "#8c564b", "#d66fb0", "#7f7f7f"]


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def warm_in_background():
    """Import pyplot, pandas and pyarrow and draw one small figure on a daemon thread, so
    that a long model run (which releases the GIL) pays for them instead of the report
    after it (about 1 s of `thplab seeds`). Join the returned thread before the first
    figure: pyplot is not thread-safe."""
    import threading

    def warm():
        import pandas  # noqa: F401  (series.parquet)
        import pyarrow  # noqa: F401

        fig, ax = subplots(width=2, height=1)
        ax.plot([1, 10], [0, 1])
        ax.set_xscale("log")
        ax.set_title("warm-up")
        png(fig)

    t = threading.Thread(target=warm, name="thplab-warm-imports", daemon=True)
    t.start()
    return t


def subplots(ncols: int = 1, nrows: int = 1, width: float = 7.5, height: float = 3.4, **kw):
    plt = pyplot()
    return plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kw)


def png(fig, dpi: int = 110) -> bytes:
    """The figure as PNG bytes; the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    pyplot().close(fig)
    return buf.getvalue()


def _ok(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def wants_log(values: Sequence[Any], ratio: float = 30.0) -> bool:
    """A log axis when the positive values span more than `ratio`."""
    pos = [v for v in values if _ok(v) and v > 0]
    return len(pos) >= 2 and max(pos) / min(pos) > ratio


def fmt_value(v: float) -> str:
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e9:
        return f"{v / 1e9:.3g}G"
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e4:
        return f"{v / 1e3:.3g}k"
    if a >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def grouped_bars(
    ax,
    categories: Sequence[str],
    bars: Sequence[tuple[str, Sequence[Any], str]],
    ylabel: str,
    log: bool | None = None,
    annotate: bool = True,
    hatches: Sequence[str | None] | None = None,
) -> None:
    """Bars grouped by category: `bars` is [(label, one value per category, colour)].
    Missing values (None, NaN) leave a gap marked "n/a"; zeros on a log axis are marked "0".
    `log=None` picks a log axis when the values span more than 30x."""
    n = len(bars)
    width = 0.8 / max(n, 1)
    allv = [v for _, vs, _ in bars for v in vs]
    log = wants_log(allv) if log is None else log
    pos = [v for v in allv if _ok(v) and v > 0]
    floor = min(pos) / 3 if (log and pos) else 0
    for i, (label, values, colour) in enumerate(bars):
        xs = [c + (i - (n - 1) / 2) * width for c in range(len(categories))]
        hs = [v if _ok(v) and (v > 0 or not log) else 0 for v in values]
        hatch = hatches[i] if hatches else None
        ax.bar(xs, hs, width * 0.95, label=label, color=colour, edgecolor="#333", linewidth=0.4, hatch=hatch)
        if annotate:
            for x, v in zip(xs, values, strict=True):
                if not _ok(v):
                    ax.annotate("n/a", (x, floor or 0), ha="center", va="bottom", fontsize=6, color="#888")
                    continue
                y = v if v > 0 or not log else floor
                ax.annotate(
                    fmt_value(v),
                    (x, y),
                    xytext=(0, 1.5),
                    textcoords="offset points",
                    ha="center",
                    va="bottom",
                    fontsize=6,
                )
    if log:
        ax.set_yscale("log")
        if pos:
            ax.set_ylim(bottom=floor, top=max(pos) * 4)
    else:
        top = max([v for v in allv if _ok(v)] or [1])
        ax.set_ylim(0, top * 1.15 if top > 0 else 1)
    ax.set_xticks(range(len(categories)), categories)
    ax.set_ylabel(ylabel + (" (log scale)" if log else ""))
    ax.grid(axis="y", alpha=0.3, which="both" if log else "major")
    ax.set_axisbelow(True)


def percentile_points(ns: dict[str, Any]) -> tuple[list[float], list[float]]:
    """(values, percentiles) of a latency summary {"p05": v, ...}, sorted by percentile."""
    pts = []
    for k, v in ns.items():
        digits = "".join(ch for ch in k if ch.isdigit())
        if digits and _ok(v):
            pts.append((float(digits), float(v)))
    pts.sort()
    return [v for _, v in pts], [p for p, _ in pts]


def latency_cdf_us(summary: dict[str, Any]) -> tuple[list[float], list[float]]:
    """(µs, percent of samples at or below) of one latency summary of a result: its
    empirical CDF points (the largest sample of each log bin) when it has them, else its
    percentiles (results of older versions, live runs that record only percentiles)."""
    pts, n = summary.get("cdf") or [], summary.get("count", 0)
    if pts and n:
        return [v / 1000 for v, _ in pts], [100.0 * c / n for _, c in pts]
    vals, pcts = percentile_points(summary.get("ns", {}))
    return [v / 1000 for v in vals], pcts


def step_cdf(ax, xs: Sequence[float], pcts: Sequence[float], label: str, colour: str, **kw) -> bool:
    """Draw a cumulative distribution (from latency_cdf_us) as steps on a log x axis:
    0 % up to the first sample, each point where the fraction rises; samples <= 0, which a
    log axis cannot show, are left out. Returns whether anything was drawn."""
    keep = [(x, p) for x, p in zip(xs, pcts, strict=True) if x > 0]
    if not keep:
        return False
    ax.step(
        [keep[0][0]] + [x for x, _ in keep], [0.0] + [p for _, p in keep], where="post", label=label, color=colour, **kw
    )
    return True
