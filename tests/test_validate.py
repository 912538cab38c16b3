"""thplab validate: tolerance logic on hand-made results, replay of saved kernel results, and a
small live run of the fault-path scenarios."""

import argparse
import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from livehelp import need_root, state
from thplab import validate as v
from thplab.errors import InputError


def kernel_result(**vm):
    return {
        "backend": "kernel",
        "workload": "t",
        "sim_time_ns": 10_000_000,
        "vmstat_delta": dict(vm),
        "knobs": {"transparent_hugepage/enabled": "always"},
        "machine": {"nodes": [{"mem": "24G", "cpus": 2}], "swap": []},
        "phases": [
            {
                "name": "p:fault",
                "process": "p",
                "start_ns": 0,
                "end_ns": 8_000_000,
                "sys_ns": 7_000_000,
                "vmstat_delta": {},
            }
        ],
        "processes": [{"name": "p", "smaps_rollup": {"AnonHugePages": 2048 * vm.get("thp_fault_alloc", 0)}}],
        "extra": {},
    }


def model_like(k, **override):
    m = copy.deepcopy(k)
    m["backend"] = "model"
    m["vmstat_delta"].update(override)
    m["phases"][0]["end_ns"] = 4_000_000
    return m


def test_exact_counters_within_and_out_of_tolerance():
    k = kernel_result(thp_fault_alloc=64, pgfault=700)
    assert v.compare(k, model_like(k, pgfault=64))["ok"]  # pgfault is informational
    assert v.compare(k, model_like(k, thp_fault_alloc=66))["ok"]  # 2 events of slack
    bad = v.compare(k, model_like(k, thp_fault_alloc=60))
    assert not bad["ok"]
    row = next(r for r in bad["rows"] if r["counter"] == "thp_fault_alloc")
    assert (row["kernel"], row["model"], row["error"], row["ok"]) == (64, 60, -4, False)
    t = next(t for t in bad["times"] if t["phase"] == "p:fault")
    assert t["ratio"] == pytest.approx(0.5)


def test_zero_page_rule():
    k = kernel_result(thp_zero_page_alloc=0)
    assert v.compare(k, model_like(k, thp_zero_page_alloc=1))["ok"]
    k1 = kernel_result(thp_zero_page_alloc=1)
    assert v.compare(k1, model_like(k1))["ok"]
    assert not v.compare(k1, model_like(k1, thp_zero_page_alloc=0))["ok"]


def test_retry_only_when_kernel_has_excess_events():
    runs = iter([kernel_result(thp_fault_alloc=71), kernel_result(thp_fault_alloc=64)])

    def model(w, k, c):
        return model_like(kernel_result(thp_fault_alloc=64))

    rep = v.validate({"s": {"processes": []}}, run_kernel=lambda w, timeout: next(runs), run_model_fn=model)
    assert rep["ok"] and rep["scenarios"]["s"]["attempts"] == 2
    rep = v.validate(
        {"s": {"processes": []}}, run_kernel=lambda w, timeout: kernel_result(thp_fault_alloc=50), run_model_fn=model
    )
    assert not rep["ok"] and rep["scenarios"]["s"]["attempts"] == 1


def test_resize_and_scenarios():
    sc = v.load_scenarios(None)
    assert {"enabled-always", "enabled-madvise-hugepage", "zero-page-read", "prctl-disable", "partial-munmap"} <= set(
        sc
    )
    w = v.resize(sc["enabled-always"], 32 << 20)
    assert [op["size"] for op in w["processes"][0]["ops"] if op["op"] == "mmap"] == ["32M"]
    with pytest.raises(InputError):
        v.resize(sc["enabled-always"], 3 << 20)
    with pytest.raises(InputError, match="unknown scenario"):
        v.load_scenarios("nope")


def test_replay_saved_kernel_results(tmp_path, capsys):
    k = kernel_result(thp_fault_alloc=16, thp_split_pmd=16)
    k["extra"]["workload"] = {
        "name": "t",
        "processes": [{"name": "p", "ops": [{"op": "mmap", "name": "b", "size": "32M"}]}],
    }
    (tmp_path / "enabled-always.json").write_text(json.dumps(k))
    rep = v.validate(
        v.load_scenarios("enabled-always,partial-munmap"),
        kernel_dir=str(tmp_path),
        run_model_fn=lambda w, kr, c: model_like(kr),
    )
    assert rep["ok"] and "partial-munmap" in rep["skipped"]
    v.print_report(rep)
    out = capsys.readouterr().out
    assert "thp_fault_alloc" in out and "1/1 scenarios within tolerance" in out
    # Through the command with the real model: the table prints whatever the model says.
    p = argparse.ArgumentParser()
    v.add_arguments(p)
    rc = v.cmd(
        p.parse_args(
            ["--only", "enabled-always", "--kernel-results", str(tmp_path), "--json", str(tmp_path / "rep.json")]
        )
    )
    assert rc in (0, 1)
    assert "enabled-always" in capsys.readouterr().out
    assert json.loads((tmp_path / "rep.json").read_text())["scenarios"]["enabled-always"]["rows"]
    with pytest.raises(InputError, match="not a directory"):
        v.cmd(p.parse_args(["--kernel-results", str(tmp_path / "missing")]))


@pytest.mark.live
def test_live_fault_path_scenarios_small(tmp_path):
    """Every fault-path scenario runs on the kernel at 16M; the kernel side is compared with a
    stand-in model that echoes it (the tolerance logic is tested above; the model fidelity is
    what `thplab validate` reports)."""
    need_root()
    before = state()

    def echo(w, k, c):
        return model_like(k)

    rep = v.validate(v.load_scenarios(None), size=16 << 20, save_dir=str(tmp_path), run_model_fn=echo)
    assert rep["ok"], rep
    s = rep["scenarios"]

    def get(name, c):
        return next((r["kernel"] for r in s[name]["rows"] if r["counter"] == c), 0)

    assert get("enabled-madvise-hugepage", "thp_fault_alloc") >= 8
    assert get("enabled-never-hugepage", "thp_fault_alloc") <= 2
    assert get("prctl-disable", "thp_fault_alloc") <= 2
    assert get("partial-munmap", "thp_split_pmd") >= 8
    assert len(list(tmp_path.glob("*.json"))) == len(s)
    # Replaying what was saved needs no kernel.
    rep2 = v.validate(
        v.load_scenarios(None),
        kernel_dir=str(tmp_path),
        run_model_fn=echo,
        run_kernel=lambda *a, **k: pytest.fail("replay must not run the kernel"),
    )
    assert rep2["ok"] and set(rep2["scenarios"]) == set(s)
    assert state() == before
