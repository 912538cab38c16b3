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
        "fill_4k_byte": [90, 100, 110],
        "fill_4k_text": [200, 210, 190],
        "fill_4k_random": [600, 650, 700],
        "syscall": [130, 120, 140],
        "fault_4k_total": [1500, 1400, 1600],
        "fault_4k_sparse": [2400, 2500, 2600],
        "fault_zero": [600, 650, 700],
        "pte_walk_none": [2.4, 2.6, 2.5],
        "access_rand_256k": [2.0, 2.2, 2.1],
        "access_rand_16m": [14.1, 14.1, 14.1],
        "access_rand_32m": [18.1, 18.1, 18.1],
        "access_rand_256m": [26.1, 26.0, 26.2],
        "munmap_zero": [30, 32, 31],
        "fault_2m_total": [100000, 110000, 105000],
        "fault_64k_total": [9000, 9500, 9400],
        "munmap_2m": [8000] * 3,
        "munmap_64k": [1300] * 3,
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
        **{f"zram.lz4.{c}.free": [v] * 3 for c, v in {"same": 100, "sparse": 250, "text": 550, "random": 500}.items()},
        "zram.lz4.same.thp_out": [850] * 3,
        "zram.lz4.zero.thp_out": [1100] * 3,
        "zram.lz4.same.thp_free": [75] * 3,
        "zram.lzo.same.free": [100] * 3,
        "zram.lz4.text.thp_out": [9350] * 3,
        "file.write_2m_qd4": [2_097_152] * 3,  # 1 GB/s
        "file.read_2m_qd4": [1_048_576] * 3,  # 2 GB/s
        "file.write_4k_rand": [34096] * 3,
        "file.read_4k_rand": [22048] * 3,
        "file.read_4k_seq": [22000] * 3,
        "file.pageout_4k": [2900] * 3,
        "file.pageout_4k_sparse": [4400, 4200, 4300],
        "file.munmap_cached": [800] * 3,
        "file.munmap_entry": [60] * 3,
        "file.thp_pageout_best": [1_400_000] * 3,
        "noswap.thp_pageout_best": [600_000] * 3,
        "noswap.pageout_4k": [500] * 3,
        "drop_slab": [90000] * 3,
        "underused_0": [790000] * 3,
        "underused_256": [790000 + 256 * 440] * 3,
        "underused_511": [90000 / 32 + 500] * 3,
        "split_pmd_munmap": [20000] * 3,
        "munmap_hole": [3200] * 3,
        "munmap_hole_anon": [4900, 4800, 5000],
        "munmap_partial_64k": [7000, 6900, 7100],
        "dontneed_present": [2900] * 3,
        "dontneed_none": [1000] * 3,
        "dontneed_present3": [3600, 3700, 3500],
        "munmap_tail": [2300] * 3,
        "split_partial": [330000] * 3,
        "split_partial_zero": [330000 + 507 * (440 + 600 - 10)] * 3,
        "split_partial_64k": [20000] * 3,
        "collapse_2m": [750000] * 3,
        "compact.a.ns": [3_000_000 * 3 + 2000 * 60000],
        "compact.a.compact_migrate_scanned": [2_900_000],
        "compact.a.compact_free_scanned": [100_000],
        "compact.a.pgmigrate_success": [60000],
        "compact.b.ns": [3 * 5_000_000 + 2000 * 25000],
        "compact.b.compact_migrate_scanned": [4_900_000],
        "compact.b.compact_free_scanned": [100_000],
        "compact.b.pgmigrate_success": [25000],
    },
    "values": {
        "file.max_segments": "254",
        "zram.lz4.same.bytes": 1,
        "zram.lz4.sparse.bytes": 120,
        "zram.lz4.text.bytes": 2400,
        "zram.lz4.random.bytes": 4096,
        "split.thp_pages": 32,
        "split_64k.folios": 128,
        "file.thp_best.thp_swpout_fallback": 1.0,
        "noswap.thp_best.thp_swpout_fallback": 1.0,
        "noswap.pageout_4k.pgactivate": 1.0,
    },
    "notes": [],
}


def collapse_rest(prof, ranges_per_call):
    """What the model charges a 2 MiB MADV_COLLAPSE beside collapse_isolate_ns (the
    fixture's copy_4k_ns is 250): the call's share, the THP, the walks, the flush, the copies
    and the frees."""
    return (
        prof["syscall_ns"] / ranges_per_call
        + prof["page_alloc_ns"]
        + prof["pmd_walk_ns"]
        + 1024 * prof["pte_walk_ns"]
        + prof["tlb_flush_ns"]
        + 512 * (250 + prof["page_free_ns"])
    )


def test_remove_mapping_is_fitted_against_the_munmap_of_present_pages_beside_it():
    """With munmap_present (the same round, right after munmap_cached), remove_mapping_ns is
    the difference of the two less swap_free_ns: a slower host (both 1.5x) moves it by 1.5x,
    not by the whole of munmap_cached's change as the unpaired fit against page_free_ns."""
    import copy

    pte_none = 2  # FIXTURE's pte_walk_ns
    fx = copy.deepcopy(FIXTURE)
    fx["samples"]["file.munmap_present"] = [350] * 3
    prof, rows = calibrate.profile_from_samples(fx)
    swap_free = 60 - pte_none
    assert prof["remove_mapping_ns"] == 800 - 350 - swap_free
    assert any(r[0] == "remove_mapping_ns" and "munmap_present" in r[3] for r in rows)
    slow = copy.deepcopy(fx)
    slow["samples"]["file.munmap_cached"] = [1200] * 3
    slow["samples"]["file.munmap_present"] = [525] * 3
    unpaired = copy.deepcopy(slow)
    del unpaired["samples"]["file.munmap_present"]
    p_slow = calibrate.profile_from_samples(slow)[0]["remove_mapping_ns"]
    p_unpaired = calibrate.profile_from_samples(unpaired)[0]["remove_mapping_ns"]
    assert p_slow == 1200 - 525 - swap_free
    assert p_slow < p_unpaired  # the unpaired fit takes page_free_ns from an unloaded moment


