"""Seed 004 (proactive compaction) at the quick scale: the experiment module runs and its rows
show the seed's effects in the model (direction, and the 32 s back-off)."""

import math

import pytest
from thplab.experiments import seed004

KEYS = {
    "experiment",
    "metric",
    "seed_before",
    "seed_after",
    "seed_delta",
    "thplab_before",
    "thplab_after",
    "thplab_delta",
    "same_direction",
}


@pytest.fixture(scope="module")
def rows():
    return seed004.run(quick=True)


def row(rows, exp, metric):
    return next(r for r in rows if r["experiment"] == exp and r["metric"].startswith(metric))


def test_rows_shape(rows):
    assert rows and all(set(r) == KEYS for r in rows)
    assert {r["experiment"] for r in rows} == {"a", "b", "c"}
    # the published figures are there as reference columns, untouched
    assert row(rows, "a", "alloc latency p50")["seed_before"] == 21229
    assert row(rows, "a", "alloc latency p95")["seed_after"] == 429
    assert round(row(rows, "b", "pre-touch elapsed")["seed_before"]) == 1658
    assert row(rows, "c", "s between proactive retries")["seed_after"] == 30
    text = seed004.format_rows(rows)
    assert "alloc latency p50" in text and "thplab after" in text


def test_a_hugepages_and_latency(rows):
    frac = row(rows, "a", "% of free memory as hugepages")
    assert frac["thplab_before"] > 90 and frac["thplab_after"] > 90
    p10 = row(rows, "a", "alloc latency p10")
    assert p10["thplab_after"] < p10["thplab_before"], "proactive compaction prepared 2 MiB blocks"
    p95 = row(rows, "a", "alloc latency p95")
    assert p95["thplab_after"] <= p95["thplab_before"]
    assert row(rows, "a", "compact_stall")["thplab_after"] < row(rows, "a", "compact_stall")["thplab_before"]
    assert row(rows, "a", "kcompactd CPU")["thplab_before"] == 0 < row(rows, "a", "kcompactd CPU")["thplab_after"]


def test_b_java_pretouch_is_faster_with_proactive_compaction(rows):
    r = row(rows, "b", "pre-touch elapsed")
    assert r["thplab_after"] < r["thplab_before"] and r["same_direction"]
    assert row(rows, "b", "% of heap faults as THP")["thplab_after"] > 90


def test_c_backoff(rows):
    r = row(rows, "c", "s between proactive retries")
    assert not math.isnan(r["thplab_after"]) and 32 <= r["thplab_after"] < 33
    assert row(rows, "c", "pages migrated")["thplab_after"] == 0
    rb = row(rows, "c", "proactive rounds")
    assert rb["thplab_before"] == rb["thplab_after"] >= 3
