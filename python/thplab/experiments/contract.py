"""The seed experiment contract: what an experiment module gives `thplab seeds`.

Each module thplab.experiments.seedNNN defines

    EXPERIMENT = Experiment(seed="NNN", title=..., run=run, figures=figures)

where `run(quick) -> Outcome` runs the experiment through the model and `figures(outcome)`
draws its curated figures. Nothing is kept in module globals between the two: the outcome
carries the tables, the full model results and whatever derived values the figures need.

Published seed figures appear in `Row.seed_*` as reference values only: they are never model
inputs, never outputs and never tuning targets.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Experiment", "Figure", "Outcome", "Row", "Table", "direction", "pct"]

Value = float | int | str | None


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))


def pct(before: Value, after: Value) -> float | None:
    """Percentage change from before to after (None when it is not defined)."""
    if not _num(before) or not _num(after) or before == 0:
        return None
    return (after - before) * 100.0 / abs(before)


def direction(seed_delta: Value, ours: Value) -> str:
    """Do our change and the seed's point the same way? Says so when they do not."""
    if not _num(seed_delta) or not _num(ours):
        return "n/a"
    if abs(ours) < 0.5:
        return "same" if abs(seed_delta) < 0.5 else "ours ~flat"
    if seed_delta * ours > 0:
        return "same"
    return "OPPOSITE"


@dataclass
class Row:
    """One metric: the seed's published before/after (reference only) and ours.

    Numeric deltas are the percentage change before -> after and are computed here; a string
    delta (e.g. "+92.1 pts") is kept as given. `direction` is computed from the values
    unless `check` is given: a named comparison that is not a direction (e.g. "the back-off
    is 30 s"), shown as "matches" or "DIFFERS"."""

    metric: str
    unit: str = ""
    seed_before: Value = None
    seed_after: Value = None
    thplab_before: Value = None
    thplab_after: Value = None
    seed_delta: Value = None
    thplab_delta: Value = None
    check: bool | None = None
    direction: str = ""
    #: ours with multi-size THP (a third thplab column when the table names one in
    #: `Table.mthp`): the "after" setup with 64 KiB mTHP enabled (issue 18)
    mthp: Value = None

    def __post_init__(self) -> None:
        for side in ("seed", "thplab"):
            b, a = getattr(self, f"{side}_before"), getattr(self, f"{side}_after")
            if not isinstance(getattr(self, f"{side}_delta"), str):
                setattr(self, f"{side}_delta", pct(b, a))
        if self.check is not None:
            self.direction = "matches" if self.check else "DIFFERS"
        elif not self.direction:
            sd, td = pct(self.seed_before, self.seed_after), pct(self.thplab_before, self.thplab_after)
            self.direction = direction(sd, td) if sd is not None and td is not None else "n/a"

    @property
    def flagged(self) -> bool:
        return self.direction in ("OPPOSITE", "DIFFERS")

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "unit": self.unit,
            "seed_before": self.seed_before,
            "seed_after": self.seed_after,
            "seed_delta": self.seed_delta,
            "thplab_before": self.thplab_before,
            "thplab_after": self.thplab_after,
            "thplab_delta": self.thplab_delta,
            "direction": self.direction,
            "thplab_mthp": self.mthp,
        }


@dataclass
class Table:
    """A titled group of rows: the title says what was measured; `before` and `after` say
    what the two columns are (e.g. "proactiveness 0" and "proactiveness 20")."""

    title: str
    rows: list[Row]
    before: str = "before"
    after: str = "after"
    note: str = ""
    #: what the optional mTHP column is (empty: the table has none)
    mthp: str = ""

    def row(self, metric: str) -> Row:
        return next(r for r in self.rows if r.metric == metric)


@dataclass
class Figure:
    """A curated figure: its title says what was measured, the axes carry units."""

    title: str
    figure: Any  # a matplotlib Figure
    caption: str = ""


@dataclass
class Outcome:
    """What one experiment run produced."""

    tables: list[Table]
    #: every full model result, by label (the report saves their summaries and series)
    results: dict[str, dict] = field(default_factory=dict)
    #: derived values the figures need (sizes, metrics), by name
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def rows(self) -> list[Row]:
        return [r for t in self.tables for r in t.rows]

    @property
    def sim_seconds(self) -> float:
        return sum(r.get("sim_time_ns", 0) for r in self.results.values()) / 1e9

    def table(self, title_start: str) -> Table:
        return next(t for t in self.tables if t.title.startswith(title_start))


@dataclass(frozen=True)
class Experiment:
    seed: str
    title: str
    run: Callable[[bool], Outcome]
    figures: Callable[[Outcome], list[Figure]]
    #: one paragraph: what the seed claims and what is run here
    summary: str = ""
