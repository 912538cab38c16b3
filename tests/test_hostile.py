"""Hostile and bad input, table-driven: every case either gets a clear message naming the
field and exit status 2 (nothing written), or the kernel's own behaviour (an errno in the
result, an OOM kill reported) with exit status 0."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
THPLAB = [sys.executable, "-m", "thplab"]


def proc(*ops, **top):
    return json.dumps({"processes": [{"name": "p", "ops": list(ops)}], **top})


MM = {"op": "mmap", "name": "b", "size": "4M"}

# (id, workload text or bytes, extra args, expected exit, pattern in stderr (exit 2) or check on the result (exit 0))
CASES = [
    ("invalid-json", '{"processes": [', [], 2, "not valid JSON"),
    ("invalid-yaml", "processes: [ {name: p, ops: [", ["--yaml"], 2, "YAML"),
    ("not-utf8", b"\xff\xfe{}", [], 2, "UTF-8"),
    ("top-level-array", "[]", [], 2, "expected a JSON object"),
    ("unknown-top-field", proc(MM, bogus=1), [], 2, "unknown field `bogus`"),
    (
        "unknown-op-field",
        proc(MM, {"op": "munmap", "region": "b", "lenght": "4K"}),
        [],
        2,
        "ops[1] (munmap): unknown field `lenght`",
    ),
    ("unknown-op", proc({"op": "fork"}), [], 2, "ops[0] unknown operation `fork`"),
    ("negative-size", proc({"op": "mmap", "name": "b", "size": -4096}), [], 2, "negative size"),
    ("huge-size", proc({"op": "mmap", "name": "b", "size": "99999T"}), [], 2, "exceeds the 64T user address space"),
    ("overflow-size", proc({"op": "mmap", "name": "b", "size": "99999999999999999999T"}), [], 2, "too large"),
    ("unaligned-size", proc({"op": "mmap", "name": "b", "size": 5000}), [], 2, "not a multiple of the 4K page size"),
    (
        "range-beyond-region",
        proc(MM, {"op": "write", "region": "b", "offset": "2M", "length": "4M"}),
        [],
        2,
        "within the region's size",
    ),
    ("undefined-region", proc({"op": "read", "region": "nope"}), [], 2, "no region named `nope`"),
    ("knob-out-of-range", proc(MM, knobs={"khugepaged/max_ptes_none": 512}), [], 2, "integers 0..=511"),
    (
        "knob-bad-choice",
        proc(MM),
        ["--set", "transparent_hugepage/defrag=sometimes"],
        2,
        "always, defer, defer+madvise, madvise, never",
    ),
    ("unknown-knob", proc(MM), ["--set", "vm.bogus=1"], 2, "unknown knob `vm.bogus`"),
    ("machine-too-small", proc(MM), ["--machine", "16M"], 2, "too small for the kernel's own reserve"),
    ("machine-bad", proc(MM), ["--machine", "2xbanana"], 2, "machine"),
    (
        "bad-access",
        proc(MM, {"op": "access", "region": "b", "pattern": "seq"}),
        [],
        2,
        "exactly one of count and duration",
    ),
    # the kernel's behaviour, not an input error
    (
        "double-munmap",
        proc(MM, {"op": "munmap", "region": "b"}, {"op": "munmap", "region": "b"}),
        [],
        0,
        lambda r: r["processes"][0]["errors"] == [],
    ),
    (
        "overlapping-munmap",
        proc(
            MM,
            {"op": "munmap", "region": "b", "offset": "1M", "length": "2M"},
            {"op": "munmap", "region": "b", "offset": "2M", "length": "2M"},
        ),
        [],
        0,
        lambda r: r["processes"][0]["errors"] == [],
    ),
    (
        "madvise-unmapped",
        proc(MM, {"op": "munmap", "region": "b"}, {"op": "madvise", "region": "b", "advice": "hugepage"}),
        [],
        0,
        lambda r: r["processes"][0]["errors"][0]["errno"] == "ENOMEM",
    ),
    (
        "write-unmapped",
        proc(MM, {"op": "munmap", "region": "b"}, {"op": "write", "region": "b"}),
        [],
        0,
        lambda r: r["processes"][0]["killed"] == "SIGSEGV",
    ),
    (
        "write-readonly",
        proc(MM, {"op": "mprotect", "region": "b", "prot": "r"}, {"op": "write", "region": "b"}),
        [],
        0,
        lambda r: r["processes"][0]["errors"][0]["errno"] == "SIGSEGV",
    ),
    (
        "overcommit",
        proc({"op": "mmap", "name": "b", "size": "8G"}, {"op": "write", "region": "b"}),
        ["--machine", "1G"],
        0,
        lambda r: r["vmstat_delta"].get("oom_kill") == 1 and r["extra"]["oom_kills"][0]["victim"] == "p",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hostile_input(case, tmp_path):
    name, text, args, code, expect = case
    yaml = "--yaml" in args
    args = [a for a in args if a != "--yaml"]
    wl = tmp_path / ("w.yaml" if yaml else "w.json")
    wl.write_bytes(text if isinstance(text, bytes) else text.encode())
    out = tmp_path / "result.json"
    p = subprocess.run(
        [*THPLAB, "run", str(wl), "-q", "--json", str(out), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert p.returncode == code, f"{name}: exit {p.returncode}\n{p.stderr}"
    if code == 2:
        assert expect in p.stderr, f"{name}: {p.stderr}"
        assert p.stderr.startswith("thplab: error:"), p.stderr
        assert not out.exists(), "no result file on bad input"
        assert not list(tmp_path.glob(".result.json*")), "no temporary left behind"
    else:
        assert expect(json.loads(out.read_text())), f"{name}: {out.read_text()[:2000]}"
