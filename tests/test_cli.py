"""The `thplab` command line: exit statuses, messages naming the field, output files."""

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from fixtures.helpers import EXAMPLES, FIXTURES
from thplab import cli


def run_cli(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def expect_input_error(capsys, *argv, contains=()):
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2, (rc, out, err)
    assert err.startswith("thplab: error: "), err
    for c in contains:
        assert c in err, f"{c!r} not in {err!r}"
    return err


# ---- bad workloads: exit 2, the message names the field ----


def test_malformed_json(capsys, write_workload):
    p = write_workload('{"name": "x", "processes": [')
    expect_input_error(capsys, "run", str(p), contains=(str(p), "not valid JSON", "line 1"))


def test_unknown_operation_named_with_index(capsys, write_workload, seed000_doc):
    seed000_doc["processes"][0]["ops"][4]["op"] = "unmapp"
    p = write_workload(seed000_doc)
    expect_input_error(capsys, "run", str(p), contains=("processes[0].ops[4]", "unknown operation `unmapp`"))


def test_unknown_field(capsys, write_workload, seed000_doc):
    seed000_doc["processes"][0]["ops"][1]["bogus"] = 1
    p = write_workload(seed000_doc)
    expect_input_error(
        capsys, "run", str(p), contains=("processes[0].ops[1] (madvise): unknown field `bogus`", "advice")
    )


def test_unknown_top_level_field(capsys, write_workload, seed000_doc):
    seed000_doc["procs"] = []
    expect_input_error(capsys, "run", str(write_workload(seed000_doc)), contains=("unknown field `procs`",))


def test_negative_size(capsys, write_workload, seed000_doc):
    seed000_doc["processes"][0]["ops"][0]["size"] = -5
    expect_input_error(
        capsys, "run", str(write_workload(seed000_doc)), contains=("processes[0].ops[0]", "negative size")
    )


def test_unaligned_size(capsys, write_workload, seed000_doc):
    seed000_doc["processes"][0]["ops"][0]["size"] = "10000"
    expect_input_error(
        capsys,
        "run",
        str(write_workload(seed000_doc)),
        contains=("processes[0].ops[0] (mmap)", "not a multiple of the 4K page size"),
    )


def test_knob_value_outside_accepted_set(capsys, write_workload, seed000_doc):
    p = write_workload(seed000_doc)
    expect_input_error(
        capsys,
        "run",
        str(p),
        "--set",
        "transparent_hugepage/enabled=sometimes",
        contains=("transparent_hugepage/enabled", "`sometimes`", "accepted values: always, madvise, never"),
    )
    seed000_doc["knobs"] = {"enabled": "sometimes"}
    expect_input_error(
        capsys,
        "run",
        str(write_workload(seed000_doc)),
        contains=("workload.knobs", "accepted values: always, madvise, never"),
    )


def test_knob_int_out_of_range(capsys, write_workload, seed000_doc):
    expect_input_error(
        capsys,
        "run",
        str(write_workload(seed000_doc)),
        "--set",
        "khugepaged/max_ptes_none=512",
        contains=("max_ptes_none", "0..=511"),
    )


def test_unknown_knob(capsys, write_workload, seed000_doc):
    expect_input_error(
        capsys,
        "run",
        str(write_workload(seed000_doc)),
        "--set",
        "transparent_hugepage/bogus=1",
        contains=("unknown knob `transparent_hugepage/bogus`", "known knobs"),
    )


def test_set_without_equals(capsys, write_workload, seed000_doc):
    expect_input_error(capsys, "run", str(write_workload(seed000_doc)), "--set", "enabled", contains=("NAME=VALUE",))


def test_machine_too_small(capsys, write_workload, seed000_doc):
    expect_input_error(
        capsys,
        "run",
        str(write_workload(seed000_doc)),
        "--machine",
        "16M",
        contains=("machine.nodes[0].mem", "too small"),
    )


def test_bad_machine_shorthand(capsys):
    expect_input_error(capsys, "machine", "4G,gpus=2", contains=("unknown key `gpus`",))


def test_non_utf8_workload(capsys, write_workload):
    p = write_workload(b'{"name": "caf\xe9", "processes": []}')
    expect_input_error(capsys, "run", str(p), contains=(str(p), "not valid UTF-8", "0xe9"))


def test_missing_workload_file(capsys, tmp_path):
    expect_input_error(capsys, "run", str(tmp_path / "nope.json"), contains=("no such workload file",))


def test_bad_yaml(capsys, write_workload):
    p = write_workload("name: x\nprocesses: [\n", name="w.yaml")
    expect_input_error(capsys, "run", str(p), contains=("not valid YAML", "line"))


def test_bad_costs(capsys, write_workload, seed000_doc, tmp_path):
    c = tmp_path / "c.toml"
    c.write_text("bogus_ns = 1\n")
    expect_input_error(
        capsys, "run", str(write_workload(seed000_doc)), "--costs", str(c), contains=(str(c), "bogus_ns")
    )


# ---- things that work ----


def test_yaml_workload_runs(capsys, write_workload):
    p = write_workload(
        """
name: yaml-demo
processes:
  - name: test
    ops:
      - {op: mmap, name: buf, size: 64M}
      - {op: madvise, region: buf, advice: hugepage}
      - op: write
        region: buf
        every: 2M
        length: 4K
        bytes: 1
""",
        name="w.yaml",
    )
    rc, out, err = run_cli(capsys, "run", str(p), "--set", "enabled=always", "--machine", "4G")
    assert rc == 0, err
    assert "yaml-demo" in out


def test_examples_all_valid(capsys):
    files = sorted(str(p) for p in EXAMPLES.glob("*.json"))
    assert {
        "seed000.json",
        "thp_always.json",
        "zero_page_reads.json",
        "fragmented.json",
        "hot_cold.json",
        "base_pages.json",
    } <= {p.rsplit("/", 1)[1] for p in files}
    from thplab.api import load_workload

    for f in files:
        load_workload(f)  # valid; they run in `make examples` and seed000 in test_deterministic_json
        doc = json.loads(Path(f).read_text())
        assert doc.get("description"), f"{f} has no description"


def test_json_output_written_atomically(capsys, write_workload, seed000_doc, tmp_path):
    out_file = tmp_path / "out" / "r.json"
    out_file.parent.mkdir()
    rc, _, err = run_cli(capsys, "run", str(write_workload(seed000_doc)), "--json", str(out_file))
    assert rc == 0, err
    doc = json.loads(out_file.read_text())
    assert doc["backend"] == "model" and doc["workload"] == "seed000"
    assert [p.name for p in out_file.parent.iterdir()] == ["r.json"]  # no temp file left


def test_json_not_written_on_error(capsys, write_workload, seed000_doc, tmp_path):
    out_file = tmp_path / "r.json"
    run_cli(capsys, "run", str(write_workload(seed000_doc)), "--json", str(out_file), "--set", "enabled=bogus")
    assert not out_file.exists()
    bad = dict(seed000_doc, bogus=1)
    good, badp = write_workload(seed000_doc, "a.json"), write_workload(bad, "b.json")
    out_dir = tmp_path / "res"
    rc, _, err = run_cli(capsys, "run", str(good), str(badp), "--json", f"{out_dir}/")
    assert rc == 2 and "b.json" in err
    assert not out_dir.exists() or list(out_dir.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "w.json"]


def test_json_not_written_when_run_fails(capsys, write_workload, seed000_doc, tmp_path, monkeypatch):
    from thplab import api
    from thplab.errors import InputError

    def boom(*a, **k):
        raise InputError("model refused the run")

    monkeypatch.setattr(api, "run", boom)
    out_file = tmp_path / "r.json"
    rc, _, err = run_cli(capsys, "run", str(write_workload(seed000_doc)), "--json", str(out_file))
    assert rc == 2 and "model refused the run" in err
    assert not out_file.exists()


def test_json_several_workloads(capsys, write_workload, seed000_doc, tmp_path):
    a = write_workload(seed000_doc, "a.json")
    b = write_workload(dict(seed000_doc, name="other"), "b.json")
    rc, _, err = run_cli(capsys, "run", "-q", str(a), str(b), "--json", str(tmp_path / "single.json"))
    assert rc == 2 and "{name}" in err
    rc, _, err = run_cli(capsys, "run", "-q", str(a), str(b), "--json", str(tmp_path / "r-{name}.json"))
    assert rc == 0, err
    assert (tmp_path / "r-seed000.json").exists() and (tmp_path / "r-other.json").exists()
    rc, _, err = run_cli(capsys, "run", "-q", str(a), str(b), "--json", str(tmp_path / "d") + "/")
    assert rc == 0, err
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["a.json", "b.json"]
    rc, _, err = run_cli(capsys, "run", "-q", str(a), str(a), "--json", str(tmp_path / "{name}.json"))
    assert rc == 2 and "both be written" in err


def test_json_missing_directory(capsys, write_workload, seed000_doc, tmp_path):
    expect_input_error(
        capsys,
        "run",
        str(write_workload(seed000_doc)),
        "--json",
        str(tmp_path / "no/r.json"),
        contains=("does not exist",),
    )


def test_deterministic_json(capsys, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out in (a, b):
        rc, _, err = run_cli(capsys, "run", "-q", str(EXAMPLES / "seed000.json"), "--json", str(out))
        assert rc == 0, err
    assert a.read_bytes() == b.read_bytes()


def test_knobs_shows_sysfs_format(capsys):
    rc, out, err = run_cli(capsys, "knobs")
    assert rc == 0, err
    assert "transparent_hugepage/enabled: always [madvise] never" in out
    assert "transparent_hugepage/defrag: always defer defer+madvise [madvise] never" in out
    assert "vm.swappiness: 60" in out
    assert "default madvise" in out and "sysfs /sys/kernel/mm/transparent_hugepage/enabled" in out
    assert "thplab.config_thp_swap" in out and "sysctl" in out


def test_knobs_set_and_filter(capsys):
    rc, out, _ = run_cli(capsys, "knobs", "enabled", "--set", "enabled=always")
    assert rc == 0
    assert "transparent_hugepage/enabled: [always] madvise never  (set)" in out
    assert "vm.swappiness" not in out
    rc, out, _ = run_cli(capsys, "knobs", "--json")
    reg = json.loads(out)
    en = next(k for k in reg if k["name"] == "transparent_hugepage/enabled")
    assert en["shown"] == "always [madvise] never" and en["accepted"] == "always madvise never"
    expect_input_error(capsys, "knobs", "--set", "enabled=sometimes", contains=("accepted values",))


def test_machine_command(capsys):
    rc, out, _ = run_cli(capsys, "machine", "2x512G,cpus=80,swap=zram:8G")
    assert rc == 0
    assert "1T in 2 nodes, 80 cpus" in out and "zram" in out and "8G" in out
    rc, out, _ = run_cli(capsys, "machine", "24G", "--json")
    m = json.loads(out)
    assert m["nodes"] == [{"mem": "24G", "cpus": 2}]


def test_show_fixture(capsys):
    rc, out, err = run_cli(capsys, "show", str(FIXTURES / "result_seed000.json"))
    assert rc == 0, err
    # per-phase times, vmstat grouped with THP first, meminfo and buddyinfo as the kernel prints them
    assert "test:pageout" in out and "3.051 s" in out
    assert out.index("thp_fault_alloc") < out.index("pgfault") < out.index("pswpout")
    assert "AnonHugePages:         0 kB" in out and "MemTotal:       24494180 kB" in out
    assert "Node 0, zone   Normal     30      9      6      4      3      2      2      1      1      1   5309" in out
    assert "p99" in out and "140µs" in out and "87.5µs" in out
    assert "thplab.config_thp_swap=n" in out


def test_show_multi_process_fixture(capsys):
    rc, out, err = run_cli(capsys, "show", "--full", str(FIXTURES / "result_hot_cold.json"))
    assert rc == 0, err
    assert "ENODEV" in out and "move_pages" in out
    assert "4.91" in out  # hot2 cycles per access
    assert "Hugepagesize:       2048 kB" in out and "HugePages_Total:       0\n" in out


def test_ctrl_c_exits_130(capsys, write_workload, seed000_doc, monkeypatch):
    from thplab import api

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "run", interrupted)
    rc, _, err = run_cli(capsys, "run", str(write_workload(seed000_doc)))
    assert rc == 130 and "interrupted" in err


def test_delegated_subcommand_missing(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "thplab.calibrate", None)
    rc, _, err = run_cli(capsys, "calibrate", "--quick")
    assert rc == 2 and "thplab.calibrate" in err and "not available" in err


def test_delegated_subcommand_present(capsys, monkeypatch):
    mod = types.ModuleType("thplab.validate")

    def add_arguments(p):
        p.add_argument("--n", type=int, default=1)

    def cmd(args):
        print(f"validated n={args.n}")
        return 0

    mod.add_arguments, mod.cmd = add_arguments, cmd
    monkeypatch.setitem(sys.modules, "thplab.validate", mod)
    rc, out, _ = run_cli(capsys, "validate", "--n", "3")
    assert rc == 0 and "validated n=3" in out


def test_python_dash_m_and_help():
    r = subprocess.run([sys.executable, "-m", "thplab", "--help"], capture_output=True, text=True, check=False)
    assert r.returncode == 0
    for sub in ("run", "knobs", "machine", "calibrate", "validate", "show"):
        assert sub in r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "thplab", "run", "--set", "enabled=x", str(EXAMPLES / "seed000.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2 and r.stderr.startswith("thplab: error: ") and "Traceback" not in r.stderr


def test_argparse_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run"])
    assert e.value.code == 2


# ---- a run that blocks in native code: Ctrl-C and --timeout (in a child process) ----

# The child stands for `thplab run` in a terminal. Its SIGINT handler is set explicitly: a
# process started from a background job (make test &, CI without a terminal) inherits SIGINT
# ignored, and Python then installs no KeyboardInterrupt handler, so the signal would be
# lost and the child would block for ever (issue 13). The atexit hook shows whether the
# interpreter was finalised while the "native" run was still busy: it must not be.
BLOCKING_RUN = """
import atexit, signal, sys, threading
signal.signal(signal.SIGINT, signal.default_int_handler)
from thplab import _native, cli
def blocking(*a, **k):
    print("ready", flush=True)
    threading.Event().wait()
_native.run_model = blocking
atexit.register(lambda: sys.stderr.write("finalized while the run was busy\\n"))
sys.exit(cli.main(sys.argv[1:]))
"""


def _blocking_child(*argv):
    return subprocess.Popen(
        [sys.executable, "-c", BLOCKING_RUN, "run", str(EXAMPLES / "seed000.json"), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("attempt", range(3))
def test_ctrl_c_during_native_run(tmp_path, attempt):
    import signal

    out = tmp_path / "r.json"
    child = _blocking_child("--json", str(out))
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    # Ctrl-C lands while the main thread waits for the worker; Python 3.11's threading then
    # marks the still-running worker as stopped (bpo-45274), which must not make thplab
    # finalise the interpreter under a busy native run
    assert "finalized" not in err
    assert list(tmp_path.iterdir()) == []


def test_timeout_exit_124(tmp_path):
    out = tmp_path / "r.json"
    child = _blocking_child("--timeout", "0.2", "--json", str(out))
    _, err = child.communicate(timeout=120)
    assert child.returncode == 124, err
    assert "did not finish within 0.2 s" in err
    assert list(tmp_path.iterdir()) == []


def test_workload_from_stdin(capsys, monkeypatch):
    import io

    yaml_doc = b"name: from-stdin\nprocesses:\n- ops:\n  - {op: mmap, name: b, size: 2M}\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(yaml_doc)))
    rc, out, err = run_cli(capsys, "run", "-")
    assert rc == 0 and "from-stdin" in out, err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff")))
    expect_input_error(capsys, "run", "-", contains=("<stdin>", "UTF-8"))