def test_swap_put_cached_is_solved_from_the_thp_munmap_and_the_4k_pair():
    """disk.thp_munmap_best is 512 cached swap PTEs and one THP folio (its walk, free and
    tails, and the call's share besides); munmap_cached less munmap_present is one PTE and
    one 4 KiB folio: two equations for swap_put_cached_ns and remove_mapping_ns."""
    import copy

    fx = copy.deepcopy(FIXTURE)
    s, r = 20, 600
    base, _ = calibrate.profile_from_samples(fx)
    call = (base["syscall_ns"] + base["munmap_vma_ns"] + base["zap_flush_ns"]) / 64
    fixed = base["pmd_walk_ns"] + base["page_free_ns"] + 511 * base["free_tail_page_ns"] + call
    fx["samples"].update(
        {
            "disk.munmap_cached": [1000 + s + r] * 3,
            "disk.munmap_present": [1000] * 3,
            "disk.thp_munmap_best": [fixed + 512 * (base["pte_walk_ns"] + s) + r] * 3,
        }
    )
    fx["values"].update({"disk.thp_best.thp_swpout": 1.0, "disk.thp_pages": 64})
    prof, rows = calibrate.profile_from_samples(fx)
    assert prof["swap_put_cached_ns"] == s
    assert prof["remove_mapping_ns"] == r
    assert [x[0] for x in rows].count("remove_mapping_ns") == 1
    # THPs that were split instead (thp_swpout_fallback): no equation, the field stays unset
    fx["values"]["disk.thp_best.thp_swpout"] = 0.0
    assert "swap_put_cached_ns" not in calibrate.profile_from_samples(fx)[0]


def test_a_store_right_after_an_mthp_fault_is_the_touched_faults_less_the_bare_ones_paired():
    """touch_after_fault_ns: the 64 KiB faults with their other 15 pages stored to right
    after, less the faults alone of the same repetition, per page; not the difference of
    the medians. Without fault_64k_touch the field stays unset (touch_page_ns)."""
    import copy

    fx = copy.deepcopy(FIXTURE)
    assert "touch_after_fault_ns" not in calibrate.profile_from_samples(fx)[0]
    # fault_64k_total [9000, 9500, 9400]: 90, 80 and 100 ns a page more, repetition by repetition
    fx["samples"]["fault_64k_touch"] = [9000 + 15 * 90, 9500 + 15 * 80, 9400 + 15 * 100]
    prof, rows = calibrate.profile_from_samples(fx)
    assert prof["touch_after_fault_ns"] == 90  # medians: (10700 - 9400) / 15 = 87
    assert any(r[0] == "touch_after_fault_ns" for r in rows)
    # the model takes the field
    assert tomllib.loads(n.parse_costs(calibrate.to_toml(prof)))["touch_after_fault_ns"] == 90


def test_swap_batch_is_the_reversed_munmap_less_the_in_order_one_pooled_over_devices():
    """free_swap_and_cache_nr()'s own cost: the munmap of swap-cache pages paged out from the
    end (a call per PTE) less the same paged out in order (a call per 512), paired by piece
    and pooled over the swap file and the loop device; without the reversed munmap the
    default stays."""
    import copy

    fx = copy.deepcopy(FIXTURE)
    default = calibrate.profile_from_samples(fx)[0]["swap_batch_ns"]
    assert default == tomllib.loads(n.default_costs())["swap_batch_ns"]
    fx["samples"]["file.munmap_cached_rev"] = [1000, 1010, 990]  # 200 above file.munmap_cached's 800
    fx["samples"]["disk.munmap_cached"] = [700, 800, 900]
    fx["samples"]["disk.munmap_cached_rev"] = [800, 900, 1000]  # 100 above, piece by piece
    prof, rows = calibrate.profile_from_samples(fx)
    # the pairs 200, 210, 190, 100, 100, 100: median 145; a batched page carried 1/512 of a call
    assert prof["swap_batch_ns"] == round(145 * 512 / 511)
    assert any(r[0] == "swap_batch_ns" and "file+disk" in r[3] for r in rows)


def test_page_free_is_the_munmap_with_room_and_the_drain_what_a_full_list_adds():
    """page_free_ns: the munmap of present pages with room on the per-CPU list, less the PTE
    walk; pcp_drain_ns: the same munmaps with every list at its floor, less those; without
    the room probe page_free_ns comes from the plain munmap and the drain stays at its
    default."""
    import copy

    fx = copy.deepcopy(FIXTURE)
    fx["samples"]["munmap_4k"] = [250, 252, 248]
    prof0 = calibrate.profile_from_samples(fx)[0]
    assert prof0["page_free_ns"] == 250 - prof0["pte_walk_ns"]
    assert prof0["pcp_drain_ns"] == tomllib.loads(n.default_costs())["pcp_drain_ns"]
    fx["samples"]["munmap_4k_room"] = [190, 200, 210]
    fx["samples"]["munmap_4k_drain"] = [270, 275, 280]
    prof, rows = calibrate.profile_from_samples(fx)
    assert prof["page_free_ns"] == 200 - prof["pte_walk_ns"]
    assert prof["pcp_drain_ns"] == 75
    assert any(r[0] == "pcp_drain_ns" for r in rows)


