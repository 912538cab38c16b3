"""thplab.run and the Result object (against hand-made RunResult fixtures)."""

import json
import sys
import threading
import types

import pandas as pd
import pytest
import thplab
from fixtures.helpers import EXAMPLES, FIXTURES
from thplab import api
from thplab.errors import InputError
from thplab.result import Result, write_atomic

# ---- thplab.run: inputs ----


def test_run_accepts_every_workload_form(seed000_doc, write_workload):
    from thplab.builder import Workload

    b = Workload("seed000", seed=1)
    p = b.process("test")
    r = p.mmap("buf", "10G")
    p.madvise(r, "hugepage").write(r, every="2M", length="4K", byte=0, bytes=1, data=0xFF)
    forms = [seed000_doc, json.dumps(seed000_doc), write_workload(seed000_doc), str(write_workload(seed000_doc)), b]
    for w in forms:
        res = thplab.run(w)
        assert isinstance(res, Result)
        assert res.backend == "model" and res.name == "seed000"


def test_run_yaml(write_workload):
    p = write_workload("name: y\nprocesses:\n- ops:\n  - {op: mmap, name: b, size: 2M}\n", name="w.yml")
    assert thplab.run(p).name == "y"


def test_load_workload_normalises(seed000_doc):
    seed000_doc["knobs"] = {"enabled": "[always]"}
    wl = api.load_workload(seed000_doc)
    assert wl["knobs"] == {"transparent_hugepage/enabled": "always"}
    assert wl["processes"][0]["ops"][0] == {"op": "mmap", "name": "buf", "size": "10G"}


def test_run_with_machine_knobs_costs_seed(seed000_doc, tmp_path):
    costs = tmp_path / "c.toml"
    costs.write_text("clear_4k_ns = 99\n")
    res = thplab.run(
        seed000_doc,
        machine="24G,swap=zram:10G",
        knobs={"enabled": "always", "vm.swappiness": 100},
        costs=costs,
        seed=7,
        check=True,
    )
    assert res.backend == "model"
    res = thplab.run(
        seed000_doc,
        machine={"nodes": [{"mem": "4G", "cpus": 2}]},
        knobs=[("transparent_hugepage/defrag", "never")],
        costs="clear_4k_ns = 99\n",
    )
    assert res.backend == "model"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"knobs": {"enabled": "sometimes"}}, "accepted values: always, madvise, never"),
        ({"knobs": {"nonsense": 1}}, "unknown knob"),
        ({"knobs": ["enabled"]}, "NAME=VALUE"),
        ({"machine": "16M"}, "too small"),
        ({"costs": "bogus = 1\n"}, "bogus"),
        ({"costs": "/nonexistent/c.toml"}, "no such cost profile file"),
        ({"backend": "qemu"}, "backend `qemu`"),
        ({"seed": -1}, "seed"),
        ({"timeout": 0}, "timeout"),
    ],
)
def test_run_bad_input(seed000_doc, kwargs, message):
    with pytest.raises(InputError, match=None) as e:
        thplab.run(seed000_doc, **kwargs)
    assert message in str(e.value)


def test_bad_workloads_raise_input_error(write_workload):
    with pytest.raises(InputError, match="not valid UTF-8"):
        thplab.run(write_workload(b"\xff\xfe{}"))
    with pytest.raises(InputError, match="expected a path"):
        thplab.run(42)
    with pytest.raises(InputError, match="processes"):
        thplab.run({"name": "x"})


def test_knob_value_types():
    assert api.parse_knobs({"use_zero_page": True, "vm.swappiness": 10}) == [
        ("transparent_hugepage/use_zero_page", "1"),
        ("vm.swappiness", "10"),
    ]
    assert api.parse_knobs(["enabled=never"]) == [("transparent_hugepage/enabled", "never")]
    assert api.parse_knobs(None) == []


# ---- backends ----


def test_kernel_backend_missing(seed000_doc, monkeypatch):
    monkeypatch.setitem(sys.modules, "thplab.live", None)
    with pytest.raises(InputError, match=r"thplab\.live"):
        thplab.run(seed000_doc, backend="kernel")


def test_kernel_backend_delegates(seed000_doc, monkeypatch):
    calls = {}
    live = types.ModuleType("thplab.live")

    def run_kernel(workload, machine=None, knobs=None, timeout=None):
        calls.update(workload=workload, machine=machine, knobs=knobs, timeout=timeout)
        return json.loads((FIXTURES / "result_seed000.json").read_text()) | {"backend": "kernel"}

    live.run_kernel = run_kernel
    monkeypatch.setitem(sys.modules, "thplab.live", live)
    res = thplab.run(seed000_doc, backend="kernel", knobs={"enabled": "always"}, timeout=30)
    assert res.backend == "kernel"
    assert calls["workload"]["name"] == "seed000"
    assert calls["knobs"] == [("transparent_hugepage/enabled", "always")] and calls["timeout"] == 30


def test_timeout(seed000_doc, monkeypatch):
    release = threading.Event()

    def slow(*a, **k):
        release.wait()
        return json.dumps({"backend": "model"})

    monkeypatch.setattr(api._native, "run_model", slow)
    try:
        with pytest.raises(api.TimeoutExpired):
            thplab.run(seed000_doc, timeout=0.05)
    finally:
        release.set()


