"""Shared helpers for the live-kernel tests (skips with a reason when the live side can't run)."""

import os
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def binary():
    from thplab.errors import InputError
    from thplab.live import find_binary

    try:
        return find_binary()
    except InputError as e:
        pytest.skip(str(e))


def need_root():
    if os.geteuid() != 0:
        pytest.skip("needs root (live kernel knobs, swap devices)")
    binary()
    if not Path("/sys/kernel/mm/transparent_hugepage/enabled").exists():
        pytest.skip("this kernel has no transparent hugepages")


def need_zram():
    need_root()
    if not Path("/sys/block/zram0").exists():
        pytest.skip("no /dev/zram0 (zram module not loaded)")
    if Path("/sys/block/zram0/disksize").read_text().strip() != "0":
        pytest.skip("/dev/zram0 is in use")


def state():
    from thplab.live import state as st

    return st()


def seed000(size="64M", **extra):
    w = {
        "name": "seed000",
        "seed": 1,
        "knobs": {"transparent_hugepage/enabled": "madvise"},
        "processes": [
            {
                "name": "test",
                "ops": [
                    {"op": "mmap", "name": "buf", "size": size, "align": "2M"},
                    {"op": "madvise", "region": "buf", "advice": "hugepage"},
                    {"op": "write", "region": "buf", "every": "2M", "length": "4K", "data": 255, "byte": 0, "bytes": 1},
                    {"op": "madvise", "region": "buf", "advice": "pageout"},
                    {"op": "munmap", "region": "buf"},
                ],
            }
        ],
    }
    w.update(extra)
    return w


def wait_for(pred, timeout=10.0):
    t = time.time()
    while time.time() - t < timeout:
        if pred():
            return True
        time.sleep(0.05)
    return False


KHUGEPAGED = Path("/sys/kernel/mm/transparent_hugepage/khugepaged")


def need_empty_khugepaged_list():
    """Skip unless khugepaged's list of mms is empty. An mm joins it at its first eligible
    VMA and leaves only when it exits (collect_mm_slot() frees the slot of an exiting mm
    alone), so any long-lived process that faulted while some run had enabled=always stays
    on it; with the list non-empty khugepaged waits out scan_sleep_millisecs and a new
    MADV_HUGEPAGE does not wake it (__khugepaged_enter wakes it only for an empty list).
    Probe: rewrite scan_sleep_millisecs with its own value (scan_sleep_millisecs_store sets
    khugepaged_sleep_expire to 0 and wakes it): a non-empty list is scanned, and
    full_scans moves once the pass ends."""
    knob = KHUGEPAGED / "scan_sleep_millisecs"
    before = int((KHUGEPAGED / "full_scans").read_text())
    knob.write_text(knob.read_text().strip())
    if wait_for(lambda: int((KHUGEPAGED / "full_scans").read_text()) != before, timeout=1.0):
        pytest.skip(
            "khugepaged's list holds other processes' mms (its full_scans moved when woken): "
            "a MADV_HUGEPAGE does not wake it; an mm leaves the list only when it exits"
        )