def test_sleep_wake_is_a_1ms_sleep_op_less_1ms():
    """sleep_wake_ns: the median 1 ms sleep op less 1 ms (the timer slack and the wake-up);
    without the sample it keeps its default."""
    import copy

    fx = copy.deepcopy(FIXTURE)
    fx["samples"].pop("sleep_1ms", None)
    assert calibrate.profile_from_samples(fx)[0]["sleep_wake_ns"] == tomllib.loads(n.default_costs())["sleep_wake_ns"]
    fx["samples"]["sleep_1ms"] = [1_095_000, 1_090_500, 1_101_000]
    prof, rows = calibrate.profile_from_samples(fx)
    assert prof["sleep_wake_ns"] == 95_000
    assert any(r[0] == "sleep_wake_ns" for r in rows)


def test_the_runners_probes_are_kept_as_references_not_costs():
    """probe_fault_4k_ns and probe_cpu_ns: the medians of the live runner's two host-speed
    probes (host_probe, cpu_probe) as calibrate met them, rounded; absent without samples
    (validate then has no reference for them); the model charges neither."""
    import copy

    fx = copy.deepcopy(FIXTURE)
    for k in ("host_probe", "cpu_probe"):
        fx["samples"].pop(k, None)
    prof = calibrate.profile_from_samples(fx)[0]
    assert "probe_cpu_ns" not in prof and "probe_fault_4k_ns" not in prof
    fx["samples"]["host_probe"] = [1800.4, 1600.2, 2400.0]
    fx["samples"]["cpu_probe"] = [117_100.0, 38_000.0, 116_900.0, 160_000.0, 117_300.0]
    prof, rows = calibrate.profile_from_samples(fx)
    assert (prof["probe_fault_4k_ns"], prof["probe_cpu_ns"]) == (1800, 117_100)
    assert {"probe_fault_4k_ns", "probe_cpu_ns"} <= {r[0] for r in rows}
    n.parse_costs(calibrate.to_toml(prof))


def test_the_hosts_two_speeds_each_get_their_own_fields():
    """Each sample carries the CPU probe taken as it was added (sample_probes). Where the
    probes fall into two speeds (speed_cut: two centres 4 % or more apart, each side 10 % of
    them or more), each speed's profile comes from its samples alone (samples_at_speed; a
    kind with fewer than two of that speed keeps all of its), and the profile's speed
    table holds the fields that differ from the profile's own."""
    import copy

    assert calibrate.speed_cut([90_000.0] * 5 + [97_000.0] * 5) == pytest.approx(93_500)
    assert calibrate.speed_cut([90_000.0] * 5 + [92_000.0] * 5) is None  # 2 % apart: one speed
    assert calibrate.speed_cut([90_000.0] + [97_000.0] * 19) is None  # 5 % at one side
    fx = copy.deepcopy(FIXTURE)
    assert calibrate.speed_table(calibrate.profile_from_samples(fx)[0], [fx]) is None  # no probes
    # the first sample of each kind met the fast speed, the rest the slow; clear_4k has two
    # fast samples more
    fx["samples"]["clear_4k"] = [150, 160, 170, 100, 104]
    fx["sample_probes"] = {k: [90_000.0] + [97_000.0] * (len(s) - 1) for k, s in fx["samples"].items()}
    fx["sample_probes"]["clear_4k"] = [97_000.0] * 3 + [90_000.0] * 2
    cut = calibrate.speed_cut(calibrate.sample_probes(fx))
    assert cut == pytest.approx(93_500)
    at_fast, kept = calibrate.samples_at_speed(fx, True, cut)
    assert at_fast["samples"]["clear_4k"] == [100, 104] and "clear_4k" not in kept
    assert at_fast["samples"]["copy_4k"] == fx["samples"]["copy_4k"] and "copy_4k" in kept
    assert calibrate.samples_at_speed(fx, False, cut)[0]["samples"]["copy_4k"] == [260, 240]
    main = calibrate.profile_from_samples(fx)[0]
    table = calibrate.speed_table(main, [fx])
    assert table["cut_ns"] == 93_500 and table["fast_calibrations"] == table["slow_calibrations"] == 1
    assert (main["clear_4k_ns"], table["fast"]["clear_4k_ns"], table["slow"]["clear_4k_ns"]) == (150, 102, 160)
    assert "clear_2m_ns" not in table["fast"]  # kept all three: the profile's own
    # fill_4k_random's slow two, 650 and 700, against all three's median 650
    assert table["slow"]["fill_random_4k_ns"] == 675 and "fill_random_4k_ns" not in table["fast"]
    prof = {**main, "speed": table}
    fast = calibrate.profile_at_speed(prof, "fast")
    assert fast["clear_4k_ns"] == 102 and "speed" not in fast and fast["copy_2m_ns"] == main["copy_2m_ns"]
    parsed = tomllib.loads(n.parse_costs(calibrate.to_toml(prof)))
    assert parsed["speed"]["fast"]["clear_4k_ns"] == 102
    # a calibration that never met the fast speed gives no speed of its own
    slow_only = {**fx, "sample_probes": {k: [97_000.0] * len(s) for k, s in fx["samples"].items()}}
    assert calibrate.speed_table(main, [slow_only], other_probes=[90_000.0] * 500) is None


