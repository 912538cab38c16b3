"""`thplab seeds --quick` end to end, the report folder, `thplab compare`, and the browser
check: report.html opened in headless Chromium renders every plot."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from thplab import seeds

ROOT = Path(__file__).resolve().parent.parent
THPLAB = [sys.executable, "-m", "thplab"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("seeds")
    p = subprocess.run(THPLAB + ["seeds", "--quick", "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p.stdout


def test_seeds_quick_prints_tables_and_writes_the_report(report):
    out, stdout = report
    assert "seed columns: published reference figures" in stdout
    for f in ("report.md", "report.html", "results.json"):
        assert (out / f).stat().st_size > 0
    res = json.loads((out / "results.json").read_text())
    assert res["meta"]["quick"] is True
    ran = [s for s in res["seeds"] if not s.get("error")]
    assert ran, res["seeds"]
    for s in ran:
        assert s["rows"], s["seed"]
        for r in s["rows"]:
            # published figures are references, never our outputs: our columns come from results
            assert "thplab_before" in r and "seed_before" in r
        for label, r in s.get("results", {}).items():
            assert r["backend"] == "model" and r["machine"] and r["knobs"] and r["cost_profile"], label
    md = (out / "report.md").read_text()
    assert "| metric | seed before | seed after | seed Δ |" in md


def test_direction_and_deltas():
    assert seeds.direction(-50.0, -20.0) == "same"
    assert seeds.direction(-50.0, +20.0) == "OPPOSITE"
    assert seeds.direction(8.81, 0.1) == "ours ~flat"
    assert seeds.fmt_delta(992.8) == "(+992.80%)"
    r = seeds.normalise({"seed_before": 10, "seed_after": 5, "thplab_before": 4, "thplab_after": 3})
    assert r["seed_delta"] == -50.0 and r["thplab_delta"] == -25.0 and r["same_direction"] == "same"


def test_compare_two_results(tmp_path):
    wl = ROOT / "examples" / "thp_always.json"
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    subprocess.run(THPLAB + ["run", str(wl), "-q", "--json", str(a)], check=True, cwd=ROOT)
    subprocess.run(
        THPLAB + ["run", str(wl), "-q", "--set", "transparent_hugepage/enabled=never", "--json", str(b)],
        check=True,
        cwd=ROOT,
    )
    p = subprocess.run(THPLAB + ["compare", str(a), str(b)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert "thp_fault_alloc" in p.stdout and "(-100.00%)" in p.stdout
    bad = subprocess.run(THPLAB + ["compare", str(a), str(wl)], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "not a thplab result" in bad.stderr


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_report_renders_in_headless_chromium(report, tmp_path):
    exe = _chromium()
    if not exe:
        pytest.skip("chromium is not installed (tests/setup_chromium.sh installs it as root)")
    out, _ = report
    html = (out / "report.html").resolve()
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1200,3000",
    ]
    dom = subprocess.run(
        [exe, *flags, "--virtual-time-budget=5000", "--dump-dom", html.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    m = re.search(r"<title>plots-ok (\d+)/(\d+)</title>", dom.stdout)
    assert m, dom.stdout[:500] + dom.stderr[-500:]
    ok, total = int(m.group(1)), int(m.group(2))
    assert total > 0 and ok == total, f"{ok}/{total} plots rendered"
    shots = ROOT / "out" / "test-artifacts"
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / "report.png"
    subprocess.run([exe, *flags, f"--screenshot={shot}", html.as_uri()], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000
