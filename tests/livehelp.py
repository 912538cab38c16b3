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


def need_empty_khugepaged_list():
    """Skip unless khugepaged's list of mms is empty (live.khugepaged_list_held): an mm
    leaves it only when its process exits, so any long-lived process that faulted while
    some run had enabled=always stays on it, and with the list non-empty a new
    MADV_HUGEPAGE does not wake khugepaged."""
    from thplab import live

    if live.khugepaged_list_held():
        pytest.skip(
            "khugepaged's list holds other processes' mms (its full_scans moved when woken): "
            "a MADV_HUGEPAGE does not wake it; an mm leaves the list only when it exits"
        )