def test_write_segment_cost_is_fitted_only_against_a_thp_swap_write_rate():
    """A device whose write bandwidth comes from whole-THP swap writes (one segment per
    2 MiB) takes the 4 KiB swap-out's excess per page as its per-segment cost; one whose
    bandwidth comes from O_DIRECT requests of a 4 KiB-page buffer (the fixture's file) has
    that cost in its bandwidth already."""
    import copy

    fx = copy.deepcopy(FIXTURE)
    disk = {k.replace("file.", "disk.", 1): v for k, v in fx["samples"].items() if k.startswith("file.")}
    # THPs written whole: 2 MiB per 1 ms of pageout and drain (2097 MB/s, 1953 ns per 4 KiB)
    disk.update(
        {
            "disk.thp_pageout_random": [800_000] * 3,
            "disk.thp_drain_random": [200_000] * 3,
            "disk.pageout_4k": [4000] * 3,
            "disk.writeback_drain_4k": [2000] * 3,
        }
    )
    fx["samples"].update(disk)
    fx["values"]["disk.thp_random.thp_swpout"] = 1.0
    prof, rows = calibrate.profile_from_samples(fx)
    d = prof["disk"]
    assert d["write_mb_per_s"] == 2097
    assert d["write_segment_ns"] == round(6000 - 4096 / (2097 * 1e6) * 1e9)
    assert prof["file"]["write_segment_ns"] == 0
    assert any(r[0] == "disk write_segment_ns" for r in rows)
    # THPs split on the way out (no swap fit): the O_DIRECT bandwidth stands, no segment cost
    fx["values"]["disk.thp_random.thp_swpout"] = 0.0
    assert calibrate.profile_from_samples(fx)[0]["disk"]["write_segment_ns"] == 0


def test_write_segment_cost_comes_from_the_fastest_repetition_not_a_stalled_drain():
    """Two of three 4 KiB swap-outs whose writeback drain stalled (the loop device's writes
    waiting on the guest's dirty-page flush, 46.5 us a page: out/host-h15) leave the
    per-segment cost at the unstalled repetition's, not 15x it."""
    import copy

    fx = copy.deepcopy(FIXTURE)
    disk = {k.replace("file.", "disk.", 1): v for k, v in fx["samples"].items() if k.startswith("file.")}
    disk.update(
        {
            "disk.thp_pageout_random": [800_000] * 3,
            "disk.thp_drain_random": [200_000] * 3,
            "disk.pageout_4k": [2300, 2400, 2350],
            "disk.writeback_drain_4k": [46_500, 30, 48_000],
        }
    )
    fx["samples"].update(disk)
    fx["values"]["disk.thp_random.thp_swpout"] = 1.0
    d = calibrate.profile_from_samples(fx)[0]["disk"]
    assert d["write_segment_ns"] == round(2430 - 4096 / (2097 * 1e6) * 1e9)


def test_thp_faults_and_collapses_leave_out_the_units_a_host_refault_slowed():
    """calibrate times each THP fault and each MADV_COLLAPSE range alone (free page
    reporting: a block the host had discarded refaults, +3.5 ms); the profile takes the
    mean of the units that did not refault, the backed cost the model charges (it charges
    the refault apart). A mean of all would move fault_2m_ns by ~0.45 ms and collapse_ns
    by ~0.2 ms."""
    import copy

    fx = copy.deepcopy(FIXTURE)
    # backed faults of 200 and 400 us (median 400 us), and three that refaulted
    fx["samples"]["fault_2m_total"] = [200_000] * 10 + [400_000] * 10 + [3_750_000] * 3
    fx["samples"]["collapse_2m"] = [700_000] * 60 + [4_200_000] * 4
    fx["values"]["collapse_2m.ranges"] = 1  # one call per range
    prof, _ = calibrate.profile_from_samples(fx)
    # the mean of the backed faults (the model charges each), less clear_2m: not the
    # median (400 us) nor the mean of all (750 us)
    assert prof["fault_2m_ns"] == 300_000 - 85_000
    assert prof["collapse_ns"] == 700_000 - 512 * 250
    # a whole syscall per range, not a 64th of one
    assert prof["collapse_isolate_ns"] == round((700_000 - collapse_rest(prof, 1)) / 512)
    # the refault is measured on purpose, over the mean backed fault
    assert prof["refault_reported_2m_ns"] == 6_000_000 - 300_000


def test_no_reported_block_timed_keeps_the_base_refault_cost_on_a_reporting_guest():
    """A calibration none of whose idle blocks had been reported (out/cal-h13) measured no
    refault: on a guest that reports free pages the profile keeps the base's figure (a zero
    would make every THP fault onto a reported block free); without reporting it is 0."""
    import copy

    base = tomllib.loads(n.default_costs())["refault_reported_2m_ns"]
    fx = copy.deepcopy(FIXTURE)
    fx["samples"]["refault_reported_2m_total"] = [105_000, 110_000, 100_000]
    fx["values"]["free_page_reporting"] = True
    prof, rows = calibrate.profile_from_samples(fx)
    assert base > 0 and prof["refault_reported_2m_ns"] == base
    assert any(r[0] == "refault_reported_2m_ns" and "not measured" in r[3] for r in rows)
    fx["values"]["free_page_reporting"] = False
    prof, _ = calibrate.profile_from_samples(fx)
    assert prof["refault_reported_2m_ns"] == 0


