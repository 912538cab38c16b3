"""`thplab sweep`: grid parsing and checks (no Ray), and a tiny grid on a local Ray."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import thplab
from thplab import cli, sweep

ROOT = Path(__file__).resolve().parent.parent
WL = ROOT / "examples" / "thp_always.json"
THPLAB = [sys.executable, "-m", "thplab"]


def small_workload(tmp_path):
    """thp_always at 64 MiB: a sweep test needs runs, not size."""
    doc = json.loads(WL.read_text())
    doc["processes"][0]["ops"][1]["size"] = "64M"
    p = tmp_path / "w.json"
    p.write_text(json.dumps(doc))
    return p


def test_grid_points_are_every_combination_in_order():
    grid = sweep.parse_grid(["enabled=always,never", "vm.compaction_proactiveness=0,20,40"])
    assert grid == [
        ("transparent_hugepage/enabled", ["always", "never"]),
        ("vm.compaction_proactiveness", ["0", "20", "40"]),
    ]
    pts = sweep.points(grid, ["4G", "8G"])
    assert len(pts) == 12 and [p.index for p in pts] == list(range(12))
    assert pts[0].machine == "4G" and pts[0].knobs == (
        ("transparent_hugepage/enabled", "always"),
        ("vm.compaction_proactiveness", "0"),
    )
    assert pts[-1].machine == "8G" and pts[-1].knobs[1] == ("vm.compaction_proactiveness", "40")


@pytest.mark.parametrize(
    ("argv", "contains"),
    [
        (["--grid", "enabled=sometimes"], "accepted values"),
        (["--grid", "enabled"], "KNOB=V1,V2"),
        (["--grid", "enabled=always", "--grid", "transparent_hugepage/enabled=never"], "already a grid dimension"),
        (["--grid", "enabled=always,always"], "given twice"),
        (["--grid", "bogus/knob=1,2"], "unknown knob"),
        (["--grid", "enabled=always", "--machine", "4G,gpus=1"], "gpus"),
        (["--grid", "enabled=always", "--set", "enabled=never"], "also a --grid dimension"),
        (["--grid", "enabled=always", "--workers", "0"], "--workers"),
        ([], "at least one --grid"),
    ],
)
def test_bad_input_exits_2_naming_the_field(capsys, tmp_path, argv, contains):
    out = tmp_path / "out"
    rc = cli.main(["sweep", str(WL), "--out", str(out), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("thplab: error: ") and contains in err, err
    assert not out.exists()


def test_knob_set_by_the_workload_is_refused(capsys, tmp_path):
    wl = ROOT / "examples" / "seed004_a_vanilla.json"
    rc = cli.main(["sweep", str(wl), "--grid", "vm.compaction_proactiveness=0,20", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "processes[1].ops[" in err and "override" in err, err


def test_sweep_help_is_for_users():
    p = subprocess.run([*THPLAB, "sweep", "--help"], capture_output=True, text=True, check=False)
    assert p.returncode == 0
    for s in ("ray start --head", "--address", "sweep.parquet", "examples:"):
        assert s in p.stdout


def test_tiny_grid_on_local_ray(tmp_path):
    """Two runs on a local Ray with two workers: one row each, in grid order, equal to the
    same runs made directly (the model is deterministic, wherever a run is placed)."""
    w = small_workload(tmp_path)
    out = tmp_path / "sweep"
    p = subprocess.run(
        [*THPLAB, "sweep", str(w), "--grid", "enabled=always,never", "--workers", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "run 0 is the baseline" in p.stdout and "thp_fault_alloc" in p.stdout
    df = pd.read_parquet(out / "sweep.parquet")
    assert list(df["run"]) == [0, 1]
    assert list(df["transparent_hugepage/enabled"]) == ["always", "never"]
    for _, row in df.iterrows():
        direct = sweep.summarise(
            thplab.run(w, knobs={"transparent_hugepage/enabled": row["transparent_hugepage/enabled"]}).raw
        )
        for k, v in direct.items():
            assert row[k] == v, (k, row[k], v)
    assert df.loc[0, "thp_fault_alloc"] == 32 and df.loc[1, "thp_fault_alloc"] == 0
    csv = pd.read_csv(out / "sweep.csv")
    assert list(csv.columns) == list(df.columns) and len(csv) == 2


@pytest.mark.slow
def test_sweep_is_deterministic_over_machines(tmp_path):
    """A grid with a machine dimension, run twice: identical rows."""
    w = small_workload(tmp_path)
    frames = []
    for i in range(2):
        out = tmp_path / f"s{i}"
        grid = ["--grid", "defrag=always,never", "-m", "2G", "-m", "4G"]
        subprocess.run(
            [*THPLAB, "sweep", str(w), *grid, "--workers", "2", "--out", str(out)],
            check=True,
            cwd=ROOT,
            capture_output=True,
            timeout=900,
        )
        frames.append(pd.read_parquet(out / "sweep.parquet"))
    pd.testing.assert_frame_equal(frames[0], frames[1])
    assert list(frames[0]["machine"]) == ["2G", "2G", "4G", "4G"]
