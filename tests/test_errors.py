"""Typed errors and exit statuses (issue 13 item 3): bad input -> InputError / exit 2
naming the field; a broken model invariant -> InvariantError / exit 3 with a saved,
replayable workload; `thplab --help` lists the statuses."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import thplab
from thplab import cli
from thplab.errors import InputError, InvariantError, LiveError, ThplabError

W = {"processes": [{"name": "p", "ops": [{"op": "mmap", "name": "r", "size": "4M"}, {"op": "write", "region": "r"}]}]}


def test_classes_and_statuses():
    assert issubclass(InputError, ThplabError) and InputError.exit_status == 2
    assert issubclass(InvariantError, ThplabError) and InvariantError.exit_status == 3
    assert issubclass(LiveError, ThplabError) and LiveError.exit_status == 4
    assert not issubclass(LiveError, InputError)


def test_bad_input_names_the_field(tmp_path, capsys):
    bad = dict(W, record={"trace": ["mm_compaction_end", "mm_nope"]})
    with pytest.raises(InputError, match=r"record\.trace\[1\]: unknown tracepoint"):
        thplab.run(bad)
    p = tmp_path / "w.json"
    p.write_text(json.dumps(W))
    assert cli.main(["run", str(p), "--trace", "mm_nope", "-q"]) == 2
    assert "--trace[0]: unknown tracepoint `mm_nope`" in capsys.readouterr().err


def test_trace_flag_exports_events(tmp_path):
    p = tmp_path / "w.json"
    p.write_text(json.dumps(W))
    out = tmp_path / "r.json"
    assert cli.main(["run", str(p), "--trace", "kmem,thplab", "--json", str(out), "-q"]) == 0
    events = {e["event"] for e in json.loads(out.read_text())["trace"]}
    assert events <= {"mm_page_alloc_extfrag", "thplab_split_huge_page", "thplab_swap_alloc", "thplab_swapin"}


def test_invariant_error_saves_a_replayable_workload(tmp_path, monkeypatch):
    monkeypatch.setenv("THPLAB_TEST_INJECT_INVARIANT", "1")
    monkeypatch.setenv("THPLAB_REPRO_DIR", str(tmp_path))
    with pytest.raises(InvariantError) as ei:
        thplab.run(W, check=True, seed=3)
    e = ei.value
    assert e.invariant == "injected" and e.sim_time_ns > 0
    assert e.repro.startswith("thplab run ") and e.repro.endswith(" --check")
    saved = json.loads(Path(e.repro.split()[2]).read_text())
    assert saved["seed"] == 3 and saved["machine"] and saved["knobs"]
    # the command line: exit status 3, the message carries the repro command
    p = tmp_path / "w.json"
    p.write_text(json.dumps(W))
    r = subprocess.run(
        [sys.executable, "-m", "thplab.cli", "run", str(p), "--check", "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 3, r.stderr
    assert "model invariant broken (injected)" in r.stderr and "thplab run " in r.stderr


def test_help_lists_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for s in ("2 bad input", "3 a model invariant", "4 a live-kernel", "124", "130"):
        assert s in out, s