def test_profile_from_samples_and_toml_roundtrip():
    prof, rows = calibrate.profile_from_samples(FIXTURE)
    assert prof["clear_4k_ns"] == 160
    assert (prof["fill_byte_4k_ns"], prof["fill_text_4k_ns"], prof["fill_random_4k_ns"]) == (100, 200, 650)
    assert prof["fault_4k_ns"] == 1500 - 160
    # a fault that allocates its PTE table, less a fault and the table page's clear and allocation
    assert prof["pte_alloc_ns"] == 2500 - 1500 - 160 - prof["page_alloc_ns"]
    assert prof["fault_2m_ns"] == 105000 - 85000
    # a THP's munmap less the PMD walk, the folio's free and the call's share (32 THPs),
    # per tail page; a 64 KiB folio's less its walk, free and 15 tail pages
    call = prof["syscall_ns"] + prof["munmap_vma_ns"] + prof["zap_flush_ns"]
    tail = (8000 - prof["pmd_walk_ns"] - prof["page_free_ns"] - call / 32) / 511
    assert prof["free_tail_page_ns"] == round(tail)
    one = 1300 - 16 * prof["pte_walk_ns"] - prof["page_free_ns"] - 15 * prof["free_tail_page_ns"]
    assert prof["free_one_page_ns"] == round(one - call / 1024 - prof["pmd_walk_ns"] / 32)
    # the access loop in cache, in cycles; a miss is 256 MiB's read less that; the cache
    # holds the share of 16 and 32 MiB whose reads hit: 16 x (1 - 12/24) = 8, 32 x (1 - 16/24)
    # = 10.67 MiB, median 9.33 MiB
    assert prof["access_cycles"] == pytest.approx(2.1 * 3.0)
    assert prof["cache_miss_ns"] == 24
    assert prof["cache_bytes"] == round((8 + 32 / 3) / 2 * 1024) * 1024
    # a 64 KiB mTHP fault less a 4 KiB fault's other work (its PTE table shared by 32 faults,
    # not 512), per subpage cleared
    other = 1500 - 160 + prof["pte_alloc_ns"] * (1 / 32 - 1 / 512)
    assert prof["clear_folio_4k_ns"] == round((9400 - other) / 16)
    assert prof["refault_reported_2m_ns"] == 6_000_000 - 105000  # only the blocks that were reported
    z = prof["zram"]["lz4"]
    # less the 16 bytes page_same_filled() reads of a text page (the model charges them apart);
    # from the THP pageouts where measured (text), else from the 4 KiB ones (random)
    assert z["text_compress_ns"] == round(9350 - 850 + 190 - 190 * 16 / 4096) and z["text_bytes"] == 2400
    assert z["random_compress_ns"] == round(6000 - 4000 + 190 - 190 * 16 / 4096)
    # a calibration sparse page has one non-zero byte, its last (calibrate.rs fill_class):
    # page_same_filled() reads its first and last word, 16 bytes, as of text
    assert z["sparse_compress_ns"] == round(5000 - 4000 + 190 - 190 * 16 / 4096)
    # one present page's MADV_DONTNEED less a call that finds none, less the page's free
    assert prof["zap_flush_ns"] == 2900 - 1000 - prof["page_free_ns"]
    # three pages a call against one (paired by repetition: 700, 800, 600 -> 700), less two
    # pages' zap and free, per page: the invlpg of each page past the first
    inv = (700 - 2 * (prof["page_free_ns"] + prof["pte_walk_ns"])) / 2
    assert prof["tlb_flush_page_ns"] == round(inv) and prof["tlb_flush_page_ns"] > 0
    # munmap of a page from the middle of a VMA (two splits) and from its end (one)
    assert prof["vma_split_ns"] == 3200 - 2300
    assert prof["munmap_vma_ns"] == 2300 - prof["syscall_ns"] - 900
    # the same hole in a VMA with an anon_vma: seven anon_vma_chain links, less the PTE walk
    walk = prof["pmd_walk_ns"] + prof["pte_walk_ns"]
    assert prof["anon_vma_chain_ns"] == round((4900 - 3200 - walk) / 7)
    # a THP's partial munmap: the hole's munmap (its VMA work, which the model charges beside
    # the PMD's split), the flush, and the PMD's split
    assert prof["split_pmd_ns"] == 20000 - 4900 - prof["zap_flush_ns"]
    # a page from the middle of each 64 KiB folio: shown against the hole and the flush
    check = next(r for r in rows if r[0] == "(check) partial munmap of 64K folios")
    assert check[1] == 7000 and f"{4900 + prof['zap_flush_ns']:,.0f}" in check[3]
    # the swap-in less a same-filled one, whose fill (clear_4k) stands in for it, less the
    # class's zs_free: the swap-in frees the slot in the fault, which the model charges apart
    assert z["random_decompress_ns"] == 4200 - 3000 + 160 - (500 - 100)
    assert z["text_free_ns"] == 550 - 100
    f = prof["file"]
    assert f["write_mb_per_s"] == 1000 and f["read_mb_per_s"] == 2000
    assert f["write_latency_ns"] == 34096 - 4096 and f["read_latency_ns"] == 22048 - 2048
    assert f["random_penalty_ns"] == 0  # random and sequential reads alike
    assert f["max_segments"] == 254  # queue/max_segments as read from sysfs
    pte = prof["pte_walk_ns"]
    assert pte == 2  # the MADV_COLD walk over none PTEs, per PTE (median 2.5, rounded)
    assert prof["zap_zero_pte_ns"] == 31 - pte
    assert prof["swap_free_ns"] == 60 - pte
    # a same-filled zram slot's free notify: its munmap less the swap PTE's zap and the walk,
    # from the entries of THPs written whole where measured (lz4), else of 4 KiB pages (lzo)
    assert z["slot_free_ns"] == 75 - (60 - pte) - pte
    assert prof["zram"]["lzo"]["slot_free_ns"] == 100 - (60 - pte) - pte
    # all-zero THPs (zeromap) less same-filled ones, plus the latter's page_same_filled
    assert prof["zero_filled_4k_ns"] == 1100 - 850 + 190
    # a same-filled swap-in less the fault, the fill and the slot's free notify
    assert prof["swapin_ns"] == 3000 - prof["fault_4k_ns"] - 160 - z["slot_free_ns"]
    # the free of the folio is page_free_ns, which the model charges apart (free_folio)
    assert prof["remove_mapping_ns"] == 800 - (60 - pte) - pte - prof["page_free_ns"]
    # reclaim_pages(): one page per 2 MiB less 512 (paired: 1500, 1300, 1400) per page, less
    # the walk of 511 more PTEs, scaled to a whole call, less its PMD step
    assert prof["reclaim_pages_ns"] == round((1400 - 511 * pte) * 512 / 511 - prof["pmd_walk_ns"])
    # reclaim_scan_page + unmap_page = the 4 KiB pageout less the TLB flush, PTE walk, zero
    # check and a 512th of a reclaim_pages() call and its PMD step
    x = 2900 - prof["tlb_flush_ns"] - pte - 10 - (prof["reclaim_pages_ns"] + prof["pmd_walk_ns"]) / 512
    assert abs(prof["reclaim_scan_page_ns"] + prof["unmap_page_ns"] - x) <= 1
    assert 0 < prof["unmap_page_ns"] < 850
    assert prof["memchr_inv_4k_ns"] == 440  # the underused shrinker's slope
    # a zero subpage at a split: the partial split with 507 zero subpages less the one with none,
    # per zero subpage, less its zero check (440), plus the non-zero page's check (10)
    assert prof["split_zero_subpage_ns"] == 600
    # the deferred split queue's walk per folio: the underused shrinker at max_ptes_none 511
    # (it splits none) less drop_slab / THPs
    scan = prof["deferred_split_scan_ns"]
    assert scan == 500
    # the split itself from the underused shrinker's (PMD-mapped THPs, 508 zero subpages) less
    # drop_slab / THPs, the queue's walk, the shrinker's reads, the PMD split and the zero subpages
    z = prof["split_zero_subpage_ns"]
    f = 790000 - 90000 / 32 - scan - (8 * 10 + 440) - prof["split_pmd_ns"] - 508 * (440 + z)
    assert prof["split_folio_ns"] == round(f)
    # each PTE of a PTE-mapped THP (split_partial) unmapped to a migration entry
    u = (330000 - 90000 / 32 - scan - prof["page_free_ns"] - 511 * 10 - prof["split_folio_ns"]) / 511
    assert prof["split_unmap_pte_ns"] == round(u)
    # a 64 KiB folio's split: the fixed part + 16/512 of the rest of split_folio_ns, 15 PTEs unmapped
    x64 = 20000 - 90000 / 128 - scan - prof["page_free_ns"] - 15 * 10 - 15 * prof["split_unmap_pte_ns"]
    assert prof["split_folio_fixed_ns"] == round((x64 - prof["split_folio_ns"] / 32) / (1 - 1 / 32))
    assert prof["collapse_ns"] == 750000 - 512 * 250
    # the same less what the model charges beside collapse_isolate_ns, per page (64 ranges
    # to one call in the fixture: no collapse_2m.ranges value)
    assert prof["collapse_isolate_ns"] == round((750000 - collapse_rest(prof, 64)) / 512)
    # a 4 KiB folio's pass with no swap device (activated) is reclaim_scan_page_ns less the
    # swap-out's part: noswap.pageout_4k less the PTE walk and a 512th of a reclaim_pages() call
    short = 500 - prof["pte_walk_ns"] - (prof["reclaim_pages_ns"] + prof["pmd_walk_ns"]) / 512
    out = prof["reclaim_swapout_ns"]
    assert out == round(prof["reclaim_scan_page_ns"] - short) and 0 < out < prof["reclaim_scan_page_ns"]
    # the swap-file THP pageout (each THP split) less the model's other charges, per zero
    # subpage: the THP's own pass stops short of the swap-out (no cluster), its written
    # subpage's goes on to swap
    rest = (
        2 * prof["reclaim_scan_page_ns"]
        - out
        + prof["split_pmd_ns"]
        + prof["split_folio_ns"]
        + 511 * 440
        + 10
        + prof["unmap_page_ns"]
        + prof["tlb_flush_ns"]
        + prof["pmd_walk_ns"]
        + prof["reclaim_pages_ns"]
    )
    assert prof["reclaim_unmapped_ns"] == round((1_400_000 - rest) / 511)
    # with no swap device: the written page stays mapped (its PTE walked, not unmapped), its
    # pass short of the swap-out as well
    rest_noswap = rest - prof["unmap_page_ns"] + prof["pte_walk_ns"] - out
    assert prof["reclaim_activate_ns"] == round((600_000 - rest_noswap) / 511)
    # without the fallback count (the THPs were swapped whole) each keeps the default
    default = tomllib.loads(n.default_costs())
    for dev, field in [("file", "reclaim_unmapped_ns"), ("noswap", "reclaim_activate_ns")]:
        no_split = {**FIXTURE, "values": {**FIXTURE["values"], f"{dev}.thp_best.thp_swpout_fallback": 0.0}}
        assert calibrate.profile_from_samples(no_split)[0][field] == default[field]
    # 4 KiB pages not activated (a swap device took them after all): no reclaim_swapout_ns,
    # every pass whole as in the default
    swapped = {**FIXTURE, "values": {**FIXTURE["values"], "noswap.pageout_4k.pgactivate": 0.0}}
    assert "reclaim_swapout_ns" not in default
    assert calibrate.profile_from_samples(swapped)[0].get("reclaim_swapout_ns") is None
    assert prof["compact_scan_pfn_ns"] == 3 and prof["migrate_4k_ns"] == 2000
    assert 0 < prof["spread"]["clear_4k_ns"] < 1
    text = calibrate.to_toml(prof, ["a comment"])
    parsed = tomllib.loads(n.parse_costs(text))
    assert parsed["clear_4k_ns"] == 160 and parsed["zram"]["lz4"]["text_bytes"] == 2400
    assert parsed["name"] == "calibrated-testhost"
    assert any(r[0] == "(memchr_inv_4k best case)" for r in rows)


