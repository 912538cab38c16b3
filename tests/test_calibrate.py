"""thplab calibrate: profile construction from samples (always), and a quick live calibration."""

import argparse
import sys
from pathlib import Path

import pytest
import tomllib

sys.path.insert(0, str(Path(__file__).parent))
from livehelp import need_root, state
from thplab import _native as n
from thplab import calibrate

FIXTURE = {
    "host": "testhost",
    "kernel": "6.18",
    "quick": True,
    "reps": 3,
    "samples": {
        "cpu_ghz": [3.0, 3.1, 2.9],
        "clear_4k": [150, 160, 170],
        "clear_2m": [80000, 90000, 85000],
        "copy_4k": [250, 260, 240],
        "copy_2m": [150000, 140000, 145000],
        "memchr_inv_4k_worst": [150, 150, 160],
        "memchr_inv_4k_best": [10, 11, 9],
        "same_filled_4k": [190, 200, 180],
        "touch_page": [20, 20, 20],
        "syscall": [130, 120, 140],
        "fault_4k_total": [1500, 1400, 1600],
        "fault_zero": [600, 650, 700],
        "fault_2m_total": [100000, 110000, 105000],
        "refault_reported_2m_total": [105000, 6_000_000, 5_000_000, 7_000_000],
        **{
            f"zram.lz4.{c}.{d}": v
            for c, (o, i) in {
                "same": (4000, 3000),
                "sparse": (5000, 4000),
                "text": (12000, 6000),
                "random": (6000, 4200),
            }.items()
            for d, v in (("out", [o] * 3), ("in", [i] * 3))
        },
        "file.write_single": [30000] * 3,
        "file.read_single": [60000] * 3,
        "file.write_page": [40000] * 3,
        "file.read_seq_page": [2000] * 3,
    },
    "values": {
        "zram.lz4.same.bytes": 1,
        "zram.lz4.sparse.bytes": 120,
        "zram.lz4.text.bytes": 2400,
        "zram.lz4.random.bytes": 4096,
    },
    "notes": [],
}


def test_profile_from_samples_and_toml_roundtrip():
    prof, rows = calibrate.profile_from_samples(FIXTURE)
    assert prof["clear_4k_ns"] == 160
    assert prof["fault_4k_ns"] == 1500 - 160
    assert prof["fault_2m_ns"] == 105000 - 85000
    assert prof["refault_reported_2m_ns"] == 6_000_000 - 105000  # only the blocks that were reported
    z = prof["zram"]["lz4"]
    assert z["text_compress_ns"] == 12000 - 4000 + 190 and z["text_bytes"] == 2400
    assert z["random_decompress_ns"] == 4200 - 3000 + 160
    assert prof["file"]["write_mb_per_s"] == round(4096 / 40000 * 1e3)
    assert 0 < prof["spread"]["clear_4k_ns"] < 1
    text = calibrate.to_toml(prof, ["a comment"])
    parsed = tomllib.loads(n.parse_costs(text))
    assert parsed["clear_4k_ns"] == 160 and parsed["zram"]["lz4"]["text_bytes"] == 2400
    assert parsed["name"] == "calibrated-testhost"
    assert any(r[0] == "(memchr_inv_4k best case)" for r in rows)


@pytest.mark.live
def test_quick_calibration_writes_a_valid_profile(tmp_path, capsys):
    need_root()
    before = state()
    p = argparse.ArgumentParser()
    calibrate.add_arguments(p)
    out = tmp_path / "c.toml"
    assert calibrate.cmd(p.parse_args(["--quick", "--reps", "1", "--out", str(out)])) == 0
    prof = tomllib.loads(n.parse_costs(out.read_text()))
    assert prof["clear_4k_ns"] > 0 and prof["fault_4k_ns"] > 0 and prof["syscall_ns"] > 0
    assert "calibrated on" in prof["source"]
    assert "wrote" in capsys.readouterr().out
    assert state() == before
