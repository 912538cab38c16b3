"""thplab census: every field of the census of a process with a known layout, on the live
kernel; the model replay of a census (same smaps as the process); the what-if; the report
section; the command line.

The known layout is a workload run by the live runner (`thplab-live run`), whose child is
censused while it sleeps at the end: THPs with 1, 64 and 512 non-zero subpages and an all-zero
one, 4 KiB pages (some swapped out, one mapping the zero page), a THP swapped out whole, a huge
zero page, and a THP mapped by PTEs after mprotect() of its first page.
tests/fixtures/census_layout.json is such a census (regenerate it as root with
`python tests/test_census.py --save-fixture`); the tests that do not need root use it.
"""

import copy
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from livehelp import REPO, binary, need_root, need_zram
from thplab import api, census
from thplab.errors import InputError

FIXTURE = Path(__file__).parent / "fixtures" / "census_layout.json"

LAYOUT = {
    "name": "census-layout",
    "seed": 1,
    "machine": {
        "nodes": [{"mem": "24G", "cpus": 2}],
        "swap": [{"type": "zram", "size": "256M", "comp_algorithm": "lzo"}],
    },
    "knobs": {"transparent_hugepage/enabled": "madvise", "transparent_hugepage/use_zero_page": "1"},
    "processes": [
        {
            "name": "layout",
            "ops": [
                {"op": "mmap", "name": "thp", "size": "8M", "align": "2M"},
                {"op": "madvise", "region": "thp", "advice": "hugepage"},
                # THP 0: one non-zero subpage (byte 100); THP 1: 64 (random data); THP 2: 512
                # (same-filled with 7); THP 3: all zero (a write of zeros faults it in)
                {"op": "write", "region": "thp", "offset": 0, "length": "4K", "byte": 100, "bytes": 1, "data": 171},
                {"op": "write", "region": "thp", "offset": "2M", "length": "256K", "data": "random"},
                {"op": "write", "region": "thp", "offset": "4M", "length": "2M", "data": 7},
                {"op": "write", "region": "thp", "offset": "6M", "length": "4K", "data": 0},
                # 128 4 KiB pages, 32 of them swapped out, and one zero-page mapping
                {"op": "mmap", "name": "small", "size": "1M"},
                {"op": "madvise", "region": "small", "advice": "nohugepage"},
                {"op": "write", "region": "small", "length": "512K", "byte": 5, "bytes": 10, "data": 1},
                {"op": "madvise", "region": "small", "offset": "256K", "length": "128K", "advice": "pageout"},
                {"op": "read", "region": "small", "offset": "768K", "length": "4K"},
                # a THP swapped out whole
                {"op": "mmap", "name": "swapthp", "size": "2M", "align": "2M"},
                {"op": "madvise", "region": "swapthp", "advice": "hugepage"},
                {"op": "write", "region": "swapthp", "data": "text"},
                {"op": "madvise", "region": "swapthp", "advice": "pageout"},
                # the huge zero page
                {"op": "mmap", "name": "hzp", "size": "2M", "align": "2M"},
                {"op": "madvise", "region": "hzp", "advice": "hugepage"},
                {"op": "read", "region": "hzp", "length": "4K"},
                # a THP mapped by PTEs (its PMD split by mprotect of the first page)
                {"op": "mmap", "name": "ptethp", "size": "2M", "align": "2M"},
                {"op": "madvise", "region": "ptethp", "advice": "hugepage"},
                {"op": "write", "region": "ptethp", "byte": 8, "bytes": 8, "data": 9},
                {"op": "mprotect", "region": "ptethp", "length": "4K", "prot": "r"},
                {"op": "sleep", "duration": "60s"},
            ],
        }
    ],
}


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _sleeping(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/syscall").read_text().split()[0] == "230"  # clock_nanosleep
    except (OSError, IndexError):
        return False


def census_of_layout() -> dict:
    """Run LAYOUT on the live kernel and take the census of its child while it sleeps; the
    runner is always stopped (SIGTERM: it restores the machine) before returning."""
    b = binary()
    with tempfile.TemporaryDirectory(prefix="thplab-census-test-") as d:
        wf = Path(d) / "layout.json"
        wf.write_text(json.dumps(LAYOUT))
        runner = subprocess.Popen(
            [b, "run", "--workload", str(wf), "--out", str(Path(d) / "r.json"), "--timeout", "120"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            child = None
            deadline = time.time() + 60
            while time.time() < deadline and runner.poll() is None:
                kids = _children(runner.pid)
                if kids and _sleeping(kids[0]):
                    child = kids[0]
                    break
                time.sleep(0.05)
            if child is None:
                _, err = runner.communicate(timeout=60) if runner.poll() is not None else ("", "")
                pytest.fail(f"the layout process did not reach its sleep (runner exit {runner.poll()}: {err})")
            time.sleep(0.2)  # let the pageout writeback settle
            return census.run_census(pids=[child])
        finally:
            if runner.poll() is None:
                runner.send_signal(signal.SIGTERM)
            try:
                runner.wait(timeout=90)
            except subprocess.TimeoutExpired:
                runner.kill()
                runner.wait()


def _proc(c: dict) -> dict:
    ok = census.ok_processes(c)
    assert len(ok) == 1, c["processes"]
    return ok[0]


def check_layout_census(p: dict) -> None:
    """Every census field of LAYOUT's child, exactly."""
    # PMD-mapped THPs: the four of `thp`; their zero subpages: 511 + 448 + 0 + 512
    assert p["thp_pmd"] == 4
    assert p["anon_huge_kb"] == 4 * 2048 == p["smaps_rollup"]["AnonHugePages"]
    assert p["thp_zero_hist"] == {"511": 1, "448": 1, "0": 1, "512": 1}
    assert p["thp_zero_subpages"] == 511 + 448 + 512
    assert p["thp_zero_kb"] == (511 + 448 + 512) * 4
    assert p["thp_unread"] == 0
    assert p["huge_zero_pmd"] == 1
    # the mprotect()ed THP: one PMD-order folio mapped by PTEs across two VMAs; no mTHP
    assert p["pte_mapped_thp"] == 1 and p["pte_mapped_thp_partial_pages"] == 0
    assert p["mthp"] == {} and p["mthp_partial_pages"] == 0
    # swap: 32 pages of `small` and the 512 of `swapthp`, which went out whole
    assert p["swapped_pages"] == 32 + 512
    assert p["swap_kb"] == (32 + 512) * 4 == p["smaps_rollup"]["Swap"]
    assert p["thp_swapped_ranges"] == 1
    # the zero-page read in `small` (the runner's own memory maps no zero page)
    assert p["zero_pfn_pages"] == 1
    # every anonymous page is accounted for: smaps' Anonymous from pagemap's counts
    assert p["anon_kb"] == 4 * (512 * p["thp_pmd"] + 512 * p["pte_mapped_thp"] + p["small_pages"])
    # file pages: none in the layout's anonymous memory; in the runner's private file
    # mappings, the pages never written (how many depends on the binary's link layout: its
    # RELRO segment may keep a page the loader did not relocate), each as smaps counts it
    for v in p["vmas"]:
        file_kb = v["smaps"]["Rss"] - v["smaps"]["Anonymous"]
        assert v["file_pages"] * 4 == (0 if v["anonymous"] else file_kb), v["name"]
    assert p["file_pages"] == sum(v["file_pages"] for v in p["vmas"] if not v["anonymous"])
    hg = [v for v in p["vmas"] if v["anonymous"] and "hg" in v["vm_flags"]]
    (thp,) = [v for v in hg if v["size_kb"] == 8192]
    assert thp["thp_pmd"] == 4 and thp["smaps"]["AnonHugePages"] == 8192
    assert thp["khugepaged_eligible"] and thp["khugepaged"]["ranges_with_pages"] == 0
    # the layout records each subpage: THP 0 sparse at byte 100, THP 2 same-filled with 7
    lay = thp["layout"]
    assert lay[0] == [0, 1, "thp", (census.C_SPARSE << 13) | 100]
    assert lay[1] == [1, 511, "thp", 0]
    assert [1024, 512, "thp", (census.C_SAME << 13) | 7] in lay
    assert lay[-1] == [1536, 512, "thp", 0]
    dense = sum(n for pg, n, k, c in lay if 512 <= pg < 1024 and c >> 13 == census.C_DENSE)
    assert dense == 64
    (swapthp,) = [v for v in hg if v["thp_swapped_ranges"]]
    assert swapthp["layout"] == [[0, 512, "swapthp", 0]] and swapthp["smaps"]["Swap"] == 2048
    assert not swapthp["khugepaged"]["collapsible"]  # 512 swap entries > max_ptes_swap
    (hzp,) = [v for v in hg if v["huge_zero_pmd"]]
    assert hzp["layout"] == [[0, 512, "hzp", 0]] and hzp["smaps"]["Rss"] == 0
    small = next(v for v in p["vmas"] if "nh" in v["vm_flags"] and v["size_kb"] == 1024)
    assert small["swapped_pages"] == 32 and small["small_pages"] == 96 and small["zero_pfn_pages"] == 1
    assert not small["khugepaged_eligible"]
    assert small["layout"] == [[0, 64, "pte", 0], [64, 32, "swap", 0], [96, 32, "pte", 0], [192, 1, "zp", 0]]
    kh = p["khugepaged"]
    assert kh["eligible"] and kh["mm_registered"]
    # the policies
    pol = p["policies"]
    under = {u["max_ptes_none"]: u for u in pol["underused_shrinker"]["by_max_ptes_none"]}
    for t in (0, 64, 256):
        assert under[t] == {"max_ptes_none": t, "thps_split": 3, "kb_freed": (511 + 448 + 512) * 4}
    assert under[511] == {"max_ptes_none": 511, "thps_split": 0, "kb_freed": 0}
    s0 = pol["seed000_split_on_reclaim"]
    assert s0["zero_subpages_dropped"] == 511 + 448 + 512 and s0["all_zero_thps"] == 1
    assert s0["kb_dropped_instead_of_swapped"] == (511 + 448) * 4
    assert s0["swapout_pages_mainline"] == 3 * 512 and s0["swapout_pages_seed000"] == 1 + 64 + 512
    s3 = pol["seed003_thp_swapin"]
    assert s3["thp_swapped_ranges"] == 1 and s3["swapin_faults_seed003"] == 1 and s3["thp_kb_restored"] == 2048
    assert s3["swapin_faults_mainline"] == 512 and s3["swapin_faults_saved"] == 511
    assert s3["resident_thp_kb_kept_through_swap"] == 4 * 2048


def replay_smaps(c: dict, **kw) -> dict:
    r = api.run(census.to_workload(c, **kw), check=True)
    assert len(r.raw["processes"]) == 1
    pr = r.raw["processes"][0]
    assert pr["errors"] == [], pr["errors"]
    return pr["smaps_rollup"]


def assert_same_smaps(c: dict, sm: dict) -> None:
    p = _proc(c)
    for f in ("AnonHugePages", "Anonymous", "Swap"):
        assert sm[f] == p["smaps_rollup"][f], (f, sm[f], p["smaps_rollup"][f])


# ---- on the live kernel ----


@pytest.mark.live
def test_census_of_known_layout_is_exact_and_replays():
    need_zram()
    from thplab.live import state

    before = state()
    c = census_of_layout()
    assert state() == before  # the runner restored everything; the census changed nothing
    p = _proc(c)
    check_layout_census(p)
    assert c["privileges"]["pfns"] is True
    assert c["scan"]["thp_bytes_read"] == 4 * (2 << 20)  # only the PMD-mapped THPs were read
    # the model replay of this census gives the process's smaps
    assert_same_smaps(c, replay_smaps(c))


@pytest.mark.live
def test_replay_runs_on_the_live_kernel_too():
    # the same replay workload on the kernel backend: the THPs and swap come back exactly; the
    # replaying child adds its own few hundred kB of anonymous memory
    need_zram()
    from thplab.live import state

    before = state()
    c = census.load(FIXTURE)
    r = api.run(census.to_workload(c), backend="kernel", timeout=300)
    assert state() == before
    (pr,) = r.raw["processes"]
    assert pr["errors"] == [], pr["errors"]
    want = _proc(c)["smaps_rollup"]
    assert pr["smaps_rollup"]["AnonHugePages"] == want["AnonHugePages"]
    assert pr["smaps_rollup"]["Swap"] == want["Swap"]
    assert want["Anonymous"] <= pr["smaps_rollup"]["Anonymous"] <= want["Anonymous"] + 4096
    assert r.vmstat_delta.get("thp_swpout", 0) >= 1  # the THP swapped out whole went out whole again


_THP_CHILD = r"""
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
M = 2 << 20
n = int(sys.argv[1])
raw = libc.mmap(None, (n + 1) * M, 3, 0x22, -1, 0)
base = (raw + M - 1) // M * M
libc.madvise(base, n * M, 14)
for t in range(n):
    ctypes.memset(base + t * M, 1, M)
print("ready", flush=True)
time.sleep(600)
"""


def _thp_child(mib: int) -> subprocess.Popen:
    ch = subprocess.Popen([sys.executable, "-c", _THP_CHILD, str(mib // 2)], stdout=subprocess.PIPE, text=True)
    assert ch.stdout.readline().strip() == "ready"
    return ch


@pytest.mark.live
def test_process_exiting_mid_census_is_reported_not_a_crash():
    b = binary()
    if not Path("/sys/kernel/mm/transparent_hugepage/enabled").exists():
        pytest.skip("no THP")
    rng = random.Random(7)
    statuses = []
    for _ in range(6):
        ch = _thp_child(64)
        try:
            with tempfile.TemporaryDirectory() as d:
                out = Path(d) / "c.json"
                cen = subprocess.Popen(
                    [b, "census", "--pid", str(ch.pid), "--pid", str(os.getpid()), "--no-layout", "--out", str(out)],
                    stderr=subprocess.PIPE,
                    text=True,
                )
                time.sleep(rng.uniform(0.0, 0.01 if len(statuses) < 3 else 0.03))
                ch.kill()
                ch.wait()
                _, err = cen.communicate(timeout=60)
                assert cen.returncode == 0, err
                c = json.loads(out.read_text())
                st = {p["pid"]: p["status"] for p in c["processes"]}
                assert st[ch.pid] in ("ok", "exited"), c["processes"]
                assert st[os.getpid()] == "ok"  # the other process is still reported in full
                statuses.append(st[ch.pid])
        finally:
            if ch.poll() is None:
                ch.kill()
                ch.wait()
    assert "exited" in statuses, statuses  # early kills land during the census


@pytest.mark.live
def test_lacking_rights_is_a_clear_error():
    need_root()
    if shutil.which("runuser") is None:
        pytest.skip("no runuser")
    d = tempfile.mkdtemp(prefix="thplab-census-nobody-")
    try:
        os.chmod(d, 0o755)
        b = Path(d) / "thplab-live"
        shutil.copy(binary(), b)
        os.chmod(b, 0o755)
        r = subprocess.run(
            ["runuser", "-u", "nobody", "--", str(b), "census", "--pid", str(os.getpid())],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "root or ptrace rights" in r.stderr and "EACCES" in r.stderr


# ---- the model replay (no root needed: the fixture is a census taken on the live kernel) ----


@pytest.fixture
def layout_census() -> dict:
    return census.load(FIXTURE)


def test_fixture_is_the_known_layout(layout_census):
    check_layout_census(_proc(layout_census))


def test_replay_gives_the_process_smaps(layout_census):
    assert_same_smaps(layout_census, replay_smaps(layout_census))


@pytest.mark.parametrize("mode", ["always", "never"])
def test_replay_under_other_enabled_modes(layout_census, mode):
    # under `always` 4 KiB pages need MADV_NOHUGEPAGE first; under `never` THPs are collapsed
    c = copy.deepcopy(layout_census)
    c["host"]["enabled"] = mode
    c["host"]["knobs"]["transparent_hugepage/enabled"] = mode
    w = census.to_workload(c)
    ops = w["processes"][0]["ops"]
    if mode == "never":
        assert any(o.get("advice") == "collapse" for o in ops)
        assert "MADV_COLLAPSE" in w["description"]
        # the huge zero page cannot be faulted without THP faults: not replayed, and said so
        assert "huge zero page" in w["description"]
    else:
        assert any(o.get("advice") == "nohugepage" for o in ops)
    assert_same_smaps(c, replay_smaps(c))


def test_replay_workload_is_compact_and_deterministic(layout_census):
    w1 = census.to_workload(layout_census)
    w2 = census.to_workload(copy.deepcopy(layout_census))
    assert w1 == w2
    api.load_workload(w1)  # valid for the Rust parser
    p = _proc(layout_census)
    runs = sum(len(v.get("layout") or []) for v in p["vmas"])
    writes = [o for o in w1["processes"][0]["ops"] if o["op"] == "write"]
    assert len(writes) <= runs + p["thp_pmd"]  # one write per run of identical pages (+ zero THP faults)
    thp_writes = [o for o in writes if o.get("length") == 4096 and o.get("byte") == 100]
    assert thp_writes and thp_writes[0]["bytes"] == 1  # the first non-zero byte kept
    assert w1["machine"]["swap"] and w1["name"] == "census-replay"


def test_merge_runs_w_after_the_replay(layout_census):
    replay = census.to_workload(layout_census)
    pname = replay["processes"][0]["name"]
    thp_region = next(o["name"] for o in replay["processes"][0]["ops"] if o["op"] == "mmap" and o["size"] == 8 << 20)
    w = {
        "name": "after",
        "knobs": {"khugepaged/max_ptes_none": "0"},
        "processes": [
            {"name": pname, "ops": [{"op": "drop_caches", "value": 2}, {"op": "munmap", "region": thp_region}]},
            {"name": "other", "ops": [{"op": "mmap", "name": "x", "size": "2M"}]},
        ],
    }
    m = census.merge_workload(replay, w)
    assert m["knobs"]["transparent_hugepage/khugepaged/max_ptes_none"] == "511"  # the census's, as found
    r = api.run(m, check=True)
    names = [p["name"] for p in r.raw["processes"]]
    assert names == [pname, "other"]
    assert all(p["errors"] == [] for p in r.raw["processes"])
    # W's knob (max_ptes_none=0) wins: the shrinker split the three THPs with zero subpages
    assert r.vmstat_delta.get("thp_underused_split_page", 0) == 3
    assert any(ph["name"] == f"{pname}:main" for ph in r.raw["phases"])
    with pytest.raises(InputError, match="cannot have `start`"):
        census.merge_workload(replay, {"processes": [{"name": pname, "start": "1s", "ops": []}]})


def test_what_if_matches_the_census_prediction(layout_census):
    p = _proc(layout_census)
    predicted = {u["max_ptes_none"]: u for u in p["policies"]["underused_shrinker"]["by_max_ptes_none"]}
    _w, base, alt = census.what_if(layout_census, ["khugepaged/max_ptes_none=64"], scenario="shrink")
    assert base.vmstat_delta.get("thp_underused_split_page", 0) == predicted[511]["thps_split"] == 0
    assert alt.vmstat_delta.get("thp_underused_split_page", 0) == predicted[64]["thps_split"] == 3
    freed = sum(q["smaps_rollup"]["Anonymous"] for q in base.raw["processes"]) - sum(
        q["smaps_rollup"]["Anonymous"] for q in alt.raw["processes"]
    )
    assert freed == predicted[64]["kb_freed"]


def test_seed000_what_if_drops_the_predicted_zero_pages(layout_census):
    # reclaim with THP swap off splits every THP: the seed drops the zero subpages mainline
    # remaps to the zero page; both keep them out of swap, as the census predicts
    p = _proc(layout_census)
    s0 = p["policies"]["seed000_split_on_reclaim"]
    sets = ["thplab.config_thp_swap=n", "thplab.swap_zeromap=n"]
    _w, _b, none = census.what_if(layout_census, [*sets, "thplab.split_zero_subpages=none"], scenario="reclaim")
    _w, _b, seed = census.what_if(layout_census, [*sets, "thplab.split_zero_subpages=seed"], scenario="reclaim")
    out_none = none.phases.loc[none.phases.index.str.endswith(":reclaim"), "pswpout"].sum()
    out_seed = seed.phases.loc[seed.phases.index.str.endswith(":reclaim"), "pswpout"].sum()
    assert out_none - out_seed == s0["zero_subpages_dropped"]


def test_seed003_what_if_keeps_the_predicted_thps(layout_census):
    # a swap-out/swap-in cycle of everything: mainline brings THPs back as small pages, the
    # seed's PMD swap entries bring back every THP, the one swapped out whole included
    s3 = _proc(layout_census)["policies"]["seed003_thp_swapin"]
    _w, base, alt = census.what_if(layout_census, ["thplab.pmd_swap_entries=1"], scenario="reclaim")
    kept = s3["resident_thp_kb_kept_through_swap"] + s3["thp_kb_restored"]
    assert base.raw["processes"][0]["smaps_rollup"]["AnonHugePages"] == 0
    assert alt.raw["processes"][0]["smaps_rollup"]["AnonHugePages"] == kept == 5 * 2048


def test_bad_census_input(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"processes": []}')
    with pytest.raises(InputError, match="not a thplab census"):
        census.load(bad)
    with pytest.raises(InputError, match="no such census file"):
        census.load(tmp_path / "missing.json")
    c = census.load(FIXTURE)
    c["processes"] = [{"pid": 1, "status": "denied"}]
    with pytest.raises(InputError, match="no process with status ok"):
        census.to_workload(c)
    c = census.load(FIXTURE)
    for v in c["processes"][0]["vmas"]:
        v.pop("layout", None)
    with pytest.raises(InputError, match="no page layout"):
        census.to_workload(c)


# ---- the command line and the report ----


def _cli(*argv, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "thplab", *argv],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        timeout=600,
        check=False,
    )


def test_cli_census_from_file(tmp_path):
    out = tmp_path / "c.json"
    page = tmp_path / "c.html"
    r = _cli("census", "--from", str(FIXTURE), "--vmas", "--json", str(out), "--html", str(page))
    assert r.returncode == 0, r.stderr
    for s in ("zero in THP", "underused @64", "seed 003", "VMAs", "5.7 MiB (72%)"):
        assert s in r.stdout, s
    assert json.loads(out.read_text()) == json.loads(FIXTURE.read_text())
    h = page.read_text()
    assert '<img class="figure"' in h and "census:" in h and "zero-filled" in h


def test_cli_run_from_census(tmp_path):
    out = tmp_path / "r.json"
    r = _cli("run", "--from-census", str(FIXTURE), "--json", str(out), "-q")
    assert r.returncode == 0, r.stderr
    sm = json.loads(out.read_text())["processes"][0]["smaps_rollup"]
    assert_same_smaps(census.load(FIXTURE), sm)
    w = tmp_path / "w.json"
    w.write_text(
        json.dumps({"name": "later", "processes": [{"name": "p", "ops": [{"op": "sleep", "duration": "1s"}]}]})
    )
    r = _cli("run", str(w), "--from-census", str(FIXTURE), "-q")
    assert r.returncode == 0, r.stderr


def test_cli_census_what_if(tmp_path):
    r = _cli("census", "--from", str(FIXTURE), "--what-if", "khugepaged/max_ptes_none=64", "--scenario", "shrink")
    assert r.returncode == 0, r.stderr
    assert "thp_underused_split_page" in r.stdout and "what if" in r.stdout
    # with --json -, stdout is the census JSON alone, with the comparison in it
    r = _cli("census", "--from", str(FIXTURE), "--what-if", "khugepaged/max_ptes_none=64", "--json", "-")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    rows = {x["metric"]: x for x in d["what_if"]["rows"]}
    assert rows["vmstat thp_underused_split_page"]["what_if"] == 3
    assert d["what_if"]["set"] == ["khugepaged/max_ptes_none=64"]
    census.check(d)


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["census"], "give --pid"),
        (["census", "--pid", "abc"], "expected positive process ids"),
        (["census", "--from", "/nonexistent.json"], "no such census file"),
        (["census", "--from", str(FIXTURE), "--what-if", "nonsense=1"], "nonsense"),
        (["census", "--from", str(FIXTURE), "--buffer", "1000"], "power of two"),
        (["run", "--from-census", "/nonexistent.json"], "no such census file"),
        (["run"], "WORKLOAD"),
    ],
)
def test_cli_bad_input_exit_2(argv, msg):
    r = _cli(*argv)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert msg in r.stderr, r.stderr


def test_census_section_in_the_seeds_report(tmp_path):
    from thplab import seeds

    meta = {"thplab_version": "x", "quick": True, "host_seconds": 0.0, "seeds": []}
    seeds.write_report(tmp_path, [], meta, [census.html_section(census.load(FIXTURE))])
    h = (tmp_path / "report.html").read_text()
    assert "census: 1 process on" in h and '<img class="figure"' in h


def test_plot_has_title_units_and_bars():
    c = census.load(FIXTURE)
    ((title, fig),) = census.plots(c)
    ax = fig.axes[0]
    assert "zero-filled" in title and "MiB" in ax.get_xlabel() and ax.get_title()
    assert len(ax.patches) == 4  # THP non-zero, THP zero, 4 KiB, swapped for the one process
    widths = [round(p.get_width(), 3) for p in ax.patches]
    p = _proc(c)
    assert widths == [
        round((8192 - p["thp_zero_kb"]) / 1024, 3),
        round(p["thp_zero_kb"] / 1024, 3),
        round((p["anon_kb"] - p["anon_huge_kb"]) / 1024, 3),
        round(p["swap_kb"] / 1024, 3),
    ]


if __name__ == "__main__":
    if "--save-fixture" in sys.argv:
        c = census_of_layout()
        check_layout_census(_proc(c))
        FIXTURE.write_text(json.dumps(c, indent=1) + "\n")
        print(f"wrote {FIXTURE}")