def test_zram_classes_are_fitted_against_the_same_filled_figures_of_the_same_repetition():
    # a host whose speed steps between repetitions: every class 1.5x slower in the third
    slow = {"same": 3000, "sparse": 4000, "text": 6000, "random": 4200}
    S = {f"zram.lz4.{c}.{d}": [v, v, v * 1.5] if d == "in" else [v] * 3 for c, v in slow.items() for d in ("out", "in")}
    S.update({f"zram.lz4.{c}.free": [100 + i] * 3 for i, c in enumerate(("same", "sparse", "text", "random"))})
    prof, _ = calibrate.profile_from_samples({**FIXTURE, "samples": {**FIXTURE["samples"], **S}})
    z = prof["zram"]["lz4"]
    # paired by repetition: text less same-filled is 3000 in the two fast ones, 4500 in the
    # slow one; median 3000 (the medians apart would give the same here; below they do not)
    assert z["text_decompress_ns"] == 3000 + 160 - 2
    # the same-filled figures in the slow step for two of three repetitions, the class's
    # in one: paired 3000, 3000 - 1500, 3000 + 3000 -> 3000; the medians' difference 1500
    S["zram.lz4.same.in"] = [3000, 4500, 4500]
    S["zram.lz4.text.in"] = [6000, 6000, 9000]
    prof, _ = calibrate.profile_from_samples({**FIXTURE, "samples": {**FIXTURE["samples"], **S}})
    assert prof["zram"]["lz4"]["text_decompress_ns"] == 3000 + 160 - 2
    # repetitions that do not pair (one left out): the medians' difference
    S["zram.lz4.text.in"] = [6000, 6000]
    prof, _ = calibrate.profile_from_samples({**FIXTURE, "samples": {**FIXTURE["samples"], **S}})
    assert prof["zram"]["lz4"]["text_decompress_ns"] == 6000 - 4500 + 160 - 2


