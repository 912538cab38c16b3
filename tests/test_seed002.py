"""Seed 002 experiments (khugepaged scan prioritisation), quick variant."""

import json
import math
from pathlib import Path

import pytest
import thplab
from thplab.experiments import seed002

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
COLUMNS = [
    "metric",
    "seed before",
    "seed after",
    "seed delta %",
    "thplab before",
    "thplab after",
    "thplab delta %",
    "same direction?",
]


def test_hot_cold_quick_v1_reaches_hot2_sooner():
    rows = {r["metric"]: r for r in seed002.run_hot_cold(quick=True, after="v1")}
    assert list(next(iter(rows.values())).keys()) == COLUMNS
    t = rows["time until hot2 collapsed (s)"]
    assert t["thplab after"] < t["thplab before"], t
    for m in ("dTLB-load-misses", "cycles per access", "throughput (M accesses/s)", "total access time (s)"):
        assert rows[m]["same direction?"] is True, rows[m]
    # reference values are the seed's own figures, untouched
    assert rows["dTLB-load-misses"]["seed before"] == 288966432
    assert rows["hot2 ranges collapsed"]["thplab after"] == rows["hot2 ranges collapsed"]["thplab before"] == 16


def test_census_quick_cheap_progress():
    rows = {r["metric"]: r for r in seed002.run_census(quick=True, after="final")}
    assert rows["SCAN_PMD_MAPPED per full scan"]["thplab before"] == 40
    assert rows["SCAN_PMD_NONE per full scan"]["thplab before"] == 44
    assert rows["SCAN_SUCCEED per full scan"]["thplab before"] == 1
    p = rows["progress per full scan (MB)"]
    assert p["thplab after"] < p["thplab before"] / 10
    assert p["same direction?"] is True
    assert rows["full scan time (s)"]["thplab after"] < rows["full scan time (s)"]["thplab before"]


def test_run_returns_every_table_and_formats():
    tables = seed002.run(quick=True)
    assert len(tables) == 4
    for rows in tables.values():
        text = seed002.format_table(rows)
        assert text.splitlines()[0].startswith("| metric")
        for r in rows:
            for v in r.values():
                assert not (isinstance(v, float) and math.isinf(v))


@pytest.mark.parametrize("name", ["seed002_hot_cold", "seed002_census"])
def test_examples_are_the_full_workloads(name):
    doc = json.loads((EXAMPLES / f"{name}.json").read_text())
    fn = seed002.hot_cold_workload if "hot" in name else seed002.census_workload
    want = fn(False)
    want["name"] = name
    assert doc == want
    thplab.api.load_workload(doc)  # valid
