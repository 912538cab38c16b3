"""The workload builder: every op, validated by the native parser."""

import json

import pytest
from fixtures.helpers import EXAMPLES, SEED000
from thplab import _native
from thplab.api import load_workload
from thplab.builder import Workload, format_workload
from thplab.errors import InputError


def seed000_builder():
    w = Workload("seed000", seed=1)
    p = w.process("test")
    r = p.mmap("buf", "10G")
    p.madvise(r, "hugepage")
    p.write(r, every="2M", length="4K", byte=0, bytes=1, data=0xFF)
    p.madvise(r, "pageout")
    p.munmap(r)
    return w


def test_seed000_matches_hand_written():
    w = seed000_builder()
    assert json.loads(_native.parse_workload_json(w.to_json())) == json.loads(
        _native.parse_workload_json(json.dumps(SEED000))
    )


def test_every_op_round_trips():
    w = Workload("all-ops", seed=3, description="every op of the language")
    w.machine("2x4G,cpus=4,swap=zram:1G").knob("transparent_hugepage/enabled", "always")
    w.knob("khugepaged/max_ptes_none", 0).record(
        fault_latency=True, series_interval="10ms", trace=["huge_memory:mm_khugepaged_scan_pmd"]
    )
    p = w.process("a")
    p.phase("setup")
    r = p.mmap("buf", "64M", populate=True, align="2M")
    p.mprotect(r, "r", length="2M").mprotect(r, "rw", length="2M")
    p.madvise(r, "MADV_HUGEPAGE").madvise(r, "collapse", offset="2M", length="4M")
    p.write(r, data="random", every="2M", length="8K").write(r, data="text", offset="4M", length="1M")
    p.read(r, byte=100, every="2M", length="4K")
    p.access(r, "zipf", count=1000, theta=0.9, write=0.25).access(r, "seq", duration="1ms", stride=64)
    p.sleep("5ms").set("transparent_hugepage/defrag", "defer").prctl(True).prctl(False)
    k = p.kalloc("pins", "8M", order=1)
    p.kfree(k, every="2M", length="8K")
    p.drop_caches(3).move_pages(r, node=1, length="2M")
    p.munmap(r, every="4M", length="2M")
    q = w.process("b", start="1ms")
    q.mmap("x", "2M")
    q.op("munmap", region="x")
    norm = w.validate()
    kinds = [o["op"] for o in norm["processes"][0]["ops"]]
    assert set(kinds) == {
        "phase",
        "mmap",
        "mprotect",
        "madvise",
        "write",
        "read",
        "access",
        "sleep",
        "set",
        "prctl",
        "kalloc",
        "kfree",
        "drop_caches",
        "move_pages",
        "munmap",
    }
    assert norm["processes"][1]["start"] == "1ms"
    assert norm["knobs"]["transparent_hugepage/khugepaged/max_ptes_none"] == "0"
    assert norm["record"]["fault_latency"] is True
    # normalised output parses to the same thing again
    assert json.loads(_native.parse_workload_json(json.dumps(norm))) == norm


def test_builder_errors():
    w = Workload("bad")
    p = w.process("a")
    r = p.mmap("buf", "10000")
    with pytest.raises(InputError, match=r"processes\[0\].ops\[0\] \(mmap\).*4K page size"):
        w.to_json()
    q = w.process("b")
    with pytest.raises(InputError, match="belongs to process 'a'"):
        q.madvise(r, "hugepage")
    with pytest.raises(InputError, match="duplicate process name"):
        w.process("a")
    k = p.kalloc("k", "4M")
    with pytest.raises(InputError, match="region from mmap"):
        p.madvise(k, "hugepage")


def test_to_json_layout_and_save(tmp_path):
    w = seed000_builder()
    text = w.to_json()
    assert json.loads(text) == w.to_dict()
    assert '      {"op": "mmap", "name": "buf", "size": "10G"},\n' in text
    assert json.loads(format_workload({"name": "e", "processes": [{"name": "p", "ops": []}]})) == {
        "name": "e",
        "processes": [{"name": "p", "ops": []}],
    }
    assert json.loads(w.to_json(indent=None)) == w.to_dict()
    for name in ("w.json", "w.yaml"):
        path = w.save(tmp_path / name)
        assert load_workload(path) == load_workload(w)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.json", "w.yaml"]


def test_builder_runs():
    res = seed000_builder().run(machine="24G")
    assert res.name == "seed000"


def test_examples_seed000_is_test_c():
    wl = load_workload(EXAMPLES / "seed000.json")
    ops = [o for o in wl["processes"][0]["ops"] if o["op"] != "phase"]
    assert ops == [
        {"op": "mmap", "name": "buf", "size": "10G"},
        {"op": "madvise", "region": "buf", "advice": "hugepage"},
        {"op": "write", "region": "buf", "length": "4K", "every": "2M", "byte": 0, "bytes": 1, "data": 255},
        {"op": "madvise", "region": "buf", "advice": "pageout"},
        {"op": "munmap", "region": "buf"},
    ]