def test_a_class_free_comes_from_thp_written_entries_where_measured():
    # the same-filled THPs' entries give slot_free_ns; a class's zs_free beyond it comes from
    # its own THPs' entries, paired by repetition, where they were measured (text), else from
    # 4 KiB-written entries (random): 4 KiB-written text ran ~30 ns an entry above on this host
    S = {
        "zram.lz4.same.thp_free": [75, 75, 90],
        "zram.lz4.text.thp_free": [300, 300, 400],
    }
    prof, _ = calibrate.profile_from_samples({**FIXTURE, "samples": {**FIXTURE["samples"], **S}})
    z = prof["zram"]["lz4"]
    assert z["text_free_ns"] == 300 - 75  # paired: 225, 225, 310
    assert z["random_free_ns"] == 500 - 100
    # the swap-in holds the slot's free: what the decompression is left with moves with it
    assert z["text_decompress_ns"] == 6000 - 3000 + 160 - 225
    # no same-filled THP entries to pair with: the 4 KiB figures
    del S["zram.lz4.same.thp_free"]
    base = {k: v for k, v in FIXTURE["samples"].items() if k != "zram.lz4.same.thp_free"}
    prof, _ = calibrate.profile_from_samples({**FIXTURE, "samples": {**base, **S}})
    assert prof["zram"]["lz4"]["text_free_ns"] == 550 - 100


def test_only_zram_keeps_the_base_profile_but_its_zram_tables_and_swapin():
    base_prof, _ = calibrate.profile_from_samples(FIXTURE)
    base_prof["clear_4k_ns"] = 999
    base_prof["unmap_page_ns"] = 777
    base = calibrate.to_toml(base_prof)
    zonly = {k: v for k, v in FIXTURE["samples"].items() if k.startswith("zram.")}
    zonly["zram.lz4.same.in"] = [5000] * 3
    prof, rows = calibrate.profile_only_zram({**FIXTURE, "samples": zonly, "values": {}}, base)
    # the other fields are the base's, unmap_page_ns included (the reclaim fit would refit
    # it from the zram samples alone)
    assert prof["clear_4k_ns"] == 999 and prof["unmap_page_ns"] == 777
    assert prof["fault_4k_ns"] == base_prof["fault_4k_ns"]
    # the zram fits use the base's fields
    z = prof["zram"]["lz4"]
    assert z["text_decompress_ns"] == 6000 - 5000 + 999 - (550 - 100)
    assert prof["swapin_ns"] == 5000 - base_prof["fault_4k_ns"] - 999 - z["slot_free_ns"]
    assert rows and all(r[0].startswith("zram") or r[0] in calibrate.ZRAM_ONLY_FIELDS for r in rows)
    assert prof["zero_filled_4k_ns"] == 1100 - 850 + 190
    assert "--only zram" in prof["source"]
    tomllib.loads(n.parse_costs(calibrate.to_toml(prof)))


