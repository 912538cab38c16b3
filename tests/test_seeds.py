"""`thplab seeds --quick` end to end, the report folder, `thplab compare`, and the browser
check: report.html opened in headless Chromium renders every figure without errors."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from fixtures.browser import check_in_chromium
from thplab import plotting
from thplab.experiments.contract import Row

ROOT = Path(__file__).resolve().parent.parent
THPLAB = [sys.executable, "-m", "thplab"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("seeds")
    (out / "seed000-9.png").write_bytes(b"stale")  # a figure left by an older report
    p = subprocess.run(
        [*THPLAB, "seeds", "--quick", "--out", str(out)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p.stdout


def test_seeds_quick_prints_tables_and_writes_the_report(report):
    out, stdout = report
    assert "seed columns: published reference figures" in stdout
    for f in ("report.md", "report.html", "results.json", "series.parquet"):
        assert (out / f).stat().st_size > 0
    res = json.loads((out / "results.json").read_text())
    assert res["meta"]["quick"] is True and res["series"] == "series.parquet"
    assert [s["seed"] for s in res["seeds"]] == ["000", "002", "003", "004"]
    for s in res["seeds"]:
        assert not s["error"], s
        # curated figures: a few per seed, each written beside the report
        assert 1 <= len(s["figures"]) <= 6, s["seed"]
        for f in s["figures"]:
            assert (out / f).stat().st_size > 10_000
        for t in s["tables"]:
            # sections have real titles (not "a", "b", "c") and say what before/after mean
            assert len(t["title"]) > 20 and t["before"] and t["after"], t["title"]
            for r in t["rows"]:
                assert {"metric", "seed_before", "thplab_before", "direction"} <= set(r)
        for label, r in s["runs"].items():
            assert r["backend"] == "model" and r["machine"] and r["knobs"] and r["cost_profile"], label
            assert "series" not in r  # the series live in series.parquet
    assert not (out / "seed000-9.png").exists()
    md = (out / "report.md").read_text()
    assert "| metric | seed before | seed after | seed Δ |" in md
    assert "## seed 004: Nitin Gupta 2020: proactive compaction" in md and "### (a) hugepage allocation" in md


def test_series_parquet_loads_with_one_pandas_call(report):
    out, _ = report
    df = pd.read_parquet(out / "series.parquet")
    assert {"seed", "run", "t_s", "AnonHugePages_kB", "MemFree_kB"} <= set(df.columns)
    res = json.loads((out / "results.json").read_text())
    # every sample of every run is there, and only there
    for s in res["seeds"]:
        for label, r in s["runs"].items():
            n = len(df[(df.seed == s["seed"]) & (df.run == label)])
            assert n == r["series_samples"], (s["seed"], label)
    assert df[df.seed == "002"].run.str.startswith("hot_cold").any()


def test_rows_compute_deltas_and_direction():
    assert Row("t", "s", 10, 5, 4, 3).seed_delta == -50.0
    r = Row("t", "s", 10, 5, 4, 3)
    assert r.thplab_delta == -25.0 and r.direction == "same"
    assert Row("t", "", 10, 5, 4, 6).direction == "OPPOSITE"
    assert Row("t", "", 8.216, 8.94, 1.0, 1.001).direction == "ours ~flat"
    assert Row("t", "", None, 30, None, 32, check=True).direction == "matches"
    assert Row("t", "", None, 30, None, 60, check=False).flagged
    assert Row("t", "", 1, 2, 1, 3, seed_delta="+100%").seed_delta == "+100%"


def test_latency_cdf_uses_the_empirical_points_else_the_percentiles():
    """A result's CDF points are exact: (µs, % of samples at or below); a summary with only
    percentiles falls back to them. The steps start at 0 % and leave out samples of 0 ns,
    which a log axis cannot show."""
    exact = {"count": 4, "cdf": [[0, 1], [2000, 3], [9000, 4]], "ns": {"p50": 2000}}
    assert plotting.latency_cdf_us(exact) == ([0.0, 2.0, 9.0], [25.0, 75.0, 100.0])
    vals, pcts = plotting.latency_cdf_us({"count": 6, "ns": {"p50": 300, "p05": 10, "p95": 2000, "p25": 40}})
    assert vals == [0.01, 0.04, 0.3, 2.0] and pcts == [5, 25, 50, 95]
    fig, ax = plotting.subplots()
    assert plotting.step_cdf(ax, *plotting.latency_cdf_us(exact), "x", "#000")
    (line,) = ax.get_lines()
    assert list(line.get_xdata()) == [2.0, 2.0, 9.0] and list(line.get_ydata()) == [0.0, 75.0, 100.0]
    assert line.get_drawstyle() == "steps-post"
    assert not plotting.step_cdf(ax, [0.0], [100.0], "zero", "#000")
    plotting.png(fig)


def test_seeds_help_is_for_users():
    p = subprocess.run([*THPLAB, "seeds", "--help"], capture_output=True, text=True, check=False)
    assert p.returncode == 0
    assert "EXPERIMENT" not in p.stdout and "run(quick" not in p.stdout  # no module contract
    for s in ("examples:", "thplab seeds --only 004 --quick", "series.parquet", "report.html", "--out"):
        assert s in p.stdout, s


def test_compare_two_results(tmp_path):
    wl = ROOT / "examples" / "thp_always.json"
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    subprocess.run([*THPLAB, "run", str(wl), "-q", "--json", str(a)], check=True, cwd=ROOT)
    subprocess.run(
        [*THPLAB, "run", str(wl), "-q", "--set", "transparent_hugepage/enabled=never", "--json", str(b)],
        check=True,
        cwd=ROOT,
    )
    p = subprocess.run([*THPLAB, "compare", str(a), str(b)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert p.returncode == 0, p.stderr
    assert "thp_fault_alloc" in p.stdout and "(-100.00%)" in p.stdout
    bad = subprocess.run([*THPLAB, "compare", str(a), str(wl)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert bad.returncode == 2 and "not a thplab result" in bad.stderr


def test_report_renders_in_headless_chromium(report, tmp_path):
    out, _ = report
    res = json.loads((out / "results.json").read_text())
    ok, total = check_in_chromium(out / "report.html", tmp_path, "report.png")
    assert ok == total == sum(len(s["figures"]) for s in res["seeds"])


def test_show_html_renders_in_headless_chromium(tmp_path):
    """`thplab show RESULT.json --html`: a self-contained page with the run's tables and plots."""
    res, page = tmp_path / "r.json", tmp_path / "r.html"
    subprocess.run([*THPLAB, "run", str(ROOT / "examples" / "hot_cold.json"), "-q", "--json", str(res)], check=True)
    p = subprocess.run([*THPLAB, "show", str(res), "--html", str(page)], capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    html = page.read_text()
    for s in ("<h2>phases</h2>", "/proc/vmstat", "/proc/meminfo", "hot1:access", "thp_collapse_alloc"):
        assert s in html, s
    ok, total = check_in_chromium(page, tmp_path, "show.png")
    assert ok == total >= 2  # free memory and memory in use over the run
    bad = subprocess.run(
        [*THPLAB, "show", str(res), str(res), "--html", str(page)], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2 and "exactly one" in bad.stderr


def test_warm_in_background_imports_what_the_report_draws_with():
    """The warm-up thread `thplab seeds` starts beside the model runs ends having imported
    pyplot (Agg), pandas and pyarrow and drawn a figure without error."""
    import sys

    from thplab import plotting

    t = plotting.warm_in_background()
    t.join()  # no time bound: a wall-clock threshold does not belong in a test
    assert {"matplotlib.pyplot", "pandas", "pyarrow"} <= set(sys.modules)
    assert sys.modules["matplotlib"].get_backend().lower() == "agg"
