"""Seed 003 (THP swap-out/swap-in in one piece): the experiment's table, quick size."""

from thplab.experiments import seed003

KEYS = {
    "metric",
    "seed_before",
    "seed_after",
    "seed_delta",
    "thplab_before",
    "thplab_after",
    "thplab_delta",
    "same_direction",
}


def test_seed003_quick_table():
    meta = {}
    rows = seed003.run(quick=True, _meta=meta)
    assert [r["metric"] for r in rows] == list(seed003.SEED)
    for r in rows:
        assert set(r) == KEYS
        # the seed's figures are printed as published
        assert (r["seed_before"], r["seed_after"], r["seed_delta"]) == seed003.SEED[r["metric"]]
    by = {r["metric"]: r for r in rows}
    # the seed's policy keeps THPs through swap and swaps faster; the model agrees in direction
    for m in (
        "throughput (bytes written/s)",
        "THP share of anon memory (%)",
        "TLB-flush IPIs (CAL interrupts)",
        "meminfo.AnonHugePages (kB, mean)",
        "vmstat.swap.si (kB/s)",
        "vmstat.swap.so (kB/s)",
    ):
        assert by[m]["same_direction"], by[m]
    assert by["THP share of anon memory (%)"]["thplab_after"] > 90
    assert by["THP share of anon memory (%)"]["thplab_before"] < 20
    b, a = meta["before"]["_counters"], meta["after"]["_counters"]
    # mainline: THPs go out whole but come back as base pages; the seed: they come back whole
    assert b["thp_swpout"] > 0 and b["thp_swpin"] == 0 and a["thp_swpin"] > 0
    assert b["oom_kill"] == 0 and a["oom_kill"] == 0
    # no wall-clock thresholds: host time is only printed


def test_seed003_prints(capsys):
    meta = {
        "machine": "m",
        "before": {"_sim_s": 1.0, "_host_s": 1.0, "_counters": {}},
        "after": {"_sim_s": 0.5, "_host_s": 0.1, "_counters": {}},
    }
    rows = [
        {
            "metric": "x",
            "seed_before": 1,
            "seed_after": 2,
            "seed_delta": "+100%",
            "thplab_before": 1.0,
            "thplab_after": 3.0,
            "thplab_delta": "+200.0%",
            "same_direction": True,
        }
    ]
    seed003.print_table(rows, meta)
    out = capsys.readouterr().out
    assert "seed_before" in out and "+200.0%" in out and "reference only" in out