def test_model_value_error_becomes_input_error(seed000_doc, monkeypatch):
    def refuse(*a, **k):
        raise ValueError("workload needs 10G of memory, machine has 4G")

    monkeypatch.setattr(api._native, "run_model", refuse)
    with pytest.raises(InputError, match="machine has 4G"):
        thplab.run(seed000_doc)


def test_deterministic(seed000_doc):
    assert thplab.run(EXAMPLES / "seed000.json").to_json() == thplab.run(EXAMPLES / "seed000.json").to_json()


# ---- Result from fixtures ----


@pytest.fixture
def seed000_result():
    return Result.load(FIXTURES / "result_seed000.json")


@pytest.fixture
def hot_cold_result():
    return Result.load(FIXTURES / "result_hot_cold.json")


def test_result_fields(seed000_result):
    r = seed000_result
    assert r.name == "seed000" and r.backend == "model" and r.seed == 1
    assert r.vmstat_delta["thp_fault_alloc"] == 5120
    assert r.vmstat["pswpout"] == 5120
    assert r.meminfo["MemTotal"] == 24494180
    assert r.buddyinfo_after.startswith("Node 0, zone      DMA")
    assert r.processes[0]["name"] == "test"
    assert r.errors == []
    assert "seed000" in repr(r)


def test_phases_frame(seed000_result):
    df = seed000_result.phases
    assert list(df.index) == ["test:fault", "test:pageout", "test:munmap"]
    assert list(df.columns[:5]) == ["process", "start_ns", "end_ns", "time_ns", "sys_ns"]
    assert df.loc["test:fault", "thp_fault_alloc"] == 5120
    assert df.loc["test:pageout", "thp_fault_alloc"] == 0
    assert df.loc["test:pageout", "nr_anon_transparent_hugepages"] == -5120
    assert df.loc["test:pageout", "time_ns"] == 3_052_000_000
    assert df["pswpout"].dtype == "int64"
    assert df["thp_split_page"].sum() == seed000_result.vmstat_delta["thp_split_page"]


def test_series_frame(seed000_result, hot_cold_result):
    s = seed000_result.series
    assert s.index.name == "t_ns" and s.index[1] == 448_000_000
    assert s.loc[448_000_000, "AnonHugePages"] == 10_485_760
    assert s["t_s"].iloc[-1] == pytest.approx(3.559)
    assert list(s.columns) == ["t_s", "MemFree", "AnonHugePages", "nr_anon_transparent_hugepages"]
    assert len(hot_cold_result.series) == 26


def test_smaps_latency_tlb_frames(seed000_result, hot_cold_result):
    sm = hot_cold_result.smaps
    assert list(sm.index) == ["hot1", "cold", "hot2"]
    assert sm.loc["hot2", "AnonHugePages"] == 49152 and sm.loc["cold", "pid"] == 1001
    lat = seed000_result.latency
    assert list(lat.index) == ["thp_fault"]
    assert list(lat.columns) == [
        "count",
        "p05",
        "p10",
        "p25",
        "p30",
        "p40",
        "p50",
        "p60",
        "p75",
        "p80",
        "p90",
        "p95",
        "p99",
    ]
    assert lat.loc["thp_fault", "p99"] == 140000
    assert hot_cold_result.latency.empty
    tlb = hot_cold_result.tlb
    assert tlb.loc["hot2", "dtlb_load_misses"] == 2_600_000
    assert hot_cold_result.errors == [
        {
            "process": "hot2",
            "op_index": 5,
            "op": "move_pages",
            "errno": "ENODEV",
            "message": "node 1 does not exist on this machine",
        }
    ]
    frag = seed000_result.fragmentation
    assert frag.loc[0, "zone"] == "Normal" and frag.loc[0, "index_10"] == -1000


def test_empty_result_frames():
    # A result with nothing recorded (schema defaults) still gives empty, typed frames.
    r = Result(
        {
            "backend": "model",
            "phases": [],
            "series": {"columns": [], "rows": []},
            "processes": [],
            "latency": {},
            "fragmentation": [],
        }
    )
    for df in (r.phases, r.series, r.smaps, r.latency, r.tlb, r.fragmentation):
        assert isinstance(df, pd.DataFrame) and df.empty
    assert r.series.index.name == "t_ns"


def test_save_load_roundtrip(seed000_result, tmp_path):
    p = tmp_path / "r.json"
    seed000_result.save(p)
    assert Result.load(p) == seed000_result
    assert p.read_text() == seed000_result.to_json()
    assert [x.name for x in tmp_path.iterdir()] == ["r.json"]
    # saving again replaces the file atomically
    seed000_result.save(p)
    assert [x.name for x in tmp_path.iterdir()] == ["r.json"]


def test_save_failure_leaves_nothing(seed000_result, tmp_path):
    target = tmp_path / "adir"
    target.mkdir()
    (target / "x").write_text("keep")
    with pytest.raises(OSError):
        write_atomic(target, "data")  # rename over a non-empty directory fails
    assert sorted(x.name for x in tmp_path.iterdir()) == ["adir"]
    bad = Result({"x": float("nan")})
    with pytest.raises(ValueError):
        bad.save(tmp_path / "nan.json")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["adir"]


def test_load_errors(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        Result.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InputError, match="not valid JSON"):
        Result.load(tmp_path / "bad.json")
