"""Seed 002 experiments (khugepaged scan prioritisation), quick variant."""

import json
import math
from pathlib import Path

import pytest
import thplab
from thplab.experiments import seed002

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def outcome():
    return seed002.run(quick=True)


def test_hot_cold_quick_v1_reaches_hot2_sooner(outcome):
    t = outcome.tables[0]
    assert t.title.startswith("hot1 -> cold -> hot2") and t.title.endswith("baseline vs v1")
    r = t.row("time from MADV_HUGEPAGE until hot2 is collapsed")
    assert r.thplab_after < r.thplab_before, r
    for m in ("dTLB-load-misses", "cycles per access", "throughput", "total access time"):
        assert t.row(m).direction == "same", t.row(m)
    # reference values are the seed's own figures, untouched
    assert t.row("dTLB-load-misses").seed_before == 288966432
    r = t.row("hot2 ranges collapsed")
    assert r.thplab_after == r.thplab_before == 16


def test_census_quick_cheap_progress(outcome):
    t = outcome.table("idle desktop census")
    assert t.title.endswith("baseline vs final")
    # the census is the first full scan that starts after set-up, so it sees the settled
    # desktop whole: the 40 PMD-mapped ranges plus the one khugepaged collapsed while the
    # desktop was setting up (an mm joins khugepaged's list at its first THP fault), and
    # the 44 table-less ranges
    assert t.row("SCAN_PMD_MAPPED per full scan").thplab_before == 41
    assert t.row("SCAN_PMD_NONE per full scan").thplab_before == 44
    assert t.row("SCAN_SUCCEED per full scan").thplab_before == 0
    p = t.row("progress per full scan")
    assert p.unit == "MB" and p.thplab_after < p.thplab_before / 10
    assert p.direction == "same"
    assert t.row("full scan time").thplab_after < t.row("full scan time").thplab_before


def test_every_table_and_figure(outcome):
    assert len(outcome.tables) == 4
    for t in outcome.tables:
        for r in t.rows:
            for v in (r.thplab_before, r.thplab_after, r.thplab_delta):
                assert not (isinstance(v, float) and math.isinf(v))
    # the hot/cold runs sample the system every second
    assert outcome.results["hot_cold baseline"]["series"]["rows"]
    figs = seed002.figures(outcome)
    assert [f.title.split(":")[0] for f in figs] == [
        "AnonHugePages of hot1, cold and hot2 over time",
        "khugepaged's full scan of an idle desktop",
    ]


def test_timeline_uses_per_process_columns_when_present(outcome):
    """The model's series gains per-process columns (AnonHugePages_kB[hot1], ...); the
    figure uses them when there and falls back to the system total otherwise."""
    from thplab import plotting

    r = outcome.results["hot_cold baseline"]
    cols = r["series"]["columns"]
    assert {"AnonHugePages_kB[hot1]", "AnonHugePages_kB[cold]", "AnonHugePages_kB[hot2]"} <= set(cols)
    fig, ax = plotting.subplots()
    assert seed002._timeline(ax, r, "baseline") is True
    assert [ln.get_label() for ln in ax.get_lines()] == ["hot1", "cold", "hot2"]
    # a result without them (an older one, or a live run that could not sample per process)
    old = json.loads(json.dumps(r))
    keep = [i for i, c in enumerate(cols) if "[" not in c]
    old["series"]["columns"] = [cols[i] for i in keep]
    old["series"]["rows"] = [[row[i] for i in keep] for row in old["series"]["rows"]]
    fig2, ax2 = plotting.subplots()
    assert seed002._timeline(ax2, old, "baseline") is False
    plotting.png(fig), plotting.png(fig2)


@pytest.mark.parametrize("name", ["seed002_hot_cold", "seed002_census"])
def test_examples_are_the_full_workloads(name):
    doc = json.loads((EXAMPLES / f"{name}.json").read_text())
    fn = seed002.hot_cold_workload if "hot" in name else seed002.census_workload
    want = fn(False)
    want["name"] = name
    assert doc == want
    thplab.api.load_workload(doc)  # valid