def test_compaction_fit_charges_the_scanner_per_iteration_and_the_rest_per_migrated_page():
    # a host whose migrate scanner takes 14 ns an iteration and a migration 3000 ns a page;
    # the model's other charges at the fixture's defaults (free scanner 6 ns a pfn, 15 ns a
    # pageblock). The scan runs count ~1/3 as many iterations as pfns (free blocks stepped
    # over), and migrate a few pages; the first compaction of each pair migrates many
    base = tomllib.loads(n.default_costs())
    free_ns, block_ns = base["compact_scan_free_ns"], base["compact_block_ns"]
    step, mig = 14, 3000
    S = {}
    for tag, runs in {
        "quarter": [(1_000_000, 3_000_000, 20_000, 6000, 150_000), (1_100_000, 3_300_000, 10_000, 6400, 500)],
        "sixteenth": [(990_000, 2_900_000, 8000, 5800, 40_000)],
    }.items():
        for i, (st, ms, fs, bl, mg) in enumerate(runs):
            mg_b = 10
            S.setdefault(f"compact_scan.{tag}.pair", []).append(i)
            S.setdefault(f"compact_scan.{tag}.ns", []).append(st * step + fs * free_ns + bl * block_ns + mg_b * mig)
            S.setdefault(f"compact_scan.{tag}.steps", []).append(st)
            S.setdefault(f"compact_scan.{tag}.blocks", []).append(bl)
            S.setdefault(f"compact_scan.{tag}.compact_migrate_scanned", []).append(ms)
            S.setdefault(f"compact_scan.{tag}.compact_free_scanned", []).append(fs)
            S.setdefault(f"compact_scan.{tag}.pgmigrate_success", []).append(mg_b)
            # the fragmented run: the same walk plus an iteration per page it isolated
            fs_a = fs + 5 * mg
            ns_a = (st + mg - mg_b) * step + fs_a * free_ns + bl * block_ns + mg * mig
            S.setdefault(f"compact.{tag}.ns", []).append(ns_a)
            S.setdefault(f"compact.{tag}.compact_migrate_scanned", []).append(ms)
            S.setdefault(f"compact.{tag}.compact_free_scanned", []).append(fs_a)
            S.setdefault(f"compact.{tag}.pgmigrate_success", []).append(mg)
    cal = {**FIXTURE, "samples": {k: v for k, v in FIXTURE["samples"].items() if not k.startswith("compact.")} | S}
    prof, rows = calibrate.profile_from_samples(cal)
    assert prof["compact_scan_migrate_ns"] == step
    assert prof["migrate_4k_ns"] == mig
    # --only compaction: the base's other fields kept, the compaction fields refitted
    base_prof = dict(base, clear_4k_ns=999, migrate_4k_ns=1)
    prof, rows = calibrate.profile_only_compaction({**cal, "samples": S, "values": {}}, calibrate.to_toml(base_prof))
    assert prof["clear_4k_ns"] == 999 and prof["migrate_4k_ns"] == mig and prof["compact_scan_migrate_ns"] == step
    assert rows and all(r[0] in calibrate.COMPACTION_ONLY_FIELDS for r in rows)
    assert "--only compaction" in prof["source"]
    tomllib.loads(n.parse_costs(calibrate.to_toml(prof)))
    # too few pages migrated: migrate_4k_ns stays the base's
    few = {
        k: [min(x, 1000) for x in v] if k.endswith(".pgmigrate_success") and k.startswith("compact.") else v
        for k, v in S.items()
    }
    prof, rows = calibrate.profile_only_compaction({**cal, "samples": few, "values": {}}, calibrate.to_toml(base_prof))
    assert prof["migrate_4k_ns"] == 1 and any("not fitted" in r[3] for r in rows)


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


def test_only_refault_refits_the_refault_of_reported_blocks_against_its_own_warm_faults():
    """`calibrate --only refault`: the base profile with refault_reported_2m_ns alone
    refitted, as the median of the blocks that refaulted (over 3x a warm THP fault's median,
    which the step times on backed memory beside them) less that warm fault; the row says how
    many were reported and how much the guest reported while they waited."""
    base_prof, _ = calibrate.profile_from_samples(FIXTURE)
    base_prof["fault_2m_ns"] = 4321
    base = calibrate.to_toml(base_prof)
    samples = {
        "fault_2m_total": [250_000] * 60 + [5_000_000] * 4,  # four refaults, left out
        "refault_reported_2m_total": [4_000_000] * 300 + [6_000_000] * 100 + [260_000] * 112,
    }
    cal = {**FIXTURE, "samples": samples, "values": {"free_page_reporting": True, "refault_reported_kib": 786432}}
    prof, rows = calibrate.profile_only_refault(cal, base)
    assert prof["refault_reported_2m_ns"] == 4_000_000 - 250_000
    assert prof["fault_2m_ns"] == 4321, "every other field is the base's"
    assert [r[0] for r in rows] == ["refault_reported_2m_ns"]
    assert "78% of 512 idle blocks" in rows[0][3] and "768 MiB reported" in rows[0][3]
    assert "--only refault" in prof["source"]
    tomllib.loads(n.parse_costs(calibrate.to_toml(prof)))
    # a host whose refaults cost 6x a warm fault (out/host-h50.toml: 1.6-1.8 ms against
    # ~290 us): they count, and the blocks not yet discarded (a little over warm) do not
    samples = {
        "fault_2m_total": [290_000] * 64,
        "refault_reported_2m_total": [1_750_000] * 30 + [440_000] * 226,
    }
    cal = {**FIXTURE, "samples": samples, "values": {"free_page_reporting": True, "refault_reported_kib": 393216}}
    prof, rows = calibrate.profile_only_refault(cal, base)
    assert prof["refault_reported_2m_ns"] == 1_750_000 - 290_000
    assert "12% of 256 idle blocks" in rows[0][3]


def test_same_filled_slot_free_is_the_fastest_compressors_for_every_compressor():
    """zram_free_page() of a same-filled slot never reaches the compressor, so with every
    compressor's THP-written entries measured, a host slowdown that caught one of them
    (lzo's 90 ns against lz4's 75) does not make its slot_free_ns dearer."""
    import copy

    fx = copy.deepcopy(FIXTURE)
    fx["samples"]["zram.lzo.same.thp_free"] = [90.0] * 3
    prof, _ = calibrate.profile_from_samples(fx)
    pte = prof["pte_walk_ns"]
    want = 75 - (60 - pte) - pte
    assert prof["zram"]["lz4"]["slot_free_ns"] == want
    assert prof["zram"]["lzo"]["slot_free_ns"] == want
